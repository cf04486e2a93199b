"""The A/B rounds: PR, base, PR, base, ... on one runner, and reading them back.

Each side of each round is its own replay batch of the same ops (same pinned
configs, shapes and dtypes), so each side starts fresh processes with their own
triton and FlagGems caches (zlbench.runner.execute.worker). Alternating within
every round puts the two measurements of a pair minutes apart; drift slower
than that moves both alike (docs/judging.md). ``<gate out>/ab/`` holds
``<i>/pr/`` and ``<i>/base/`` (batch dirs) and ``ab.json`` (models.AbSummary),
so ``zlbench report`` and the merged judge read the same numbers again.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate.env import measured_results
from zlbench.gate.judge import FAILED_STATUSES, failure_text
from zlbench.gate.load import load_results
from zlbench.gate.paired import Round
from zlbench.models import (
    SIDES,
    AbSummary,
    Environment,
    RowKey,
    dump_json_model,
    load_json_model,
    resolve_inside,
)
from zlbench.protocol.layout import RESULTS_DIR

AB_DIR = "ab"
AB_FILE = "ab.json"

# measure(side "pr" | "base", op keys, batch out dir) -> the batch dir it wrote
MeasureSide = Callable[[str, list[str], Path], Path]


@dataclass
class AbRounds:
    """What the rounds measured: one (PR dir, base dir) pair per round, the order in
    which sides ran and each side's wall time."""

    dirs: list[tuple[Path, Path]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SIDES, 0.0))


def run_rounds(
    ops: list[str],
    rounds: int,
    root: Path,
    measure: MeasureSide,
    clock: Callable[[], float] = time.monotonic,
    check: Callable[[tuple[Path, Path]], None] | None = None,
    first_pr: Path | None = None,
) -> AbRounds:
    """``rounds`` rounds over ``ops``, the PR's side first in each: A B A B ...
    ``check(first round's dirs)`` may refuse the A/B (raise) before the other rounds.
    ``first_pr``: a batch dir the PR's compiler already measured just before (the
    full A/B's screen), copied in as round 1's PR side instead of measuring it again."""
    if rounds < 1:
        raise ZlbenchError(f"--ab-rounds must be >= 1, got {rounds}")
    out = AbRounds()
    for i in range(1, rounds + 1):
        pair = {}
        for side in SIDES:
            t0 = clock()
            dest = root / str(i) / side
            if i == 1 and side == "pr" and first_pr is not None:
                shutil.copytree(first_pr, dest)
                pair[side] = dest
            else:
                pair[side] = measure(side, list(ops), dest)
                out.seconds[side] += clock() - t0
            out.order.append(side)
        out.dirs.append((pair["pr"], pair["base"]))
        if i == 1 and check is not None:
            check(out.dirs[0])
    return out


def write_summary(root: Path, summary: AbSummary) -> None:
    dump_json_model(root / AB_FILE, summary)


def round_dirs(root: Path) -> list[tuple[Path, Path]]:
    """The ``<i>/{pr,base}/`` pairs under ``root`` in round order (both sides present)."""
    if not root.is_dir():
        return []
    numbered = [p.name for p in root.iterdir() if p.name.isascii() and p.name.isdigit()]
    names = sorted((int(n), n) for n in numbered)  # "²" is a digit to isdigit(), not to int()
    pairs = [(resolve_inside(root, f"{n}/pr"), resolve_inside(root, f"{n}/base")) for _, n in names]
    return [(pr, base) for pr, base in pairs if pr.is_dir()]


@dataclass
class LoadedRounds:
    rounds: list[Round]
    pr_envs: list[Environment]
    base_envs: list[Environment]
    base_rows: int  # rows the base measured in all rounds
    # op key -> the base side's failure (``gate.judge.failure_text``), for the ops whose
    # base run failed in a round (FAIL, CRASH, TIMEOUT, ERROR)
    base_failed: dict[str, str] = field(default_factory=dict)
    # the rows the base side measured in some round (a row of a failed op too)
    base_measured: set[RowKey] = field(default_factory=set)


def load_rounds(dirs: list[tuple[Path, Path]]) -> LoadedRounds:
    """Each round's (PR rows, base rows) as the judge pairs them, and the
    environments each side's runs recorded."""
    out = LoadedRounds([], [], [], 0)
    for pr_dir, base_dir in dirs:
        pr, base = load_results(pr_dir), load_results(base_dir)
        out.rounds.append((pr.sample_rows(), base.sample_rows()))
        out.base_rows += len(out.rounds[-1][1])
        for key, run in base.ops.items():
            out.base_measured |= {k for k, r in run.rows().items() if r.status != "FAILED"}
            if run.status in FAILED_STATUSES:
                out.base_failed.setdefault(key, failure_text(run))
        out.pr_envs += [r.environment for r in measured_results(pr, None)]
        out.base_envs += [r.environment for r in measured_results(base, None)]
    return out


def load_summary(gate_dir: Path) -> tuple[AbSummary, list[tuple[Path, Path]]] | None:
    """A gate dir's A/B (``ab/ab.json`` and its rounds), None when it has none; each
    opened only inside ``gate_dir`` (a symlink leading out is one line, exit 2)."""
    root = resolve_inside(gate_dir, AB_DIR)
    file = resolve_inside(gate_dir, f"{AB_DIR}/{AB_FILE}")  # never through a link out
    if not file.is_file():
        return None
    summary = load_json_model(file, AbSummary)
    dirs = round_dirs(root)
    base = root / "1" / "base"
    if not dirs and summary.pr_is_screen and base.is_dir():  # interleaved: PR = results/
        dirs = [(resolve_inside(gate_dir, RESULTS_DIR), base)]
    return summary, dirs

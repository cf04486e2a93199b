"""`zlbench ab`: an interleaved A/B of two sides (compilers, env switches or both) over
an op/shape set, in a named caliber (docs/judging.md "Calibers"): pinned (both sides
replay the same records) or own-best (each side records fresh, then replays its own
winners). The gate's A/B against its base compiler is :mod:`zlbench.workflow.ab`; this
module reuses its interleaved run, pair rule and side checks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate.paired import (
    pair_samples,
    stats_of,
)
from zlbench.models import (
    AbCompiler,
    atomic_write_text,
)
from zlbench.protocol.layout import REPORT_MD
from zlbench.protocol.pairs import PairRule, final_decision
from zlbench.runner.ab.env import (
    PR_ENV,
    CompilerEnv,
    probe_compiler,
    resolve_env,
    same_compiler_why,
)
from zlbench.runner.ab.interleave import load_pairs, run_interleaved
from zlbench.runner.ab.rounds import (
    AbRounds,
    load_rounds,
    write_summary,
)
from zlbench.runner.batch.config import BatchConfig
from zlbench.workflow.ab import AbOptions, check_sides, interleaved_summary, summary_rule

CALIBERS = ("pinned", "own-best", "both")
# A is the reference, measured as the base side; B is judged, measured as the PR side
SIDE = {"a": "base", "b": "pr"}


@dataclass
class AbRunJob:
    """``zlbench ab``: sides A (the reference) and B (judged) that differ in the compiler
    (``base_compiler``: A's; B's is this environment), in environment variables
    (``env_a``, ``env_b``) or both, over the ops ``config`` selects (its shapes, dtypes,
    timing; its ``out_dir`` unused), into ``out``. ``caliber``: ``pinned`` (both replay
    ``records``, else A's records made fresh first), ``own-best`` (each side records
    fresh, then replays its own winners) or ``both`` (own-best, then the pinned A/B from
    A's records; the exit code is own-best's). ``out_given``: ``--out`` was named (a
    record pass needs a place chosen for it). ``aa``: an A/A on purpose."""

    config: BatchConfig
    out: Path
    caliber: str = "pinned"
    records: Path | None = None
    base_compiler: str | None = None
    env_a: dict[str, str] = field(default_factory=dict)
    env_b: dict[str, str] = field(default_factory=dict)
    aa: bool = False
    options: AbOptions = field(default_factory=AbOptions)
    out_given: bool = True


def _default_run_batch(config: BatchConfig):
    from zlbench.runner.batch.run import run_batch

    return run_batch(config)


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class AbRunSeams:
    """What ``zlbench ab`` does outside itself: batches, compiler probes, messages."""

    run_batch: Callable[[BatchConfig], object] = _default_run_batch
    probe: Callable[..., AbCompiler] = probe_compiler
    say: Callable[[str], None] = _stderr


def check_ab_job(job: AbRunJob) -> None:
    """Refuse what cannot be measured as asked, before anything is (one line, exit 2)."""
    if job.caliber not in CALIBERS:
        raise ZlbenchError(f"--caliber {job.caliber}: one of {', '.join(CALIBERS)}")
    if job.caliber != "pinned" and job.records is not None:
        raise ZlbenchError(
            f"--caliber {job.caliber} tunes each side fresh: --records (the records a pinned "
            "A/B replays) does not go with it"
        )
    if (job.caliber != "pinned" or job.records is None) and not job.out_given:
        raise ZlbenchError(
            f"--caliber {job.caliber}"
            + (" without --records" if job.caliber == "pinned" else "")
            + " records autotune winners first: name the place with --out DIR"
        )
    if job.records is not None and not Path(job.records).is_dir():
        raise ZlbenchError(f"--records {job.records}: no such directory")


def same_sides_why(job: AbRunJob, a: AbCompiler, b: AbCompiler) -> str:
    """Why the two sides are alike ("" when they differ): the same compiler (one
    environment, or one triton path) and the same variables."""
    same = job.base_compiler is None or same_compiler_why(b, a) != ""
    if not same or job.env_a != job.env_b:
        return ""
    return "the two sides are the same compiler with the same environment variables"


def check_sides_differ(job: AbRunJob, a: AbCompiler, b: AbCompiler, say) -> None:
    """An A/B that tests nothing is refused unless declared an A/A (``--aa``: a warning
    instead); an A/A declared on sides that differ is refused."""
    why = same_sides_why(job, a, b)
    if why and not job.aa:
        raise ZlbenchError(
            f"{why}: the A/B tests no switch (give --env-a/--env-b or --base-compiler; "
            "--aa for an A/A on purpose)"
        )
    if why:
        say(f"zlbench ab: warning: an A/A on purpose ({why}): a difference is noise")
    elif job.aa:
        raise ZlbenchError("--aa declares an A/A, but the sides differ (compiler or variables)")


def _side_configs(job: AbRunJob, base: CompilerEnv) -> dict[str, BatchConfig]:
    """Each side's batch config: its compiler, then its variables."""
    from zlbench.runner.ab.env import side_config, with_vars

    return {
        "base": with_vars(side_config(job.config, base), job.env_a),
        "pr": with_vars(side_config(job.config, PR_ENV), job.env_b),
    }


def _record(config: BatchConfig, dest: Path, seams: AbRunSeams, what: str) -> Path:
    """A record batch (each tuner tunes fresh) into ``dest``; the batch dir."""
    seams.say(f"zlbench ab: {what}: recording fresh autotune winners into {dest}")
    rec = replace(config, out_dir=dest, replay_root=None, pair_dir=None, pair_side=None)
    outcome = seams.run_batch(rec)
    if getattr(outcome, "exit_code", 0) == 2:
        raise ZlbenchError(f"{what}: the record pass measured nothing (see {dest})")
    return Path(getattr(outcome, "out_dir", dest))


def _paired(
    configs: dict[str, BatchConfig],
    keys: list[str],
    root: Path,
    records: dict[str, Path],
    rule: PairRule,
    seams: AbRunSeams,
) -> AbRounds:
    """Both sides' replays of ``keys`` at once, each from ``records[side]``, paired
    row by row in ``root`` (:func:`zlbench.runner.ab.interleave.run_interleaved`)."""

    def side(name: str, ops: list[str], dest: Path, meet: Path) -> Path:
        c = replace(
            configs[name],
            out_dir=dest,
            replay_root=records[name],
            restrict_to=set(ops),
            pair_dir=meet,
            pair_side=name,
            pair_rule=rule.to_json(),
        )
        return Path(getattr(seams.run_batch(c), "out_dir", dest))

    return run_interleaved(keys, root, side)


def judge_pairs(pairs, rule: PairRule) -> dict:
    """Every row of an interleaved A/B judged by the pair rule alone (no stored
    baseline): its decision and the threshold it was decided at. Pure."""
    rows = pair_samples(pairs, rule)
    for p in rows.values():
        p.threshold, p.floor_us = rule.threshold_for(p.blocks is not None), rule.floor_us
        p.decision = final_decision(stats_of(p), rule, full=True)
    return rows


def _failed(dirs: dict[str, Path]) -> list[str]:
    from zlbench.gate.load import load_results

    out = []
    for side, d in dirs.items():
        name = "A" if side == "base" else "B"
        for key, run in sorted(load_results(d).ops.items()):
            st = run.status.value if run.status is not None else "?"
            if st not in ("PASS", "SKIP"):
                out.append(f"{name} {key}: {st}")
    return out


def records_check(caliber: str, base_dir: Path, pr_dir: Path):
    """The records the two replays of ``caliber`` ran with, checked: own-best's sides
    replay winners each tuned itself, so equal ones are the two sides' identical
    winners, never A's records replayed (an own-best run is never called pinned)."""
    from zlbench.report.compare import check_records
    from zlbench.runner.ab.records import op_records

    return check_records(op_records(base_dir), op_records(pr_dir), own_best=caliber != "pinned")


def _measure_caliber(
    job: AbRunJob,
    caliber: str,
    configs: dict[str, BatchConfig],
    keys: list[str],
    records: dict[str, Path],
    ids: dict[str, AbCompiler],
    seams: AbRunSeams,
):
    from zlbench.report.ab import AbRunCaliber

    root = job.out / caliber
    rule = job.options.pair_rule()
    seams.say(f"zlbench ab: caliber {caliber}: {len(keys)} op(s), both sides at once")
    run = _paired(configs, keys, root, records, rule, seams)
    pr_dir, base_dir = run.dirs[0]
    loaded = load_rounds([(pr_dir, base_dir)])
    timing = check_sides(loaded, base_dir, job.base_compiler or "side A", rule.sampling)
    summary = interleaved_summary(
        run,
        rule.with_sampling(timing=timing),
        sorted(keys),
        ids["pr"],
        ids["base"],
        mode="full",
        caliber="pinned" if caliber == "pinned" else "own-best",
        env_vars={s: v for s, v in (("base", job.env_a), ("pr", job.env_b)) if v},
        records={s: str(d) for s, d in records.items()},
        aa=job.aa,
    )
    write_summary(root, summary)
    pairs = load_pairs(root)
    rows = judge_pairs(pairs, summary_rule(summary)) if pairs is not None else {}
    check = records_check(caliber, base_dir, pr_dir)
    failed = _failed({"base": base_dir, "pr": pr_dir})
    return AbRunCaliber(summary=summary, rows=rows, records=check, failed=failed)


def run_ab(job: AbRunJob, seams: AbRunSeams | None = None) -> int:
    """``zlbench ab``: check, probe both sides, record what the caliber needs, measure
    the paired A/B(s), write ``<out>/report.md`` (also printed); the exit code
    (:attr:`zlbench.report.ab.AbRun.exit_code`)."""
    from zlbench.report.ab import AbRun, render_ab_run
    from zlbench.runner.batch.plan import plan_selection
    from zlbench.runner.claim import claim_batch_dir

    seams = seams or AbRunSeams()
    check_ab_job(job)
    base = resolve_env(job.base_compiler) if job.base_compiler else PR_ENV
    configs = _side_configs(job, base)
    environ = lambda c: dict(os.environ if c.env is None else c.env)  # noqa: E731
    ids = {
        "base": seams.probe(base, environ(configs["base"])),
        "pr": seams.probe(PR_ENV, environ(configs["pr"])),
    }
    check_sides_differ(job, ids["base"], ids["pr"], seams.say)
    keys = plan_selection(job.config).keys()
    if not keys:
        raise ZlbenchError("no op selected to measure (see --ops / --ops-file)")
    job.out = claim_batch_dir(Path(job.out), resume=False)
    if job.records is not None:
        rec_a = rec_b = Path(job.records).resolve()
    else:
        rec_a = _record(configs["base"], job.out / "records" / "a", seams, "side A")
        rec_b = rec_a
        if job.caliber != "pinned":
            rec_b = _record(configs["pr"], job.out / "records" / "b", seams, "side B")
    calibers = {"pinned": ["pinned"], "own-best": ["own-best"], "both": ["own-best", "pinned"]}
    measured = {}
    for cal in calibers[job.caliber]:
        records = {"base": rec_a, "pr": rec_a if cal == "pinned" else rec_b}
        measured[cal] = _measure_caliber(job, cal, configs, keys, records, ids, seams)
    primary = measured["own-best" if job.caliber == "both" else job.caliber]
    result = AbRun(primary, measured.get("pinned") if job.caliber == "both" else None)
    text = render_ab_run(result)
    atomic_write_text(job.out / REPORT_MD, text)  # where a gate writes its own
    print(text, end="")
    return result.exit_code


__all__ = ["CALIBERS", "AbRunJob", "AbRunSeams", "run_ab"]

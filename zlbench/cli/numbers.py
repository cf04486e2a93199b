"""Every numeric flag of every command checked before the command runs: one
ZlbenchError line (exit 2) for a value out of its range, NaN or infinite.

:data:`RULES` names each numeric option by its argparse ``dest``. A flag that sets a
field of an option model (:mod:`zlbench.models.options`, the budgets of
:mod:`zlbench.models.timing`) takes that field's range from the model, so argv and the
model refuse a value alike, in the same words (:class:`zlbench.models.ranges.Range`);
the other flags' ranges are here. The test ``tests/untrusted/test_untrusted_numbers.py``
walks every ``type=int`` / ``type=float`` option of the parser and fails on one without
a rule, so a new numeric flag cannot go unchecked. ``--shard K/N`` and the GPU lists are
parsed here too, so their errors come before any work.
"""

from __future__ import annotations

import argparse

from zlbench.cli.parser import OneLineParser  # noqa: F401 (its old home)
from zlbench.gate.thresholds import MAX_CONFIRM_REPEATS
from zlbench.models.options import (
    GPU_SHARE,
    MAX_RETRIES,
    OP_TIMEOUT,
    PER_PROCESS,
    PRECOMPILE_JOBS,
)
from zlbench.models.ranges import AT_LEAST_1, POSITIVE, Range
from zlbench.models.timing import REPLAYS, WARMUP_MS
from zlbench.workflow.ab import MAX_ROUNDS as MAX_AB_ROUNDS

RULES: dict[str, Range] = {
    # the option models' fields: their ranges are the models' (one source, one message)
    "op_timeout": OP_TIMEOUT,  # batch, baseline refresh: Scheduling.op_timeout_s
    "timeout": OP_TIMEOUT,  # run --timeout
    "per_process": PER_PROCESS,
    "max_retries": MAX_RETRIES,
    "precompile_jobs": PRECOMPILE_JOBS,
    "gpu_share": GPU_SHARE,
    "warmup_ms": WARMUP_MS,  # Measuring's and Timing's budgets
    "replays": REPLAYS,
    # the flags of no option model
    "target_wall": POSITIVE,
    "repeats": AT_LEAST_1,  # baseline refresh
    "min_repeats": AT_LEAST_1,  # baseline refresh (at most --repeats: refresh checks)
    "confirm": Range(0, high=MAX_CONFIRM_REPEATS, note="0 = no re-measure"),  # gate
    # gate: ignored by the interleaved A/B, still checked (each round times both compilers)
    "ab_rounds": Range(1, high=MAX_AB_ROUNDS, note="A/B rounds"),
    "ab_threshold": POSITIVE,
    "ab_floor_us": Range(0, note="0 = no floor"),  # gate: the paired floor, µs
    "ab_max_pairs": Range(1, high=1000, note="pairs per row at most"),  # gate
    "jobs": AT_LEAST_1,  # codegen
    "codegen_jobs": AT_LEAST_1,  # gate: the codegen screen's processes
    "time_budget": POSITIVE,  # gate --time-budget: GPU seconds for the changed ops
    "last": AT_LEAST_1,  # history --last N commits
    "position": Range(0, note="a commit's place on its branch"),  # history add --position
    "window": Range(3, note="points in Otava's window"),  # changes --window
    "max_pvalue": Range(0, open_low=True, high=1, note="a p-value"),  # changes
    "min_magnitude": Range(0, note="a relative change; 0 = any"),  # changes
}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def check_numbers(args: argparse.Namespace) -> None:
    """Refuse a numeric flag out of range (RULES), a bad ``--shard`` or GPU list, of
    the flags the parsed command has (each has some of them)."""
    given = vars(args)
    numbers = {k: v for k, v in given.items() if isinstance(v, int | float)}
    for dest, rule in RULES.items():
        if dest in numbers and not isinstance(numbers[dest], bool):  # a bool is an int
            rule.check(_flag(dest), numbers[dest])
    from zlbench.runner.batch.shard import parse_gpu_list, parse_shard

    texts = {k: v for k, v in given.items() if isinstance(v, str)}
    if "shard" in texts:
        parse_shard(texts["shard"])
    for dest in ("gpus", "sweep_gpus"):
        if dest in texts:
            parse_gpu_list(texts[dest])

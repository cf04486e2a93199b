"""Every numeric flag of every command checked before the command runs: one
ZlbenchError line (exit 2) for a value out of its range, NaN or infinite.

:data:`RULES` names each numeric option by its argparse ``dest``; the test
``tests/untrusted/test_untrusted_numbers.py`` walks every ``type=int`` /
``type=float`` option of the parser and fails on one without a rule, so a new
numeric flag cannot go unchecked. ``--shard K/N`` and the GPU lists are parsed
here too, so their errors come before any work.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from zlbench.errors import ZlbenchError
from zlbench.gate.thresholds import MAX_CONFIRM_REPEATS
from zlbench.workflow.ab import MAX_ROUNDS as MAX_AB_ROUNDS


@dataclass(frozen=True)
class Range:
    """``low`` <= value (or < value when ``open_low``), <= ``high`` when given; finite always."""

    low: float
    open_low: bool = False
    note: str = ""
    high: float | None = None

    def check(self, flag: str, value: float) -> None:
        if not math.isfinite(value):
            raise ZlbenchError(f"{flag} {value}: must be a finite number")
        note = f" ({self.note})" if self.note else ""
        if value < self.low or (self.open_low and value == self.low):
            word = "more than" if self.open_low else "at least"
            raise ZlbenchError(f"{flag} {value:g}: must be {word} {self.low:g}{note}")
        if self.high is not None and value > self.high:
            raise ZlbenchError(f"{flag} {value:g}: must be at most {self.high:g}{note}")


AT_LEAST_0 = Range(0)
AT_LEAST_1 = Range(1)
POSITIVE = Range(0, open_low=True)

RULES: dict[str, Range] = {
    "op_timeout": Range(0, note="0 = no limit"),  # batch, baseline refresh
    "timeout": Range(0, note="0 = no limit"),  # run --timeout
    "per_process": AT_LEAST_1,
    "max_retries": AT_LEAST_0,
    "precompile_jobs": AT_LEAST_0,
    "gpu_share": Range(1, high=8, note="benchmark processes per GPU"),
    "warmup_ms": AT_LEAST_0,
    "replays": AT_LEAST_1,
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
}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def check_numbers(args: argparse.Namespace) -> None:
    """Refuse a numeric flag out of range (RULES), a bad ``--shard`` or GPU list."""
    for dest, rule in RULES.items():
        value = getattr(args, dest, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            rule.check(_flag(dest), value)
    from zlbench.runner.batch.shard import parse_gpu_list, parse_shard

    if isinstance(getattr(args, "shard", None), str):
        parse_shard(args.shard)
    for dest in ("gpus", "sweep_gpus"):
        if isinstance(getattr(args, dest, None), str):
            parse_gpu_list(getattr(args, dest))

"""``<run_dir>/timings.json``: where one op's wall time went (docs/screening.md,
"Time breakdown"). Written by :mod:`zlbench.plugins.phases`; read by
``benchmarks/phase_breakdown.py``. Wall-clock seconds, measured in the benchmark
process; GPU work is included where a phase synchronizes (warmup, capture, replays).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from zlbench.models.base import OnDisk, _Model

TIMINGS_JSON = "timings.json"


class SidePhases(_Model):
    """The timed calls (``do_bench`` replaced by zlbench's graph timing) of one side."""

    calls: int = 0  # measurements (one per row and side)
    first_call_s: float = 0.0  # the discarded first call: JIT compile, autotune, lazy init
    warmup_s: float = 0.0  # eager warmup calls (includes their GPU time)
    capture_s: float = 0.0  # CUDA graph capture
    replays_s: float = 0.0  # the timed graph replays
    sync_s: float = 0.0  # device synchronizations between the phases
    other_s: float = 0.0  # the rest of the measurement (plain fallback, bookkeeping)
    # waiting for the GPU's turn (--gpu-share N: another process of the GPU timing)
    gpu_wait_s: float = 0.0


class OpTimings(OnDisk):
    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["timings"] = "timings"
    run_name: str
    first_in_process: bool  # the process start and collection below were paid for it
    process_start_s: float | None = None  # process start -> plugins configured (imports, conftest)
    collection_s: float | None = None  # pytest collection of the whole process
    op_wall_s: float = 0.0  # first test start -> last test's teardown end
    # last test end -> this file written: the op-end hooks (before ZLBENCH_OP_END)
    op_end_s: float = 0.0
    # seconds per op-end hook, by plugin module (codegen: index + SASS disassembly,
    # ttgir: TTGIR dumps, autotune: its records, devices: the device check); the rest
    # of op_end_s is zlbench's own bookkeeping (rows). result.json is written after.
    op_end_hooks: dict[str, float] = Field(default_factory=dict)
    setup_s: float = 0.0  # pytest setup of its tests (fixtures)
    call_s: float = 0.0  # pytest call of its tests (the benchmark body)
    teardown_s: float = 0.0
    torch: SidePhases = Field(default_factory=SidePhases)  # reference side (latency_base)
    gems: SidePhases = Field(default_factory=SidePhases)  # measured side (latency)

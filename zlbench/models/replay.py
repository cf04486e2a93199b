"""Models of the kernel-replay tier (issue 51, docs/replay.md).

At record time the recorder keeps, for every kernel a row launched inside its timed
region, what replaying that launch needs (:class:`LaunchSpec`): the kernel's compile
request id (its record in the op's codegen index), the grid, and each argument:
scalars and constexprs by value, tensors by shape, dtype, strides, storage offset,
and their values exactly (integer, index and small tensors) or by statistics (large
float tensors). Per op, ``<run_dir>/codegen/launches.json`` (:class:`LaunchCapture`).

At gate time a changed row whose launches can all be replayed is timed standalone,
PR and base binaries interleaved on one GPU (``zlbench.plugins.replay``); what was
replayed, what fell back to the op path and why, is ``<gate>/replay/replay.json``
(:class:`ReplayRun`); the samples are an ordinary ``PairsFile``
(``<gate>/replay/pairs.json``), judged by the same pair rule as the op path's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt

from zlbench.models.ab import PairedSamples
from zlbench.models.base import OnDisk, _Model, upgrade_from
from zlbench.models.codegen import CompileRequest
from zlbench.models.run import RowKey
from zlbench.protocol.layout import PLAN_JSON, op_key
from zlbench.protocol.pairs import REPLAY_REPS, SAMPLE_TARGET_MS

LAUNCHES_JSON = "launches.json"  # in an op's codegen dir, next to index.json
REPLAY_DIR = "replay"  # in a gate dir
REPLAY_JSON = "replay.json"
REPLAY_PAIRS = "pairs.json"

# Tensors of at most this many elements keep their exact values (any dtype); integer and
# bool tensors up to EXACT_INT_MAX (indices, masks, offsets: their values steer control
# flow and addresses). Larger ones keep statistics only.
EXACT_MAX = 16
EXACT_INT_MAX = 64

ArgKind = Literal["tensor", "tensordesc", "int", "float", "bool", "none", "str", "dtype", "other"]
# The kinds that carry a tensor: a tensor, and a host tensor descriptor (its base)
TENSOR_KINDS = frozenset({"tensor", "tensordesc"})
Instrument = Literal["kernel-replay", "op"]


# A captured value that is not finite (a mask's -inf in a 0-d tensor, a NaN fill) is
# written as JSON's -Infinity/NaN, not as pydantic's default null, which no float field
# reads back (a gate's plan.json was refused so on an H100, 2026-12-06). Pydantic takes
# the setting from the model being dumped, so every model that holds an ArgSpec has it.
_NON_FINITE = ConfigDict(extra="forbid", frozen=False, ser_json_inf_nan="constants")


class TensorStats(_Model):
    """What a large tensor's values looked like: enough to draw stand-in values of the
    same range and spread (integral values stay integral)."""

    model_config = _NON_FINITE

    min: StrictFloat | StrictInt
    max: StrictFloat | StrictInt
    mean: StrictFloat | StrictInt
    std: StrictFloat | StrictInt = 0.0
    integral: StrictBool = False  # every finite value is a whole number
    nonfinite: StrictInt = Field(0, ge=0)  # inf and nan among them


class ArgSpec(_Model):
    """One argument of a launch, in the kernel's parameter order (constexprs included,
    as the launcher passed them: the binary's own values are the compile request's, and
    its launcher drops these slots)."""

    model_config = _NON_FINITE

    name: str = ""  # the parameter's name
    kind: ArgKind
    value: StrictInt | StrictFloat | StrictBool | str | None = None  # scalars, str, dtype
    # tensors
    dtype: str = ""  # torch dtype without "torch.": "bfloat16", "int64"
    shape: list[StrictInt] = Field(default_factory=list)
    strides: list[StrictInt] = Field(default_factory=list)
    offset: StrictInt = Field(0, ge=0)  # storage offset, in elements
    storage: StrictInt = Field(0, ge=0)  # storage size, in elements (what may be touched)
    buffer: StrictInt = Field(0, ge=0)  # the row's n-th distinct storage (aliasing)
    align16: StrictBool = True  # data pointer 16-byte aligned (triton specialises on it)
    data: list[StrictInt | StrictFloat | StrictBool] | None = None  # exact, storage order
    stats: TensorStats | None = None  # otherwise
    digest: str = ""  # sha256[:16] of the exact values' bytes (with data)
    # a host tensor descriptor (kind "tensordesc": triton.tools.tensor_descriptor, the TMA
    # of FlagGems' Hopper matmuls): the tensor fields above are its base's, these its own
    desc_shape: list[StrictInt] = Field(default_factory=list)
    desc_strides: list[StrictInt] = Field(default_factory=list)
    block_shape: list[StrictInt] = Field(default_factory=list)
    padding: str = ""  # "zero" or "nan"


# Where a 64-bit device address lies: CUDA's unified address space on x86-64 and
# aarch64 hosts is 48 bits, and an allocation is never below 4 GiB (an H100's pointers,
# 2026-12-07: 0x7f4d99e0be00). An integer tensor whose every value is in this range is
# taken to be a table of device addresses (block_diag's ptrs_ptr: each input's
# data_ptr()), which a replay in another process cannot rebuild: its pointees are not
# there, and the kernel faults (an illegal memory access) or reads other memory.
ADDRESS_RANGE = (1 << 32, 1 << 48)


def holds_addresses(a: ArgSpec) -> bool:
    """Whether tensor ``a`` looks like a table of device addresses (:data:`ADDRESS_RANGE`):
    a 64-bit integer tensor whose every exact value, or whose statistics' whole range,
    lies in it. An output the capture saw before it was written may hold such values
    too; the row then falls back to the op path, never to a wrong time."""
    if a.dtype not in ("int64", "uint64"):
        return False
    lo, hi = ADDRESS_RANGE
    if a.data is not None:
        return bool(a.data) and all(
            isinstance(v, int) and not isinstance(v, bool) and lo <= v < hi for v in a.data
        )
    if a.stats is not None:
        return lo <= a.stats.min and a.stats.max < hi
    return False


class LaunchSpec(_Model):
    """One distinct launch of a kernel inside a row's timed region."""

    model_config = _NON_FINITE

    kernel_id: str  # CompileRecord.id in the op's codegen index
    kernel: str  # the Triton function's name
    grid: list[StrictInt] = Field(min_length=3, max_length=3)
    args: list[ArgSpec] = Field(default_factory=list)
    count: StrictInt = Field(1, ge=1)  # times this launch ran per timed call (last call)
    # why this launch cannot be replayed standalone, "" when it can: "graph" (launched
    # while a CUDA graph was captured), "side stream", "unsupported argument ..."
    why_not: str = ""


class RowLaunches(_Model):
    """A row's timed launches, in first-launch order."""

    model_config = _NON_FINITE

    run_name: str
    op: str
    dtype: str
    shape: str
    occurrence: int = 0
    launches: list[LaunchSpec] = Field(default_factory=list)
    # more distinct launches than the capture keeps for one row (MAX_LAUNCHES_PER_ROW):
    # the row is not replayed
    truncated: StrictBool = False
    # why the row's capture is not whole, "" when it is: "capture failed: ..." (an
    # exception while capturing one of its launches): the row is not replayed
    why_not: str = ""
    # the kernel ids the capture's replay-mode run launched inside this row's timed calls
    # (any call, by its codegen index; ``baseline capture`` adds them: docs/replay.md):
    # a changed kernel of the row outside them ran only outside the timed region, or
    # not at all, where the gate measures. None: not known (the plan then assumes it ran)
    replay_timed: list[str] | None = None
    # the order the row's launches ran in its last timed call, each run by its index in
    # ``launches`` (a launch's index as often as its ``count``), given only when every run
    # of a launch used the storages of its first (zlbench.plugins.replay_capture); None:
    # not captured (older captures, a launch on other storages, more runs than the cap)
    order: list[StrictInt] | None = None


def has_values(a: ArgSpec) -> bool:
    """Whether tensor argument ``a`` carries values to fill its buffer from: exact
    ``data`` or ``stats``."""
    return a.data is not None or a.stats is not None


def unvalued(launches: Sequence[LaunchSpec]) -> list[tuple[int, int]]:
    """(launch index, argument index) of each tensor argument of ``launches`` (a row's,
    in capture order) that has no values (:func:`has_values`), is not empty (a 0 in its
    shape: nothing to fill) and whose buffer no earlier launch of the row gave values
    to. A capture reads every tensor of a row's first ``VALUED_LAUNCHES`` distinct
    launches; past them, only a buffer not valued yet (``zlbench.plugins.replay_capture``:
    ormqr's 4,096 launches, one a reflector, each on the same 4096² matrix). A replay
    fills each buffer from the launches that value it, and runs the launches in order,
    so a later launch reads what the earlier ones left there, as it did; a tensor listed
    here has nothing to be filled from."""
    valued: set[int] = set()
    gaps = []
    for n, launch in enumerate(launches):
        for i, a in enumerate(launch.args):
            if a.kind not in TENSOR_KINDS:
                continue
            if has_values(a):
                valued.add(a.buffer)
            elif a.buffer not in valued and all(a.shape):
                gaps.append((n, i))
    return gaps


# Why a row whose launches pass a buffer between them is not replayed when one of them
# ran more than once: the order of their runs is not captured (order_unknown).
INTERMEDIATE_BUFFER = "intermediate buffer between launches that run more than once"


def run_order(launches: Sequence[LaunchSpec], order: Sequence[int] | None) -> list[int] | None:
    """``order`` (a row's captured run order, :attr:`RowLaunches.order`) when it is one of
    ``launches``' runs: every index one of theirs, each as often as its launch's
    ``count``; else None (not given, or not consistent with the launches: taken as not
    captured, never trusted)."""
    if order is None:
        return None
    runs = [0] * len(launches)
    for i in order:
        if not 0 <= i < len(launches):
            return None
        runs[i] += 1
    return list(order) if runs == [launch.count for launch in launches] else None


def run_sequence(launches: Sequence[LaunchSpec], order: Sequence[int] | None) -> list[int]:
    """The launches' indices in the order a replayed call runs them: the captured
    :func:`run_order`, else each launch ``count`` times in capture order (A A B)."""
    known = run_order(launches, order)
    if known is not None:
        return known
    return [i for i, launch in enumerate(launches) for _ in range(launch.count)]


def order_unknown(launches: Sequence[LaunchSpec], order: Sequence[int] | None = None) -> bool:
    """Whether a tensor buffer passes between two of ``launches`` (one writes what the
    next reads) where either of them ran more than once in the timed call (``count``
    > 1) and the row's run order (``order``, :func:`run_order`) was not captured: the
    capture keeps each launch once, in first-launch order, so the order in which the
    runs interleaved (A B A B, or A A B B) is not known without it, and a replay in the
    wrong order reads other data. A buffer used twice by one launch is an in-place
    kernel (the replay restores it); one passed between launches that each ran once is
    replayed in capture order, one storage (``materialize_row``)."""
    if run_order(launches, order) is not None:
        return False
    users: dict[int, set[int]] = {}
    for i, launch in enumerate(launches):
        for a in launch.args:
            if a.kind in TENSOR_KINDS:
                users.setdefault(a.buffer, set()).add(i)
    return any(len(u) > 1 and any(launches[i].count > 1 for i in u) for u in users.values())


class LaunchCapture(OnDisk):
    """``<run_dir>/codegen/launches.json``: every row's timed launches of one op."""

    model_config = _NON_FINITE

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["launch_capture"] = "launch_capture"
    rows: list[RowLaunches] = Field(default_factory=list)
    # True: written by a capture that lists every row it saw timed, a row whose timed
    # calls launched no Triton kernel with no launches, and counts ``unnamed_calls``;
    # False (older captures): a row that launched nothing is not listed
    lists_every_row: StrictBool = False
    # timed calls that began while the op's row was not named yet (its dtype or shape
    # unknown): their launches are attributed to no row, so a row listed without
    # launches may have launched some there (docs/replay.md, "What the model forecasts")
    unnamed_calls: StrictInt = Field(0, ge=0)
    # True: written by a process where every Triton launch went through Python's
    # ``CompiledKernel`` (the capture's hook): FlagGems' C extension was not loaded
    # (``USE_C_EXTENSION=1`` with its ``c_operators`` library: its C++ launches bypass
    # the hook, so a row listed without launches may have launched some). False: not
    # known (an older capture, or the extension loaded)
    every_launch_hooked: StrictBool = False
    # the GPU model the capture ran on (torch's device name, as nvidia-smi names it):
    # which Triton kernels FlagGems launches may depend on the GPU (its per-architecture
    # backends), so a row that launched nothing proves it only on that model; "": not known
    gpu_model: str = ""

    def whole(self, row: RowLaunches) -> bool:
        """Whether ``row``'s launches are every Triton kernel its last timed call
        launched: a capture that lists every row, saw no unnamed timed call and hooked
        every launch, and the row whole (not truncated, no ``why_not``)."""
        return (
            self.lists_every_row
            and self.unnamed_calls == 0
            and self.every_launch_hooked
            and not row.truncated
            and not row.why_not
        )

    def launched_nothing(self, row: RowLaunches) -> bool:
        """Whether the capture shows ``row``'s timed calls launching no Triton kernel:
        :meth:`whole`, with no launch."""
        return self.whole(row) and not row.launches

    def rows_of(self, run_name: str, dtype: str, shape: str) -> list[RowLaunches]:
        """The capture's rows of (``run_name``, ``dtype``, ``shape``), every occurrence."""
        return [r for r in self.rows if (r.run_name, r.dtype, r.shape) == (run_name, dtype, shape)]

    def row_of(self, run_name: str, dtype: str, shape: str, at: CaptureRowAt) -> RowLaunches | None:
        """The capture's row of a baseline row: of (``run_name``, ``dtype``, ``shape``),
        at occurrence ``at.occurrence`` as the capture numbers them, when the capture's
        occurrences of it are ``at.expected``, each listed once; else None (none listed,
        or numbered otherwise than the baseline's rows imply: a capture merged from row
        parts numbers each part's from 0, a part without the rows between two
        occurrences ran them as one)."""
        same = self.rows_of(run_name, dtype, shape)
        if sorted(r.occurrence for r in same) != sorted(at.expected):
            return None
        return next(r for r in same if r.occurrence == at.occurrence)

    def proves_no_launch(self, run_name: str, dtype: str, shape: str, at: CaptureRowAt) -> bool:
        """Whether the capture proves that the baseline row (``run_name``, ``dtype``,
        ``shape``) at ``at`` (:func:`capture_rows_at`) times no Triton kernel: its row
        (:meth:`row_of`) :meth:`launched_nothing`. Another row of the same dtype and
        shape may launch kernels (v7's einsum: equations of one input shape, some served
        by Triton kernels, some not). No compiler can change such a row's time: the
        kernel-replay tier judges it without timing it (docs/replay.md)."""
        row = self.row_of(run_name, dtype, shape, at)
        return row is not None and self.launched_nothing(row)


class CaptureRowAt(_Model):
    """Where a baseline row's capture row is (:func:`capture_rows_at`)."""

    model_config = ConfigDict(frozen=True)

    occurrence: StrictInt  # as the capture numbers its rows of the row's dtype and shape
    expected: frozenset[int]  # every occurrence the capture holds of that dtype and shape


def capture_rows_at(keys: Sequence[RowKey]) -> dict[RowKey, CaptureRowAt]:
    """Each baseline row of ``keys`` (one or more runs' rows, each run's in the order
    they were measured) with its capture row's place. A capture numbers a run's rows as
    its recorder saw them (``plugins.replay_capture``, ``LaunchRecorder.row_for``): a
    row of the same dtype and shape as the row before it continues that row; any other
    is the next occurrence of its dtype and shape. The baseline's own occurrence
    (``RowKey.occurrence``) counts the rows of one benchmark op; a run of several
    benchmark ops numbers them otherwise (v7's to_copy: six conversions of one dtype
    and shape; ctc_loss: forward, then backward)."""
    seen: dict[str, list[tuple[str, str]]] = {}  # run -> its rows' (dtype, shape) groups
    placed: list[tuple[RowKey, tuple[str, str, str, str], int]] = []
    for k in keys:
        groups = seen.setdefault(op_key(k.repo, k.run_name), [])
        ds = (k.dtype, k.shape)
        if not groups or groups[-1] != ds:
            groups.append(ds)
        placed.append((k, (k.repo, k.run_name, *ds), groups.count(ds) - 1))
    expected: dict[tuple[str, str, str, str], set[int]] = {}
    for _, where, occ in placed:
        expected.setdefault(where, set()).add(occ)
    return {
        k: CaptureRowAt(occurrence=occ, expected=frozenset(expected[where]))
        for k, where, occ in placed
    }


def merge_captures(parts: Sequence[tuple[str, LaunchCapture]], run_name: str) -> LaunchCapture:
    """One capture of the op ``run_name`` from its row parts' (``(part run name,
    capture)``, in part order): every part's rows in that order, a row of the part named
    after the op instead (other rows as they are); a flag true only where every part's
    is, the unnamed calls summed, the GPU model only where every part names the same
    (else "": not known). Each row keeps its part's occurrence: the parts do not know
    the unsplit order, so where a dtype and shape's rows span parts the capture numbers
    them otherwise than the baseline's rows imply, and :meth:`LaunchCapture.row_of`
    matches none of them (their rows fall back). No parts: a capture that proves
    nothing."""
    if not parts:
        return LaunchCapture()
    caps = [c for _, c in parts]
    models = {c.gpu_model for c in caps}
    return LaunchCapture(
        rows=[
            r.model_copy(update={"run_name": run_name}) if r.run_name == part else r
            for part, c in parts
            for r in c.rows
        ],
        lists_every_row=all(c.lists_every_row for c in caps),
        unnamed_calls=sum(c.unnamed_calls for c in caps),
        every_launch_hooked=all(c.every_launch_hooked for c in caps),
        gpu_model=models.pop() if len(models) == 1 else "",
    )


# A row whose PR and base outputs differ is still timed by its replay when the base's
# own two runs differ too, and the PR differs from the base no more than this many times
# as much (docs/replay.md "Outputs that race"): the row's outputs race (an atomic, a
# scatter whose duplicate indices any write may win), so they cannot tell the PR's work
# from the base's; a PR farther off than the base's own spread still falls back.
RACY_MARGIN = 2.0
# The base's runs at most (the timed sides' own run included) when PR and base outputs
# differ: more while the base differs from itself, yet not enough to cover the PR; one
# pair of runs is a thin estimate of a race's spread (an A/A's flash_attention_forward
# row, identical binaries, lay 2.25x farther than the base's one pair, forty-seventh
# session). The runs stop at once when the base's second run agrees with its first.
BASE_RUNS = 5


def outputs_race(max_error: float | None, base_spread: float | None) -> bool:
    """Whether outputs that differ PR vs base by ``max_error`` race, the base's own runs
    differing by ``base_spread`` (each a finite ``|a - b| / (|b| + atol)`` maximum;
    None: not finite, or not measured): the base differs from itself (> 0) and the PR
    differs from the base within :data:`RACY_MARGIN` times that."""
    if max_error is None or base_spread is None or base_spread <= 0:
        return False
    return max_error <= RACY_MARGIN * base_spread


def error_text(err: float) -> str:
    """A max error as the replay's lines and reports say it: 3 significant digits, or
    inf."""
    return f"{err:.3g}" if math.isfinite(err) else "inf"


class ReplayedRow(_Model):
    """How one changed row was timed at the gate."""

    key: RowKey
    instrument: Instrument
    why: str = ""  # instrument "op": why not replayed; else ""
    kernels: list[str] = Field(default_factory=list)  # kernel ids replayed (changed first)
    # PR vs base outputs after timing; "racy": they differ, as the base's own runs do
    outputs: Literal["", "match", "differ", "racy"] = ""
    max_error: StrictFloat | None = None  # largest |PR - base| / (|base| + atol) seen
    # outputs that differed: the largest error of the base's runs against its first
    # (None: not finite, or not run); what ``outputs_race`` weighs ``max_error`` against
    base_spread: StrictFloat | None = None
    base_runs: StrictInt = Field(0, ge=0)  # the base's runs compared (0: outputs matched)
    pairs: StrictInt = Field(0, ge=0)
    reps: StrictInt = Field(0, ge=0)  # single calls per sample (0: not replayed, or not said)
    changed: bool = True  # False: proven unchanged, replayed by ``gate --time all --replay``
    # where a replayed row's host seconds went (the worker's clock, the device synced at
    # each phase's end): load (both sides' binaries), materialize (arguments made and
    # checked), time (warm-up and the pairs), outputs (each side run again, compared)
    phases: dict[Literal["load", "materialize", "time", "outputs"], float] = Field(
        default_factory=dict
    )

    @property
    def timed_by_replay(self) -> bool:
        """Replayed with outputs that match, or that race (:func:`outputs_race`, re-derived
        from the row's errors): the only rows whose samples count."""
        if self.instrument != "kernel-replay":
            return False
        racy = self.outputs == "racy" and outputs_race(self.max_error, self.base_spread)
        return self.outputs == "match" or racy


class DeferredRow(_Model):
    """A changed row left untimed by ``--time-budget``, with the command that times it."""

    key: RowKey
    score: StrictFloat  # how much its code changed (the ordering rule's key)
    command: str


class WorkerRow(_Model):
    """One line of a replay worker's ``rows.jsonl``: a row it ended and, when it was
    replayed, its samples (appended as each row ends, so a worker's bookkeeping stays
    linear in its rows and what a dead worker ended survives)."""

    row: ReplayedRow
    samples: PairedSamples | None = None


class SideBuildTime(_Model):
    """Where one side's build went (``ReplayRun.builds``): its rebuild workers, the
    kernels it built and how many of them compiled (not cache hits), its wall seconds,
    the slowest worker's, each phase's seconds summed over its workers (the rebuild
    worker's ``PHASES``, and ``start``: a worker's wall not in them, the interpreter's
    start and its first imports), and the parent's time around its workers."""

    side: Literal["pr", "base"]
    workers: StrictInt = Field(ge=0)
    kernels: StrictInt = Field(ge=0)
    compiled: StrictInt = Field(0, ge=0)
    seconds: StrictFloat = 0.0
    slowest_s: StrictFloat = 0.0
    phases_s: dict[str, StrictFloat] = Field(default_factory=dict)
    # the parent's own: the last worker's start after the side began (its inputs
    # written, the processes spawned), and the side's end after its last worker's
    # (the outputs read); on an H100 a side of 14 workers took 13 s beyond its slowest
    # worker's wall, unexplained (docs/measurements.md, thirty-first session)
    late_s: StrictFloat = 0.0
    after_s: StrictFloat = 0.0


# How the replay's L2 flush evicts L2 (plugins.replay.timing.l2_flush): "zero" the default
FlushBy = Literal["zero", "read"]

# The memory state a replayed row's timed call starts from (``gate --replay-l2``), the
# same for both sides; the plan's flush, flush_by and restore_each
# (:meth:`ReplayPlanFile.with_l2`; docs/replay.md "The L2 before a timed call"):
# "flush": L2 zeroed over twice its size and the row's written buffers restored before
# each timed call, inputs cold (SOL-ExecBench's protocol; the default until the
# fiftieth session); "clean": L2 read over twice its size instead, so it holds clean
# lines, nothing of the flush's to write back inside the timed call; "warm" (the
# default, :data:`DEFAULT_L2`): no flush and the buffers restored once a sample, a
# sample's calls back to back on the same inputs, as FlagGems' benchmark graph replays
# them. On an H100 (docs/measurements.md, forty-fourth and fiftieth sessions) the
# pointwise 4096² rows then read as the op path does: v5's broad change agrees with the
# op path on 56 of 61 rows (clean 52, flush 53 of 64), two A/As PASS every row, p90 0.31 %.
L2Policy = Literal["flush", "clean", "warm"]
DEFAULT_L2: L2Policy = "warm"
L2_POLICIES: dict[L2Policy, tuple[bool, FlushBy, bool]] = {  # -> (flush, flush_by, restore_each)
    "flush": (True, "zero", True),
    "clean": (True, "read", True),
    "warm": (False, "zero", False),
}


class ReplayRun(OnDisk):
    """``<gate>/replay/replay.json``: the replay tier's plan and outcome."""

    FORMAT_VERSION: ClassVar[int] = 2  # 2: l2 defaults to DEFAULT_L2 (1: "flush")
    schema_version: int = FORMAT_VERSION
    kind: Literal["replay_run"] = "replay_run"
    changed_rows: StrictInt = Field(0, ge=0)  # rows whose timed kernels changed
    rows: list[ReplayedRow] = Field(default_factory=list)
    deferred: list[DeferredRow] = Field(default_factory=list)
    # rows of replayed ops whose timed kernels the screen proved identical to the base's
    identical: list[RowKey] = Field(default_factory=list)
    # rows the screen could not prove unchanged whose capture proves that their timed
    # calls launch no Triton kernel (``LaunchCapture.proves_no_launch``): not timed, not
    # counted in ``changed_rows``; the judge re-derives them from the baseline's captures
    no_launch: list[RowKey] = Field(default_factory=list)
    seconds: StrictFloat = 0.0  # the whole step
    build_seconds: StrictFloat = 0.0  # of which: both sides' builds (at once)
    builds: list[SideBuildTime] = Field(default_factory=list)  # each side's
    worker_seconds: StrictFloat = 0.0  # of which: the replay workers (timing the rows)
    # "K/N": part K of N of the plan's rows to replay (``gate --replay-part``), the
    # plan's own lists whole; "": the whole plan (or the parts merged)
    part: str = ""
    gpu: str = ""  # the GPU model the rows were replayed on, when known
    # what the plan was made of: the baseline's manifest digest, the PR's and the base's
    # compilers as the screen names them (a part is merged only into the same)
    planned_from: str = ""
    # the L2 policy its rows were timed under (``gate --replay-l2``; a part is merged only
    # into a gate of the same); a version 1 file without it: "flush" (its upgrade)
    l2: L2Policy = DEFAULT_L2

    @property
    def replayed(self) -> int:
        """Changed rows replayed."""
        return sum(1 for r in self.rows if r.instrument == "kernel-replay" and r.changed)

    @property
    def unchanged_replayed(self) -> int:
        """Rows proven unchanged and replayed all the same (``gate --time all --replay``)."""
        return sum(1 for r in self.rows if r.instrument == "kernel-replay" and not r.changed)

    def coverage(self) -> str:
        """``41 of 45 changed rows replayed (91 %)`` (``, 3 of them with outputs that
        race as the base's own do`` where some did: :func:`outputs_race`), and ``; 50
        unchanged row(s) too (--time all)`` where there are some (an A/A: ``no changed
        rows; 99 unchanged row(s) replayed (--time all)``), and ``; 9 row(s) proven by
        their capture (no Triton kernel timed)`` where there are some
        (:attr:`no_launch`)."""
        n, also = self.changed_rows, self.unchanged_replayed
        proven = (
            f"; {len(self.no_launch)} row(s) proven by their capture (no Triton kernel timed)"
            if self.no_launch
            else ""
        )
        if not n and also:
            return f"no changed rows; {also} unchanged row(s) replayed (--time all){proven}"
        if not n:
            return f"no changed rows{proven}"
        pct = f" ({100 * self.replayed / n:.0f} %)"
        racy = sum(1 for r in self.rows if r.changed and r.timed_by_replay and r.outputs == "racy")
        pct += f", {racy} of them with outputs that race as the base's own do" if racy else ""
        tail = f"; {also} unchanged row(s) too (--time all)" if also else ""
        return f"{self.replayed} of {n} changed rows replayed{pct}{tail}{proven}"


@upgrade_from(ReplayRun, 1)
def _replay_run_from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 -> 2: the default L2 policy became "warm"; a version 1 file that names
    none was timed under the default of its day, "flush"."""
    return {"l2": "flush", **data}


# --------------------------------------------------------------------------- the worker's plan

REPLAY_PLAN = PLAN_JSON  # in <gate>/replay/: what the replay worker is asked to time
Side = Literal["pr", "base"]


class BinaryRef(_Model):
    """One side's binary of one kernel: a triton cache group dir (``<cache>/<hash>/``:
    the metadata json, the cubin and the IR files, ``__grp__<name>.json``) and the code
    digest the screen's rebuild gave its cubin (``CompileResult.cubin_code_sha256``);
    the replay refuses a group whose cubin has another."""

    group_dir: str
    code_digest: str = Field(min_length=1)


class PlannedRow(_Model):
    """One row the replay worker times: its launches and, per kernel id they name, each
    side's binary."""

    model_config = _NON_FINITE

    key: RowKey
    launches: list[LaunchSpec] = Field(min_length=1)
    binaries: dict[str, dict[Side, BinaryRef]] = Field(default_factory=dict)
    order: list[StrictInt] | None = None  # the capture's run order (RowLaunches.order)
    # its own hang limit (:func:`row_timeout`), None: the plan's ``row_timeout_s``
    timeout_s: StrictFloat | StrictInt | None = Field(None, gt=0)


# How many times its modelled seconds (``replay_plan.replay_cost_s``, the base's
# recorded calls) a row may take before the caller takes it for hung, when that is more
# than the plan's ``row_timeout_s``. ormqr's float64 4096² row is 704 ms a call on the
# H200's record, about 14 s modelled; its PR side under v7's broad change runs its calls
# up to 19 times slower (4,945 ms against 257 ms in float32, an H100, forty-ninth
# session): about 200 s, past the 120 s every row had.
HANG_FACTOR = 25


def row_timeout(cost_s: float, default_s: float) -> float | None:
    """A row's own hang limit: :data:`HANG_FACTOR` times its modelled seconds when that
    is more than the plan's ``default_s``; else None (the plan's)."""
    limit = HANG_FACTOR * cost_s
    return round(limit, 1) if limit > default_s else None


# A row not tried after an earlier row of its op broke the replay's device (a fault, a
# death, a hang): each break costs a fresh worker process (torch, CUDA, the next rows'
# launchers: 11-20 s on an H100), and on part 3 of v7's broad change (forty-fifth
# session) four rows of one op broke it one after another (fused_moe_int8_w8a16: its
# int64 topk_ids drawn from statistics): four of the eight restarts of that part.
QUARANTINED = "not tried: kernel `{kernel}` broke the replay in an earlier row of this op"


def quarantined(rows: Sequence[PlannedRow], culprit: int) -> dict[int, str]:
    """The rows after ``rows[culprit]`` (one whose replay broke the device) that are
    not tried (:data:`QUARANTINED`): those of the same op launching a kernel of a name
    it launched, each with why (one line). Rows of other ops, or of the op whose
    kernels are all others, are tried as planned."""
    bad = rows[culprit]
    names = dict.fromkeys(launch.kernel for launch in bad.launches)
    out: dict[int, str] = {}
    for i in range(culprit + 1, len(rows)):
        row = rows[i]
        if row.key.op != bad.key.op:
            continue
        shared = next((n for n in names if any(x.kernel == n for x in row.launches)), None)
        if shared is not None:
            out[i] = QUARANTINED.format(kernel=shared)
    return out


class ReplayPlanFile(OnDisk):
    """``python -m zlbench.plugins.replay.worker PLAN_JSON OUT_DIR``'s input
    (``<gate>/replay/plan.json``): the rows to replay, in order, with the compile
    request of every kernel they launch, and how to time them."""

    model_config = _NON_FINITE

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["replay_plan"] = "replay_plan"
    device: str = "cuda"
    rule: str = ""  # zlbench.protocol.pairs.PairRule.to_json(); "" the default rule
    warmup: StrictInt = Field(3, ge=0)
    # timed single calls a sample (their median), at most; fewer for a long call: as many
    # as span sample_ms of the slower side's probe call, at least one
    # (zlbench.protocol.pairs.sample_reps); sample_ms None: always ``reps``
    reps: StrictInt = Field(REPLAY_REPS, ge=1)
    sample_ms: StrictFloat | None = Field(SAMPLE_TARGET_MS, gt=0)
    # untimed calls of a side just before each of its samples (0: none): a probe of the
    # first-sample effect (docs/replay.md), not a default
    settle: StrictInt = Field(0, ge=0)
    # The L2 policy's three settings (:data:`L2_POLICIES`, :meth:`with_l2`). flush: L2
    # flushed before each timed call (False: not at all); flush_by: how (timing.l2_flush):
    # "zero" writes zeros over twice its size (L2 is left holding written lines, written
    # back to DRAM when the timed call evicts them), "read" reads such a buffer (L2 left
    # holding clean lines); restore_each: a row's written buffers restored before each
    # timed call (False: once before each sample; a sample's calls then see each other's
    # writes).
    flush: StrictBool = True
    flush_by: FlushBy = "zero"
    restore_each: StrictBool = True
    rtol: StrictFloat = Field(1e-3, ge=0)  # PR vs base outputs (widened by dtype)
    atol: StrictFloat = Field(1e-5, ge=0)
    row_timeout_s: StrictFloat | StrictInt = Field(120.0, gt=0)  # a row past it: hung
    # the requests are a verified baseline's: a generated kernel's recorded module text
    # may be executed to find its JIT function (docs/security.md)
    exec_generated: StrictBool = False
    requests: dict[str, CompileRequest] = Field(default_factory=dict)  # kernel id ->
    rows: list[PlannedRow] = Field(default_factory=list)

    def timeout_of(self, i: int) -> float:
        """Row ``i``'s hang limit: its own (:attr:`PlannedRow.timeout_s`), else
        ``row_timeout_s`` (also past the last row)."""
        own = self.rows[i].timeout_s if 0 <= i < len(self.rows) else None
        return own or self.row_timeout_s

    def with_l2(self, policy: L2Policy) -> ReplayPlanFile:
        """This plan with ``policy``'s flush, flush_by and restore_each (:data:`L2_POLICIES`)."""
        flush, flush_by, restore_each = L2_POLICIES[policy]
        return self.model_copy(
            update={"flush": flush, "flush_by": flush_by, "restore_each": restore_each}
        )

"""Which changed rows the kernel-replay tier times, in what order (issue 51; pure: no
torch, no files).

Input: the codegen screen (through :class:`zlbench.codegen.timed.TimedKernels`: which
kernels count for which row), the baseline rows to judge, each op's launch capture
(``codegen/launches.json``, :class:`zlbench.models.replay.LaunchCapture`; None where
the baseline has none), the rows' estimated replay seconds (:func:`replay_cost_s`),
the op path's recorded seconds per op, the gate's ``--time-budget`` and each op's
family. Output: a :class:`ReplayPlan`.

**Changed rows.** A row is *changed* when the screen does not prove it unchanged:
some kernel that counts for it (timed: :mod:`zlbench.codegen.timed`) is not
identical, or the records cannot say (no records for its op, kernels its op's record
pass ran unrecorded, a row no record names). A row with a kernel that no longer
compiles is not changed but *failed* (``ReplayPlan.failed``): it is the op path's
failure (the gate holds such ops back, their rows FAILED); it is never replayed. A row
whose kernels are all identical is not in the plan at all.

**No kernel timed.** A changed row whose op's capture proves that its timed calls
launch no Triton kernel (:meth:`~zlbench.models.replay.LaunchCapture.proves_no_launch`:
a capture that lists every row it saw timed, saw no timed call before its row was
named, hooked every launch, no FlagGems C extension; the row's own capture row,
:meth:`~zlbench.models.replay.LaunchCapture.row_of`, whole and without a launch), taken
on this runner's GPU model (``proof_gpu``: FlagGems
picks its kernels per architecture; a capture of another model, or none named, falls
back saying so), is not changed: no compiler can change the time of a timed
region that runs no Triton kernel (views such as ``flatten``, aten-served paths; their
op's kernels ran in setup, which the screen counts for a row none of whose kernels it
saw timed). It goes to ``ReplayPlan.no_launch``: neither replayed nor timed through
FlagGems, nor counted in ``changed_rows``; the judge re-derives it from the baseline's
captures and PASSes it (:mod:`zlbench.gate.replay`). A failed kernel still fails the row
first.

**Replayable.** A changed row is replayed only when every one of these holds; else it
falls back to the op path (timed through FlagGems) with the first reason that applies,
in this order (the words: ``zlbench.report.replay_text``'s ``FALLBACK_*``):

1. the screen can tell what changed: the op has records, none unrecorded, the records
   name the row's kernels, and every changed kernel was rebuilt (not MISSING);
2. its op has a capture (``no capture for this op``) that holds the row
   (``no launches captured for this row``; its own row: the capture's row of its run
   name, dtype and shape at the occurrence the capture numbers it
   (:func:`~zlbench.models.replay.capture_rows_at`), when the capture's occurrences of
   them are the ones the baseline's rows imply, else ``its capture's rows of this dtype
   and shape are not the baseline's``) and is not ``truncated`` and not marked
   incomplete (its ``why_not``: ``capture failed: ...``);
3. every launch names a kernel the baseline's codegen records hold for this op (else
   ``kernel <id> not in the baseline's codegen records``: bad input, never replayed);
4. no launch says why it cannot be replayed (``why_not``: ``graph`` -> ``launch captured
   in a CUDA graph``, ``side stream``, ``unsupported argument ...``, or its own words);
5. every argument can be rebuilt: a known kind, a tensor with a dtype and its values
   (exact ``data`` or ``stats``; an empty tensor needs neither; past a capture's first
   64 distinct launches, a buffer an earlier launch of the row valued:
   :func:`~zlbench.models.replay.unvalued`), and not a table of
   device addresses (``unsupported argument <name> (a table of device addresses)``:
   :func:`~zlbench.models.replay.holds_addresses`, a 64-bit integer tensor whose every
   value lies where a device pointer does; block_diag's ``ptrs_ptr`` faulted the replay
   on an H100);
6. no launched kernel failed to build or was not rebuilt (FAILED / MISSING);
7. no ``buffer`` passes between two launches of which one ran more than once in the
   timed call, unless the capture gave the order of their runs (``intermediate buffer
   between launches that run more than once``:
   :func:`~zlbench.models.replay.order_unknown`; ``RowLaunches.order``, taken only when
   it is one of the launches' runs, :func:`~zlbench.models.replay.run_order`, and
   replayed in that order). A buffer passed between launches that each ran once (a
   two-kernel reduction's partials) is replayed as the op ran it: the row's launches in
   capture order on one storage; one shared by the arguments of one launch is an in-place
   kernel, which the replay restores;
8. every changed kernel that counts for the row is among its launches (``changed
   kernel `name` not among its captured launches``: replaying the rest would not time
   the change). A changed kernel does not count when the row's replay-mode run did
   not launch it while timed (``replay_timed``), nor when it is another occurrence's:
   in a capture taken on this runner's GPU model that holds every launch of the row's
   own occurrence and of the others of its dtype and shape (``LaunchCapture.whole``:
   every row listed, no unnamed call, every launch hooked), another occurrence launched
   it and this one did not. The records, and ``replay_timed`` from them, name a
   kernel for a dtype and shape, not an occurrence: v7's div_scalar_mode (an H100,
   2026-12-06), whose rounding modes are occurrences of one dtype and shape, each with
   its own kernel, had every mode's kernel named for each row.

**The ordering rule.** Replayable rows are taken by how much their code changed, the
largest first; the row label (``RowKey.label``) breaks ties, so the order is
deterministic. A row's score is the sum over the changed kernels that count for it
(TTGIR, LLIR/PTX or SASS changed) of::

    max(1, 1000 |d spills| + 10 |d regs| + 0.01 |d shared B| + |d SASS instructions|
           + changed_lines)

The weights are the reports' ranking of a change (``report.codegen.weight``, written
there once); ``changed_lines`` is the number of lines the kernel's first differing
stage's diff adds or removes, 0 where no text diff was kept. Every changed kernel
counts at least 1, so a row whose change leaves no figure still ranks above none.

**Budget.** With ``--time-budget`` S, the op path's ops are charged first: every op of
a fallback row, every sentinel and every op the gate times anyway (their recorded seconds, else
:data:`~zlbench.codegen.select.DEFAULT_OP_COST_S`; cutting those is the op-level rule,
:func:`zlbench.codegen.select.within_budget`). The rest of S goes to replay: rows in
the ordering rule's order, each taken when its estimated seconds still fit (a row too
large for what is left does not stop the smaller rows after it, as the op-level rule
does). A row left out whose op is on the op path anyway falls back (its op's timing
covers it); any other is *deferred* (:class:`~zlbench.models.replay.DeferredRow`) with
its score and the command that times it: the gate again on its op alone, without a
budget (``--time-budget`` takes only seconds > 0).

**Sentinels.** One op per op family among the replayed rows' ops stays on the op path:
an op-level timing through FlagGems catches what a standalone kernel replay cannot see
(launcher overhead, host code, what users feel). An op of the family that the gate
times through FlagGems anyway (its own sentinels, ``ops/sentinels.txt``) is the
family's sentinel, replayed or not; else, of the family's replayed ops, one already on
the op path (a fallback row's op) is taken first, then the cheapest (recorded op
seconds), then the op key. A family with **one** replayed op and none the gate times
anyway has no sentinel of its own: its sentinel would be the op itself, timed as if
there were no replay (the PR tier's 54 ops are 38 families, 33 of them of one op: a
broad change would time nearly every op twice). Nor has a family of one op's variants
(``op:abs``: ``abs``, ``abs_``, ``abs_out``; the family of an op whose Benchmark class is
a catch-all, :data:`~zlbench.protocol.ops.VARIANTS_FAMILY`): its ops are one op's forms,
and its sentinel would be that op again (v7: 73 of the 108 family sentinels, 2026-12-06).
What an op-level time sees beyond its kernels there, the triton launcher and runtime,
is the same code for every op, and the gate's own sentinels time it on every gate;
FlagGems' host code is not the compiler's.
A family sentinel is timed through FlagGems at **one row** (``ReplayPlan.sentinel_rows``):
its changed row of the least recorded latency, where the launcher's and the host's time
weigh most; the replay judges its other rows. On v7 the 108 family sentinels timed whole
were 61 of the model's 99 minutes of op path (2026-12-06). So is an op the gate times
anyway (``ops/sentinels.txt``) whose changed rows are planned for replay: at one row,
the replay judging the rest. Timed whole, its changed rows would be timed twice: on v7,
``mm@test_mm.py`` alone was 8 of the op path's 37 model minutes (2026-12-07). With no
changed row planned for replay (its kernels identical: the gate's check for runner
drift, ``gate.decide.sentinels``; or none replayable) it is timed whole.
Families come from the inventory: ``zlbench.runner.catalog.tiers.op_family`` (the
Benchmark class, or ``op:<name>`` for catch-all classes), handed in by the caller
(codegen may not import the runner); an op it does not name is a family of its own,
``op:<op name>``.

**Every row** (``gate --time all --replay``: a nightly run, and the replay's own A/A,
where the screen proves every row unchanged): the rows proven unchanged are replayed
too, when replayable, after every changed row within the budget. They never fall back
or are deferred (the screen's proof stands for one that is not replayed) and pick no
sentinel: the op-level sentinel is for a change that the replay of a kernel cannot see.

**Replay cost** (:func:`replay_cost_s`): ``ROW_SETUP_S + 2 x pairs x reps x (kernel µs
+ CALL_OVERHEAD_US)``, with ``pairs`` the pairs a replayed row takes (``PAIRS``, 10: the
balanced blocks' least, which rows took 10.0-10.6 on average in five gates on an H100,
thirty-third session; the rule's budget of 16 is the bound), ``reps`` single-call
timings per sample (the worker's rule, ``protocol.pairs.sample_reps``: 10, fewer for a
call over 0.5 ms), the row's
FlagGems latency recorded in the baseline as its kernel time (an upper bound: it
includes launches), and the per-call restore of written buffers, the L2 flush and the
event sync as ``CALL_OVERHEAD_US``. The forecast (:func:`forecast`) adds a replay
worker's start (``WORKER_START_S``) and each side's build start (``BUILD_START_S``).
Every constant was fitted to gates on an H100 (2026-12-06, docs/measurements.md
"thirtieth" and "thirty-third session").
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from zlbench.codegen.select import DEFAULT_OP_COST_S
from zlbench.codegen.timed import TimedKernels, known_ref, row_ref
from zlbench.models.baseline import BaselineResult
from zlbench.models.codegen_screen import (
    CHANGED_CLASSES,
    CodegenClass,
    CodegenScreen,
    KernelScreen,
)
from zlbench.models.replay import (
    TENSOR_KINDS,
    DeferredRow,
    LaunchCapture,
    LaunchSpec,
    ReplayedRow,
    RowLaunches,
    SideBuildTime,
    capture_rows_at,
    holds_addresses,
    order_unknown,
    unvalued,
)
from zlbench.models.run import RowKey
from zlbench.protocol.layout import op_key
from zlbench.protocol.ops import VARIANTS_FAMILY, op_name_of, spec_of, variants_family
from zlbench.protocol.pairs import AB_SIDE_FACTOR, REPLAY_REPS, sample_reps
from zlbench.protocol.rowpart import picked_share
from zlbench.report.codegen import weight
from zlbench.report.replay_text import (
    FALLBACK_ADDRESSES,
    FALLBACK_GRAPH,
    FALLBACK_INTERMEDIATE,
    FALLBACK_LAUNCHED_NOTHING,
    FALLBACK_NO_CAPTURE,
    FALLBACK_NO_RECORDS,
    FALLBACK_NO_ROW,
    FALLBACK_NOT_CAPTURED,
    FALLBACK_NOT_NAMED,
    FALLBACK_NOT_REBUILT,
    FALLBACK_OCCURRENCES,
    FALLBACK_OVER_BUDGET,
    FALLBACK_SIDE_STREAM,
    FALLBACK_TRUNCATED,
    FALLBACK_UNKNOWN_KERNEL,
    FALLBACK_UNRECORDED,
    FALLBACK_UNSUPPORTED,
)

# The replay cost model (module docstring), fitted to three gates on an H100
# (2026-12-06, docs/measurements.md "thirtieth session": 18, 71 and 82 rows replayed;
# 24-100 kernels built a side): a changed row cost 0.16 s beyond its timed calls (an
# unchanged one 0.02 s), a timed call 130-170 µs beyond its kernel (median), a worker's
# start with its first row 9-11 s (the builds: below).
# A row's own seconds beyond its timed calls (arguments, both binaries loaded and warmed
# up, outputs compared): 0.15 on the thirtieth session's fresh machines; 0.10-0.15 (mean)
# in the first gate of a fresh machine and 0.011-0.014 in the next ones of the
# thirty-third session. The first gate's excess was the worker's first row (7.5-8.4 s:
# torch, CUDA, FlagGems; now loaded beside the builds, worker.start_warm) and a launcher
# built by the C compiler at the first launch of each new signature (~0.3 s, 10 of the
# v7 slice's 53 rows; now built ahead, 200 rows at once: worker.prepare_launchers). On
# the v7 slice on an H100 (2026-12-06, thirty-sixth session) the worker took 0.016 s a
# row beyond the modelled calls and start on a warm machine, 0.018 s on a fresh one net
# of its 10 launchers (docs/measurements.md).
ROW_SETUP_S = 0.02
PAIRS = 10  # the pairs a replayed row takes (module docstring): the balanced blocks' least
WORKER_START_S = 10.0  # a replay worker's start: torch, CUDA, the first row's load
# The gate's first replay worker starts warm, beside the builds (worker.start_warm): of
# its start, what the builds did not cover shows, and at least this much (its plan read
# and its first rows' binaries loaded once told go: the warm gate's worker spent 0.84 s
# outside its 53 rows' phases on an H100, thirty-sixth session)
WARM_FIRST_ROW_S = 1.0
# per timed call: restore written buffers, flush L2, lead spin, sync. 150 µs from the
# thirtieth session's median; 180 µs refit with KERNEL_SCALE (below) on the 1,728 rows of
# part 1 of v7's broad change on an H100 (forty-fifth session: 178 µs)
CALL_OVERHEAD_US = 180.0
# A row's recorded kernel time (its FlagGems latency on the GPU model that recorded the
# baseline) against a runner of another model: (recorder, runner) -> how much longer
# the replay's calls take there. H200 to H100: 1.39, fitted with CALL_OVERHEAD_US on v7's
# part 1 (the model now 0.93 of the rows' timed phases, 107.9 s; 0.76 before); held out,
# v5's broad change (four gates) and A/A (two) on H100s, forty-third and forty-fourth
# sessions: 0.92-1.04, where it was 0.78-0.88. Memory bandwidth alone would say 1.43
# (4.8 against 3.35 TB/s). A pair not listed: 1.0.
KERNEL_SCALE: dict[tuple[str, str], float] = {("h200", "h100"): 1.39}
_GPU_FAMILIES = ("h200", "h100")
# The builds, refitted to two gates of v5's broad change on an H100 (2026-12-06,
# docs/measurements.md "thirty-first session"; replay.json ``builds``, the rebuild
# workers' phases, no SASS): a worker's start with its first kernel's load (Python,
# torch, FlagGems imported) 9.1 s; a kernel compiled 0.61 s and digested 0.14 s; a cache
# hit 0.054 s; and the parent's own time per worker it starts, the sides' workers
# together: 0.9 s when it read each worker's compiler identity (13-14 s at 15 workers),
# 0.25 s since 17dff10f reads it once a side (thirty-third session: a side's last worker
# 1.0-1.6 s late at 1-13 workers, was 18-21 s; builds 13.3-19.6 s on warm machines,
# 24.4 s on a fresh one).
BUILD_CPU_S = 0.75  # one kernel compiled, one side, on the device's CPUs
# A kernel whose record holds its compile seconds (``Resources.compile_s``: the record
# pass's own compile) is charged those, plus this for its digest and load: on part 1 of
# v7's broad change on an H100 (forty-fifth session) its 1,755 kernels a side took
# 571 s and 484 s of compile, 36 s and 32 s of digest, 95 s and 82 s of load, against
# 624 s recorded (mean 0.356 s; BUILD_CPU_S charged 1,316 s: the builds forecast 3m21s,
# measured 111 s; so 117 s); v5's kernels (thirty-first session) 0.75 s against a
# recorded mean of 0.618 s (so 0.68 s a kernel, -10 %)
BUILD_EXTRA_S = 0.06
BUILD_START_S = 9.0  # a rebuild worker's start and first load (both sides' at once)
BUILD_WORKER_S = 0.25  # the parent's time per rebuild worker it starts (fitted)
HIT_CPU_S = 0.05  # one kernel of a side the screen built: a cache hit
HITS_PER_WORKER = 100  # such a side's kernels a worker takes on before another starts
DEFAULT_KERNEL_US = 100.0  # a row the baseline recorded no latency for
RERUN = "zlbench gate"  # the command a deferred row's line starts with (the caller's gate)
WHY_NOT = {"graph": FALLBACK_GRAPH, "side stream": FALLBACK_SIDE_STREAM}
ARG_KINDS = frozenset({"tensor", "tensordesc", "int", "float", "bool", "none", "str", "dtype"})
NOT_BUILT = frozenset({CodegenClass.FAILED, CodegenClass.MISSING})


def replay_cost_s(
    kernel_us: float | None, pairs: int | None = None, reps: int = REPLAY_REPS
) -> float:
    """Estimated GPU seconds to replay one row (module docstring): ``kernel_us`` its
    recorded time per call (None: :data:`DEFAULT_KERNEL_US`), ``pairs`` the pair
    pairs a row takes (None: :data:`PAIRS`; the rule's budget,
    ``PairSampling().max_pairs``, bounds it); a sample's calls are
    :func:`~zlbench.protocol.pairs.sample_reps` of ``kernel_us``, at most ``reps``."""
    us = DEFAULT_KERNEL_US if kernel_us is None else max(0.0, kernel_us)
    n = PAIRS if pairs is None else pairs
    calls = sample_reps(us / 1000, reps)
    return ROW_SETUP_S + 2 * n * calls * (us + CALL_OVERHEAD_US) / 1e6


def kernel_scale(recorded_on: str | None, runner_gpu: str | None) -> float:
    """:data:`KERNEL_SCALE` of the GPU model that recorded a baseline's latencies
    (``recorded_on``) on this runner's (``runner_gpu``); 1.0 where either is unknown, a
    name holds two models (a baseline of mixed seconds) or the pair is not listed."""

    def family(name: str | None) -> str | None:
        found = [f for f in _GPU_FAMILIES if f in (name or "").lower()]
        return found[0] if len(found) == 1 else None

    recorder, runner = family(recorded_on), family(runner_gpu)
    if recorder is None or runner is None:
        return 1.0
    return KERNEL_SCALE.get((recorder, runner), 1.0)


def replay_costs(
    results: Iterable[BaselineResult], pairs: int | None = None, scale: float = 1.0
) -> dict[RowKey, float]:
    """RowKey -> :func:`replay_cost_s` of every row of ``results``, its FlagGems latency
    recorded in the baseline as its kernel time, times ``scale`` (:func:`kernel_scale`:
    the runner's GPU model against the recorder's)."""
    out: dict[RowKey, float] = {}
    for res in results:
        for r in res.rows:
            us = r.latency_ms * 1000 * scale if r.latency_ms is not None else None
            out[r.key(res.repo, res.run_name)] = replay_cost_s(us, pairs)
    return out


@dataclass(frozen=True)
class ReplayForecast:
    """What the gate expects the replay step and the op path after it to take, before
    either runs (announced, so a person can hold the ETA to the wall time)."""

    build_s: float  # both sides' builds of the replayed kernels, over the rebuild workers
    replay_s: float  # the planned rows, by the cost model
    op_path_ops: int  # ops still timed through FlagGems
    op_path_s: float  # their recorded seconds, both sides of the A/B, and the A/B's start

    @property
    def total_s(self) -> float:
        return self.build_s + self.replay_s + self.op_path_s


def build_workers(jobs: int, kernels: int, built: Mapping[str, bool]) -> dict[str, int]:
    """Rebuild workers per side for ``kernels`` kernels, both sides building at once
    within ``jobs`` workers (``built``: side -> whether the screen built its kernels
    into its cache dir). A built side's kernels are cache hits, about a worker's start
    for :data:`HITS_PER_WORKER` of them: it gets that many workers, at most half of
    ``jobs``. The other sides share the rest evenly. Every side gets at least one."""
    jobs = max(1, jobs)
    out: dict[str, int] = {}
    for side, done in built.items():
        if done:
            out[side] = max(1, min(jobs // 2, -(-kernels // HITS_PER_WORKER)))
    cold = [side for side, done in built.items() if not done]
    left = jobs - sum(out.values())
    for i, side in enumerate(cold):
        out[side] = max(1, left // len(cold) + (1 if i < left % len(cold) else 0))
    return {side: out[side] for side in built}


def _cold_s(compile_s: Sequence[float | None]) -> float:
    """Compiling the kernels of ``compile_s`` (each one's recorded seconds, None where
    unknown): those seconds plus :data:`BUILD_EXTRA_S` each, :data:`BUILD_CPU_S` for one
    of unknown seconds."""
    known = [c for c in compile_s if c is not None and c >= 0]
    return sum(known) + BUILD_EXTRA_S * len(known) + BUILD_CPU_S * (len(compile_s) - len(known))


def build_seconds(
    kernels: int,
    workers: Mapping[str, int],
    built: Mapping[str, bool],
    compile_s: Sequence[float | None] = (),
    held: Mapping[str, Sequence[bool]] | None = None,
) -> float:
    """Both sides' builds at once (:func:`build_workers`): :data:`BUILD_START_S`,
    :data:`BUILD_WORKER_S` for each worker started, then the slower side's kernels over
    its workers: :data:`HIT_CPU_S` each for a built side's, else each kernel's recorded
    compile seconds (``compile_s``, one per kernel, None where unknown; empty: none
    known) plus :data:`BUILD_EXTRA_S`, :data:`BUILD_CPU_S` for one of unknown seconds. ``held``:
    side -> for each kernel of ``compile_s``'s order, whether that side's cache already
    holds it (an earlier part or gate noted it built there): a cache hit, the rest of
    that side compiled (v7's parts 2-4 on an H100 compiled 52-74 % of their kernels, and
    were announced as if all)."""
    if not kernels:
        return 0.0
    recorded = list(compile_s) or [None] * kernels
    per = []
    for side, w in workers.items():  # a side built whole holds every kernel
        hits = [True] * kernels if built[side] else (held or {}).get(side) or [False] * kernels
        misses = [c for c, hit in zip(recorded, hits, strict=True) if not hit]
        per.append((_cold_s(misses) + HIT_CPU_S * sum(hits)) / max(1, w))
    return BUILD_START_S + BUILD_WORKER_S * sum(workers.values()) + max(per, default=0.0)


def worker_start_s(build_s: float, warm: bool = True) -> float:
    """The replay worker's start as the step's wall sees it after ``build_s`` seconds of
    builds: :data:`WORKER_START_S` less the builds it ran beside (``warm``: started by
    ``worker.start_warm`` before them), at least :data:`WARM_FIRST_ROW_S`."""
    return max(WARM_FIRST_ROW_S, WORKER_START_S - build_s) if warm else WORKER_START_S


def host_load_s(builds: Iterable[SideBuildTime]) -> float | None:
    """This host's pace at importing FlagGems: the slower side's rebuild worker's
    ``load`` phase (its seconds over its workers; the first kernel's load imports
    torch and FlagGems), None when no build says."""
    loads = [b.phases_s["load"] / max(1, b.workers) for b in builds if b.phases_s.get("load")]
    return max(loads, default=None)


def op_path_ops(plan: ReplayPlan, ops: Collection[str]) -> set[str]:
    """The ops of ``ops`` (those the gate would time without the replay) that the plan
    leaves to the op path: every one but those whose rows are all planned for replay
    (or proven by their capture), no sentinel and none the gate times anyway."""
    planned = {op_key(p.key.repo, p.key.run_name) for p in plan.replay} | plan.no_launch_ops()
    return set(ops) - (planned - plan.kept_ops())


def op_path_seconds(
    plan: ReplayPlan, ops: Collection[str], op_costs: Mapping[str, float]
) -> dict[str, float]:
    """Op key -> what each op the plan leaves to the op path (:func:`op_path_ops`)
    costs the interleaved A/B, both sides at once: its recorded seconds (a family
    sentinel at its one row's share: :meth:`ReplayPlan.op_seconds`) times
    :data:`~zlbench.protocol.pairs.AB_SIDE_FACTOR`."""
    return {k: AB_SIDE_FACTOR * plan.op_seconds(k, op_costs) for k in op_path_ops(plan, ops)}


def forecast(
    plan: ReplayPlan,
    ops: Collection[str],
    op_costs: Mapping[str, float],
    jobs: int = 1,
    pr_built: bool = False,
    base_built: bool = False,
    op_path_wall: Callable[[Mapping[str, float]], float] | None = None,
    compile_s: Mapping[str, float | None] | None = None,
    cached: Mapping[str, Collection[str]] | None = None,
) -> ReplayForecast:
    """The plan's :class:`ReplayForecast` for the gate's ``ops`` (those it would time
    without the replay): both sides' builds at once, :func:`build_seconds` over
    :func:`build_workers` of ``jobs`` (``pr_built``/``base_built``: the screen built
    that side's kernels into its cache dir, cache hits),
    the worker's start beyond the builds (:func:`worker_start_s`) and the rows'
    :func:`replay_cost_s`, and both sides' recorded
    seconds of the ops the plan leaves to the op path (every op of ``ops`` but those
    whose rows are all planned for replay, no sentinel and none the gate times anyway;
    a family sentinel at its one row's share: :meth:`ReplayPlan.op_seconds`;
    :data:`DEFAULT_OP_COST_S` where none is recorded). ``op_path_wall``: the op path's
    wall from those seconds (op key -> both sides' seconds), the measure step's own rule
    (the caller's: ``runner.batch.costs.shard_wall``, a process's start included); None:
    their sum. ``compile_s``: kernel id -> its record's compile seconds (the screen's
    ``KernelScreen.baseline.compile_s``), what a cold build of it is charged.
    ``cached``: side -> the kernel ids its cache dir notes built
    (``protocol.cache.built_ids``), charged as cache hits on a side not built whole."""
    kernels = plan.kernel_ids()
    built = {"pr": pr_built, "base": base_built}
    both = op_path_seconds(plan, ops, op_costs)
    order = sorted(kernels)
    recorded = [(compile_s or {}).get(k) for k in order]
    held = {side: [k in ids for k in order] for side, ids in (cached or {}).items()}
    workers = build_workers(jobs, len(kernels), built)
    build_s = build_seconds(len(kernels), workers, built, recorded, held)
    return ReplayForecast(
        build_s=build_s,
        replay_s=plan.replay_s + (worker_start_s(build_s) if plan.replay else 0.0),
        op_path_ops=len(both),
        op_path_s=_op_path_s(both, op_path_wall),
    )


def parts_forecast(
    plan: ReplayPlan,
    rows: Iterable[ReplayedRow],
    ops: Collection[str],
    op_costs: Mapping[str, float],
    op_path_wall: Callable[[Mapping[str, float]], float] | None = None,
) -> ReplayForecast:
    """The :class:`ReplayForecast` of a gate that takes its replay from parts (``gate
    --replayed``; ``rows``: what they ended): nothing to build or replay here, the op
    path as they left it (:meth:`ReplayPlan.as_replayed`), as :func:`forecast` says it."""
    both = op_path_seconds(plan.as_replayed(rows), ops, op_costs)
    return ReplayForecast(0.0, 0.0, len(both), _op_path_s(both, op_path_wall))


def _op_path_s(
    both: Mapping[str, float], op_path_wall: Callable[[Mapping[str, float]], float] | None
) -> float:
    """The op path's seconds: ``op_path_wall`` of its ops' seconds, else their sum."""
    return op_path_wall(both) if op_path_wall and both else sum(both.values())


def row_score(kernels: Iterable[KernelScreen]) -> float:
    """How much a row's code changed: the ordering rule's score (module docstring) over
    ``kernels``, the kernels that count for it; only the changed ones score."""
    return sum(
        max(1.0, weight(k) + (k.changed_lines or 0)) for k in kernels if k.status in CHANGED_CLASSES
    )


def deferred_command(key: str, rerun: str = RERUN) -> str:
    """The command that times op ``key``'s changed rows with no budget: ``rerun`` (the
    gate as the caller ran it: ``zlbench gate --baseline baselines/v7 --base-compiler
    ENV``) on that op alone, ``--time changed``."""
    return f"{rerun} --ops {shlex.quote(spec_of(key))} --time changed"


@dataclass(frozen=True)
class RowToReplay:
    """A row the plan replays: its launches, the kernels replayed (changed first)."""

    key: RowKey
    score: float
    cost_s: float
    launches: RowLaunches
    kernels: tuple[str, ...]  # kernel ids, the changed ones first (by weight), then the rest
    changed: bool = True  # False: proven unchanged, replayed only with ``every_row``


@dataclass
class ReplayPlan:
    """The kernel-replay tier's plan for one gate (module docstring)."""

    replay: list[RowToReplay] = field(default_factory=list)  # in the ordering rule's order
    fallback: dict[RowKey, str] = field(default_factory=dict)  # row -> why the op path
    deferred: list[DeferredRow] = field(default_factory=list)  # in the ordering rule's order
    sentinels: dict[str, str] = field(default_factory=dict)  # op family -> its sentinel op key
    # a family sentinel or an op timed anyway, with a changed row planned for replay ->
    # the one row the op path times of it (module docstring, "Sentinels")
    sentinel_rows: dict[str, RowKey] = field(default_factory=dict)
    row_counts: dict[str, int] = field(default_factory=dict)  # op key -> its rows in the gate
    anyway: set[str] = field(default_factory=set)  # ops the gate times through FlagGems anyway
    failed: dict[RowKey, str] = field(default_factory=dict)  # row -> the kernel that fails
    # changed rows whose capture proves their timed calls launch no Triton kernel
    # (module docstring, "No kernel timed"): not timed, not counted as changed
    no_launch: list[RowKey] = field(default_factory=list)
    # op keys with a row planned to replay, or proven by its capture (``no_launch``)
    replayable: set[str] = field(default_factory=set)
    op_path_s: float = 0.0  # recorded seconds of the op path's ops (charged first)
    replay_s: float = 0.0  # estimated seconds of the rows replayed

    @property
    def changed_rows(self) -> int:
        """Rows whose code the screen did not prove unchanged: replayed + fallback + deferred
        (not the unchanged rows ``every_row`` replays)."""
        return sum(p.changed for p in self.replay) + len(self.fallback) + len(self.deferred)

    def kernel_ids(self) -> set[str]:
        """The kernels the replayed rows launch: what both sides build."""
        return {launch.kernel_id for p in self.replay for launch in p.launches.launches}

    def as_replayed(self, rows: Iterable[ReplayedRow]) -> ReplayPlan:
        """This plan as a replay that ended ``rows`` left it (a gate taking its parts,
        ``--replayed``): the rows it replayed with matching outputs still planned, the
        rows it sent back (``instrument`` "op": outputs that differ, a fault, a row no
        part holds) among the fallback rows with why, nothing left to build or time
        (``replay_s`` 0): what the op path after it measures."""
        done = {r.key: r for r in rows}
        took = {k for k, r in done.items() if r.timed_by_replay}
        back = {p.key: done[p.key].why if p.key in done else "" for p in self.replay}
        return replace(
            self,
            replay=[p for p in self.replay if p.key in took],
            fallback={**self.fallback, **{k: why for k, why in back.items() if k not in took}},
            replay_s=0.0,
        )

    def whole_ops(self) -> set[str]:
        """The ops the op path measures whole, however their replayed rows fare: the
        ops of failed and deferred rows, an op timed anyway or a sentinel without its one
        row (every family sentinel has one; an op timed anyway has none when no changed
        row of it is planned for replay)."""
        keys = [*self.failed, *(d.key for d in self.deferred)]
        sentinels = (set(self.sentinels.values()) | self.anyway) - set(self.sentinel_rows)
        return {op_key(k.repo, k.run_name) for k in keys} | sentinels

    def kept_ops(self) -> set[str]:
        """The ops the plan keeps on the op path, however their replayed rows fare:
        :meth:`whole_ops`, the family sentinels (their one row) and the ops of fallback
        rows (measured for those rows only when others of theirs are replayed)."""
        return self.whole_ops() | set(self.sentinel_rows) | self.fallback_ops()

    def fallback_ops(self) -> set[str]:
        """The ops of the fallback rows."""
        return {op_key(k.repo, k.run_name) for k in self.fallback}

    def no_launch_ops(self) -> set[str]:
        """The ops of the rows proven by their capture (:attr:`no_launch`)."""
        return {op_key(k.repo, k.run_name) for k in self.no_launch}

    def op_seconds(self, op: str, op_costs: Mapping[str, float]) -> float:
        """Op ``op``'s recorded seconds on the op path (one side). An op with a row
        planned for replay that the op path does not measure whole is measured at row
        picks (``runner.replay``: its fallback rows and its family sentinel's one row):
        at their share (``protocol.rowpart.picked_share``, as the batch's forecast of row
        picks). Any other op whole. A row the step itself sends back (outputs that
        differ, a failed build) is not foreseen here."""
        seconds = op_costs.get(op, DEFAULT_OP_COST_S)
        if op not in self.replayable or op in self.whole_ops():
            return seconds
        picked = {k for k in self.fallback if op_key(k.repo, k.run_name) == op}
        if op in self.sentinel_rows:
            picked.add(self.sentinel_rows[op])
        if not picked:
            return seconds
        return seconds * picked_share(len(picked), self.row_counts.get(op, len(picked)))

    def op_path(self) -> dict[str, str]:
        """Op key -> why it is still timed through FlagGems: the ops of fallback rows
        and the sentinels."""
        out: dict[str, list[str]] = {}
        for key, why in self.fallback.items():
            out.setdefault(op_key(key.repo, key.run_name), []).append(why)
        said = {k: f"{len(w)} changed row(s) not replayed: {w[0]}" for k, w in out.items()}
        for fam, key in self.sentinels.items():
            line = f"sentinel of op family {fam}"
            said[key] = f"{said[key]}; {line}" if key in said else line
        return dict(sorted(said.items()))

    def op_rows(self) -> list[ReplayedRow]:
        """The fallback rows as the replay run records them (instrument ``op``, why)."""
        return [
            ReplayedRow(key=k, instrument="op", why=why)
            for k, why in sorted(self.fallback.items(), key=lambda kw: kw[0].label())
        ]


def part_rows(rows: Sequence[RowToReplay], part: tuple[int, int]) -> list[RowToReplay]:
    """Part K of N (``part``, K 1-based) of the rows a plan replays: the rows dealt over
    N parts by their cost, the largest first, each to the part with the least cost so
    far (the lowest part on a tie; rows of equal cost by label), so that N device calls
    each replay about 1/N of it. In ``rows``' order."""
    k, n = part
    load = [0.0] * n
    mine = set()
    for p in sorted(rows, key=lambda p: (-p.cost_s, p.key.label())):
        i = min(range(n), key=lambda j: (load[j], j))
        load[i] += p.cost_s
        if i == k - 1:
            mine.add(p.key)
    return [p for p in rows if p.key in mine]


def plan_replay(
    screen: CodegenScreen,
    rows: Sequence[RowKey],
    captures: Mapping[str, LaunchCapture | None],
    costs: Mapping[RowKey, float] | None = None,
    op_costs: Mapping[str, float] | None = None,
    budget_s: float | None = None,
    families: Mapping[str, str] | None = None,
    rerun: str = RERUN,
    timed_anyway: Collection[str] = (),
    every_row: bool = False,
    proof_gpu: str | None = None,
) -> ReplayPlan:
    """The plan (module docstring). ``captures``: op key -> its launch capture (None or
    absent: none); ``costs``: row -> estimated replay seconds (:func:`replay_costs`; a
    row absent: :func:`replay_cost_s` of no recorded time); ``op_costs``: op key ->
    its recorded seconds on the op path; ``families``: op key -> op family; ``rerun``:
    the gate command a deferred row's command starts with (:func:`deferred_command`);
    ``timed_anyway``: ops the gate times through FlagGems whatever the plan (its own
    sentinels, ``ops/sentinels.txt``): one of them is its family's sentinel;
    ``every_row`` (``gate --time all --replay``): the rows proven unchanged are replayed
    too, after the changed ones (module docstring, "Every row"); ``proof_gpu``: this
    runner's GPU model, on which a capture taken there can prove that a row times no
    Triton kernel (module docstring, "No kernel timed"); None: no capture can (the GPU
    not known, or FlagGems' C extension asked for)."""
    view = TimedKernels.of(screen)
    costs, op_costs, families = costs or {}, op_costs or {}, families or {}
    places = capture_rows_at(list(dict.fromkeys(rows)))  # each row's row in its capture
    plan = ReplayPlan(anyway=set(timed_anyway))
    candidates: list[RowToReplay] = []
    for key in dict.fromkeys(rows):
        op = op_key(key.repo, key.run_name)
        kernels = view.row_kernels(row_ref(key))
        failed = [k for k in kernels if k.status is CodegenClass.FAILED]
        if failed:
            plan.failed[key] = f"kernel `{failed[0].name}` does not compile: {failed[0].error}"
            continue
        why = _unproven(screen, view, key, op, kernels)
        changed = why is not None or any(k.status in CHANGED_CLASSES for k in kernels)
        if not changed and not every_row:
            continue  # proven unchanged: not the replay tier's
        capture = captures.get(op)
        own = capture is not None and bool(proof_gpu) and capture.gpu_model == proof_gpu
        ident, at = (key.run_name, key.dtype, key.shape), places[key]
        own_row = None if capture is None else capture.row_of(*ident, at)  # its own row
        if capture is not None and capture.proves_no_launch(*ident, at):
            if own:
                if changed:  # no Triton kernel timed: no compiler changes its time
                    plan.no_launch.append(key)
                continue
            if changed and why is None:
                where = capture.gpu_model or "a GPU it does not name"
                why = f"{FALLBACK_LAUNCHED_NOTHING} on {where}, not on this runner's GPU"
        why = why or _not_replayable(view, key, op, kernels, capture, own_row, own)
        if why or own_row is None:  # no row of its own: _not_replayable has said why
            if changed:  # an unchanged row that cannot be replayed stays proven identical
                plan.fallback[key] = why
            continue
        cost = costs.get(key, replay_cost_s(None))
        ids = _ids(kernels, own_row)
        candidates.append(RowToReplay(key, row_score(kernels), cost, own_row, ids, changed))
    candidates.sort(key=lambda p: (not p.changed, -p.score, p.key.label()))
    changed = [p for p in candidates if p.changed]
    plan.sentinels = _sentinels(changed, plan.fallback, op_costs, families, timed_anyway)
    plan.sentinel_rows = _sentinel_rows(plan.sentinels, changed, plan.anyway)
    plan.row_counts = dict(Counter(op_key(k.repo, k.run_name) for k in dict.fromkeys(rows)))
    planned = {op_key(p.key.repo, p.key.run_name) for p in candidates}
    plan.replayable = planned | plan.no_launch_ops()
    on_op_path = set(plan.op_path()) | plan.anyway  # the gate's sentinels: timed anyway
    plan.op_path_s = sum(plan.op_seconds(k, op_costs) for k in on_op_path)
    left = None if budget_s is None else budget_s - plan.op_path_s
    for p in candidates:
        op = op_key(p.key.repo, p.key.run_name)
        if left is None or plan.replay_s + p.cost_s <= left:
            plan.replay.append(p)
            plan.replay_s += p.cost_s
        elif not p.changed:
            continue  # proven identical: nothing to defer
        elif op in on_op_path:
            plan.fallback[p.key] = FALLBACK_OVER_BUDGET
        else:
            plan.deferred.append(
                DeferredRow(key=p.key, score=p.score, command=deferred_command(op, rerun))
            )
    return plan


def _unproven(
    screen: CodegenScreen, view: TimedKernels, key: RowKey, op: str, kernels: list[KernelScreen]
) -> str | None:
    """Why the screen cannot tell what changed in this row (rule 1), else None."""
    if op in screen.ops_without_records:
        return FALLBACK_NO_RECORDS
    if screen.ops_with_unrecorded.get(op):
        return f"{screen.ops_with_unrecorded[op]} {FALLBACK_UNRECORDED}"
    if known_ref(row_ref(key), view.by_row) is None:
        # no record names this row: proven only for an op whose record pass launched none
        return (
            None
            if op in screen.ops_without_kernels and not view.by_op.get(op)
            else FALLBACK_NOT_NAMED
        )
    missing = [k for k in kernels if k.status is CodegenClass.MISSING]
    if missing:
        return f"kernel `{missing[0].name}` {FALLBACK_NOT_REBUILT}"
    return None


def _not_replayable(
    view: TimedKernels,
    key: RowKey,
    op: str,
    kernels: list[KernelScreen],
    capture: LaunchCapture | None,
    row: RowLaunches | None,
    own_gpu: bool = False,
) -> str:
    """Why a changed row cannot be replayed (rules 2-8), "" when it can. ``row``: its
    own row in the capture (:meth:`~zlbench.models.replay.LaunchCapture.row_of`), None
    where there is none; ``own_gpu``: the capture ran on this runner's GPU model (rule
    8's other occurrences)."""
    if capture is None:
        return FALLBACK_NO_CAPTURE
    if row is None and capture.rows_of(key.run_name, key.dtype, key.shape):
        return FALLBACK_OCCURRENCES
    if row is not None and capture.launched_nothing(row):
        return FALLBACK_LAUNCHED_NOTHING
    if row is None or not row.launches:
        return FALLBACK_NO_ROW
    if row.truncated:
        return FALLBACK_TRUNCATED
    if row.why_not:  # the capture says it is not whole ("capture failed: ...")
        return row.why_not
    held = {k.kernel_id: k for k in view.by_op.get(op, [])}
    for launch in row.launches:
        if launch.kernel_id not in held:
            return f"kernel {launch.kernel_id} {FALLBACK_UNKNOWN_KERNEL}"
    for launch in row.launches:
        why = _launch_why(launch)
        if why:
            return why
    for n, i in unvalued(row.launches):  # past a capture's fully valued launches
        a = row.launches[n].args[i]
        return f"{FALLBACK_UNSUPPORTED} {a.name or f'#{i}'} (tensor without values)"
    for launch in row.launches:
        k = held[launch.kernel_id]
        if k.status in NOT_BUILT:
            return f"kernel `{k.name}` {FALLBACK_NOT_REBUILT}"
    if order_unknown(row.launches, row.order):
        return FALLBACK_INTERMEDIATE
    launched = {launch.kernel_id for launch in row.launches}
    ran = None if row.replay_timed is None else set(row.replay_timed)
    if ran is not None and not launched <= ran:
        ran = None  # evidence that does not add up: every changed kernel counts
    others = _siblings_kernels(capture, row) - launched if own_gpu else set()
    for k in kernels:
        if k.status in CHANGED_CLASSES and k.kernel_id not in launched:
            if ran is not None and k.kernel_id not in ran:
                continue  # where the gate measures it ran outside the timed region, or not
            if k.kernel_id in others:
                continue  # another occurrence's kernel: the records lump occurrences
            return f"changed kernel `{k.name}` {FALLBACK_NOT_CAPTURED}"
    return ""


def _siblings_kernels(capture: LaunchCapture, row: RowLaunches) -> set[str]:
    """The kernels the other occurrences of ``row``'s run name, dtype and shape
    launched (``row``: a baseline row's own, :meth:`LaunchCapture.row_of`), when the
    capture holds every launch of ``row`` and of theirs (:meth:`LaunchCapture.whole`);
    else none."""
    if not capture.whole(row):
        return set()
    return {
        launch.kernel_id
        for r in capture.rows_of(row.run_name, row.dtype, row.shape)
        if r.occurrence != row.occurrence and capture.whole(r)
        for launch in r.launches
    }


def _launch_why(launch: LaunchSpec) -> str:
    """Why this one launch cannot be replayed (rules 4-5), "" when it can."""
    if launch.why_not:
        return WHY_NOT.get(launch.why_not, launch.why_not)
    for i, a in enumerate(launch.args):
        name = a.name or f"#{i}"
        if a.kind not in ARG_KINDS:
            return f"{FALLBACK_UNSUPPORTED} {name} ({a.kind})"
        if a.kind not in TENSOR_KINDS:
            continue
        if not a.dtype:
            return f"{FALLBACK_UNSUPPORTED} {name} (tensor without a dtype)"
        if holds_addresses(a):
            return f"{FALLBACK_UNSUPPORTED} {name} ({FALLBACK_ADDRESSES})"
        rank = len(a.block_shape)
        if a.kind == "tensordesc" and not (rank == len(a.desc_shape) == len(a.desc_strides) > 0):
            return f"{FALLBACK_UNSUPPORTED} {name} (tensor descriptor of ranks that differ)"
    return ""


def _ids(kernels: list[KernelScreen], launches: RowLaunches) -> tuple[str, ...]:
    """The kernel ids a row replays: its changed kernels by weight (largest first), then
    the other kernels it launched, in launch order."""
    launched = list(dict.fromkeys(launch.kernel_id for launch in launches.launches))
    changed = sorted(
        (k for k in kernels if k.status in CHANGED_CLASSES and k.kernel_id in launched),
        key=lambda k: (-weight(k), k.name, k.kernel_id),
    )
    first = [k.kernel_id for k in changed]
    return tuple(first + [i for i in launched if i not in first])


def _sentinel_rows(
    sentinels: Mapping[str, str], changed: list[RowToReplay], anyway: Collection[str]
) -> dict[str, RowKey]:
    """Family sentinel or op the gate times anyway -> the one row the op path times of
    it (module docstring, "Sentinels"): of its changed rows planned for replay, the least
    replay cost (the cost model is the row's recorded latency plus constants: the least
    latency), then the label. One with no such row is timed whole: none."""
    out: dict[str, RowKey] = {}
    for op in sorted(set(sentinels.values()) | set(anyway)):
        rows = [p for p in changed if op_key(p.key.repo, p.key.run_name) == op]
        if rows:
            out[op] = min(rows, key=lambda p: (p.cost_s, p.key.label())).key
    return out


def _sentinels(
    candidates: list[RowToReplay],
    fallback: Mapping[RowKey, str],
    op_costs: Mapping[str, float],
    families: Mapping[str, str],
    timed_anyway: Collection[str] = (),
) -> dict[str, str]:
    """Op family -> the op of the replayed rows kept on the op path (module docstring);
    a family with an op the gate times anyway (``timed_anyway``) has that one."""

    def family(op: str) -> str:
        return families.get(op) or variants_family(op_name_of(op))

    on_path = {op_key(k.repo, k.run_name) for k in fallback}
    anyway: dict[str, str] = {}
    for op in sorted(timed_anyway):
        anyway.setdefault(family(op), op)
    by_family: dict[str, set[str]] = {}
    for p in candidates:
        op = op_key(p.key.repo, p.key.run_name)
        by_family.setdefault(family(op), set()).add(op)
    return {
        fam: anyway.get(fam)
        or min(ops, key=lambda o: (o not in on_path, op_costs.get(o, DEFAULT_OP_COST_S), o))
        for fam, ops in sorted(by_family.items())
        # one replayed op, or one op's variants: the gate's sentinels stand for it
        if fam in anyway or (len(ops) > 1 and not fam.startswith(VARIANTS_FAMILY))
    }

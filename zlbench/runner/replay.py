"""The gate's kernel-replay step (``zlbench gate --replay``, issue 51, docs/replay.md).

Before the op path measures anything, the changed rows whose timed launches the
baseline captured (``codegen/launches.json``) are timed standalone, PR and base
binaries interleaved on one GPU:

1. **plan** (:func:`zlbench.codegen.replay_plan.plan_replay`): which changed rows are
   replayed, in the ordering rule's order within ``--time-budget``; the others fall
   back to the op path (with why) or are deferred (with the command that times them);
   one op per op family (:func:`zlbench.runner.catalog.tiers.op_family`) stays on the
   op path as its sentinel;
2. **build** both sides' binaries of the replayed kernels from the baseline's compile
   requests (:func:`zlbench.plugins.replay.binaries.build_side`: this environment, and
   the base compiler's); the PR side's build must be the screen's (the same
   :func:`zlbench.codegen.diff.code_digest`), else the row falls back;
3. **replay** (:func:`zlbench.plugins.replay.worker.run_rows`: worker processes,
   restarted after a hang, a fault or a broken device); a row whose outputs differ PR
   vs base, or that failed, falls back with one line and no samples.

Written to ``<gate>/replay/``: ``plan.json`` (the worker's input), ``replay.json`` (a
:class:`~zlbench.models.ReplayRun`: every changed row with its instrument and why, the
deferred rows, the rows of replayed ops proven identical, the rows proven by their
capture to time no Triton kernel) and ``pairs.json`` (the
replayed rows' samples; the judge re-derives their statistic,
:mod:`zlbench.gate.replay`). An op all of whose changed rows were replayed, and that is
no sentinel, is not measured through FlagGems (:attr:`ReplayOutcome.replayed_ops`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from zlbench.codegen.collect import collect
from zlbench.codegen.diff import code_digest
from zlbench.codegen.replay_plan import (
    WORKER_START_S,
    ReplayForecast,
    ReplayPlan,
    build_workers,
    forecast,
    host_load_s,
    kernel_scale,
    op_path_seconds,
    part_rows,
    parts_forecast,
    plan_replay,
    replay_cost_s,
    replay_costs,
    worker_start_s,
)
from zlbench.errors import ZlbenchError
from zlbench.gate.load import BaselineSet
from zlbench.models import (
    LAUNCHES_JSON,
    REPLAY_DIR,
    REPLAY_JSON,
    REPLAY_PAIRS,
    CodegenScreen,
    CompileRecord,
    KernelScreen,
    LaunchCapture,
    PairsFile,
    ReplayedRow,
    ReplayRun,
    RowKey,
    dump_json_model,
    load_json_model,
)
from zlbench.models.codegen import CODEGEN_DIR
from zlbench.models.paths import resolve_inside
from zlbench.models.replay import (
    DEFAULT_L2,
    REPLAY_PLAN,
    BinaryRef,
    L2Policy,
    PlannedRow,
    ReplayPlanFile,
    SideBuildTime,
    row_timeout,
)
from zlbench.protocol.cache import built_ids, holds_built, mark_built
from zlbench.protocol.layout import op_key
from zlbench.runner.ab.env import CompilerEnv, with_front

if TYPE_CHECKING:
    from zlbench.plugins.replay.binaries import SideBuild

DIFFERS_FROM_SCREEN = "replayed binary differs from the screen's"


@dataclass
class ReplayOutcome:
    """What the replay step did: its run (also ``replay/replay.json``), the ops it
    judged whole (not measured through FlagGems), and the ops the op path measures only
    some rows of."""

    run: ReplayRun
    replayed_ops: set[str] = field(default_factory=set)
    # op key -> the only rows the op path measures: an op some of whose changed rows
    # were replayed and the rest fell back, or a family sentinel (its one row and any
    # that fell back); none failed or deferred, not an op the gate times anyway
    op_rows: dict[str, list[RowKey]] = field(default_factory=dict)
    # of those, the family sentinels' own rows (op key -> row): the op path's op-level
    # time of a family whose other rows the replay judges
    sentinel_rows: dict[str, RowKey] = field(default_factory=dict)


def load_captures(baseline: BaselineSet, ops: set[str], say: Callable[[str], None]):
    """Op key -> its ``codegen/launches.json`` (None where the baseline has none); an
    unreadable one is said in one line and counts as none (its rows fall back)."""
    out: dict[str, LaunchCapture | None] = {}
    for key in sorted(ops):
        res = baseline.ops.get(key)
        if res is None:
            continue
        path = baseline.path / res.repo / res.run_name / CODEGEN_DIR / LAUNCHES_JSON
        if not path.is_file():
            out[key] = None
            continue
        try:
            out[key] = load_json_model(path, LaunchCapture)
        except ZlbenchError as e:
            say(f"zlbench gate: replay: {key}: capture not usable ({e}): timed through FlagGems")
            out[key] = None
    return out


def families_of(baseline: BaselineSet, ops_dir: Path) -> dict[str, str]:
    """Op key -> op family, from the inventory (``ops/inventory_<repo>.csv``); an op it
    does not name is left out (a family of its own)."""
    from zlbench.runner.catalog.inventory import inventory_path, load_inventory
    from zlbench.runner.catalog.tiers import op_family

    out: dict[str, str] = {}
    by_repo: dict[str, dict[str, str]] = {}
    for key, res in baseline.ops.items():
        if res.repo not in by_repo:
            path = inventory_path(ops_dir, res.repo)
            try:
                rows = load_inventory(path) if path.is_file() else []
            except ZlbenchError:
                rows = []
            by_repo[res.repo] = {r.op: op_family(r) for r in rows}
        fam = by_repo[res.repo].get(res.op)
        if fam:
            out[key] = fam
    return out


def replay_changed(
    *,
    baseline: BaselineSet,
    screen: CodegenScreen,
    ops: set[str],
    out: Path,
    pr: CompilerEnv,
    base: CompilerEnv,
    budget_s: float | None,
    rerun: str,
    say: Callable[[str], None],
    families: Mapping[str, str] | None = None,
    run_rows: Callable | None = None,
    build_side: Callable | None = None,
    timed_anyway: Collection[str] = (),
    pythonpath: Sequence[str] = (),
    every_row: bool = False,
    jobs: int = 1,
    op_costs: Mapping[str, float] | None = None,
    pr_cache: Path | None = None,
    base_cache: Path | None = None,
    recorded_on: str | None = None,
    recorded_gpu: str | None = None,
    runner_gpu: str | None = None,
    start_warm: Callable | None = None,
    part: tuple[int, int] | None = None,
    parts: Sequence[Path] = (),
    l2: L2Policy = DEFAULT_L2,
) -> ReplayOutcome:
    """The replay step (module docstring) over the changed rows of ``ops``; writes
    ``out/replay/``. ``pr``/``base``: each side's environment, ``pythonpath`` first on
    both sides' path after their own dirs (the FlagGems checkouts' ``src/``, whose
    kernels are rebuilt); ``run_rows``/``build_side``: seams (the plugins' by default);
    ``timed_anyway``: the gate's own sentinel ops (timed through FlagGems whatever the
    plan); ``every_row``: the rows proven unchanged too (``gate --time all --replay``,
    :func:`plan_replay`); ``jobs``: rebuild workers per side (``--codegen-jobs``);
    ``op_costs``: op key -> its recorded op-path seconds (the baseline's
    ``ops_status.csv``: the budget and the forecast); ``pr_cache``: the triton cache dir
    the screen compiled the PR's kernels into (the gate's shared cache): the PR side
    builds there, so a kernel the screen built is a cache hit; ``base_cache``: the same
    for the base compiler's side (the screen's base rebuild); ``recorded_on``: what
    the forecast line says of ``op_costs`` against this runner's GPU model (the batch's
    words: :func:`zlbench.runner.batch.forecast.where_recorded`); ``recorded_gpu``: the
    GPU model whose latencies the baseline's rows hold (its manifest's: a capture version
    replaces op seconds, never the rows'), scaled to this runner's
    (:func:`~zlbench.codegen.replay_plan.kernel_scale`); ``runner_gpu``: this
    runner's GPU model (nvidia-smi's name), on which a capture taken there proves a row
    times no Triton kernel (:func:`proof_gpu`; None: no capture does); ``start_warm``:
    a seam (``worker.start_warm``, the default with the real worker): the replay's
    first worker, started before the builds so that its runtime loads while they run;
    ``part`` (K, N): replay only part K of N of the plan's rows (:func:`part_rows`; the
    plan's own lists whole, the op path left to the gate that merges the parts);
    ``parts``: the gate dirs of every part (``gate --replay-part``), whose rows and
    samples are this step's instead of replaying (:func:`load_parts`); ``l2``: the L2
    policy every row is timed under (``gate --replay-l2``, :data:`L2_POLICIES`)."""
    if run_rows is None or build_side is None:
        from zlbench.plugins.replay import binaries, worker

        if run_rows is None and start_warm is None:  # the real worker: start it early
            start_warm = worker.start_warm
        run_rows = run_rows or worker.run_rows
        build_side = build_side or binaries.build_side
    t0 = time.monotonic()
    rdir = out / REPLAY_DIR
    rdir.mkdir(parents=True, exist_ok=True)
    results = [baseline.ops[k] for k in sorted(ops) if k in baseline.ops]
    rows = [r.key(res.repo, res.run_name) for res in results for r in res.rows]
    captures = load_captures(baseline, ops, say)
    # the rows' recorded latencies, on this runner's GPU model (replay_plan.KERNEL_SCALE)
    costs = replay_costs(results, scale=kernel_scale(recorded_gpu, runner_gpu))
    sides = {
        name: (side.python, side.environ(with_front(os.environ, pythonpath)))
        for name, side in (("pr", pr), ("base", base))
    }
    plan = plan_replay(
        screen,
        rows,
        captures,
        costs=costs,
        op_costs=op_costs,
        budget_s=budget_s,
        families=families,
        rerun=rerun,
        timed_anyway=timed_anyway,
        every_row=every_row,
        proof_gpu=proof_gpu(runner_gpu, [env for _, env in sides.values()]),
    )
    unchanged = {p.key for p in plan.replay if not p.changed}
    planned_keys = [p.key for p in plan.replay]
    n_changed = plan.changed_rows  # the whole plan's, whichever part replays here
    plan_rows = plan.replay  # every row the plan replays, before a part takes its share
    if part is not None:
        plan.replay = part_rows(plan.replay, part)
    elif parts:
        plan.replay = []  # replayed by the parts: nothing to build or time here
    plan.replay_s = sum(p.cost_s for p in plan.replay)
    say(
        f"zlbench gate: replay: {n_changed} changed row(s): "
        f"{len(planned_keys) - len(unchanged)} to replay, {len(plan.fallback)} through "
        f"FlagGems, {len(plan.deferred)} deferred"
        + (f"; {len(unchanged)} unchanged row(s) replayed too (--time all)" if unchanged else "")
        + (
            f"; {len(plan.no_launch)} row(s) proven by their capture (no Triton kernel timed)"
            if plan.no_launch
            else ""
        )
        + (f"; part {part[0]}/{part[1]} replays {len(plan.replay)} of them" if part else "")
        + (f"; replayed by {len(parts)} part(s)" if parts else "")
    )
    caches = {"pr": pr_cache, "base": base_cache}
    kernels = plan.kernel_ids()
    built = {side: holds_built(c, kernels) for side, c in caches.items()}
    fallback = plan.op_rows()
    done: list[ReplayedRow] = []
    pairs = PairsFile()
    build_s = worker_s = 0.0
    builds: list[SideBuildTime] = []
    gpu, origin = runner_gpu or "", planned_from(baseline, screen)
    if parts:  # replayed by the parts: their rows and samples, checked against this plan
        done, pairs, build_s, worker_s, builds = load_parts(
            parts, plan, planned_keys, n_changed, gpu, origin, l2
        )
        # the op path the parts left: the plan's, and the rows they sent back
        whole_plan = replace(plan, replay=plan_rows)
        expected = parts_forecast(whole_plan, done, ops, op_costs or {}, op_path_wall)
    else:
        expected = forecast(
            plan,
            ops if part is None else set(),  # a part leaves the op path to the merging gate
            op_costs or {},
            jobs,
            pr_built=built["pr"],
            base_built=built["base"],
            op_path_wall=op_path_wall,
            compile_s={k.kernel_id: k.baseline.compile_s for k in screen.kernels},
            cached={side: built_ids(c) for side, c in caches.items() if c is not None},
        )
    say(forecast_line(expected, recorded_on))
    if plan.replay:
        t1 = time.monotonic()
        where = {"python": sides["pr"][0], "env": sides["pr"][1]}
        early = start_warm(rdir / REPLAY_PLAN, rdir / "worker", **where) if start_warm else None
        try:
            planned, lost, builds = _build(
                plan, baseline, screen, rdir, sides, build_side, say, jobs, caches, built
            )
            planned = planned.with_l2(l2)
            build_s = time.monotonic() - t1
            fallback += lost
            start = worker_start_s(build_s, warm=early is not None)
            load = host_load_s(builds)
            if load is not None and expected.op_path_ops:  # the rest, at this host's pace
                seconds = op_path_seconds(plan, ops, op_costs or {})
                rest = plan.replay_s + start if planned.rows else 0.0
                say(rest_line(build_s, rest, len(seconds), op_path_wall(seconds, load), load))
            if planned.rows:
                dump_json_model(rdir / REPLAY_PLAN, planned)
                t2 = time.monotonic()
                on_row = progress(planned, say, t2, costs, start_s=start)
                first = {"early": early} if early is not None else {}
                ran, pairs = run_rows(
                    rdir / REPLAY_PLAN, rdir / "worker", **where, on_row=on_row, **first
                )
                done = [
                    r.model_copy(update={"changed": False}) if r.key in unchanged else r
                    for r in ran.rows
                ]
                worker_s = time.monotonic() - t2
        finally:
            if early is not None:
                from zlbench.plugins.replay.worker import cancel

                cancel(early)  # none to replay, or done: nothing left running
    replayed = [r for r in done if r.timed_by_replay]
    ok = {r.key for r in replayed}
    pairs = PairsFile(rows=[p for p in pairs.rows if p.key in ok])
    run = ReplayRun(
        changed_rows=n_changed,
        rows=sorted(
            [*fallback, *(_fell_back(r) for r in done if r.key not in ok), *replayed],
            key=lambda r: r.key.label(),
        ),
        deferred=plan.deferred,
        no_launch=sorted(plan.no_launch, key=lambda k: k.label()),
        seconds=round(time.monotonic() - t0, 3),
        build_seconds=round(build_s, 3),
        builds=builds,
        worker_seconds=round(worker_s, 3),
        part=f"{part[0]}/{part[1]}" if part else "",
        gpu=gpu,
        planned_from=origin,
        l2=l2,
    )
    whole, partly = _op_path_split(run, plan)
    changed = {r.key for r in run.rows} | {d.key for d in run.deferred} | set(plan.failed)
    changed |= set(run.no_launch)  # judged on their capture, not as identical
    judged = whole | set(partly)
    run.identical = [k for k in rows if op_key(k.repo, k.run_name) in judged and k not in changed]
    dump_json_model(rdir / REPLAY_PAIRS, pairs)
    dump_json_model(rdir / REPLAY_JSON, run)  # last: a replay.json names only written pairs
    say(f"zlbench gate: replay: {run.coverage()} in {run.seconds:.0f} s (builds "
        f"{build_s:.0f} s, replay {worker_s:.0f} s); {len(whole)} op(s) judged by replay "
        f"alone ({rdir / REPLAY_JSON})")  # fmt: skip
    sentinels = {k: row for k, row in plan.sentinel_rows.items() if k in partly}
    return ReplayOutcome(run=run, replayed_ops=whole, op_rows=partly, sentinel_rows=sentinels)


# FlagGems' switch for its C extension (flag_gems/config.py, read at import): with it,
# kernels launch from C++, past the capture's hook and the proof's premise
C_EXTENSION_ENV = "USE_C_EXTENSION"


def proof_gpu(runner_gpu: str | None, environs: Sequence[Mapping[str, str]]) -> str | None:
    """The GPU model on which a capture proves a row times no Triton kernel
    (``plan_replay``'s ``proof_gpu``): this runner's, unless a side's environment asks
    FlagGems for its C extension (``USE_C_EXTENSION=1``: the gate would run launches the
    capture, made without it, never saw); None when the runner's model is not known."""
    if any(env.get(C_EXTENSION_ENV) == "1" for env in environs):
        return None
    return runner_gpu or None


def op_path_wall(seconds: Mapping[str, float], load_s: float | None = None) -> float:
    """The op path's expected wall from its ops' seconds (both sides of the A/B, the
    sides' turns counted): :func:`zlbench.runner.batch.costs.shard_wall` over one GPU,
    the seconds plus the interleaved A/B's start (``ab_start_s``: ``AB_START_S``, or at
    this host's pace ``load_s``, its import of FlagGems in this gate), one process a side.
    Without a start the v7 slice's broad change (an H100, 2026-12-06) was announced at
    1m06s for 1m39s after its screen, 39 s of it ops whose measure step took 67 s; with
    a one-sided batch's (``PROCESS_START_S``) its op path of two one-row sentinels was
    announced at 27.4 s for 37.0-42.6 s (docs/measurements.md, thirty-fourth and
    thirty-sixth sessions)."""
    from zlbench.runner.batch.costs import ab_start_s, shard_wall

    return shard_wall([sorted(seconds)], seconds, start_s=ab_start_s(load_s))


def forecast_line(f: ReplayForecast, recorded_on: str | None = None) -> str:
    """``zlbench gate: replay: expected about 2m10s: builds 20s, replay 1m30s (the cost
    model), 7 op(s) through FlagGems 43s (recorded seconds, both sides, and a process
    start)``; with
    ``recorded_on``, that note after "both sides" (``; recorded on NVIDIA H200, this
    runner has ...: they may undercount ...``)."""
    from zlbench.runner.batch.progress import fmt_seconds

    note = f"; {recorded_on}" if recorded_on else ""
    return (
        f"zlbench gate: replay: expected about {fmt_seconds(f.total_s)}: builds "
        f"{fmt_seconds(f.build_s)}, replay {fmt_seconds(f.replay_s)} (the cost model), "
        f"{f.op_path_ops} op(s) through FlagGems {fmt_seconds(f.op_path_s)} (recorded "
        f"seconds, both sides, and the A/B's start{note})"
    )


def rest_line(
    build_s: float, replay_s: float, op_path_ops: int, op_path_s: float, load_s: float
) -> str:
    """After the builds, what is left at this host's pace: ``zlbench gate: replay:
    builds took 9s; the rest expected about 32s: replay 3.9s (the cost model), 2 op(s)
    through FlagGems 28.2s (recorded seconds, both sides, and the A/B's start 23.8s:
    FlagGems imported in 5.8s here)``. The first forecast's op path takes a fixed start;
    the A/B's start follows the host (10.3-18 s on three H100 hosts, 1.57-1.71 times
    the import; :func:`zlbench.runner.batch.costs.ab_start_s`)."""
    from zlbench.runner.batch.costs import ab_start_s
    from zlbench.runner.batch.progress import fmt_seconds

    return (
        f"zlbench gate: replay: builds took {fmt_seconds(build_s)}; the rest expected about "
        f"{fmt_seconds(replay_s + op_path_s)}: replay {fmt_seconds(replay_s)} (the cost "
        f"model), {op_path_ops} op(s) through FlagGems {fmt_seconds(op_path_s)} "
        f"(recorded seconds, both sides, and the A/B's start {fmt_seconds(ab_start_s(load_s))}: "
        f"FlagGems imported in {fmt_seconds(load_s)} here)"
    )


PROGRESS_EVERY_S = 5.0  # at most one progress line per this many seconds of replayed rows


def progress(
    plan: ReplayPlanFile,
    say: Callable[[str], None],
    t0: float,
    costs: Mapping[RowKey, float] | None = None,
    clock=time.monotonic,
    every_s: float = PROGRESS_EVERY_S,
    start_s: float = WORKER_START_S,
) -> Callable[[int, str | None], None]:
    """The worker's per-row callback: a line as a row ends, with the counts and an ETA
    (``[3/45] softmax bfloat16 [1048576]: replayed, 1 fell back, ETA 1m10s``): for the
    first row, the last, every row that falls back, and else at most one line every
    ``every_s`` seconds (the rows between are counted in it): v7's broad change replays
    about 6,000 rows of 0.1 s, a line each would be 6,000 lines.

    The ETA is the cost model's seconds of the rows left (``costs``, the step's
    :func:`~zlbench.codegen.replay_plan.replay_costs`), scaled by the wall seconds per
    modelled second of what is done, the worker's start (``start_s``: what is left of
    ``WORKER_START_S`` when the first worker started warm beside the builds,
    ``codegen.replay_plan.worker_start_s``) counted as done with the first row
    (``runner.batch.progress.corrected_eta``, as the batch's
    done lines). An ETA of the mean row so far counted that start in the first row
    alone: on an H100 (thirty-second session) the first line of a 29 s replay said
    ETA 17m21s."""
    from zlbench.runner.batch.progress import corrected_eta, fmt_seconds

    cost = [(costs or {}).get(r.key) for r in plan.rows]
    cost = [replay_cost_s(None) if c is None else c for c in cost]
    done: set[int] = set()
    fell_back: set[int] = set()  # sets, not a count: a row's line may come twice
    modelled = {"done": start_s, "left": sum(cost)}  # seconds, kept as rows end
    last_said = [None]  # the clock at the last line

    def on_row(i: int, why: str | None) -> None:
        total = len(plan.rows)
        if i not in done and 0 <= i < total:
            modelled["done"] += cost[i]
            modelled["left"] -= cost[i]
        done.add(i)
        (fell_back.discard if why is None else fell_back.add)(i)
        n, back = len(done), len(fell_back)
        key = plan.rows[i].key if 0 <= i < total else None
        what = "replayed" if why is None else f"through FlagGems ({why[:80]})"
        now = clock()
        quiet = last_said[0] is not None and now - last_said[0] < every_s
        if why is None and n < total and quiet:
            return
        last_said[0] = now
        left_s = max(0.0, modelled["left"])
        rest = (corrected_eta(now - t0, modelled["done"], left_s) or 0.0) if n < total else 0.0
        tail = f", ETA {fmt_seconds(rest)}" if rest else ""
        row = f"{key.op} {key.dtype} {key.shape}" if key is not None else f"row {i}"
        say(f"zlbench gate: replay [{n}/{total}] {row}: {what}; {back} fell back{tail}")

    return on_row


NOT_IN_PART = "not replayed by its part"


def planned_from(baseline: BaselineSet, screen: CodegenScreen) -> str:
    """``ReplayRun.planned_from``: the baseline's manifest digest and both compilers."""
    from zlbench.codegen.shards import manifest_sha256

    sha = manifest_sha256(baseline.path)[:16]
    return f"baseline {sha}; PR {screen.compiler or '?'}; base {screen.base_compiler or '?'}"


def load_parts(
    parts: Sequence[Path],
    plan: ReplayPlan,
    planned: Sequence[RowKey],
    changed_rows: int,
    gpu: str,
    origin: str,
    l2: L2Policy = DEFAULT_L2,
) -> tuple[list[ReplayedRow], PairsFile, float, float, list[SideBuildTime]]:
    """The rows and samples of the parts' replay dirs (``<part>/replay/``, ``gate
    --replay-part K/N`` each): every part of one N, once; each part's own plan lists
    (``changed_rows``, rows on the op path, deferred, proven by their capture) this plan's,
    on this GPU model (``gpu``), from this baseline and compilers (``origin``,
    :func:`planned_from`), timed under this L2 policy (``l2``); each of the plan's rows
    to replay (``planned``) in one part at most, a row in none falling back
    (:data:`NOT_IN_PART`). Returns the rows,
    the samples, the parts' build and worker seconds summed, and their builds. A part
    that does not fit is one ZlbenchError line."""
    runs: dict[int, tuple[Path, ReplayRun, PairsFile]] = {}
    for d in parts:
        run = load_json_model(resolve_inside(d, f"{REPLAY_DIR}/{REPLAY_JSON}"), ReplayRun)
        pairs = load_json_model(resolve_inside(d, f"{REPLAY_DIR}/{REPLAY_PAIRS}"), PairsFile)
        k, _, n = run.part.partition("/")
        if not (k.isdigit() and n == str(len(parts)) and 1 <= int(k) <= len(parts)):
            raise ZlbenchError(
                f"--replayed {d}: part {run.part or 'none'}, not one of {len(parts)} parts "
                f"(give every part's gate dir of `gate --replay-part K/{len(parts)}`, once)"
            )
        if int(k) in runs:
            raise ZlbenchError(f"--replayed {d}: part {run.part} given twice")
        runs[int(k)] = (d, run, pairs)
    mine = set(planned)
    rows: dict[RowKey, ReplayedRow] = {}
    samples = []
    for d, run, pairs in runs.values():
        why = _other_plan(run, plan, mine, changed_rows, gpu, origin, l2)
        if why:
            raise ZlbenchError(f"--replayed {d}: part {run.part} {why}")
        own = [r for r in run.rows if r.key in mine]
        for r in own:
            if r.key in rows:
                raise ZlbenchError(f"--replayed {d}: {r.key.label()} replayed by two parts")
            rows[r.key] = r
        listed = {r.key for r in own}  # a part's samples count for its own rows only
        samples += [p for p in pairs.rows if p.key in listed]
    done = [rows.get(k) or ReplayedRow(key=k, instrument="op", why=NOT_IN_PART) for k in planned]
    got = [r for _, r, _ in runs.values()]
    build_s, worker_s = sum(r.build_seconds for r in got), sum(r.worker_seconds for r in got)
    return done, PairsFile(rows=samples), build_s, worker_s, [b for r in got for b in r.builds]


def _other_plan(
    run: ReplayRun,
    plan: ReplayPlan,
    planned: set[RowKey],
    changed_rows: int,
    gpu: str,
    origin: str,
    l2: L2Policy,
) -> str:
    """How a part's run is not of this plan (its own lists), "" when it is."""
    if run.planned_from != origin:
        return f"was planned from {run.planned_from or 'nothing it names'}, this gate from {origin}"
    if run.l2 != l2:
        return f"was timed under --replay-l2 {run.l2}, this gate asks {l2}"
    if run.gpu != gpu:
        return (
            f"replayed on {run.gpu or 'a GPU it does not name'}, this runner is "
            f"{gpu or 'not named'}"
        )
    if run.changed_rows != changed_rows:
        return f"has {run.changed_rows} changed rows, this plan {changed_rows}"
    if set(run.no_launch) != set(plan.no_launch):
        return "proves other rows by their capture than this plan"
    if {d.key for d in run.deferred} != {d.key for d in plan.deferred}:
        return "defers other rows than this plan"
    fell = {r.key for r in run.rows if r.key not in planned}
    if fell != set(plan.fallback):
        return "leaves other rows to the op path than this plan"
    return ""


def _fell_back(r: ReplayedRow) -> ReplayedRow:
    """A row the worker did not replay with matching outputs: timed through FlagGems."""
    if r.instrument == "op":
        return r
    why = r.why or ("outputs differ from the base's" if r.outputs == "differ" else "not replayed")
    return r.model_copy(update={"instrument": "op", "why": why})


def _op_path_split(run: ReplayRun, plan: ReplayPlan) -> tuple[set[str], dict[str, list[RowKey]]]:
    """(The ops whose every changed row was replayed and none kept on the op path
    (:meth:`ReplayPlan.kept_ops`): the op path need not measure them; op key -> the rows
    the op path measures, for each op some of whose changed rows were replayed and the
    others not, in the plan or in the step, and for each family sentinel some of whose
    rows were replayed (its one row, :attr:`ReplayPlan.sentinel_rows`, and any that
    fell back): the op path times those rows only, the replay judges the rest, unless
    the op is measured whole anyway (:meth:`ReplayPlan.whole_ops`).) A row proven by
    its capture (``run.no_launch``) counts as replayed here: the op path never times
    it."""
    replayed = {op_key(k.repo, k.run_name) for k in run.no_launch}
    fell: dict[str, list[RowKey]] = {}
    for r in run.rows:
        key = op_key(r.key.repo, r.key.run_name)
        if r.instrument == "kernel-replay":
            replayed.add(key)
        else:
            fell.setdefault(key, []).append(r.key)
    whole = replayed - set(fell) - plan.kept_ops()
    kept = plan.whole_ops()
    partly = {}
    for k in sorted(set(fell) | set(plan.sentinel_rows)):
        if k in replayed and k not in kept:
            mine = [plan.sentinel_rows[k]] if k in plan.sentinel_rows else []
            partly[k] = list(dict.fromkeys([*fell.get(k, []), *mine]))
    return whole, partly


def _build(
    plan: ReplayPlan,
    baseline: BaselineSet,
    screen: CodegenScreen,
    rdir: Path,
    sides: Mapping[str, tuple[str | None, dict[str, str]]],
    build_side: Callable,
    say: Callable[[str], None],
    jobs: int = 1,
    caches: Mapping[str, Path | None] | None = None,
    filled: Mapping[str, bool] | None = None,
) -> tuple[ReplayPlanFile, list[ReplayedRow], list[SideBuildTime]]:
    """Both sides' binaries of the planned rows' kernels, the sides at once within
    ``jobs`` rebuild workers (``build_workers``); the plan file of the rows whose every
    kernel built on both sides (the PR's as the screen built it), the others as
    fallbacks with why, and where each side's build went. ``caches``: side -> the
    triton cache dir the screen compiled that side's kernels into (built there: a kernel
    there is a cache hit; a kernel cache of ``--kernel-cache`` too, where each build
    notes what it put: ``protocol.cache.mark_built``); ``filled``: side -> whether that
    dir holds the plan's kernels built (``protocol.cache.holds_built``: a side of cache
    hits needs fewer workers)."""
    ids = sorted(plan.kernel_ids())
    kernels = collect(baseline.path, {op_key(p.key.repo, p.key.run_name) for p in plan.replay})
    if any(k not in kernels.records for k in ids):  # a kernel another op recorded
        kernels = collect(baseline.path)
    records = [kernels.records[k] for k in ids if k in kernels.records]
    shared = {s: c for s, c in (caches or {}).items() if c is not None}  # the screen's, kept
    hits = {side: bool((filled or {}).get(side)) for side in sides}
    workers = build_workers(jobs, len(records), hits)
    say(
        f"zlbench gate: replay: building {len(records)} kernel(s) with both compilers at "
        f"once ({', '.join(f'{s} {n} worker(s)' for s, n in workers.items())})"
    )

    def one(side: str) -> SideBuild:
        python, env = sides[side]
        return build_side(
            records,
            rdir / f"build-{side}",
            shared.get(side) or rdir / f"cache-{side}",
            python=python,
            env=env,
            exec_generated=True,
            jobs=workers[side],
            in_cache=side in shared,
        )

    with ThreadPoolExecutor(max_workers=len(sides)) as pool:  # each side: its own processes
        built = dict(zip(sides, pool.map(one, sides), strict=True))
    for side, b in built.items():  # the next build there (a later part, a later gate) hits
        if side in shared:
            mark_built(shared[side], b.refs)
    times = [b.timing(side, len(records)) for side, b in built.items()]
    screened = {k.kernel_id: k for k in screen.kernels}
    differs = {  # the PR side's build is not what the screen built
        kid for kid, rec in built["pr"].rebuilt.items() if not_screens(rec, screened.get(kid))
    }
    planned = ReplayPlanFile(exec_generated=True, requests={r.id: r.request for r in records})
    lost: list[ReplayedRow] = []
    for p in plan.replay:
        why, refs = "", {}
        for kid in dict.fromkeys(launch.kernel_id for launch in p.launches.launches):
            if kid in differs:
                why = f"{DIFFERS_FROM_SCREEN} (kernel {kid})"
                break
            per_side: dict[str, BinaryRef] = {}
            for side, b in built.items():
                if kid not in b.refs:
                    why = f"{side} build of kernel {kid}: {b.errors.get(kid, 'not built')}"
                    break
                per_side[side] = b.refs[kid]
            if why:
                break
            refs[kid] = per_side
        if why:
            lost.append(
                ReplayedRow(
                    key=p.key, instrument="op", why=why, kernels=list(p.kernels), changed=p.changed
                )
            )
            continue
        planned.rows.append(
            PlannedRow(
                key=p.key,
                launches=p.launches.launches,
                binaries=refs,
                order=p.launches.order,
                timeout_s=row_timeout(p.cost_s, planned.row_timeout_s),
            )
        )
    return planned, lost, times


def not_screens(rec: CompileRecord, screened: KernelScreen | None) -> bool:
    """Whether the PR side's build ``rec`` is not the binary the screen built: their
    cubins' code digests differ (``KernelScreen.binary_digest``). A screen without one
    (written before it) is held to its ``code_digest``, which takes the SASS stage's
    digest where the screen disassembled: the replay's builds do not (``--no-sass``), so
    such a kernel is refused, never wrongly accepted."""
    if screened is None:
        return False
    if screened.binary_digest:  # a build without a cubin: its build error says why
        got = rec.result.cubin_code_sha256 if rec.result else None
        return got is not None and got != screened.binary_digest
    got = code_digest(rec)
    return bool(screened.code_digest and got) and got != screened.code_digest

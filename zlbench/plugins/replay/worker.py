"""The replay worker: time the planned rows' kernels under both compilers (issue 51).

::

    python -m zlbench.plugins.replay.worker PLAN_JSON OUT_DIR [--skip K] [--avoid I,J] [--warm]

``PLAN_JSON`` is a :class:`~zlbench.models.ReplayPlanFile`: the rows to replay in
order, each with its launches (``LaunchSpec``) and per kernel id both sides' binaries
(a triton cache group and the code digest the screen gave it), the compile requests,
the pair rule and the timing settings. For each row, in plan order (``--skip K``: from
row ``K`` on, for a restarted worker; ``--avoid``: those rows not tried, the caller's
quarantine):

1. validate: every launch replayable (no ``why_not``), every kernel id with a compile
   request and a binary of both sides, no buffer passed between launches whose runs'
   order is not captured (:func:`~zlbench.models.replay.order_unknown`);
2. load both sides' binaries (:mod:`.binaries`: the cubin's code digest must be the
   screen's before any sample counts) and materialize the row's arguments
   (:func:`.materialize.materialize_row`: one storage per buffer number across its
   launches, each launch's values seeded by a hash of the row key and its index),
   checked against what each binary was specialised on (:func:`.binaries.check_args`);
3. time the two sides paired (:func:`.timing.time_paired`: one stream, ABBA, inputs
   restored (and L2 flushed) before each sample or each timed call as the plan's L2
   policy says, stopped by the pair rule); a side's call runs the row's launches in the
   capture's run order when it gave one, else in order, each ``count`` times
   (:func:`~zlbench.models.replay.run_sequence`);
4. run each side once more and compare every tensor argument
   (:func:`.timing.side_outputs`, :func:`.timing.compare_outputs`); when PR and base
   differ, again (up to :data:`~zlbench.models.replay.BASE_RUNS` base runs, fewer when
   its second run agrees or its spread already covers the PR's), comparing each base
   run with its first: where the base differs from itself and the PR from the base
   within :data:`~zlbench.models.replay.RACY_MARGIN` times that
   (:func:`~zlbench.models.replay.outputs_race`: a race, which any write of a duplicate
   index may win), the row counts as replayed (``outputs "racy"``, both
   errors kept for the judge to weigh again); else its line says whether the base's
   own runs differ too or agree.

A row that fails any step falls back to the op path (``ReplayedRow.instrument "op"``
with the reason in one line) and contributes no samples; so does a row whose outputs
differ between PR and base beyond the base's own spread (``outputs "differ"``): its
timing may not be of the same work. Nothing the worker writes for such a row can make
it PASS.

Output: ``OUT_DIR/rows.jsonl``, one line appended and flushed as each row ends (a
:class:`~zlbench.models.replay.WorkerRow`: the row and, when replayed, its samples), so
what a dead worker ended survives and the bookkeeping stays linear in the rows (a
whole-file rewrite after every row cost 17 s for 1,000 rows on this project's 2-core
machine, growing with the square: minutes at v7's 6,451). :func:`read_outputs` reads
it; a torn last line (a worker killed mid-write) is not a row. The caller merges the
parts into ``OUT_DIR/rows.json`` (a :class:`~zlbench.models.ReplayRun`) and
``OUT_DIR/pairs.json`` (a ``PairsFile``: the samples of the rows replayed, judged by the
same pair rule as the op path's A/B).

``--warm`` (the gate's first worker, started while both sides' binaries build): load
what timing needs before any plan exists (:func:`warm_up`: torch, the CUDA context,
triton's loader, FlagGems), say how long that took on stderr, then wait for the line
``go`` on stdin before reading ``PLAN_JSON`` (the caller writes the plan first; a plan
file left by an earlier gate in the same dir is never read early). Anything else on
stdin, or its end: exit 2 and no row. A fresh worker's first row loaded 7.5-8.4 s of
this (docs/measurements.md, thirty-third to thirty-fifth sessions).

Before the first of each :data:`PREPARE_ROWS` rows is timed, the worker loads their
binaries and builds their launchers at once (:func:`prepare_launchers`): triton builds a
launcher with the C compiler at a new signature's first launch, ~0.3 s inside that
row's timing, one row after another (ten rows of the v7 slice on a fresh H100).

stdout speaks the compile workers' line protocol (:mod:`zlbench.protocol.compile_lines`)
with the plan's row index as the item: ``ZLBENCH_COMPILED <i> ok`` (replayed) or
``ZLBENCH_COMPILED <i> failed <why>`` (fell back) as each row ends, then ``ZLBENCH_REPLAY
rows=N failed=F out=OUT_DIR`` once done. A bad plan: exit 2, one line on stderr.

A hang or a device fault: a kernel that hangs blocks the process in a synchronisation
no Python timeout can interrupt, and a CUDA fault (an illegal address) poisons the
process's context, so every later launch fails too. The worker therefore checks the
device after a row fails (``torch.cuda.synchronize``); when it is broken it writes its
outputs and exits :data:`POISONED` after the failed row's line. :func:`run_rows` (the
caller's side) runs the worker, gives each row its hang limit
(``ReplayPlanFile.timeout_of``: ``row_timeout_s``, or a row of long calls its own; the
first row :data:`STARTUP_S` more: CUDA and launcher start-up), kills a worker that goes
past it or dies, records the row in flight as fallen back, and starts a fresh worker
for the remaining rows; it merges the parts into ``OUT_DIR/rows.json`` and
``pairs.json``.

GPU only, not verified on a GPU in this session: the default seams (real binaries,
CUDA event timing, the L2 flush, the device check). The tests inject fakes, and load
real cubins under the stand-in driver (launches do nothing).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zlbench.errors import ZlbenchError
from zlbench.models import (
    REPLAY_PAIRS,
    PairedSamples,
    PairSample,
    PairsFile,
    ReplayedRow,
    ReplayPlanFile,
    ReplayRun,
    RowKey,
    dump_json_model,
    load_json_model,
)
from zlbench.models.replay import (
    BASE_RUNS,
    INTERMEDIATE_BUFFER,
    PlannedRow,
    WorkerRow,
    error_text,
    order_unknown,
    outputs_race,
    quarantined,
    run_sequence,
)
from zlbench.protocol import compile_lines
from zlbench.protocol.pairs import SIDES, PairRule, complete_pairs

REPLAY_END = "ZLBENCH_REPLAY"  # the worker's end line
ROWS_JSON = "rows.json"  # the caller's OUT_DIR/rows.json: a ReplayRun of every row
ROWS_JSONL = "rows.jsonl"  # a worker's OUT_DIR/rows.jsonl: a WorkerRow per row it ended
POISONED = 3  # exit status: the device broke; the caller restarts for the rest
STARTUP_S = 120.0  # the first row's extra time in a fresh worker
GO = "go"  # what the caller writes on a --warm worker's stdin once the plan is written
# Rows whose binaries are loaded and launchers built at once before the first of them
# is timed (seams.prepare): a chunk, not the whole plan, so that the pause stays within
# the row timeout that the caller's watch gives the chunk's first row (v7's ~6,000 rows
# hold ~12,000 binaries)
PREPARE_ROWS = 200
LOG_TAIL = 3
MODULE = "zlbench.plugins.replay.worker"


# --------------------------------------------------------------------------- seams


@dataclass
class Seams:
    """What the worker calls to load, materialize, launch and time; the defaults are
    the real ones (:func:`real_seams`), tests inject fakes."""

    binaries: Callable[[ReplayPlanFile], Any]  # -> .get(kid, side, ref), .close()
    # (a row's LaunchSpecs, device, a seed per launch) -> each launch's args
    materialize: Callable[[Any, str, Sequence[int]], list]
    check_args: Callable[[Any, Sequence[Any]], None]  # (CompileRequest, args)
    launch: Callable[[Any, Sequence[int], Sequence[Any]], None]  # (kernel, grid, args)
    timer: Callable[[str, int], Any]  # (device, launches a side's call makes) -> a Timer
    # (device, how: timing.FLUSH_BY) -> the L2 flush
    flush: Callable[[str, str], Callable[[], None] | None]
    time_paired: Callable[..., Any]  # -> timing.Paired (.samples, .reps)
    side_outputs: Callable[..., dict[str, list]]
    compare_outputs: Callable[..., tuple[bool, float]]
    healthy: Callable[[str], bool]  # device -> still usable after a failed row
    sync: Callable[[str], None] = lambda device: None  # wait for the device's queued work
    warm: Callable[[], None] = lambda: None  # --warm: load the timing's runtime (warm_up)
    # (plan, the next PREPARE_ROWS rows, loaded binaries) -> launchers built ahead of them
    prepare: Callable[[ReplayPlanFile, Sequence[PlannedRow], Any], int] = lambda p, r, b: 0


def real_seams() -> Seams:
    from zlbench.plugins.replay import binaries, materialize, timing

    def make_binaries(plan: ReplayPlanFile) -> binaries.Binaries:
        return binaries.Binaries(plan.requests, plan.exec_generated)

    def timer(device: str, launches: int) -> Any:
        if not device.startswith("cuda"):
            return timing.PerfCounterTimer()
        return timing.CudaEventTimer(timing.lead_cycles_for(launches))

    return Seams(
        binaries=make_binaries,
        materialize=materialize.materialize_row,
        check_args=binaries.check_args,
        launch=binaries.launch,
        timer=timer,
        flush=timing.l2_flush,
        time_paired=timing.time_paired,
        side_outputs=timing.side_outputs,
        compare_outputs=timing.compare_outputs,
        healthy=device_healthy,
        sync=device_sync,
        warm=warm_up,
        prepare=prepare_launchers,
    )


def prepare_launchers(plan: ReplayPlanFile, rows: Sequence[PlannedRow], loaded: Any) -> int:
    """Load every binary of ``rows`` (a row's load then finds it loaded) and build their
    launchers at once (:func:`.binaries.prebuild_launchers`, one job a CPU) before any
    row is timed, so no row's timing waits for the C compiler; how many launchers. A
    binary that does not load is left to its row, which falls back saying why."""
    from zlbench.plugins.replay import binaries

    kernels = []
    refs = [(kid, side, ref) for row in rows for kid, by_side in row.binaries.items()
            for side, ref in by_side.items()]  # fmt: skip
    for kid, side, ref in refs:
        try:
            kernels.append(loaded.get(kid, side, ref))
        except Exception:  # noqa: BLE001 - the row's own load says why
            continue
    return binaries.prebuild_launchers(kernels, os.cpu_count() or 1)


def warm_up() -> None:
    """What a fresh worker's first row would load before it could time anything: torch
    and the CUDA context, triton's runtime and loader, and FlagGems (whose modules hold
    the kernels; not importable here: left to the first row, which then says why)."""
    import torch

    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")  # the context
    import triton  # noqa: F401
    from triton.compiler.compiler import CompiledKernel  # noqa: F401

    try:
        import flag_gems  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure: the first row's load meets it again
        pass


def device_sync(device: str) -> None:
    """Wait for the device's queued work (a phase's seconds then hold its own GPU work)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def device_healthy(device: str) -> bool:
    """False when the device's context is broken (a fault of an earlier launch surfaces
    at the synchronisation); always True on the CPU."""
    if not device.startswith("cuda"):
        return True
    import torch

    try:
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - any error here: the context is gone
        return False
    return True


# --------------------------------------------------------------------------- one row


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    msg = f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
    return msg if not isinstance(e, ZlbenchError) else (text[0] if text else msg)


def row_seed(key: RowKey, launch: int) -> int:
    """The seed of a row's ``launch``-th launch's stand-in values: a hash of the row key
    (the same row draws the same values in every gate)."""
    text = f"{key.model_dump_json()}#{launch}"
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def kernel_ids(row: PlannedRow) -> list[str]:
    """The row's kernel ids in first-launch order."""
    return list(dict.fromkeys(launch.kernel_id for launch in row.launches))


def fallback(row: PlannedRow, why: str) -> ReplayedRow:
    """``row`` fallen back to the op path, with why (one line)."""
    return ReplayedRow(key=row.key, instrument="op", why=why, kernels=kernel_ids(row))


def why_not(plan: ReplayPlanFile, row: PlannedRow) -> str | None:
    """Why ``row`` cannot be replayed as planned (one line), None when it can."""
    for launch in row.launches:
        if launch.why_not:
            return f"launch of {launch.kernel} not replayable: {launch.why_not}"
    for kid in kernel_ids(row):
        if kid not in plan.requests:
            return f"kernel {kid}: no compile request in the plan"
        sides = row.binaries.get(kid, {})
        missing = [s for s in SIDES if s not in sides]
        if missing:
            return f"kernel {kid}: no {' and no '.join(missing)} binary"
    return INTERMEDIATE_BUFFER if order_unknown(row.launches, row.order) else None


def _side_call(
    seams: Seams, calls: list[tuple[Any, list[int], int, int]], sequence: list[int]
) -> Callable:
    """One replayed call of a side: its launches run in ``sequence`` (by index)."""

    def run(args: list) -> None:
        for i in sequence:
            kernel, grid, lo, hi = calls[i]
            seams.launch(kernel, grid, args[lo:hi])

    return run


def replay_row(
    plan: ReplayPlanFile, row: PlannedRow, seams: Seams, loaded: Any, rule: PairRule
) -> tuple[ReplayedRow, PairedSamples | None]:
    """One row's outcome and, when it was replayed, its samples (module docstring).
    A failure is the row's fallback; only a bug outside the seams raises."""
    kids = kernel_ids(row)
    why = why_not(plan, row)
    if why is not None:
        return fallback(row, why), None
    phases: dict[str, float] = {}
    t0 = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal t0
        seams.sync(plan.device)
        now = time.perf_counter()
        phases[name] = round(now - t0, 4)
        t0 = now

    try:
        kernels = {
            (kid, side): loaded.get(kid, side, row.binaries[kid][side])
            for kid in kids
            for side in SIDES
        }
        phase("load")
        args: list = []
        calls: dict[str, list] = {side: [] for side in SIDES}
        seeds = [row_seed(row.key, i) for i in range(len(row.launches))]
        each = seams.materialize(row.launches, plan.device, seeds)
        for launch, mine in zip(row.launches, each, strict=True):
            mine = list(mine)
            seams.check_args(plan.requests[launch.kernel_id], mine)
            lo, hi = len(args), len(args) + len(mine)
            args += mine
            for side in SIDES:
                kernel = kernels[(launch.kernel_id, side)]
                calls[side].append((kernel, list(launch.grid), lo, hi))
        sequence = run_sequence(row.launches, row.order)  # the capture's run order, if given
        launch_of = {side: _side_call(seams, calls[side], sequence) for side in SIDES}
        phase("materialize")
        paired = seams.time_paired(
            launch_of,
            args,
            rule=rule,
            timer=seams.timer(plan.device, len(sequence)),
            flush=seams.flush(plan.device, plan.flush_by) if plan.flush else None,
            warmup=plan.warmup,
            reps=plan.reps,
            target_ms=plan.sample_ms,
            settle=plan.settle,
            restore_each=plan.restore_each,
        )
        samples = paired.samples
        phase("time")
        outs = seams.side_outputs(launch_of, args)
        match, err = seams.compare_outputs(outs["pr"], outs["base"], rtol=plan.rtol, atol=plan.atol)
        same, by, runs = True, 0.0, 0  # outputs differ: does the base differ from itself?
        if not match:
            same, by, runs = _base_spread(seams, plan, launch_of, args, outs["base"], err)
        phase("outputs")
        kept = PairedSamples(key=row.key, samples=[PairSample(**s) for s in samples])
    except Exception as e:  # noqa: BLE001 - any failure of one row: it falls back
        return fallback(row, one_line(e)), None
    error = float(err) if math.isfinite(err) else None
    base_spread = float(by) if math.isfinite(by) and not same else None
    said = "match"
    if not match:
        if not outputs_race(error, base_spread):
            why = f"PR and base outputs differ after replay (max error {error_text(err)})"
            own = "agree" if same else f"differ too (max error {error_text(by)})"
            why += f"; the base's own {_count(runs)} runs {own}"
            out = ReplayedRow(key=row.key, instrument="op", why=why, kernels=kids,
                              outputs="differ", max_error=error,
                              base_spread=base_spread, base_runs=runs)  # fmt: skip
            return out, None
        said = "racy"  # the base differs from itself as much: timed by its replay
    pairs = len(complete_pairs(samples)[0])
    out = ReplayedRow(key=row.key, instrument="kernel-replay", kernels=kids,
                      outputs=said, max_error=error, pairs=pairs, reps=paired.reps,
                      phases=phases, base_spread=base_spread, base_runs=runs)  # fmt: skip
    return out, kept


def _base_spread(
    seams: Seams, plan: ReplayPlanFile, launch_of: Mapping, args: list, first: Any, err: float
) -> tuple[bool, float, int]:
    """The base run again, its outputs compared with its ``first`` run's, when PR and
    base differ by ``err``: (every run agreed, the largest error, the base's runs). A
    second run that agrees ends it (a difference the PR makes); else up to
    :data:`~zlbench.models.replay.BASE_RUNS` runs, ending as soon as the spread covers
    the PR's (:func:`~zlbench.models.replay.outputs_race`), or either is not finite
    (no spread can cover an infinite error)."""
    same, by, runs = True, 0.0, 1
    while runs < BASE_RUNS:
        again = seams.side_outputs(launch_of, args)["base"]
        runs += 1
        agree, e = seams.compare_outputs(first, again, rtol=plan.rtol, atol=plan.atol)
        if not agree:
            same, by = False, max(by, float(e))
        if same or not (math.isfinite(by) and math.isfinite(err)) or outputs_race(err, by):
            break
    return same, by, runs


def _count(n: int) -> str:
    return {2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))


# --------------------------------------------------------------------------- the worker


def replay_plan(
    plan: ReplayPlanFile,
    out_dir: Path,
    seams: Seams,
    *,
    skip: int = 0,
    on_row: Callable[[int, str | None], None] | None = None,
    avoid: Collection[int] = (),
) -> int:
    """Replay ``plan``'s rows from ``skip`` on into ``out_dir`` (module docstring),
    but those in ``avoid`` (the caller's: not tried, no line); ``on_row(index, why)`` as
    each row ends (why None: replayed). Returns 0, or :data:`POISONED` when a failed row
    left the device broken (the rows after it not tried)."""
    rule = PairRule.from_json(plan.rule) if plan.rule else PairRule()
    out_dir.mkdir(parents=True, exist_ok=True)
    todo = [i for i in range(skip, len(plan.rows)) if i not in avoid]
    with open(out_dir / ROWS_JSONL, "w", encoding="utf-8") as lines:
        loaded = seams.binaries(plan)
        try:
            for n, i in enumerate(todo):
                if n % PREPARE_ROWS == 0:  # the next rows' launchers, at once
                    chunk = [plan.rows[j] for j in todo[n : n + PREPARE_ROWS]]
                    _prepare(plan, chunk, seams, loaded)
                got, samples = replay_row(plan, plan.rows[i], seams, loaded, rule)
                lines.write(WorkerRow(row=got, samples=samples).model_dump_json() + "\n")
                lines.flush()  # before the row's line on stdout: a line names a written row
                if on_row is not None:
                    on_row(i, None if got.instrument == "kernel-replay" else got.why)
                if got.instrument != "kernel-replay" and not seams.healthy(plan.device):
                    return POISONED
        finally:
            close = getattr(loaded, "close", None)
            if close is not None:
                close()
    return 0


def _prepare(plan: ReplayPlanFile, rows: Sequence[PlannedRow], seams: Seams, loaded: Any) -> None:
    """``seams.prepare`` (the launchers, before any row is timed), said on stderr; a
    failure of it costs no row: each row loads and launches as it would without."""
    t0 = time.monotonic()
    try:
        n = seams.prepare(plan, rows, loaded)
    except Exception as e:  # noqa: BLE001 - an optimisation only
        print(f"zlbench: replay: launchers not built ahead: {one_line(e)}", file=sys.stderr)
        return
    print(f"zlbench: replay: {n} launcher(s) ready in {time.monotonic() - t0:.1f} s",
          file=sys.stderr, flush=True)  # fmt: skip


def read_outputs(out_dir: Path) -> tuple[ReplayRun, PairsFile]:
    """A worker's ``rows.jsonl`` as the rows it ended and the samples of those it
    replayed; a line that does not parse (a worker killed mid-write) is not a row. No
    file: a ZlbenchError of one line."""
    path = out_dir / ROWS_JSONL
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise ZlbenchError(f"{path}: {e.strerror or e}") from None
    run, pairs = ReplayRun(), PairsFile()
    for line in text.splitlines():
        try:
            got = WorkerRow.model_validate_json(line)
        except ValueError:
            continue
        run.rows.append(got.row)
        if got.samples is not None and got.row.instrument == "kernel-replay":
            pairs.rows.append(got.samples)
    return run, pairs


def load_plan(path: str | os.PathLike) -> ReplayPlanFile:
    """The plan, or a ZlbenchError of one line (unreadable, invalid, a bad rule)."""
    plan = load_json_model(path, ReplayPlanFile)
    if plan.rule:
        try:
            PairRule.from_json(plan.rule)
        except Exception as e:  # noqa: BLE001 - any bad rule text is the plan's error
            raise ZlbenchError(f"{path}: rule: {one_line(e)}") from None
    keys = [r.key for r in plan.rows]
    if len(set(keys)) != len(keys):
        raise ZlbenchError(f"{path}: a row is planned twice")
    return plan


def _rows_list(text: str) -> frozenset[int]:
    """``--avoid``'s value: row indices, comma-separated (empty: none)."""
    try:
        return frozenset(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not row indices: {text!r}") from None


def main(argv: list[str] | None = None, seams: Seams | None = None) -> int:
    p = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    p.add_argument("plan", help="a ReplayPlanFile (plan.json)")
    p.add_argument("out_dir", help="where to write rows.jsonl")
    p.add_argument("--skip", type=int, default=0, metavar="K", help="start at row K")
    p.add_argument("--avoid", type=_rows_list, default=frozenset(), metavar="I,J,...",
                   help="rows not to try (the caller's quarantine)")  # fmt: skip
    p.add_argument(
        "--warm",
        action="store_true",
        help="load the timing's runtime first, then read PLAN_JSON once stdin says go",
    )
    args = p.parse_args(argv)
    failed = 0
    seams = seams or real_seams()
    if args.warm:
        t0 = time.monotonic()
        seams.warm()
        print(f"zlbench: replay worker warmed up in {time.monotonic() - t0:.1f} s",
              file=sys.stderr, flush=True)  # fmt: skip
        said = sys.stdin.readline().strip()
        if said != GO:
            print(f"zlbench: replay: the caller said {said!r}, not {GO!r}: no row replayed",
                  file=sys.stderr)  # fmt: skip
            return 2

    def on_row(i: int, why: str | None) -> None:
        nonlocal failed
        failed += why is not None
        compile_lines.write_item(str(i), why)

    try:
        plan = load_plan(args.plan)
        if not 0 <= args.skip <= len(plan.rows):
            raise ZlbenchError(f"--skip {args.skip}: the plan has {len(plan.rows)} rows")
        status = replay_plan(plan, Path(args.out_dir), seams, skip=args.skip,
                             on_row=on_row, avoid=args.avoid)  # fmt: skip
    except ZlbenchError as e:
        print(f"zlbench: {e}", file=sys.stderr)
        return 2
    if status:
        print(f"zlbench: replay: the device failed after a row; stopped (exit {status})",
              file=sys.stderr)  # fmt: skip
        return status
    rows = sum(1 for i in range(args.skip, len(plan.rows)) if i not in args.avoid)
    compile_lines.write_end(REPLAY_END, rows=rows, failed=failed, out=args.out_dir)
    return 0


# --------------------------------------------------------------------------- the caller


@dataclass
class Part:
    """What one worker process did: rows it ended (index -> why, None replayed), the
    row it was in when it stopped and why (None: it finished)."""

    ended: dict[int, str | None]
    lost: tuple[int, str] | None
    out: Path


def _reader(stream: Any, q: queue.Queue) -> None:
    for line in stream:
        q.put(line)
    q.put(None)


def _stop(proc: subprocess.Popen) -> None:
    """Kill the worker (its process group: it started none of its own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-LOG_TAIL:])


OnRow = Callable[[int, "str | None"], None]  # a row's index as it ends, why (None: replayed)


def _start(
    cmd: list[str], out: Path, env: Mapping[str, str] | None, stdin: bool = False
) -> subprocess.Popen:
    """A worker process writing its stderr to ``out/stderr.log`` (``stdin``: a pipe to
    it, a --warm worker's)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "stderr.log", "w", encoding="utf-8") as err:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )


def run_part(
    cmd: list[str],
    plan: ReplayPlanFile,
    skip: int,
    out: Path,
    env: Mapping[str, str] | None,
    on_row: OnRow | None = None,
    proc: subprocess.Popen | None = None,
    avoid: Collection[int] = (),
) -> Part:
    """One worker process from row ``skip`` on, but the rows in ``avoid``, each row
    given its hang limit (``plan.timeout_of``; the first :data:`STARTUP_S` more);
    ``on_row`` as each row's line arrives. ``proc``: that worker, already started
    (:func:`start_warm`, told to go, from row 0 with nothing to avoid), else one
    started here."""
    if proc is None:
        rows = ",".join(str(i) for i in sorted(avoid))
        proc = _start([*cmd, "--skip", str(skip), "--avoid", rows], out, env)
    q: queue.Queue = queue.Queue()
    reader = threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True)
    reader.start()
    try:
        return _watch(proc, q, plan, skip, out, on_row, avoid)
    finally:
        if proc.poll() is None:
            _stop(proc)
        reader.join(timeout=10)
        proc.stdout.close()


def _watch(
    proc: subprocess.Popen,
    q: queue.Queue,
    plan: ReplayPlanFile,
    skip: int,
    out: Path,
    on_row: OnRow | None = None,
    avoid: Collection[int] = (),
) -> Part:
    log = out / "stderr.log"
    ended: dict[int, str | None] = {}
    finished = False

    def upcoming(after: int) -> int:  # the next row the worker replays
        return first_tried(after + 1, avoid)

    limit = plan.timeout_of(upcoming(skip - 1))
    deadline = time.monotonic() + limit + STARTUP_S
    while True:
        try:
            line = q.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            _stop(proc)
            nxt = upcoming(max(ended, default=skip - 1))
            hung = f"replay hung: no result within {limit:g} s"
            return Part(ended, (nxt, hung), out)
        if line is None:
            break
        report = compile_lines.read_lines([line], REPLAY_END)
        for item, why in report.items.items():
            if item.isdigit():
                ended[int(item)] = why
                limit = plan.timeout_of(upcoming(int(item)))
                deadline = time.monotonic() + limit
                if on_row is not None:
                    on_row(int(item), why)
        finished = finished or report.end is not None
    rc = proc.wait()
    nxt = upcoming(max(ended, default=skip - 1))  # the row in flight: not an avoided one
    if finished and rc == 0 or nxt >= len(plan.rows):
        return Part(ended, None, out)
    if rc == POISONED:  # the failed row has its line; the rest go to a fresh worker
        return Part(ended, (nxt, ""), out)
    why = f"replay worker died (exit {rc}): {_tail(log)}".rstrip(": ")
    return Part(ended, (nxt, f"{why}; a device fault poisons the process"), out)


def first_tried(i: int, avoid: Collection[int]) -> int:
    """The first row from ``i`` on that a worker told to ``avoid`` rows replays."""
    while i in avoid:
        i += 1
    return i


def part_dir(out_dir: str | os.PathLike, n: int) -> Path:
    """Where :func:`run_rows`' ``n``-th worker writes (``OUT_DIR/part<n>``)."""
    return Path(out_dir) / f"part{n}"


def start_warm(
    plan_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    module: str = MODULE,
) -> subprocess.Popen:
    """The first worker of :func:`run_rows` (``OUT_DIR/part0``, from row 0), started
    ``--warm`` before ``plan_path`` exists: it loads the timing's runtime while the
    caller builds the binaries, then waits for :func:`run_rows` (``early``) to say go.
    :func:`cancel` it when no row is replayed."""
    out = part_dir(out_dir, 0)
    cmd = [python or sys.executable, "-m", module, str(plan_path), str(out), "--warm"]
    return _start([*cmd, "--skip", "0"], out, env, stdin=True)


def cancel(proc: subprocess.Popen) -> None:
    """Stop a :func:`start_warm` worker (never told go, or done: then nothing to do)."""
    if proc.poll() is None:
        _stop(proc)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()


def _go(proc: subprocess.Popen | None) -> subprocess.Popen | None:
    """``proc`` told to go, or None when it already ended (or cannot hear it): the
    caller starts a fresh worker instead, so a warm-up that died costs no row."""
    if proc is None or proc.poll() is not None or proc.stdin is None:
        return None
    try:
        proc.stdin.write(GO + "\n")
        proc.stdin.close()
    except OSError:
        return None
    return proc


def run_rows(
    plan_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    module: str = MODULE,
    on_row: OnRow | None = None,
    early: subprocess.Popen | None = None,
) -> tuple[ReplayRun, PairsFile]:
    """Replay a plan's rows with worker processes (module docstring), restarting after
    a hang, a death or a broken device, and quarantining after each such break the
    later rows of the op that broke it which launch a kernel of a name it launched
    (:func:`~zlbench.models.replay.quarantined`: they fall back untried); writes and
    returns ``OUT_DIR/rows.json`` and ``pairs.json`` merged in plan order. A row a
    worker did not end is a fallback with why; a row only counts as replayed where its
    worker said so and wrote it so. ``on_row(index, why)`` as each row's worker line
    arrives (a progress line).
    ``early``: the first worker, already started by :func:`start_warm` with the same
    ``plan_path``, ``out_dir`` and ``module``; told to go now (ended already: a fresh
    one instead)."""
    plan = load_plan(plan_path)
    out = Path(out_dir)
    cmd = [python or sys.executable, "-m", module, str(plan_path)]
    results: dict[int, ReplayedRow] = {}
    samples: dict[RowKey, PairedSamples] = {}
    t0, skip, n, fruitless = time.monotonic(), 0, 0, 0
    avoid: set[int] = set()  # rows not tried: quarantined after a break (models.replay)
    first = _go(early)
    if early is not None and first is None:
        cancel(early)
    while skip < len(plan.rows):
        where = part_dir(out, n)
        proc = first if n == 0 else None
        part = run_part([*cmd, str(where)], plan, skip, where, env, on_row, proc=proc,
                        avoid=avoid)  # fmt: skip
        n += 1
        _collect(plan, part, results, samples)
        if part.lost is None:
            break
        lost, why = part.lost
        fruitless = fruitless + 1 if not part.ended else 0
        if fruitless >= 2:  # two fresh workers in a row ended nothing: not one row's fault
            for i in range(lost, len(plan.rows)):
                if i not in avoid:
                    results[i] = fallback(plan.rows[i], why)
            break
        # the row that broke it: the one lost (a death, a hang), or the last one ended
        # (a broken device: its line says why)
        last = max(part.ended, default=-1)
        culprit = lost if why else (last if part.ended.get(last) else -1)
        if why and lost < len(plan.rows):
            results[lost] = fallback(plan.rows[lost], why)
            lost += 1
        if 0 <= culprit < len(plan.rows):
            for i, said in quarantined(plan.rows, culprit).items():
                if i >= lost and i not in avoid:
                    avoid.add(i)
                    results[i] = fallback(plan.rows[i], said)
                    if on_row is not None:
                        on_row(i, said)
        skip = first_tried(max(lost, skip + 1), avoid)
    stopped = "not replayed: the worker stopped before it"
    rows = [results.get(i) or fallback(row, stopped) for i, row in enumerate(plan.rows)]
    kept = [samples[r.key] for r in rows if r.instrument == "kernel-replay" and r.key in samples]
    run = ReplayRun(changed_rows=0, rows=rows, seconds=round(time.monotonic() - t0, 3))
    pairs = PairsFile(rows=kept)
    dump_json_model(out / ROWS_JSON, run)  # atomic writes, once
    dump_json_model(out / REPLAY_PAIRS, pairs)
    return run, pairs


def _collect(plan: ReplayPlanFile, part: Part, results: dict, samples: dict) -> None:
    """The rows ``part`` ended, as its outputs say; a row its line and its rows.jsonl
    disagree on (or missing from them) falls back."""
    try:
        run, kept = read_outputs(part.out)
        got, pairs = {r.key: r for r in run.rows}, {p.key: p for p in kept.rows}
    except ZlbenchError as e:
        got, pairs = {}, {}
        unreadable = f"replay worker's outputs unreadable: {e}"
    else:
        unreadable = "replay worker's outputs miss this row"
    for i, why in part.ended.items():
        if not 0 <= i < len(plan.rows):
            continue
        row = plan.rows[i]
        mine = got.get(row.key)
        if mine is None or (why is None) != (mine.instrument == "kernel-replay"):
            results[i] = fallback(row, unreadable)
        elif mine.instrument != "kernel-replay":
            results[i] = mine
        elif row.key not in pairs:
            results[i] = fallback(row, unreadable)
        else:
            results[i], samples[row.key] = mine, pairs[row.key]


if __name__ == "__main__":
    sys.exit(main())

"""Codegen records: every Triton kernel a measured run compiles (docs/codegen.md).

Why: a compiler change that moves a row's speed changed some kernel's code, and
a kernel whose code did not change cannot have changed speed. Triton keeps
the IR only in its per-run cache under hashed names, and only for the last
compile; this plugin keeps, for every compilation in record and replay mode
(tuned or not, generated or not), the request (enough to rebuild it without a
GPU) and the normalised IR, PTX and SASS, and writes per op

    <run_dir>/codegen/index.json          CodegenIndex (zlbench.models)
    <run_dir>/codegen/blobs/<sha256>.gz   normalised stage texts
    <run_dir>/codegen/launches.json       LaunchCapture: each row's timed launches,
                                          for the kernel-replay tier (replay_capture)

at op end (atomic; also at exit, for the op in flight when the process dies).

Hooks (installed once, after collection; removed at unconfigure):

* ``triton.knobs.compilation.listener``, chained to any listener already set:
  every compilation, cache hits included;
* ``CompiledKernel.launch_metadata`` (both launch paths call it: ``JITFunction.run``
  and FlagGems' ``LibEntry`` calling ``kernel[grid](...)``): which op and row
  launched which kernel. A kernel is attributed to every (op, dtype, shape) row
  in flight when it was compiled or launched, with whether it ran inside the
  row's timed region (``state.in_timed_region()``: ``KernelUse.timed``); a kernel
  compiled by an earlier op of the same process is in every later op's index that
  launches it.

Nothing is written under ``TRITON_INTERPRET=1`` (nothing is compiled: an empty
index would wrongly say "no kernels"). ``--zl-codegen-standin cuda:90`` makes a
stand-in driver the active triton driver (launches do nothing) so a run
compiles its kernels on a machine without a GPU; ``--zl-no-codegen`` turns
recording off; ``--zl-codegen-no-sass`` records without SASS (no cuobjdump at op
end: ~0.13-0.2 s per kernel; the gate's measure step, whose screen already has
every kernel's SASS).
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from zlbench.models import CodegenIndex, CompileRecord, KernelUse, codegen_dir
from zlbench.plugins import state
from zlbench.plugins.replay_capture import LaunchRecorder
from zlbench.protocol import options

# a per-op write taking this long says where its time went, in the op's run.log
WRITE_NOTE_S = 10.0


@dataclass
class Recorder:
    """Collects compile records and who launched them; writes per-run indexes."""

    store: Any = None  # capture.BlobStore, made on install (imports triton)
    roots: list[str] = field(default_factory=list)
    by_hash: dict[str, CompileRecord] = field(default_factory=dict)  # triton hash -> record
    by_id: dict[str, CompileRecord] = field(default_factory=dict)
    pending: list = field(default_factory=list)  # (record, cubin bytes) not yet disassembled
    uses: dict[str, dict[str, list[KernelUse]]] = field(default_factory=dict)  # run -> id -> uses
    run_dirs: dict[str, str] = field(default_factory=dict)
    seen: set = field(default_factory=set)
    dirty: set = field(default_factory=set)
    warned: bool = False
    previous: Any = None
    sass: bool = True  # False: no cuobjdump at op end (records without SASS, registers)
    # run -> kernels it compiled or launched that have no record (CodegenIndex.unrecorded)
    unrecorded: dict[str, set[str]] = field(default_factory=dict)
    # each row's timed launches, for the kernel-replay tier (codegen/launches.json)
    launches: LaunchRecorder = field(default_factory=LaunchRecorder)

    # ---- triton callbacks

    def on_compile(self, *, src, metadata, metadata_group, times, cache_hit) -> None:
        if self.previous is not None:
            self.previous(
                src=src,
                metadata=metadata,
                metadata_group=metadata_group,
                times=times,
                cache_hit=cache_hit,
            )
        if not hasattr(src, "fn"):  # an IRSource: nothing to rebuild from
            self.missed(metadata.get("hash", "?"))
            return
        from zlbench.plugins.compiler import capture

        try:
            rec, cubin = capture.record_from(
                src, metadata, metadata_group, times, cache_hit, self.store, self.roots
            )
        except Exception as e:  # noqa: BLE001 - recording must never break a benchmark
            self.warn(f"cannot record {getattr(src, 'name', '?')}: {type(e).__name__}: {e}")
            self.missed(metadata.get("hash", "?"))
            return
        known = self.by_id.get(rec.id)
        if known is None:
            known = self.by_id[rec.id] = rec
            if cubin is not None and self.sass:
                self.pending.append((rec, cubin))
        self.by_hash[metadata["hash"]] = known
        self.note(metadata["hash"])

    def disassemble_pending(self) -> None:
        """SASS, registers and spills of the records made since the last call, a few
        cuobjdump processes at a time (off the compile path: ~0.2 s CPU each)."""
        from zlbench.plugins.compiler import capture

        todo, self.pending = self.pending, []

        def one(item) -> None:
            try:
                capture.add_disassembly(item[0].result, item[1], self.store, self.roots)
            except Exception as e:  # noqa: BLE001 - a record without SASS is still a record
                self.warn(f"cannot disassemble {item[0].request.kernel.name}: {e}")

        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            list(pool.map(one, todo))

    def note(self, triton_hash: str) -> None:
        """Attribute a compiled/launched kernel to the op and row in flight, and say
        whether it ran inside the row's timed region. A kernel launched both inside
        and outside it for one row gets one use, ``timed=True``. Not while the launch
        capture reads a tensor's values (its torch ops may launch FlagGems kernels)."""
        if self.launches.busy:
            return
        op = state.current_op()
        timed = state.in_timed_region()
        run = op.entry.run_name if op is not None else ""
        key = (run, op.dtype, op.shape, timed) if op is not None else (run, timed)
        if key + (triton_hash,) in self.seen:
            return
        rec = self.by_hash.get(triton_hash)
        if rec is None:
            self.missed(triton_hash)
            return
        self.seen.add(key + (triton_hash,))
        users = self.uses.setdefault(run, {}).setdefault(rec.id, [])
        if op is not None:
            self.run_dirs[run] = op.entry.run_dir
            use = KernelUse(
                run_name=run, op=op.entry.op, dtype=op.dtype, shape=op.shape, timed=timed
            )
            _add_use(users, use)
        self.dirty.add(run)

    def missed(self, triton_hash: str) -> None:
        """A kernel of the op in flight that no record will name: its run's index says
        so (``CodegenIndex.unrecorded``), and the screen proves nothing of the op."""
        op = state.current_op()
        self.unrecorded.setdefault(op.entry.run_name if op is not None else "", set()).add(
            str(triton_hash)
        )

    def warn(self, text: str) -> None:
        if not self.warned:
            self.warned = True
            print(f"ZLBENCH_CODEGEN_WARNING {text}", file=sys.stderr, flush=True)

    # ---- writing

    def index_for(self, run: str) -> CodegenIndex:
        """The index of ``run``: its records with their uses (``write`` disassembles the
        pending records first, so theirs carry SASS)."""
        from zlbench.plugins.compiler import capture

        uses = self.uses.get(run, {})
        recs = [self.by_id[i].model_copy(update={"used_by": u}) for i, u in uses.items()]
        return CodegenIndex(
            compiler=capture.compiler_identity(),
            records=sorted(recs, key=lambda r: r.id),
            unrecorded=len(self.unrecorded.get(run, ())),
        )

    def write(self, run: str, cg_dir: Path) -> None:
        from zlbench.plugins.compiler import capture

        t0, sass = time.monotonic(), len(self.pending)
        self.disassemble_pending()
        t1 = time.monotonic()
        index = self.index_for(run)
        shas = {d.sha256 for r in index.records if r.result for d in r.result.stages.values()}
        t2 = time.monotonic()
        blobs, size = self.store.write(cg_dir, shas)
        self.launches.write(run, cg_dir)
        t3 = time.monotonic()
        capture.write_index(cg_dir, index)  # last: an index never names a missing blob
        t4 = time.monotonic()
        self.dirty.discard(run)
        if t4 - t0 >= WRITE_NOTE_S:  # where a slow op end went (one TIMEOUT on the H200)
            state.say(
                f"ZLBENCH_CODEGEN_WRITE run_name={run} records={len(index.records)} "
                f"uses={sum(len(r.used_by) for r in index.records)} sass={sass} "
                f"sass_s={t1 - t0:.1f} index_s={t2 - t1:.1f} blobs={blobs} "
                f"blob_mb={size / 1e6:.1f} blobs_s={t3 - t2:.1f} index_write_s={t4 - t3:.1f}"
            )

    def flush_all(self) -> None:
        for run in sorted(self.dirty):
            if run in self.run_dirs:
                try:
                    self.write(run, codegen_dir(self.run_dirs[run]))
                except OSError as e:  # at exit: report, never raise
                    print(f"ZLBENCH_CODEGEN_WARNING cannot write {run}: {e}", file=sys.stderr)

    def on_end(self, op: state.OpState) -> None:
        run = op.entry.run_name
        self.run_dirs[run] = op.entry.run_dir
        try:  # an op that compiled nothing gets an empty index
            self.write(run, codegen_dir(op.entry.run_dir))
        except OSError as e:  # the op's own results must still be written
            print(f"ZLBENCH_CODEGEN_WARNING cannot write {run}: {e}", file=sys.stderr, flush=True)


def _add_use(users: list[KernelUse], use: KernelUse) -> None:
    """Add ``use`` to ``users``: one use per row, timed when any launch was."""
    for i, u in enumerate(users):
        if u.model_copy(update={"timed": use.timed}) == use:
            if use.timed and not u.timed:
                users[i] = use
            return
    users.append(use)


# --------------------------------------------------------------------------- install


_ORIGINAL: dict[str, Any] = {}


def unsupported() -> str | None:
    """Why this triton cannot be recorded (no compilation listener: triton < 3.4,
    or a fork without it), or None."""
    import triton
    from triton.compiler.compiler import CompiledKernel

    compilation = getattr(getattr(triton, "knobs", None), "compilation", None)
    if compilation is None or not hasattr(compilation, "listener"):
        return f"triton {triton.__version__} has no knobs.compilation.listener"
    if not hasattr(CompiledKernel, "launch_metadata"):
        return f"triton {triton.__version__} has no CompiledKernel.launch_metadata"
    return None


def install(recorder: Recorder) -> None:
    """Set the compilation listener and wrap ``CompiledKernel.launch_metadata``."""
    import triton
    from triton.compiler.compiler import CompiledKernel

    from zlbench.plugins.compiler import capture

    if _ORIGINAL:
        return
    recorder.store = recorder.store or capture.BlobStore()
    recorder.roots = recorder.roots or capture.machine_roots()
    recorder.previous = triton.knobs.compilation.listener
    triton.knobs.compilation.listener = recorder.on_compile
    orig = _ORIGINAL["launch_metadata"] = CompiledKernel.launch_metadata

    def launch_metadata(self, grid, stream, *args):
        recorder.note(self.hash)  # both skip a launch made while the capture reads values
        rec = recorder.by_hash.get(self.hash)
        recorder.launches.on_launch(self, grid, stream, args, rec.id if rec else "", recorder.warn)
        return orig(self, grid, stream, *args)

    CompiledKernel.launch_metadata = launch_metadata
    state.on_timed_call(recorder.launches.on_timed_call)


def uninstall(recorder: Recorder) -> None:
    if not _ORIGINAL:
        return
    import triton
    from triton.compiler.compiler import CompiledKernel

    CompiledKernel.launch_metadata = _ORIGINAL.pop("launch_metadata")
    state.on_timed_call(recorder.launches.on_timed_call, add=False)
    if triton.knobs.compilation.listener == recorder.on_compile:
        triton.knobs.compilation.listener = recorder.previous


# --------------------------------------------------------------------------- pytest hooks

RECORDER_KEY = pytest.StashKey[Recorder]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-codegen")
    options.add_options(group.addoption, table=options.CODEGEN_OPTIONS)


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def pytest_configure(config: pytest.Config) -> None:
    target = options.get(config, "codegen-standin")
    if target:  # before collection: FlagGems asks the driver for the device at import
        from zlbench.plugins.compiler import standin

        standin.activate(target, launch="skip")
    if state.active() is None or options.get(config, "no-codegen") or _interpreted():
        return
    why = unsupported()
    if why is not None:  # no index at all: the screen then treats the op's kernels as unknown
        print(f"ZLBENCH_CODEGEN_WARNING no codegen records: {why}", file=sys.stderr, flush=True)
        return
    recorder = Recorder(sass=not options.get(config, "codegen-no-sass"))
    config.stash[RECORDER_KEY] = recorder
    install(recorder)
    state.subscribe(on_end=recorder.on_end)
    atexit.register(recorder.flush_all)


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = config.stash.get(RECORDER_KEY, None)
    if recorder is None:
        return
    recorder.flush_all()
    state.unsubscribe(on_end=recorder.on_end)
    atexit.unregister(recorder.flush_all)
    uninstall(recorder)

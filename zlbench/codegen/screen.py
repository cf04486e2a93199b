"""Run the codegen screen: rebuild a baseline's kernels in parallel worker
processes with the compiler under test, classify them, write the output.

Never imports triton: the workers (the compiler side's rebuild worker, run as
``python -m``) do, in the interpreter given (default: this one). Output
(docs/codegen.md)::

    <out>/codegen.json          models.codegen_screen.CodegenScreen
    <out>/codegen.md            markdown section (report.codegen)
    <out>/diffs/<kernel>.diff   unified diff of the first differing stage

Every file is written atomically, and ``diffs/`` is replaced as a whole, so an
interrupted screen never leaves a half-written or mixed output.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from zlbench.codegen import worker_pool
from zlbench.codegen.chunks import n_chunks, split
from zlbench.codegen.collect import BaselineKernels, collect
from zlbench.codegen.diff import (
    LOAD_FAILED,
    changed_lines,
    count_classes,
    resources,
    screen_kernel,
    stage_diff,
)
from zlbench.codegen.shards import load_shards, shard_ids, write_shard
from zlbench.errors import ZlbenchError
from zlbench.models.base import atomic_write_text, dump_json_model
from zlbench.models.codegen import CompileRecord, StageDigest, read_blob, text_stored
from zlbench.models.codegen_screen import (
    CHANGED_CLASSES,
    CodegenClass,
    CodegenScreen,
    KernelScreen,
    RebuiltShard,
)
from zlbench.report.codegen import render_codegen

SCREEN_JSON = "codegen.json"
SCREEN_MD = "codegen.md"
DIFFS_DIR = "diffs"


@dataclass
class ScreenOptions:
    baseline: Path
    out: Path
    jobs: int = 1
    python: str = field(default_factory=lambda: sys.executable)
    env: dict[str, str] = field(default_factory=dict)  # the workers' environment overrides
    pythonpath: list[str] = field(default_factory=list)  # put first on the workers' PYTHONPATH
    # run as `python -m` (read at construction: tests point it at a stand-in)
    worker_module: str = field(default_factory=lambda: worker_pool.WORKER_MODULE)
    chunks_per_job: int = 2
    # a triton cache dir the workers also put their compiled kernels in (the gate's)
    cache_out: Path | None = None
    # the records are a baseline verified against its manifest: the workers may execute
    # a generated kernel's recorded module text to rebuild it (never for a batch dir)
    exec_generated: bool = False
    # the rebuild made by other jobs (`zlbench codegen --shard K/N`): classified here,
    # nothing compiled (zlbench.codegen.shards.load_shards checks it whole)
    rebuilt: RebuiltInput | None = None


@dataclass(frozen=True)
class RebuiltInput:
    """The shard dirs of a rebuild made elsewhere, and what they must have been made
    for: the baseline's manifest sha256 and the compiler's fingerprint."""

    dirs: tuple[Path, ...]
    baseline_sha256: str
    compiler: str


def flaggems_sources(checkouts: Iterable[str | os.PathLike]) -> list[str]:
    """``<checkout>/src`` of each FlagGems checkout that has one (absolute), for
    ``ScreenOptions.pythonpath``: the workers import the recorded kernels' modules
    from there (an installed flag_gems works too)."""
    dirs = (Path(d) / "src" for d in checkouts)
    return [str(d.resolve()) for d in dirs if d.is_dir()]


def run_screen(opts: ScreenOptions, say: Callable[[str], None] = lambda s: None) -> CodegenScreen:
    """Screen every kernel of ``opts.baseline``; write and return the result."""
    started = time.monotonic()
    base = collect(opts.baseline)
    ids = sorted(base.records)
    opts.out.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(dir=opts.out, prefix=f".{DIFFS_DIR}."))
    try:
        with tempfile.TemporaryDirectory(prefix="zlbench-codegen-") as tmp:
            if opts.rebuilt is not None:
                r = opts.rebuilt
                estimates = compile_estimates(base)
                rebuilt, dirs = load_shards(list(r.dirs), estimates, r.baseline_sha256, r.compiler)
                say(f"codegen: {len(rebuilt)} kernel(s) rebuilt by {len(r.dirs)} shard job(s)")
            else:
                rebuilt, dirs = _rebuild(base, ids, opts, Path(tmp), say, started)
            kernels = [_screen_one(base, i, rebuilt.get(i)) for i in ids]
            _write_diffs(base, kernels, rebuilt, dirs, staged)
        screen = CodegenScreen(
            baseline_dir=str(opts.baseline),
            compiler=worker_pool.compiler_version(rebuilt),
            python=opts.python,
            generated=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            wall_s=round(time.monotonic() - started, 2),
            jobs=opts.jobs,
            counts=count_classes(kernels),
            kernels=kernels,
            ops_without_records=sorted(base.ops_without_records),
            ops_without_kernels=base.ops_without_kernels,
            ops_with_unrecorded=dict(sorted(base.unrecorded.items())),
        )
        _publish(opts.out, screen, staged)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return screen


def compile_estimates(
    base: BaselineKernels, ids: list[str] | None = None
) -> dict[str, float | None]:
    """Each kernel's (of ``ids``; None: all) recorded compile seconds (None: unknown),
    what the rebuild is dealt into chunks and shards by."""
    return {i: _compile_s(base.records[i]) for i in (sorted(base.records) if ids is None else ids)}


def _rebuild(base: BaselineKernels, ids: list[str], opts: ScreenOptions, tmp: Path, say, started):
    """``ids`` rebuilt in the worker pool: (id -> record, id -> its codegen dir)."""
    estimates = compile_estimates(base, ids)
    chunks = split(estimates, n_chunks(len(ids), opts.jobs, opts.chunks_per_job))
    progress = _Progress(say, len(ids), started, lambda i, r: _screen_one(base, i, r))
    return worker_pool.rebuild_all(base, chunks, opts, tmp, progress)


def rebuild_shard(
    opts: ScreenOptions, shard: tuple[int, int], stamp: RebuiltShard, say=lambda s: None
) -> RebuiltShard:
    """``zlbench codegen --shard K/N``: rebuild the baseline's kernels of ``shard``
    (:func:`zlbench.codegen.shards.shard_ids`) into ``opts.out``, classify nothing;
    ``stamp`` (baseline, compiler) completed with the shard, its ids and its time."""
    started = time.monotonic()
    base = collect(opts.baseline)
    ids = shard_ids(compile_estimates(base), shard)
    with tempfile.TemporaryDirectory(prefix="zlbench-codegen-") as tmp:
        rebuilt, dirs = _rebuild(base, ids, opts, Path(tmp), say, started) if ids else ({}, {})
        _check_loaded(ids, rebuilt, say)
        stamp = stamp.model_copy(
            update=dict(
                shard=shard,
                ids=ids,
                generated=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                wall_s=round(time.monotonic() - started, 2),
                jobs=opts.jobs,
            )
        )
        write_shard(opts.out, stamp, rebuilt, dirs)
    return stamp


def _check_loaded(ids: list[str], rebuilt: dict[str, CompileRecord], say) -> None:
    """A shard whose kernels' source could not be loaded here proves nothing: every one
    of them is refused (exit 2, nothing written), as the screen refuses (2026-12-02: a
    rebuild without GEMS_VENDOR on a CPU machine loaded none of 3591 and said "0 failed");
    some of them are said in one line (``--rebuilt`` then leaves those to rebuild)."""
    unloaded = [(i, rebuilt[i]) for i in ids if i in rebuilt and _load_failed(rebuilt[i])]
    if not unloaded:
        return
    rec = unloaded[0][1]
    first = f"first: {rec.request.kernel.name}: {rec.error}"
    if len(unloaded) == len(ids):
        raise ZlbenchError(
            f"no kernel of the shard could be loaded here ({first}); is the FlagGems "
            "checkout on ZLBENCH_FLAGGEMS_DIR / importable?"
        )
    say(f"codegen: {len(unloaded)} of {len(ids)} kernel(s) not rebuilt here, {first}")


def _load_failed(rec: CompileRecord) -> bool:
    return rec.result is None and (rec.error or "").startswith(LOAD_FAILED)


def _compile_s(rec: CompileRecord) -> float | None:
    res = resources(rec.result)
    return res.compile_s if res else None


def _screen_one(base: BaselineKernels, kid: str, cur: CompileRecord | None) -> KernelScreen:
    k = screen_kernel(
        base.records[kid],
        cur,
        base.ops.get(kid, ()),
        base.rows.get(kid, ()),
        diff_file=f"{DIFFS_DIR}/{kid}.diff",
        op_timed=base.op_timed.get(kid),
        row_timed=base.row_timed.get(kid),
    )
    if kid in base.conflicts:
        others = ", ".join(sorted(base.conflicts[kid]))
        k.notes.append(f"baseline not deterministic: other outputs recorded in {others}")
    return k


def _write_diffs(
    base: BaselineKernels,
    kernels: list[KernelScreen],
    rebuilt: dict[str, CompileRecord],
    dirs: dict[str, Path],
    into: Path,
) -> None:
    """Write ``<kernel>.diff`` of every changed kernel into ``into``."""
    for k in kernels:
        if k.status not in CHANGED_CLASSES or k.first_stage is None:
            continue
        rec = base.records[k.kernel_id]
        if not _base_text_stored(rec, k.first_stage):
            text = _header(k) + (
                f"# {k.kernel_id} {k.first_stage}: {NOT_STORED} "
                f"(baseline sha256 {rec.result.stages[k.first_stage].sha256})\n"  # type: ignore[union-attr]
            )
        else:
            a = _stage_bytes(base.blob_dirs[k.kernel_id], rec, k.first_stage)
            b = _stage_bytes(dirs[k.kernel_id], rebuilt[k.kernel_id], k.first_stage)
            diff = stage_diff(k.kernel_id, k.first_stage, a, b)
            k.changed_lines = changed_lines(diff)
            text = _header(k) + diff
        (into / f"{k.kernel_id}.diff").write_text(text, encoding="utf-8")


NOT_STORED = "text not stored in the baseline (digest differs)"


def _base_text_stored(rec: CompileRecord, stage: str) -> bool:
    """False when the baseline has the stage's digest but not its text (a compact
    baseline keeps only the TTIR and TTGIR texts, docs/baselines.md "Size")."""
    digest = rec.result.stages.get(stage) if rec.result else None
    return digest is None or text_stored(digest)


def _stage_bytes(cg_dir: Path, rec: CompileRecord, stage: str) -> bytes:
    """A stage's text; empty when the record has none (the other side's is the diff),
    the cubin digest's line when only that stands in for SASS."""
    digest: StageDigest | None = rec.result.stages.get(stage) if rec.result else None
    if digest is not None:
        return read_blob(cg_dir, digest)
    if stage == "sass" and rec.result and rec.result.cubin_sha256:
        return f"(no SASS recorded) cubin sha256 {rec.result.cubin_sha256}\n".encode()
    return b""


def _header(k: KernelScreen) -> str:
    ops = ", ".join(k.ops) or "-"
    return (
        f"# kernel {k.name} [{k.kernel_id}] {k.config}\n"
        f"# {k.status.value}: first differing stage {k.first_stage}; ops: {ops}\n"
    )


def _publish(out: Path, screen: CodegenScreen, staged: Path) -> None:
    """Swap ``staged`` in as ``diffs/`` (an old one removed), then write the json and
    the markdown (each atomically)."""
    final, old = out / DIFFS_DIR, out / f".{DIFFS_DIR}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(staged, final)
    shutil.rmtree(old, ignore_errors=True)
    dump_json_model(out / SCREEN_JSON, screen)
    atomic_write_text(out / SCREEN_MD, render_codegen(screen))


class _Progress:
    """One stderr line per finished chunk: kernels done, changed, failed, not rebuilt
    (when any: a kernel not rebuilt is neither identical nor changed), ETA."""

    def __init__(self, say, total: int, started: float, classify):
        self.say, self.total, self.started, self.classify = say, total, started, classify
        self.done = self.changed = self.failed = self.missing = self.chunks = 0

    def __call__(self, n_chunks: int, ids: list[str], got: dict[str, CompileRecord]) -> None:
        kernels = [self.classify(i, got.get(i)) for i in ids]
        self.chunks += 1
        self.done += len(kernels)
        self.changed += sum(k.status in CHANGED_CLASSES for k in kernels)
        self.failed += sum(k.status is CodegenClass.FAILED for k in kernels)
        self.missing += sum(k.status is CodegenClass.MISSING for k in kernels)
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        missing = f", {self.missing} not rebuilt" if self.missing else ""
        self.say(
            f"codegen: chunk {self.chunks}/{n_chunks}: {self.done}/{self.total} kernels, "
            f"{self.changed} changed, {self.failed} failed{missing}; {elapsed:.0f} s, "
            f"ETA {eta:.0f} s"
        )

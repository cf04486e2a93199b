"""Run the codegen screen: rebuild a baseline's kernels in parallel worker
processes with the compiler under test, classify them, write the output.

With a base compiler (:class:`BaseSide`, ``gate --base-compiler ENV``) the same requests
are also rebuilt by the base compiler (its workers run in its environment; the rebuild
kept in a cache dir per base build and baseline, :mod:`zlbench.codegen.base_cache`) and
each kernel's class compares the PR's rebuild with the base's: a kernel that differs
from the baseline's records but not from the base is identical. The comparison with the
baseline's records stays as context (``KernelScreen.vs_baseline``, a note). A kernel the
base compiler did not build is compared with the baseline's records, as without a base.

Never imports triton: the workers (the compiler side's rebuild worker, run as
``python -m``) do, in the interpreter given (default: this one). Output
(docs/codegen.md)::

    <out>/codegen.json          models.codegen_screen.CodegenScreen
    <out>/codegen.md            markdown section (report.codegen)
    <out>/diffs/<kernel>.diff   unified diff of the first differing stage

Every file is written atomically, and ``diffs/`` is replaced as a whole, so an
interrupted screen never leaves a half-written or mixed output. Interrupted (SIGINT,
SIGTERM), it leaves what it has found instead: ``codegen.partial.json`` and
``codegen.partial.md`` (the kernels classified before the stop, ``partial_of`` the whole)
and the ``INTERRUPTED`` marker, which the gate and ``--screen`` refuse; a whole screen
removes all three.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from zlbench.codegen import worker_pool
from zlbench.codegen.base_cache import cacheable, load_entry, store_entry
from zlbench.codegen.chunks import n_chunks, pool_eta, split
from zlbench.codegen.collect import BaselineKernels, collect
from zlbench.codegen.diff import (
    LOAD_FAILED,
    changed_lines,
    count_classes,
    resources,
    screen_kernel,
    stage_diff,
)
from zlbench.codegen.shards import load_shards, manifest_sha256, shard_ids, write_shard
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
from zlbench.protocol.layout import INTERRUPTED, MANIFEST_YAML
from zlbench.report.codegen import render_codegen

SCREEN_JSON = "codegen.json"
SCREEN_MD = "codegen.md"
PARTIAL_JSON = "codegen.partial.json"  # an interrupted screen's findings (never a plan)
PARTIAL_MD = "codegen.partial.md"
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
    # the same for the base compiler's rebuild workers, a dir of its own (the gate's
    # replay step builds its base side there, so the base's kernels are not compiled
    # again; the PR's measure step never looks there)
    base_cache_out: Path | None = None
    # the records are a baseline verified against its manifest: the workers may execute
    # a generated kernel's recorded module text to rebuild it (never for a batch dir)
    exec_generated: bool = False
    # the rebuild made by other jobs (`zlbench codegen --shard K/N`): classified here,
    # nothing compiled (zlbench.codegen.shards.load_shards checks it whole)
    rebuilt: RebuiltInput | None = None
    # the base compiler: each kernel is classified against its rebuild (None: against
    # the baseline's records)
    base: BaseSide | None = None
    # op keys whose kernels are screened (None: every kernel of the baseline): a gate
    # narrowed by --ops / --ops-file screens only what it may time. Such a base side is
    # not kept in the base-screen cache (an entry is a whole baseline's); a kept whole
    # entry serves it.
    ops: frozenset[str] | None = None


@dataclass(frozen=True)
class BaseSide:
    """The base compiler of a PR-vs-base screen (``gate --base-compiler ENV``): its build
    fingerprint (:func:`zlbench.workflow.codegen_artifact.compiler_fingerprint` as its
    environment sees it), how its rebuild workers run (``python``: its interpreter, None:
    the screen's; ``front``: dirs first on their PYTHONPATH, a site dir; ``env``: more
    environment) and the cache dir its rebuild is kept in for the next PR on the same
    base (None: not kept)."""

    spec: str
    fingerprint: str
    python: str | None = None
    front: tuple[str, ...] = ()
    cache: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass
class _BaseRebuild:
    """The base compiler's rebuild: id -> record, id -> its codegen dir, whence."""

    records: dict[str, CompileRecord]
    dirs: dict[str, Path]
    where: str  # "rebuilt" | "cached <entry dir>"


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


@dataclass
class _Found:
    """What the screen has classified so far: its partial output when interrupted."""

    total: int
    kernels: dict[str, KernelScreen] = field(default_factory=dict)
    side: _BaseRebuild | None = None
    base_done: int = 0  # kernels the base compiler has rebuilt (its progress)


def run_screen(opts: ScreenOptions, say: Callable[[str], None] = lambda s: None) -> CodegenScreen:
    """Screen every kernel of ``opts.baseline`` (of ``opts.ops``' ops when given);
    write and return the result. Interrupted, it writes what it has found
    (:func:`_leave_partial`) and re-raises."""
    started = time.monotonic()
    base = collect(opts.baseline)
    ids = screened_ids(base, opts.ops)
    if len(ids) < len(base.records):
        say(f"codegen: screening {len(ids)} of the baseline's {len(base.records)} kernel(s): "
            f"those of the {len(opts.ops or ())} op(s) in scope")  # fmt: skip
    opts.out.mkdir(parents=True, exist_ok=True)
    found = _Found(len(ids))
    staged = Path(tempfile.mkdtemp(dir=opts.out, prefix=f".{DIFFS_DIR}."))
    try:
        with tempfile.TemporaryDirectory(prefix="zlbench-codegen-") as tmp:
            side = None
            if opts.base is not None:  # first: the PR's progress then counts against it
                (Path(tmp) / "base").mkdir()
                side = _base_rebuild(base, ids, opts, Path(tmp) / "base", say, found)
                found.side = side
            if opts.rebuilt is not None:
                r = opts.rebuilt
                estimates = compile_estimates(base)
                rebuilt, dirs = load_shards(list(r.dirs), estimates, r.baseline_sha256, r.compiler)
                say(f"codegen: {len(rebuilt)} kernel(s) rebuilt by {len(r.dirs)} shard job(s)")
            else:
                (Path(tmp) / "pr").mkdir()
                t0 = started if side is None else time.monotonic()  # the PR's own ETA
                rebuilt, dirs = _rebuild(
                    base, ids, opts, Path(tmp) / "pr", say, t0, side, found=found
                )
            t1 = time.monotonic()
            kernels = [_screen_one(base, i, rebuilt.get(i), side) for i in ids]
            n_diffs = sum(k.status in CHANGED_CLASSES for k in kernels)
            say(f"codegen: {len(kernels)} kernel(s) classified; writing {n_diffs} diff(s)")
            _write_diffs(base, kernels, rebuilt, dirs, staged, side)
            say(f"codegen: {n_diffs} diff(s) written in {time.monotonic() - t1:.0f} s")
        screen = _screen_model(
            opts,
            kernels,
            started,
            side,
            compiler=worker_pool.compiler_version(rebuilt),
            ops_without_records=sorted(base.ops_without_records),
            ops_without_kernels=base.ops_without_kernels,
            ops_with_unrecorded=dict(sorted(base.unrecorded.items())),
        )
        if side is not None:
            screen.vs_baseline_counts = _count_vs_baseline(kernels)
        _publish(opts.out, screen, staged)
    except KeyboardInterrupt:
        _leave_partial(opts, found, started, say)
        raise
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    say(f"codegen: screen done in {time.monotonic() - started:.0f} s")
    return screen


def screened_ids(base: BaselineKernels, ops: Collection[str] | None) -> list[str]:
    """The kernel ids a screen of ``ops`` (op keys; None: all) rebuilds: every kernel
    one of them launched, in id order."""
    if ops is None:
        return sorted(base.records)
    wanted = set(ops)
    return sorted(i for i in base.records if not wanted.isdisjoint(base.ops.get(i, ())))


def _screen_model(
    opts: ScreenOptions, kernels: list[KernelScreen], started: float, side, **more
) -> CodegenScreen:
    """The screen's model of ``kernels`` (whole, or what an interrupted one found):
    which comparison decided, against the base side ``side`` when there is one."""
    return CodegenScreen(
        baseline_dir=str(opts.baseline),
        python=opts.python,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        wall_s=round(time.monotonic() - started, 2),
        jobs=opts.jobs,
        counts=count_classes(kernels),
        kernels=kernels,
        decided_by="baseline" if side is None else "base",
        base_compiler=opts.base.fingerprint if side is not None and opts.base else "",
        base_rebuild=side.where if side is not None else "",
        **more,
    )


def _leave_partial(opts: ScreenOptions, found: _Found, started: float, say) -> None:
    """An interrupted screen's findings: ``codegen.partial.json`` and ``.md`` (the
    kernels classified before the stop) and ``INTERRUPTED``; ``codegen.json`` is never
    written from them. Best effort: the screen is unwinding."""
    kernels = [found.kernels[i] for i in sorted(found.kernels)]
    side = found.side
    screen = _screen_model(opts, kernels, started, side, partial_of=found.total)
    base = ""
    if opts.base is not None and side is None:
        base = f"; the base compiler's rebuild stopped at {found.base_done} of {found.total}"
    what = (
        f"interrupted: {len(kernels)} of {found.total} kernel(s) screened, "
        f"{len(screen.changed())} changed, {len(screen.failed())} failed{base}"
    )
    try:
        dump_json_model(opts.out / PARTIAL_JSON, screen)
        atomic_write_text(
            opts.out / PARTIAL_MD,
            f"**Interrupted**: {what}. Not a plan: a gate times nothing from it.\n\n"
            + render_codegen(screen),
        )
        atomic_write_text(opts.out / INTERRUPTED, f"codegen screen {what}\n")
    except OSError:
        return
    say(f"codegen: {what} ({opts.out / PARTIAL_MD})")


def compile_estimates(
    base: BaselineKernels, ids: list[str] | None = None
) -> dict[str, float | None]:
    """Each kernel's (of ``ids``; None: all) recorded compile seconds (None: unknown),
    what the rebuild is dealt into chunks and shards by."""
    return {i: _compile_s(base.records[i]) for i in (sorted(base.records) if ids is None else ids)}


def _rebuild(
    base: BaselineKernels,
    ids: list[str],
    opts: ScreenOptions,
    tmp: Path,
    say,
    started,
    side: _BaseRebuild | None = None,
    label: str = "",
    found: _Found | None = None,
):
    """``ids`` rebuilt in the worker pool: (id -> record, id -> its codegen dir); the
    progress lines count the changes against ``side`` when given; ``found`` collects
    each finished chunk's kernels (the PR's) or counts them (``label``: the base's)."""
    estimates = compile_estimates(base, ids)
    chunks = split(estimates, n_chunks(len(ids), opts.jobs, opts.chunks_per_job))
    classify = lambda i, r: _screen_one(base, i, r, side)  # noqa: E731
    progress = _Progress(say, len(ids), started, classify, label, found, slots=opts.jobs)
    return worker_pool.rebuild_all(base, chunks, opts, tmp, progress)


def _baseline_sha256(baseline: Path) -> str:
    """The manifest's sha256 of a baseline; "" for a batch dir (no manifest)."""
    return manifest_sha256(baseline) if (Path(baseline) / MANIFEST_YAML).is_file() else ""


def _base_rebuild(
    base: BaselineKernels,
    ids: list[str],
    opts: ScreenOptions,
    tmp: Path,
    say,
    found: _Found | None = None,
) -> _BaseRebuild:
    """The base compiler's rebuild of ``ids``: the cache's entry for this base build and
    baseline, else rebuilt in its environment (then kept in the cache when whole)."""
    side = opts.base
    assert side is not None
    sha = _baseline_sha256(opts.baseline)
    cache = side.cache if sha else None  # a batch dir has no content digest: not kept
    if cache is not None:
        got = load_entry(cache, side.fingerprint, sha, compile_estimates(base), say)
        if got is not None:
            records, dirs, entry = got
            say(f"codegen: base side ({side.fingerprint}): {len(records)} kernel(s) from "
                f"the cache {entry}, nothing rebuilt")  # fmt: skip
            return _BaseRebuild(records, dirs, f"cached {entry}")
    started = time.monotonic()
    say(f"codegen: rebuilding {len(ids)} kernel(s) with the base compiler {side.fingerprint}")
    bopts = replace(
        opts,
        python=side.python or opts.python,
        pythonpath=[*opts.pythonpath, *side.front],
        env={**opts.env, **side.env},
        cache_out=opts.base_cache_out,  # never where the PR's measure step looks
        base_cache_out=None,
        base=None,
        rebuilt=None,
    )
    records, dirs = _rebuild(base, ids, bopts, tmp, say, started, label="base ", found=found)
    _check_base_built(ids, records, side)
    if cache is not None and len(ids) < len(base.records):
        say(f"codegen: base side not kept in the cache: {len(ids)} of the baseline's "
            f"{len(base.records)} kernel(s), the screen narrowed to the ops in scope")  # fmt: skip
    elif cache is not None:
        why = cacheable(records, ids)
        if why:
            say(f"codegen: base side not kept in the cache: {why}")
        else:
            stamp = RebuiltShard(
                baseline_sha256=sha,
                compiler=side.fingerprint,
                shard=(1, 1),
                ids=ids,
                generated=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                wall_s=round(time.monotonic() - started, 2),
                jobs=opts.jobs,
            )
            say(f"codegen: keeping the base side ({len(records)} kernel(s)) in the cache")
            entry = store_entry(cache, stamp, records, dirs)
            if entry is not None:
                say(f"codegen: base side kept in {entry} for the next PR on this base")
    return _BaseRebuild(records, dirs, "rebuilt")


def _check_base_built(ids: list[str], records: dict[str, CompileRecord], side: BaseSide) -> None:
    """A base compiler that built none of the kernels (nor failed to compile any) proves
    nothing of the PR: its environment cannot load them. One line, exit 2."""
    if not ids or any(i in records and not _not_built(records[i]) for i in ids):
        return
    first = next((records[i] for i in ids if i in records), None)
    why = f" (first: {first.request.kernel.name}: {first.error})" if first else ""
    raise ZlbenchError(
        f"--base-compiler {side.spec}: the base compiler rebuilt none of the {len(ids)} "
        f"kernel(s){why}: can its environment import triton and the FlagGems sources?"
    )


def _not_built(rec: CompileRecord) -> bool:
    err = rec.error or ""
    return rec.result is None and (err.startswith(LOAD_FAILED) or "crashed" in err)


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


def _screen_one(
    base: BaselineKernels,
    kid: str,
    cur: CompileRecord | None,
    side: _BaseRebuild | None = None,
) -> KernelScreen:
    """Kernel ``kid``'s entry: its rebuild ``cur`` against the baseline's record, or
    against the base compiler's rebuild (``side``) where the base built it."""
    k = _against(base, kid, base.records[kid], cur)
    if side is not None:
        k = _against_base(base, kid, cur, side, k)
    if kid in base.conflicts:
        others = ", ".join(sorted(base.conflicts[kid]))
        k.notes.append(f"baseline not deterministic: other outputs recorded in {others}")
    return k


def _against(
    base: BaselineKernels, kid: str, ref: CompileRecord, cur: CompileRecord | None
) -> KernelScreen:
    return screen_kernel(
        ref,
        cur,
        base.ops.get(kid, ()),
        base.rows.get(kid, ()),
        diff_file=f"{DIFFS_DIR}/{kid}.diff",
        op_timed=base.op_timed.get(kid),
        row_timed=base.row_timed.get(kid),
    )


def _against_base(
    base: BaselineKernels,
    kid: str,
    cur: CompileRecord | None,
    side: _BaseRebuild,
    vs_baseline: KernelScreen,
) -> KernelScreen:
    """``vs_baseline`` (the PR against the baseline's record) decided again against the
    base compiler's rebuild of ``kid``; kept as it is, with a note, where the base did
    not build it (the PR then fails to compile it as the base does, or the baseline's
    records decide)."""
    ref = side.records.get(kid)
    if ref is None or ref.result is None:
        why = (ref.error if ref is not None else None) or "no result"
        if vs_baseline.status is CodegenClass.FAILED and ref is not None and not _not_built(ref):
            vs_baseline.notes.append(f"fails with the base compiler too: {why}")
        else:
            vs_baseline.notes.append(
                f"not built by the base compiler ({why}): compared with the baseline's records"
            )
        return vs_baseline
    rec = base.records[kid]
    k = _against(base, kid, rec.model_copy(update={"result": ref.result}), cur)
    k.vs_baseline = vs_baseline.status
    if vs_baseline.status in CHANGED_CLASSES:
        k.notes.append(
            f"also differs from the baseline's compiler (from {vs_baseline.first_stage} on)"
        )
    return k


def _count_vs_baseline(kernels: list[KernelScreen]) -> dict[str, int]:
    """CodegenClass value -> kernels, of the PR against the baseline's records."""
    counts = {c.value: 0 for c in CodegenClass}
    for k in kernels:
        counts[(k.vs_baseline or k.status).value] += 1
    return counts


def _write_diffs(
    base: BaselineKernels,
    kernels: list[KernelScreen],
    rebuilt: dict[str, CompileRecord],
    dirs: dict[str, Path],
    into: Path,
    side: _BaseRebuild | None = None,
) -> None:
    """Write ``<kernel>.diff`` of every changed kernel into ``into``: its first differing
    stage, the base compiler's text against the PR's where the base decided (a
    ``vs_baseline`` set), else the baseline's."""
    for k in kernels:
        if k.status not in CHANGED_CLASSES or k.first_stage is None:
            continue
        if side is not None and k.vs_baseline is not None:
            ref = side.records[k.kernel_id]
            a = _side_bytes(base, k, side.dirs[k.kernel_id], ref)
            b = _side_bytes(base, k, dirs[k.kernel_id], rebuilt[k.kernel_id])
            if a is None or b is None:  # a side's text not kept (its code is the baseline's)
                lost = ref if a is None else rebuilt[k.kernel_id]
                sha = lost.result.stages[k.first_stage].sha256  # type: ignore[union-attr]
                text = _header(k) + _not_stored(k, sha)
            else:
                diff = stage_diff(k.kernel_id, k.first_stage, a, b, ("base", "current"))
                k.changed_lines = changed_lines(diff)
                text = _header(k) + diff
            (into / f"{k.kernel_id}.diff").write_text(text, encoding="utf-8")
            continue
        rec = base.records[k.kernel_id]
        if not _text_stored(rec, k.first_stage):
            sha = rec.result.stages[k.first_stage].sha256  # type: ignore[union-attr]
            text = _header(k) + _not_stored(k, sha, "baseline ")
        else:
            a = _stage_bytes(base.blob_dirs[k.kernel_id], rec, k.first_stage)
            b = _stage_bytes(dirs[k.kernel_id], rebuilt[k.kernel_id], k.first_stage)
            diff = stage_diff(k.kernel_id, k.first_stage, a, b)
            k.changed_lines = changed_lines(diff)
            text = _header(k) + diff
        (into / f"{k.kernel_id}.diff").write_text(text, encoding="utf-8")


NOT_STORED = "text not stored in the baseline (digest differs)"


def _text_stored(rec: CompileRecord, stage: str) -> bool:
    """False when ``rec`` has the stage's digest but not its text (a compact baseline
    keeps only the TTIR and TTGIR texts, docs/baselines.md "Size"; a rebuild whose
    cubin has the baseline's code only the digest, :func:`_side_bytes`)."""
    digest = rec.result.stages.get(stage) if rec.result else None
    return digest is None or text_stored(digest)


def _side_bytes(
    base: BaselineKernels, k: KernelScreen, cg_dir: Path, rec: CompileRecord
) -> bytes | None:
    """One side's text of ``k``'s first differing stage. A rebuild whose cubin has the
    baseline record's code keeps only that stage's digest (``capture.copy_disassembly``):
    its text is then the baseline's, read from there; None when the baseline does not
    hold it either (a compact baseline) or holds another text."""
    stage = k.first_stage or ""
    if _text_stored(rec, stage):
        return _stage_bytes(cg_dir, rec, stage)
    digest = rec.result.stages[stage]  # type: ignore[union-attr]
    known = base.records.get(k.kernel_id)
    kept = known.result.stages.get(stage) if known is not None and known.result else None
    if kept is None or kept.sha256 != digest.sha256 or not text_stored(kept):
        return None
    return read_blob(base.blob_dirs[k.kernel_id], kept)


def _not_stored(k: KernelScreen, sha256: str, whose: str = "") -> str:
    """A diff file's body when a side's text of ``k``'s first differing stage is not
    stored (only its digest): the baseline's, or a side's (:func:`_side_bytes`)."""
    return f"# {k.kernel_id} {k.first_stage}: {NOT_STORED} ({whose}sha256 {sha256})\n"


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
    for name in (INTERRUPTED, PARTIAL_JSON, PARTIAL_MD):  # an earlier stop's
        (out / name).unlink(missing_ok=True)
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

    def __init__(
        self, say, total: int, started: float, classify, label: str = "", found=None, slots=1
    ):
        self.say, self.total, self.started, self.classify = say, total, started, classify
        self.label = label  # "base ": the base compiler's rebuild
        self.found: _Found | None = found
        self.slots = slots  # chunks the pool runs at once (its ETA: chunks.pool_eta)
        self.done = self.changed = self.failed = self.missing = self.chunks = 0

    def __call__(self, n_chunks: int, ids: list[str], got: dict[str, CompileRecord]) -> None:
        kernels = [self.classify(i, got.get(i)) for i in ids]
        if self.found is not None and self.label:
            self.found.base_done += len(kernels)
        elif self.found is not None:
            self.found.kernels.update((k.kernel_id, k) for k in kernels)
        self.chunks += 1
        self.done += len(kernels)
        self.changed += sum(k.status in CHANGED_CLASSES for k in kernels)
        self.failed += sum(k.status is CodegenClass.FAILED for k in kernels)
        self.missing += sum(k.status is CodegenClass.MISSING for k in kernels)
        elapsed = time.monotonic() - self.started
        eta = pool_eta(elapsed, self.chunks, n_chunks, self.slots)
        missing = f", {self.missing} not rebuilt" if self.missing else ""
        self.say(
            f"codegen: {self.label}chunk {self.chunks}/{n_chunks}: {self.done}/{self.total} "
            "kernels, "
            f"{self.changed} changed, {self.failed} failed{missing}; {elapsed:.0f} s, "
            f"ETA {eta:.0f} s"
        )

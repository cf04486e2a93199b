"""Rebuild recorded compile requests with the triton importable here (docs/codegen.md,
"Rebuilding").

Each :class:`~zlbench.models.CompileRequest` is compiled with
``triton.compile(ASTSource(...), target=GPUTarget(...), options=...)`` under the
stand-in driver (:mod:`.standin`) for the recorded target: nothing is launched and
no GPU is needed. The results are captured through triton's compilation listener
and normalised exactly as the recording plugin does, so the same compiler gives
the same digests. A kernel that cannot be loaded or compiled gets ``error``
(``compile failed: <ExcType>: <first line>`` or ``load failed: ...``) and no result.
Its cubin is disassembled (the SASS stage, registers, spills) only where every stage
before it has the baseline record's digest: a kernel changed earlier is changed
whatever its SASS (:func:`earlier_stage_differs`; a note on the record says so).

Entry point (one process; run several on shards for parallelism)::

    python -m zlbench.plugins.compiler.rebuild INDEX_JSON OUT_DIR [CACHE_DIR] [--shard K/N]
        [--exec-generated] [--in-cache] [--no-sass]

writes ``OUT_DIR/index.json`` (a CodegenIndex: the input records in input order,
``used_by`` kept, ``result``/``error``/``notes`` from this rebuild) and
``OUT_DIR/blobs/``. On stdout it speaks the compile pool's line protocol
(:mod:`zlbench.protocol.compile_lines`): per kernel as it is rebuilt ``ZLBENCH_COMPILED
<id> ok`` or ``... failed <error>``, then, once the index is written,
``ZLBENCH_CODEGEN_REBUILD kernels=N failed=F out=OUT_DIR``. Exit 0 even when kernels
fail (their ``error`` says so); exit 2 with one line on stderr when the input is
unusable.

``CACHE_DIR``: after the rebuild (its index written), every kernel it compiled is
also put into that triton cache dir (the gate's measure step then loads them from
there, docs/codegen.md "Gate integration"); best effort: a failure there is one
stderr line. The rebuild itself still compiles in a fresh private cache, so the
screen's output is the same with or without it (``--in-cache``: it compiles in
CACHE_DIR itself, so a kernel already there, the screen's, is a cache hit; the
kernel-replay tier's builds). ``OUT_DIR/groups.json`` then maps each
kernel id put there (or found there already) to its cache group dir's name (triton's
hash of the compile, ``CACHE_DIR/<name>/``): the kernel-replay tier loads a side's
binary from it (:mod:`zlbench.plugins.replay.binaries`).

``--no-sass``: no SASS stage, registers or spills (the cubin is not disassembled; its
code digest, ``cubin_code_sha256``, is still taken). The kernel-replay tier's builds
need the binary and its code digest only, and a disassembly is most of a cache hit's
cost (``cuobjdump`` twice, about 0.3 s a kernel of this CPU against 0.01 s for the
rest; docs/replay.md, "Both sides' binaries").

A kernel FlagGems generated at run time is recorded with its module's text
(``generated_source``); rebuilding it means executing that text as Python. The worker
does so only with ``--exec-generated``, which the screen passes only for records of a
baseline verified against its manifest (docs/codegen.md, "Generated kernels";
docs/security.md). Without it such a kernel is ``load failed: UntrustedSource: ...``
(not rebuilt, so not proven unchanged).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from zlbench.errors import ZlbenchError
from zlbench.models import CodegenIndex, CompileRecord, CompileRequest, load_json_model
from zlbench.models.base import atomic_write_text
from zlbench.models.codegen import STAGES, CompileResult
from zlbench.plugins.compiler import capture
from zlbench.plugins.compiler import standin as standin_mod
from zlbench.plugins.sweep import parse_sweep_shard
from zlbench.protocol.compile_lines import REBUILD_END, write_end, write_item

_STARTED = time.monotonic()  # this module imported: the worker's Python is up

# Where a rebuild worker's seconds went (``phases``): ``up`` Python, zlbench and
# triton imported; ``load`` finding the kernels' JIT functions (the first one imports
# FlagGems and torch); ``compile`` triton.compile (a cache hit is a lookup); ``digest``
# the stage texts normalised and digested; ``sass`` the disassembly; ``write`` the
# index, blobs and cache groups. On the end line as ``<phase>_s=``; the replay's builds
# sum them per side into replay.json (docs/replay.md, "Both sides' binaries").
PHASES = ("up", "load", "compile", "digest", "sass", "write")


@contextmanager
def _timed(phases: dict[str, float] | None, name: str):
    t0 = time.monotonic()
    try:
        yield
    finally:
        if phases is not None:
            phases[name] = phases.get(name, 0.0) + time.monotonic() - t0


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def decode_const(kind: str, value: Any) -> Any:
    import triton.language as tl

    if kind == "none":
        return None
    if kind == "float":
        return float(value)
    if kind == "dtype":
        return tl.dtype(value)
    if kind == "jit":
        module, qualname = value.split(":", 1)
        return capture.resolve(module, qualname)
    if kind == "repr":
        raise ValueError(f"constexpr {value} was recorded as repr only")
    return value


def add_import_dir(anchor: str, path: str | None) -> None:
    """Put ``<entry>/<anchor>`` on sys.path, as the package owning it did at record
    time (FlagGems' vendor backends, docs/codegen.md): the package is imported
    first, then ``anchor`` is looked up under its parent and every sys.path entry."""
    top = importlib.import_module(anchor.split("/", 1)[0])
    homes = [Path(f).parents[1] for f in [getattr(top, "__file__", None)] if f]
    homes += [Path(os.path.abspath(e or os.getcwd())) for e in sys.path]
    for home in homes:
        folder = home / anchor
        if folder.is_dir() and (path is None or (folder / path).is_file()):
            if str(folder) not in sys.path:
                sys.path.append(str(folder))
            return
    raise LookupError(f"{anchor}/{path} not found under any sys.path entry")


def _resolve_vendor(module: str, qualname: str) -> Any:
    """``capture.resolve``; a record made before ``root`` named the import dir
    (``hopper.ops.mm`` with root ``sys.path``) gets one more try after ``import
    flag_gems``, which puts its vendor backend dirs on sys.path when it finds the
    device's arch (on a GPU host; not on CPU)."""
    try:
        return capture.resolve(module, qualname)
    except ModuleNotFoundError as e:
        top = module.split(".", 1)[0]
        if e.name != top or top == "flag_gems" or not importlib.util.find_spec("flag_gems"):
            raise
    importlib.import_module("flag_gems")
    return capture.resolve(module, qualname)


class UntrustedSource(Exception):
    """A generated kernel's recorded module text that this worker may not execute."""


NOT_EXECUTED = (
    "recorded generated source not executed: the records are not from a baseline "
    "verified against its manifest"
)


class Loader:
    """Finds each request's JIT function: by import, or from its generated source,
    which is executed only when ``exec_generated`` says the records are trusted (a
    verified baseline); otherwise such a request raises :class:`UntrustedSource`."""

    def __init__(self, workdir: Path, exec_generated: bool = False):
        self.workdir = workdir
        self.exec_generated = exec_generated
        self.generated: dict[tuple[str, str], Any] = {}

    def function(self, req: CompileRequest) -> Any:
        k = req.kernel
        if k.generated_source is None:
            if k.root and k.root.startswith(capture.IMPORT_DIR):
                add_import_dir(k.root.removeprefix(capture.IMPORT_DIR), k.path)
            return _resolve_vendor(k.module, k.qualname)
        if not self.exec_generated:
            raise UntrustedSource(NOT_EXECUTED)
        sha = capture.sha256_hex(k.generated_source)
        mod = self.generated.get((k.module, sha))
        if mod is None:
            mod = self.generated[(k.module, sha)] = self._load_generated(req, sha)
        return capture.find_jit(mod, k.qualname)

    def _load_generated(self, req: CompileRequest, sha: str) -> Any:
        k = req.kernel
        folder = self.workdir / sha[:16]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / os.path.basename(k.path or f"{k.module}.py")
        path.write_text(k.generated_source or "", encoding="utf-8")
        spec = importlib.util.spec_from_file_location(k.module, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        homes = {q.split(":", 1)[0] for q in k.generated_globals.values()}
        own = set(mod.__dict__)  # what the recorded text binds itself
        for home in sorted(homes):  # as FlagGems does: the generator's globals merged in,
            # except over the text's own names: a kernel of a plain module recorded as
            # generated (its JIT function not found by import where it was recorded)
            # names the module it imported a JIT function from as a home, e.g.
            # triton.language.random, whose ``tl`` is triton.language.core, and that
            # would hide the text's own ``tl`` (``tl.philox``: AttributeError)
            src = importlib.import_module(home).__dict__
            mod.__dict__.update(
                {n: v for n, v in src.items() if not n.startswith("__") and n not in own}
            )
        for name, qual in k.generated_globals.items():
            mod.__dict__[name] = capture.resolve(*qual.split(":", 1))
        return mod


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``: a kernel's error in one line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _notes(req: CompileRequest, fn: Any) -> list[str]:
    notes = []
    if capture.sha256_hex(fn.src) != req.kernel.source_sha256:
        notes.append(f"source changed: {req.kernel.module}:{req.kernel.qualname} differs here")
    elif req.kernel.cache_key and capture.key_changed(fn, req.kernel.cache_key):
        notes.append(
            "dependencies changed: triton's cache key differs here (a JIT function it "
            "calls, or a global value one of them reads, e.g. one computed from the "
            "device at import); its stages decide whether the code changed"
        )
    return notes


def ast_source(req: CompileRequest, fn: Any) -> Any:
    """The request's ``ASTSource``: what triton compiles, and what a CompiledKernel
    loaded from a cache group needs to launch (its launcher reads the signature)."""
    from triton.compiler.compiler import ASTSource

    constexprs = {tuple(c.path): decode_const(c.kind, c.value) for c in req.constexprs}
    attrs = {tuple(a.path): a.attrs for a in req.attrs}
    signature = {k: _tuples(v) for k, v in req.signature.items()}
    return ASTSource(fn, signature, constexprs, attrs)


def compile_request(req: CompileRequest, fn: Any) -> dict:
    """Compile one request; returns the listener's keyword arguments."""
    import triton
    from triton.backends.compiler import GPUTarget

    t = req.target
    src = ast_source(req, fn)
    options = {k: _tuples(v) for k, v in req.options.items()}
    seen: dict = {}
    knobs = getattr(getattr(triton, "knobs", None), "compilation", None)
    previous = getattr(knobs, "listener", None)
    if knobs is not None:
        knobs.listener = lambda **kw: seen.update(kw)
    try:
        target = GPUTarget(t.backend, t.arch, t.warp_size)
        kernel = triton.compile(src, target=target, options=options)
    finally:
        if knobs is not None:
            knobs.listener = previous
    if not seen:  # a triton without the listener: no stage times
        seen = {
            "metadata": kernel.metadata._asdict(),
            "metadata_group": kernel.metadata_group,
            "times": None,
        }
    return seen


def rebuild_one(
    rec: CompileRecord,
    loader: Loader,
    store: capture.BlobStore,
    roots,
    groups=None,
    sass: bool = True,
    phases: dict[str, float] | None = None,
) -> CompileRecord:
    """``groups``: a dict that gets ``{id: cache group dir name}`` of what compiled;
    ``sass``: False leaves the SASS stage, registers and spills out (``--no-sass``);
    ``phases``: the seconds of each of :data:`PHASES` added to it."""
    out = CompileRecord(id=rec.id, request=rec.request, used_by=rec.used_by)
    try:  # not finding the kernel or its constexprs here is not the compiler's failure
        with _timed(phases, "load"):
            fn = loader.function(rec.request)
            for c in rec.request.constexprs:
                decode_const(c.kind, c.value)
    except Exception as e:  # noqa: BLE001 - any failure to load is this kernel's error
        out.error = f"load failed: {first_line(e)}"
        return out
    try:
        # triton's cache key walks the source's dependencies: a name it cannot resolve
        # fails it as it fails the compile (the kernel's error, never the worker's end)
        with _timed(phases, "compile"):
            out.notes = _notes(rec.request, fn)
            kw = compile_request(rec.request, fn)
    except Exception as e:  # noqa: BLE001 - any compile failure is this kernel's error
        out.error = f"compile failed: {first_line(e)}"
        return out
    files = capture.stage_files(kw["metadata_group"])
    if groups is not None and files:
        groups[rec.id] = Path(next(iter(files.values()))).parent.name
    with _timed(phases, "digest"):
        out.result, cubin = capture.result_from(
            kw["metadata"], files, kw["times"], False, store, roots
        )
    if cubin is not None and sass:
        with _timed(phases, "sass"):
            note = finish_sass(rec.result, out.result, cubin, store, roots)
        out.notes += [note] if note else []
    return out


def finish_sass(
    base: CompileResult | None, cur: CompileResult, cubin: bytes, store, roots
) -> str | None:
    """``cur``'s SASS stage, registers and spills: none where an earlier stage already
    differs from ``base`` (returns the note saying so); ``base``'s where the cubin's code
    is ``base``'s (:func:`capture.same_code`: no disassembler run, ~0.7 s a kernel of a
    small CPU); else disassembled."""
    differs = earlier_stage_differs(base, cur)
    if differs is not None:
        return f"SASS not disassembled: the {differs} already differs"
    if capture.same_code(base, cur):
        capture.copy_disassembly(base, cur)
    else:
        capture.add_disassembly(cur, cubin, store, roots)
    return None


def earlier_stage_differs(base: CompileResult | None, cur: CompileResult) -> str | None:
    """The first stage before SASS whose digest differs from the baseline record's
    (a stage only one side has counts), or None. Such a kernel is changed at that stage,
    whatever its SASS, so the screen classifies it without disassembling its cubin
    (cuobjdump: about 0.13-0.2 s of CPU per kernel, often as much as its compile); its
    registers, spills and SASS instruction count are then not known."""
    if base is None:
        return None  # nothing to compare: the screen says so, the SASS is recorded
    for stage in STAGES[:-1]:
        a, b = base.stages.get(stage), cur.stages.get(stage)
        if (a is None) != (b is None) or (a is not None and a.sha256 != b.sha256):
            return stage
    return None


def select(records: list[CompileRecord], shard: tuple[int, int] | None) -> list[CompileRecord]:
    if shard is None:
        return records
    k, n = shard
    return [r for i, r in enumerate(records) if i % n == k]


def rebuild_index(
    index: CodegenIndex,
    out_dir: Path,
    shard: tuple[int, int] | None = None,
    cache_out: Path | None = None,
    exec_generated: bool = False,
    on_item: Callable[[str, str | None], None] | None = None,
    in_cache: bool = False,
    sass: bool = True,
    phases: dict[str, float] | None = None,
) -> CodegenIndex:
    """Rebuild (a shard of) ``index``'s requests; write and return the new index
    (the compiled kernels also put into the triton cache dir ``cache_out``, if given;
    ``on_item(id, error)`` as each kernel is rebuilt).
    ``exec_generated``: the records are a verified baseline's, so a generated kernel's
    recorded module text may be executed to rebuild it (module docstring).
    ``in_cache``: compile in ``cache_out`` itself, not in a private cache: a kernel
    already there is a cache hit, not compiled again (the kernel-replay tier's builds,
    which need the binaries, not the screen's stage texts). ``sass``: False, no
    disassembly (``--no-sass``). ``phases``: each of :data:`PHASES`' seconds added to
    it (``up``: from this module's import to triton's)."""
    import triton

    if phases is not None:
        phases["up"] = phases.get("up", 0.0) + time.monotonic() - _STARTED

    todo = select(index.records, shard)
    vendor = gems_vendor_for(todo, os.environ)
    if vendor is not None:  # before any FlagGems module is loaded (this process's own)
        os.environ["GEMS_VENDOR"] = vendor
    store, roots, done, groups = capture.BlobStore(), capture.machine_roots(), [], {}
    with tempfile.TemporaryDirectory(prefix="zl-rebuild-") as tmp:
        use_out = in_cache and cache_out is not None
        triton.knobs.cache.dir = str(cache_out if use_out else Path(tmp) / "triton-cache")
        loader = Loader(Path(tmp) / "generated", exec_generated)
        roots = [*roots, tmp]
        for rec in todo:
            with standin_mod.standin(target_spec(rec.request)):
                done.append(rebuild_one(rec, loader, store, roots, groups, sass, phases))
            if on_item is not None:
                on_item(rec.id, done[-1].error)
        out = CodegenIndex(compiler=capture.compiler_identity(), records=done)
        with _timed(phases, "write"):
            store.write(Path(out_dir))
            capture.write_index(Path(out_dir), out)
            if cache_out is not None:  # after the index: the screen never depends on it
                if not use_out:
                    try_export(Path(tmp) / "triton-cache", cache_out)
                write_groups(Path(out_dir), cache_out, groups)
    return out


GROUPS_JSON = "groups.json"  # OUT_DIR/groups.json: kernel id -> cache group dir name


def write_groups(out_dir: Path, cache: Path, groups: dict[str, str]) -> None:
    """``out_dir/groups.json``: the kernels of ``groups`` whose group is complete in
    the cache dir ``cache`` (its ``__grp__`` file there), id -> group dir name."""
    there = {k: g for k, g in groups.items() if any((cache / g).glob("__grp__*.json"))}
    atomic_write_text(out_dir / GROUPS_JSON, json.dumps(there, indent=1, sort_keys=True) + "\n")


def try_export(private: Path, shared: Path) -> int:
    """:func:`export_cache`, best effort: any failure (e.g. a triton fork whose
    cache manager differs) is one stderr line and 0 kernels put; the benchmark then
    compiles its kernels as usual."""
    try:
        return export_cache(private, shared)
    except Exception as e:  # noqa: BLE001 - a speed-up only: never fail the rebuild
        print(f"zlbench: cache dir {shared}: not filled: {first_line(e)}", file=sys.stderr)
        return 0


def export_cache(private: Path, shared: Path) -> int:
    """Put every complete kernel of the triton cache dir ``private`` into ``shared``
    through triton's cache manager (atomic writes; its group files name absolute
    paths, so they are written anew); a kernel already there is left as it is.
    The number of kernels put. A kernel that cannot be put is one stderr line: the
    benchmark then compiles it itself."""
    import triton
    from triton.runtime.cache import FileCacheManager

    previous, put = triton.knobs.cache.dir, 0
    triton.knobs.cache.dir = str(shared)
    try:
        for grp in sorted(private.glob("*/__grp__*")):
            try:
                put += _put_group(FileCacheManager(grp.parent.name), grp)
            except (OSError, ValueError, KeyError) as e:
                print(f"zlbench: cache dir: {grp.parent.name}: {first_line(e)}", file=sys.stderr)
    finally:
        triton.knobs.cache.dir = previous
    return put


def _put_group(dst: Any, grp: Path) -> int:
    name = grp.name.removeprefix("__grp__")
    if dst.get_group(name):
        return 0
    children = json.loads(grp.read_text(encoding="utf-8"))["child_paths"]
    paths = {c: dst.put(Path(p).read_bytes(), c) for c, p in children.items()}
    dst.put_group(name, paths)
    return 1


def gems_vendor_for(records: list[CompileRecord], environ) -> str | None:
    """The GEMS_VENDOR a rebuild sets: ``nvidia`` when the environment names none and
    every record was compiled for a CUDA target, else None. FlagGems picks its vendor
    at import from the device it finds; a rebuild on a machine without that device (a
    CPU job) found none, and every kernel was "load failed: ... No device were detected"
    or "'DeviceDetector' object has no attribute 'vendor_name'" (docs/codegen.md)."""
    if environ.get("GEMS_VENDOR") or not records:
        return None
    if all(r.request.target.backend == "cuda" for r in records):
        return "nvidia"
    return None


def target_spec(req: CompileRequest) -> str:
    """The stand-in driver's ``backend:arch:warp_size`` for ``req``'s recorded target."""
    t = req.target
    return f"{t.backend}:{t.arch}:{t.warp_size}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m zlbench.plugins.compiler.rebuild")
    p.add_argument("index", help="a codegen index.json (CodegenIndex)")
    p.add_argument("out_dir", help="where to write index.json and blobs/")
    p.add_argument(
        "--shard", default=None, metavar="K/N", help="rebuild records i with i %% N == K"
    )
    p.add_argument("cache_dir", nargs="?", help="a triton cache dir to put the kernels in too")
    p.add_argument(
        "--exec-generated",
        action="store_true",
        help="execute generated kernels' recorded module text (a verified baseline's only)",
    )
    p.add_argument(
        "--in-cache",
        action="store_true",
        help="compile in CACHE_DIR itself: a kernel already there is not compiled again",
    )
    p.add_argument(
        "--no-sass",
        action="store_true",
        help="no disassembly: no SASS stage, registers or spills (the replay's builds)",
    )
    args = p.parse_args(argv)
    try:
        shard = parse_sweep_shard(args.shard, "--shard") if args.shard else None
        index = load_json_model(args.index, CodegenIndex)
        cache_out = Path(args.cache_dir) if args.cache_dir else None
        out_dir, trusted = Path(args.out_dir), args.exec_generated
        phases: dict[str, float] = {}
        out = rebuild_index(
            index, out_dir, shard, cache_out, trusted, write_item, args.in_cache,
            sass=not args.no_sass, phases=phases,
        )  # fmt: skip
    except ZlbenchError as e:
        print(f"zlbench: {e}", file=sys.stderr)
        return 2
    failed = sum(1 for r in out.records if r.error)
    timed = {f"{k}_s": f"{phases.get(k, 0.0):.3f}" for k in PHASES}
    write_end(REBUILD_END, kernels=len(out.records), failed=failed, out=args.out_dir, **timed)
    return 0


if __name__ == "__main__":
    sys.exit(main())

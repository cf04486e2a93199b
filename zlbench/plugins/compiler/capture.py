"""Turn one triton compilation into a :class:`~zlbench.models.CompileRecord`.

Used by the recording plugin (from triton's compilation listener: ``src``,
``metadata``, ``metadata_group``, ``times``) and by the rebuild worker (from the
``CompiledKernel`` that ``triton.compile`` returns), so both write the same
stages, normalised the same way (:mod:`.normalise`), into the same kind of
content-addressed :class:`BlobStore`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zlbench.models import (
    CODEGEN_BLOBS,
    TEXT_STAGES,
    AttrValue,
    CompileRecord,
    CompileRequest,
    CompileResult,
    CompilerIdentity,
    ConstValue,
    KernelConfig,
    KernelSource,
    StageDigest,
    Target,
    atomic_write_text,
    blob_digest,
)
from zlbench.models.codegen import PORTABLE_KEY
from zlbench.plugins.compiler import normalise as norm
from zlbench.plugins.compiler import sass as sass_mod

_NUM_WARPS = re.compile(r'"ttg\.num-warps" = (\d+) : i32')
# Attributes under which wrappers keep the JIT function: triton's Autotuner and
# Heuristics, FlagGems' LibEntry/LibTuner ("fn"); FlagGems' pointwise_dynamic
# ("_scalar_fn", the scalar function its generated kernels call).
_WRAPPED = ("fn", "_scalar_fn")


# --------------------------------------------------------------------------- blobs


@dataclass
class BlobStore:
    """Compressed normalised stage texts by sha256, kept in memory until written."""

    blobs: dict[str, bytes] = field(default_factory=dict)

    def add(self, text: str) -> StageDigest:
        data = text.encode("utf-8")
        sha, gz = blob_digest(data)
        self.blobs.setdefault(sha, gz)
        return StageDigest(
            sha256=sha, size=len(data), compressed_size=len(gz), blob=f"{CODEGEN_BLOBS}/{sha}.gz"
        )

    def write(self, cg_dir: Path, shas: set[str] | None = None) -> tuple[int, int]:
        """Write the blobs (all, or ``shas``) not yet in ``cg_dir/blobs`` (atomic each);
        ``(blobs, bytes)`` written."""
        folder = Path(cg_dir) / CODEGEN_BLOBS
        folder.mkdir(parents=True, exist_ok=True)
        count = size = 0
        for sha in sorted(self.blobs if shas is None else shas):
            path = folder / f"{sha}.gz"
            if not path.exists():
                _atomic_write_bytes(path, self.blobs[sha])
                count, size = count + 1, size + len(self.blobs[sha])
        return count, size


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- identity


@functools.lru_cache(maxsize=1)
def compiler_identity() -> CompilerIdentity:
    import triton

    from zlbench.plugins.environment import triton_distribution

    dist, version, commit = triton_distribution()
    return CompilerIdentity(
        distribution=dist or "triton", version=version or triton.__version__, commit=commit
    )


def compile_env() -> dict[str, str]:
    """The environment variables set now that change triton's output."""
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars
    except ImportError:
        return {}
    return {str(k): str(v) for k, v in sorted(get_cache_invalidating_env_vars().items())}


def machine_roots() -> list[str]:
    """Directories whose absolute paths must not reach a blob (see normalise)."""
    roots = [os.getcwd(), str(Path.home())]
    roots += [p for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p)]
    return [r for r in roots if len(r.rstrip("/")) > 4]


# --------------------------------------------------------------------------- request


def encode_const(path: tuple, v: Any) -> ConstValue:
    """A constexpr value as JSON (kinds: see :class:`~zlbench.models.ConstValue`)."""
    from triton.language import constexpr, dtype
    from triton.runtime.jit import JITCallable

    if isinstance(v, constexpr):
        v = v.value
    p = list(path)
    if v is None:
        return ConstValue(path=p, kind="none")
    if isinstance(v, bool):
        return ConstValue(path=p, kind="bool", value=v)
    if isinstance(v, int):
        return ConstValue(path=p, kind="int", value=v)
    if isinstance(v, float):
        return ConstValue(path=p, kind="float", value=repr(v))
    if isinstance(v, str):
        return ConstValue(path=p, kind="str", value=v)
    if isinstance(v, dtype):
        return ConstValue(path=p, kind="dtype", value=str(v))
    if isinstance(v, JITCallable):
        return ConstValue(path=p, kind="jit", value=_qualified(v))
    return ConstValue(path=p, kind="repr", value=repr(v))


def _qualified(jit_fn: Any) -> str:
    fn = jit_fn.fn
    return f"{fn.__module__}:{fn.__qualname__}"


def resolve(module: str, qualname: str) -> Any:
    """The JITFunction ``module:qualname`` names (unwrapping autotuners, LibEntry...)."""
    return find_jit(importlib.import_module(module), qualname)


def find_jit(module: Any, qualname: str) -> Any:
    """The JITFunction at ``qualname`` in ``module`` (through ``.fn`` of wrappers)."""
    from triton.runtime.jit import JITCallable

    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    for _ in range(8):
        if isinstance(obj, JITCallable):
            return obj
        obj = next((getattr(obj, a) for a in _WRAPPED if hasattr(obj, a)), None)
    raise LookupError(f"{getattr(module, '__name__', '?')}:{qualname} is not a triton JIT function")


def _findable(jit_fn: Any) -> bool:
    """Whether importing ``module:qualname`` gives this kernel back: the same object, or
    (:func:`same_kernel`) its twin of the same file and source, from a second import of
    the module (docs/codegen.md, "Modules imported twice")."""
    fn = jit_fn.fn
    if fn.__module__ in ("__main__", None) or fn.__module__ not in sys.modules:
        return False
    try:
        found = resolve(fn.__module__, fn.__qualname__)
    except Exception:  # noqa: BLE001 - any failure: not findable by import
        return False
    return found is jit_fn or same_kernel(found, jit_fn)


def same_kernel(a: Any, b: Any) -> bool:
    """Whether two JIT functions are one kernel of two imports of one module: same
    qualified name, same file, same source text, same triton cache key (which covers the
    JIT functions it calls and the globals they read). A FlagGems benchmark file that drops
    every ``flag_gems*`` module from ``sys.modules`` and imports flag_gems again (as
    ``test_nested_view_from_buffer_copy.py`` does when it is collected) leaves the ops
    collected before it running the first import's kernels, while ``sys.modules`` holds
    the second's: importing by name gives the same code, so the kernel is recorded by
    name, not as a generated module (its whole text)."""
    fa, fb = getattr(a, "fn", None), getattr(b, "fn", None)
    if fa is None or fb is None:
        return False
    try:
        return (
            (fa.__module__, fa.__qualname__) == (fb.__module__, fb.__qualname__)
            and a.src == b.src
            and inspect.getsourcefile(fa) == inspect.getsourcefile(fb)
            and (a.cache_key == b.cache_key or portable_key(a) == portable_key(b))
        )
    except Exception:  # noqa: BLE001 - a key triton cannot compute: not the same
        return False


def portable_key(jit_fn: Any) -> str:
    """triton's cache key of ``jit_fn`` as :attr:`JITFunction.cache_key` computes it, except
    that a ``tl.constexpr`` global wrapping a Python function (FlagGems' cumsum and
    cumprod: ``@tl.constexpr def get_scan_accum_type``) counts by its module, qualified
    name and code, where triton takes ``str()`` of it, i.e. the function's address: two
    imports of one module then give two cache keys for the same code
    (docs/codegen.md, "Modules imported twice"). JIT functions called are keyed the same
    way, recursively."""
    return _portable(jit_fn, {})[0]


def recorded_key(jit_fn: Any) -> str:
    """The cache key a record keeps (``KernelSource.cache_key``): triton's, but
    ``PORTABLE_KEY`` + :func:`portable_key` for an address-keyed kernel (its key, or a
    JIT callee's, holds a function's address). Triton's key of such a kernel differs in
    every process, and the request's id with it:
    a capture taken in one process named kernels that the records of another did not
    hold (FlagGems' cumsum, cumprod, sort, argsort, isin, nonzero, copysign)."""
    try:
        key, address = _portable(jit_fn, {})
    except Exception:  # noqa: BLE001 - a key this cannot compute: triton's, as before
        return jit_fn.cache_key
    return PORTABLE_KEY + key if address else jit_fn.cache_key


def key_changed(jit_fn: Any, recorded: str) -> bool:
    """Whether ``jit_fn``'s cache key here differs from the one a record kept
    (:func:`recorded_key`). Never for an address-keyed kernel whose record kept triton's
    own key (made before records kept portable keys): that key was an address."""
    here = recorded_key(jit_fn)
    if here == recorded:
        return False
    return recorded.startswith(PORTABLE_KEY) or not here.startswith(PORTABLE_KEY)


def _portable(jit_fn: Any, memo: dict) -> tuple[str, bool]:
    """``(portable key, address keyed)`` of ``jit_fn``; ``memo`` breaks recursion."""
    from triton.language.core import constexpr
    from triton.runtime.jit import DependenciesFinder

    if id(jit_fn) in memo:
        return memo[id(jit_fn)]
    memo[id(jit_fn)] = (f"recursion:{jit_fn.fn.__qualname__}", False)
    address = False

    class Finder(DependenciesFinder):
        def _update_hash(self, func: Any) -> None:
            nonlocal address
            key, keyed = _portable(func, memo)
            address = address or keyed
            self.hasher.update((key + str(getattr(func, "noinline", False))).encode("utf-8"))

    finder = Finder(
        name=jit_fn.fn.__name__,
        globals=jit_fn.__globals__,
        nonlocals=inspect.getclosurevars(jit_fn.fn).nonlocals,
        src=jit_fn.src,
    )
    finder.visit(jit_fn.parse())
    consts = [
        (name, val)
        for (name, _), (val, _) in sorted(finder.used_global_vals.items())
        if isinstance(val, constexpr)
    ]
    address = address or any(inspect.isfunction(getattr(v, "value", None)) for _, v in consts)
    text = finder.ret + str(jit_fn.starting_line_number)
    text += str([(name, _portable_value(val)) for name, val in consts])
    memo[id(jit_fn)] = (sha256_hex(text), address)
    return memo[id(jit_fn)]


def _portable_value(val: Any) -> str:
    """``str()`` of a constexpr, but a function value by name and code, not address."""
    fn = getattr(val, "value", None)
    if inspect.isfunction(fn):
        code = sha256_hex(repr(_code_shape(fn.__code__)) + repr(fn.__defaults__))
        return f"constexpr[{fn.__module__}:{fn.__qualname__}:{code}]"
    return str(val)


def _code_shape(code: Any) -> tuple:
    """What a code object computes, without addresses: the bytecode and the names and
    constants it uses (nested code objects the same way). Not the file's text on disk,
    which may have changed since the module was imported."""
    consts = tuple(
        _code_shape(c) if inspect.iscode(c) else (type(c).__name__, repr(c)) for c in code.co_consts
    )
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars, consts)


def _relative(file: str | None) -> str | None:
    if not file:
        return None
    best = None
    for entry in sys.path:
        base = os.path.abspath(entry or os.getcwd())
        if file.startswith(base.rstrip("/") + "/") and (best is None or len(base) > len(best)):
            best = base
    return os.path.relpath(file, best) if best else os.path.basename(file)


# KernelSource.root of a module imported from a dir inside a package (:func:`locate`)
IMPORT_DIR = "sys.path/"


def _import_root(module: str, file: str) -> Path | None:
    """The directory ``module`` was imported from (the sys.path entry that held it at
    import time), from its dotted name and file; None when they do not match."""
    parts = module.split(".")
    p = Path(os.path.abspath(file))
    tail = [*parts, p.name] if p.stem == "__init__" else [*parts[:-1], parts[-1] + p.suffix]
    if len(p.parts) <= len(tail) or list(p.parts[-len(tail) :]) != tail:
        return None
    return p.parents[len(tail) - 1]


def locate(module: str, file: str | None) -> tuple[str | None, str | None]:
    """``(path, root)`` of a kernel's file, machine-independent (docs/codegen.md).

    root ``"sys.path"``: ``path`` is relative to a sys.path entry (e.g.
    ``flag_gems/ops/mm.py``). root ``"sys.path/<dir>"``: the module was imported
    from ``<dir>``, a directory inside a package that the package itself put on
    sys.path at import time (FlagGems' vendor backends: ``import hopper.ops.mm``
    from ``flag_gems/runtime/backend/_nvidia``); ``path`` is relative to that
    directory and ``<dir>`` to the sys.path entry holding the outermost package.
    """
    if not file:
        return None, None
    root = _import_root(module, file)
    if root is None or not (root / "__init__.py").is_file():
        return _relative(file), "sys.path"
    top = root
    while (top.parent / "__init__.py").is_file():
        top = top.parent
    anchor = root.relative_to(top.parent).as_posix()
    return Path(os.path.abspath(file)).relative_to(root).as_posix(), IMPORT_DIR + anchor


def sha256_hex(data: bytes | str) -> str:
    """Hex sha256 of ``data`` (a str as UTF-8)."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def _generated_globals(jit_fn: Any) -> dict[str, str]:
    from triton.runtime.jit import JITCallable

    own = jit_fn.fn.__module__
    out = {}
    for name, val in jit_fn.fn.__globals__.items():
        if isinstance(val, JITCallable) and val.fn.__module__ != own and _findable(val):
            out[name] = _qualified(val)
    return dict(sorted(out.items()))


def kernel_source(jit_fn: Any) -> KernelSource:
    fn = jit_fn.fn
    file = inspect.getsourcefile(fn)
    text = Path(file).read_bytes() if file and os.path.isfile(file) else None
    generated = not _findable(jit_fn)
    where = (None, None) if generated else locate(fn.__module__, file)
    return KernelSource(
        name=fn.__name__,
        module=fn.__module__,
        qualname=fn.__qualname__,
        path=os.path.basename(file) if generated and file else where[0],
        root=None if generated else where[1],
        source_sha256=sha256_hex(jit_fn.src),
        file_sha256=sha256_hex(text) if text is not None else None,
        cache_key=recorded_key(jit_fn),
        generated_source=text.decode("utf-8") if generated and text is not None else None,
        generated_globals=_generated_globals(jit_fn) if generated else {},
    )


def _json(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_json(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


@functools.lru_cache(maxsize=8)
def _default_options(backend: str, arch: Any, warp_size: int) -> dict:
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    opts = make_backend(GPUTarget(backend, arch, warp_size)).parse_options({})
    return {k: _json(v) for k, v in opts.__dict__.items()}


def _ttgir_num_warps(files: dict[str, str]) -> int | None:
    if "ttgir" not in files:
        return None
    with open(files["ttgir"], encoding="utf-8") as f:
        m = _NUM_WARPS.search(f.read(4096))
    return int(m.group(1)) if m else None


def request_from(src: Any, metadata: dict, files: dict[str, str]) -> CompileRequest:
    """The request of one compilation: ``src`` is the ASTSource, ``metadata`` triton's,
    ``files`` the stage files (:func:`stage_files`)."""
    t = metadata["target"]
    target = Target(backend=t.backend, arch=t.arch, warp_size=t.warp_size)
    defaults = _default_options(t.backend, t.arch, t.warp_size)
    given = {k: _json(metadata.get(k)) for k in defaults}
    warps = _ttgir_num_warps(files)
    if warps is not None:  # warp specialisation rewrites metadata["num_warps"]; not the IR
        given["num_warps"] = warps
    config = KernelConfig(
        num_warps=given["num_warps"],
        num_stages=given["num_stages"],
        num_ctas=given.get("num_ctas", 1),
        maxnreg=given.get("maxnreg"),
    )
    return CompileRequest(
        kernel=kernel_source(src.fn),
        signature={k: _json(v) for k, v in src.signature.items()},
        constexprs=[encode_const(p, v) for p, v in sorted(src.constants.items())],
        attrs=[AttrValue(path=list(p), attrs=_json(a)) for p, a in sorted(src.attrs.items())],
        config=config,
        options={k: v for k, v in given.items() if v != defaults[k]},
        target=target,
    )


# --------------------------------------------------------------------------- result


def stage_files(metadata_group: dict[str, str]) -> dict[str, str]:
    """``{ext: path}`` of the files triton wrote for one compilation."""
    return {Path(p).suffix[1:]: p for p in metadata_group.values()}


def times_from(times: Any) -> dict[str, float]:
    """triton's CompileTimes (microseconds) as seconds per stage."""
    if times is None:
        return {}
    out = {"ir_initialization": times.ir_initialization / 1e6}
    out.update({name: us / 1e6 for name, us in times.lowering_stages})
    out["store_results"] = times.store_results / 1e6
    return out


def result_from(
    metadata: dict,
    files: dict[str, str],
    times: Any,
    cache_hit: bool,
    store: BlobStore,
    roots: list[str],
) -> tuple[CompileResult, bytes | None]:
    """What one compilation produced, its IR stages normalised into ``store``, and
    the raw cubin (None without one). SASS and resources: :func:`add_disassembly`."""
    stages = {}
    for stage in TEXT_STAGES[:-1]:
        if stage in files:
            text = Path(files[stage]).read_text(encoding="utf-8")
            stages[stage] = store.add(norm.normalise(stage, text, roots))
    cubin = Path(files["cubin"]).read_bytes() if "cubin" in files else None
    result = CompileResult(
        stages=stages,
        cubin_sha256=sha256_hex(cubin) if cubin is not None else None,
        cubin_size=len(cubin) if cubin is not None else None,
        cubin_code_sha256=code_sha256(cubin) if cubin is not None else None,
        shared=metadata.get("shared"),
        times=times_from(times),
        cache_hit=cache_hit,
        env=compile_env(),
        compiler=compiler_identity(),
    )
    return result, cubin


# Sections of a cubin that hold debug and line info (source paths, PTX text), not code.
DEBUG_SECTIONS = (".debug", ".nv_debug", ".rela.debug", ".rela.nv_debug", ".rel.debug",
                  ".rel.nv_debug")  # fmt: skip
_SHT_NOBITS = 8


def code_sha256(cubin: bytes) -> str | None:
    """sha256 of what a cubin runs: its ELF header's machine and flags, and every
    section but those of :data:`DEBUG_SECTIONS` (name, type, flags, size, contents).
    The whole cubin's digest differs between machines (its line info names source
    paths); this one does not, and two cubins with equal code digests disassemble to the
    same SASS with the same registers and spills. None for bytes that are not a 64-bit
    little-endian ELF, or one whose section table lies outside it."""
    import struct

    if len(cubin) < 64 or cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        return None
    try:
        (machine,) = struct.unpack_from("<H", cubin, 0x12)
        (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
        (flags,) = struct.unpack_from("<I", cubin, 0x30)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
        heads = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
        names_at = heads[shstrndx][4]
        h = hashlib.sha256(struct.pack("<HI", machine, flags))
        for name_off, kind, sflags, _addr, off, size in heads:
            end = cubin.index(b"\0", names_at + name_off)
            name = cubin[names_at + name_off : end]
            if name.decode("latin-1").startswith(DEBUG_SECTIONS):
                continue
            body = b"" if kind == _SHT_NOBITS else cubin[off : off + size]
            if kind != _SHT_NOBITS and len(body) != size:
                return None
            h.update(struct.pack("<IIQQ", len(name), kind, sflags, size) + name + body)
    except (struct.error, IndexError, ValueError):
        return None
    return h.hexdigest()


def same_code(base: CompileResult | None, cur: CompileResult) -> bool:
    """Whether ``cur``'s cubin is the code of ``base``'s, by code digest (both known)."""
    return bool(
        base is not None
        and base.cubin_code_sha256
        and base.cubin_code_sha256 == cur.cubin_code_sha256
    )


def copy_disassembly(base: CompileResult, cur: CompileResult) -> None:
    """``base``'s SASS digest, registers, spills and instruction count into ``cur``, whose
    cubin has the same code (:func:`same_code`): what disassembling it would give. The
    SASS text is not stored again (blob ""), as a compact baseline keeps it."""
    if "sass" in base.stages:
        d = base.stages["sass"]
        cur.stages["sass"] = d.model_copy(update={"blob": "", "compressed_size": 0})
    cur.n_regs, cur.n_spills = base.n_regs, base.n_spills
    cur.sass_instructions = base.sass_instructions


def add_disassembly(result: CompileResult, cubin: bytes, store: BlobStore, roots: list[str]):
    """Fill ``result``'s sass stage, registers, spills and instruction count from the
    cubin (nothing without a disassembler). Thread-safe for distinct results."""
    with tempfile.TemporaryDirectory(prefix="zl-cubin-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        dis = sass_mod.disassemble(str(path))
    result.n_regs, result.n_spills = dis.n_regs, dis.n_spills
    if dis.sass is not None:
        text = norm.normalise("sass", dis.sass, roots)
        result.stages["sass"] = store.add(text)
        result.sass_instructions = norm.sass_instruction_count(text)


def record_from(
    src: Any,
    metadata: dict,
    metadata_group: dict[str, str],
    times: Any,
    cache_hit: bool,
    store: BlobStore,
    roots: list[str],
) -> tuple[CompileRecord, bytes | None]:
    """The record of one compilation (no users, no disassembly yet) and its cubin."""
    files = stage_files(metadata_group)
    request = request_from(src, metadata, files)
    result, cubin = result_from(metadata, files, times, cache_hit, store, roots)
    return CompileRecord(id=request.key(), request=request, result=result), cubin


def index_text(index: Any) -> str:
    from zlbench.models.codegen import codegen_index_text

    return codegen_index_text(index)


def write_index(cg_dir: Path, index: Any) -> None:
    from zlbench.models import CODEGEN_INDEX

    atomic_write_text(Path(cg_dir) / CODEGEN_INDEX, index_text(index))

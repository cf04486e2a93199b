"""Models of the codegen records: every Triton compilation of a measured run, what
was asked for and what came out (docs/codegen.md).

Layout of one run dir (the same under a baseline, and for a rebuild's output)::

    <run_dir>/codegen/index.json          CodegenIndex
    <run_dir>/codegen/blobs/<sha256>.gz   one normalised stage text, gzip

A blob is named by the sha256 of its *uncompressed, normalised* bytes, so equal
IR is stored once and two digests compare without opening a blob. Blobs are
gzip with mtime 0 (the same bytes always compress to the same file).

A :class:`CompileRequest` holds everything needed to rebuild a kernel without
launching it; :meth:`CompileRequest.key` is its stable id. Triton's own keys of
constexprs and specialisation attributes are tuples (argument paths), so they are
stored as lists of ``path``/value entries.

A compact baseline keeps some stages' texts in its root's content-addressed store
instead (:mod:`zlbench.models.store`); :func:`read_blob` reads both layouts.

Imports only errors and models.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, JsonValue

from zlbench.errors import ZlbenchError
from zlbench.models.base import OnDisk, _Model, atomic_write_text, load_json_model
from zlbench.models.paths import resolve_inside
from zlbench.models.store import is_store_ref, read_stored_text

CODEGEN_DIR = "codegen"
CODEGEN_INDEX = "index.json"
CODEGEN_BLOBS = "blobs"
# The stages kept, in compile order, all normalised text. "sass" is the cubin's
# disassembly (cuobjdump -sass): the cubin itself embeds line info with source
# paths, so only its disassembly compares across machines.
STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")
TEXT_STAGES = STAGES
# KernelSource.cache_key of an address-keyed kernel (plugins.compiler.capture.recorded_key):
# triton's own key of it holds a function's address, so it differs in every process
PORTABLE_KEY = "portable:"


# --------------------------------------------------------------------------- request


class Target(_Model):
    """The GPU the kernel was compiled for (triton's ``GPUTarget``)."""

    backend: str  # "cuda" | "hip"
    arch: int | str  # 90 for sm_90; "gfx942" on hip
    warp_size: int  # 32 on cuda


class KernelSource(_Model):
    """Where the ``@triton.jit`` function comes from."""

    name: str  # fn.__name__, e.g. "add_kernel"
    module: str  # fn.__module__, e.g. "flag_gems.ops.add" or a generated module
    qualname: str  # fn.__qualname__ inside that module
    # Its file, POSIX and relative to the root it was found under (the FlagGems
    # checkout, site-packages, the code-cache dir...), None when unknown.
    path: str | None = None
    # That root: "sys.path" (an entry of it), or "sys.path/<dir>" for a dir inside
    # a package that the package put on sys.path at import time (FlagGems' vendor
    # backends: "sys.path/flag_gems/runtime/backend/_nvidia"; docs/codegen.md).
    root: str | None = None
    source_sha256: str  # sha256 of the function's own source text (fn.src)
    file_sha256: str | None = None  # sha256 of the whole file (helpers included)
    # triton's JITFunction.cache_key: the source and every JIT function it calls; for an
    # address-keyed kernel PORTABLE_KEY + a key of the same without addresses (records
    # made before 2026-12-07 keep triton's, an address: docs/codegen.md).
    cache_key: str | None = None
    # The whole module text, kept for every kernel that `import module` +
    # qualname does not find again (FlagGems' pointwise_dynamic writes generated
    # modules to a code-cache dir and never registers them): rebuilt from it.
    generated_source: str | None = None
    # Generated kernels only: globals the generator injected into the module
    # (JIT functions defined elsewhere), name -> "module:qualname". On rebuild the
    # globals of each named module are merged in, then these names are bound.
    generated_globals: dict[str, str] = Field(default_factory=dict)


class ConstValue(_Model):
    """One constexpr argument value, JSON-safe.

    kind: "none" | "bool" | "int" | "float" | "str" | "dtype" (value: triton dtype
    name, e.g. "fp16") | "jit" (value: "module:qualname" of a JIT function passed as
    constexpr) | "repr" (anything else: its repr; not rebuildable).
    """

    path: list[int]  # triton's key: the argument index path, e.g. [3]
    kind: Literal["none", "bool", "int", "float", "str", "dtype", "jit", "repr"]
    value: JsonValue = None


class AttrValue(_Model):
    """Specialisation attributes of one argument, e.g. ``[["tt.divisibility", 16]]``."""

    path: list[int]
    attrs: list[list[JsonValue]]


class KernelConfig(_Model):
    """The launch config as resolved at compile time (for reports; always set)."""

    num_warps: int
    num_stages: int
    num_ctas: int = 1
    maxnreg: int | None = None


class CompileRequest(_Model):
    """Everything needed to rebuild one kernel without launching it."""

    kernel: KernelSource
    # arg name -> triton type: "*fp32", "i32", "constexpr"...; a list for a tuple arg.
    signature: dict[str, JsonValue]
    constexprs: list[ConstValue] = Field(default_factory=list)
    attrs: list[AttrValue] = Field(default_factory=list)
    config: KernelConfig
    # Options passed to triton.compile on rebuild: only those that differ from the
    # recording compiler's defaults (so a compiler whose default changed shows
    # it), JSON-safe, machine paths removed. num_warps etc. are included when
    # they differ from the default.
    options: dict[str, JsonValue] = Field(default_factory=dict)
    target: Target

    def key(self) -> str:
        """Stable id: sha256 of the request's canonical JSON (first 16 hex)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------- result


class StageDigest(_Model):
    """One stage's output: normalised bytes' sha256 and where the blob is."""

    sha256: str  # of the normalised, uncompressed bytes
    size: int  # uncompressed bytes
    compressed_size: int  # bytes of the .gz blob (0 in a compact baseline's store)
    # Path relative to the codegen dir: "blobs/<sha256>.gz"; in a compact baseline
    # "../../../store/<pack>.xz" (the pack holding the text, models.store), or "" when
    # the text is not stored (only its digest is: the screen still classifies it).
    blob: str


class CompilerIdentity(_Model):
    """Which compiler produced a result."""

    distribution: str  # "triton" | "flagtree" | ...
    version: str  # triton.__version__
    commit: str | None = None  # git commit when known


class CompileResult(_Model):
    """What came out of one compilation."""

    # Keys: STAGES; a stage is missing when it was not produced ("sass" without a
    # disassembler).
    stages: dict[str, StageDigest] = Field(default_factory=dict)
    # sha256 and size of the raw cubin (no blob). Machine-dependent: the cubin's
    # line info names source paths; compare stages["sass"] instead.
    cubin_sha256: str | None = None
    cubin_size: int | None = None
    # sha256 of the cubin without its debug and line-info sections (capture.code_sha256):
    # the same on every machine; equal code digests mean equal SASS, registers, spills.
    # None in records made before 2026-12-02 and for a cubin that is not an ELF.
    cubin_code_sha256: str | None = None
    # From the cubin (cuobjdump -res-usage: REG, LOCAL/4 as triton's driver
    # reports n_spills); None without a disassembler.
    n_regs: int | None = None
    n_spills: int | None = None
    shared: int | None = None  # bytes of shared memory (triton's metadata)
    sass_instructions: int | None = None  # SASS instructions but NOPs; None: no disassembler
    # Seconds per stage ("ir_initialization", "ttir", "ttgir", ..., "store_results").
    times: dict[str, float] = Field(default_factory=dict)
    cache_hit: bool = False  # triton's cache served it: times are not compile times
    # Environment variables that change triton's output and were set at compile time
    # (triton's get_cache_invalidating_env_vars, e.g. {"DISABLE_PTXAS_OPT": "true"}).
    env: dict[str, str] = Field(default_factory=dict)
    compiler: CompilerIdentity


class KernelUse(_Model):
    """One run (and row, when known) that launched a kernel."""

    run_name: str
    op: str
    # The row in flight when the kernel was compiled, None when none was.
    dtype: str | None = None
    shape: str | None = None
    occurrence: int = 0
    # True: launched inside the row's timed region (zlbench.plugins.state.timed_region:
    # the FlagGems side of the measurement); False: only outside it (input generation,
    # the torch reference, anything else); None: not known (records made before this).
    timed: bool | None = None


class CompileRecord(_Model):
    """One compilation: request, result (or error) and who launched it."""

    id: str  # request.key()
    request: CompileRequest
    result: CompileResult | None = None
    error: str | None = None  # "compile failed: <ExcType>: <first line>" on rebuild
    # Rebuild remarks that do not stop it, e.g. "source changed: ..." when the
    # kernel's source found at rebuild is not the recorded one.
    notes: list[str] = Field(default_factory=list)
    used_by: list[KernelUse] = Field(default_factory=list)


class CodegenIndex(OnDisk):
    """``<run_dir>/codegen/index.json``: every compilation of a run, by id.

    Also the input (results ignored) and output format of the rebuild worker.
    """

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    compiler: CompilerIdentity | None = None  # who compiled the results here
    records: list[CompileRecord] = Field(default_factory=list)
    # Kernels the run compiled or launched that have no record here (a compile the
    # recorder could not record, a kernel compiled from IR rather than a JIT function,
    # a launch of a kernel compiled before the recorder was installed); None: an index
    # of a recorder before 2026-12-02, which did not count them. The codegen screen
    # proves nothing of a run with some (docs/codegen.md).
    unrecorded: int | None = None

    def by_id(self) -> dict[str, CompileRecord]:
        return {r.id: r for r in self.records}


# --------------------------------------------------------------------------- I/O


def codegen_dir(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / CODEGEN_DIR


def load_codegen_index(run_dir: str | os.PathLike) -> CodegenIndex | None:
    """A run dir's codegen index; None when the run recorded none (older runs)."""
    path = codegen_dir(run_dir) / CODEGEN_INDEX
    if not path.exists():
        return None
    return load_json_model(path, CodegenIndex)


def codegen_index_text(index: CodegenIndex) -> str:
    """An index's file text: compact JSON, one line (a whole-inventory baseline's
    indexes were 87 MB pretty-printed; the loader reads either)."""
    return index.model_dump_json() + "\n"


def dump_codegen_index(path: str | os.PathLike, index: CodegenIndex) -> None:
    atomic_write_text(path, codegen_index_text(index))


def blob_digest(data: bytes) -> tuple[str, bytes]:
    """(sha256 of ``data``, deterministic gzip of it)."""
    return hashlib.sha256(data).hexdigest(), gzip.compress(data, compresslevel=9, mtime=0)


MAX_BLOB_BYTES = 256 * 2**20  # one stage's text; the largest recorded is a few MiB
_CHUNK = 1 << 20


def text_stored(digest: StageDigest) -> bool:
    """Whether the stage's text is stored (a compact baseline keeps only some stages'
    texts; every stage's digest)."""
    return bool(digest.blob)


def read_blob(cg_dir: str | os.PathLike, digest: StageDigest) -> bytes:
    """A stage's uncompressed bytes, decompressed in a bounded stream: never more than
    the index's recorded size (nor MAX_BLOB_BYTES), so a gzip bomb costs a chunk, not
    its whole size. A missing, corrupt (also garbled deflate data) or oversized blob
    is one ZlbenchError, and so is a text that is not stored (:func:`text_stored`). In
    a compact baseline the text is read from its store pack (``models.store``)."""
    if not text_stored(digest):
        raise ZlbenchError(f"{cg_dir}: stage text {digest.sha256[:12]} not stored (digest only)")
    if is_store_ref(digest.blob):
        if digest.size > MAX_BLOB_BYTES:
            raise ZlbenchError(f"{cg_dir}: codegen text of {digest.size} bytes recorded")
        data = read_stored_text(cg_dir, digest.blob, digest.sha256)
        if len(data) != digest.size:
            raise ZlbenchError(f"{cg_dir}: codegen text {digest.sha256[:12]}: size mismatch")
        return data
    path = resolve_inside(cg_dir, digest.blob, f"{cg_dir}: blob")
    if digest.size > MAX_BLOB_BYTES:
        raise ZlbenchError(
            f"{path}: codegen blob of {digest.size} bytes recorded, more than "
            f"{MAX_BLOB_BYTES} (not a kernel's stage text)"
        )
    chunks: list[bytes] = []
    n = 0
    try:
        with gzip.open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                n += len(chunk)
                if n > digest.size:
                    raise ZlbenchError(
                        f"{path}: codegen blob corrupt: larger than its recorded "
                        f"{digest.size} bytes"
                    )
                chunks.append(chunk)
    except FileNotFoundError:
        raise ZlbenchError(f"{path}: codegen blob missing") from None
    except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError
        raise ZlbenchError(f"{path}: codegen blob corrupt: {e}") from None
    data = b"".join(chunks)
    if hashlib.sha256(data).hexdigest() != digest.sha256:
        raise ZlbenchError(f"{path}: codegen blob corrupt: sha256 mismatch")
    return data

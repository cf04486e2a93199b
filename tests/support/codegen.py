"""Helpers for codegen tests (``from tests.support.codegen import ...``).

* :func:`record_benchpkg`: compile the benchpkg kernels (tests/benchpkg) for sm_90 on
  this CPU under the stand-in driver, plus one FlagGems-style *generated* kernel,
  in a subprocess with the codegen recorder; writes ``<dest>/codegen/``.
* :func:`patched_triton`: a "patched compiler": a symlink tree of the installed
  triton with ONE file of it replaced by an edited copy (see :data:`PATCHES`); put
  the returned dir first on PYTHONPATH (:func:`subprocess_env`).
* :func:`rebuild`: run the rebuild worker (``python -m
  zlbench.plugins.compiler.rebuild``) on an index, optionally with a patched triton.
* :func:`digests`: ``{record id: {stage: sha256}}`` of an index, for comparisons.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests.support.cache import input_key, locked_cache_dir
from zlbench.models import CODEGEN_BLOBS, CodegenIndex, KernelUse, dump_json_model, load_json_model

REPO = Path(__file__).resolve().parents[2]
BENCHPKG_SRC = REPO / "tests" / "benchpkg" / "src"
TARGET = "cuda:90"


@dataclass(frozen=True)
class Patch:
    """Replace ``old`` (must occur exactly once) by ``new`` in triton's ``file``."""

    file: str  # relative to the triton package dir
    old: str
    new: str
    stage: str  # first stage the patch changes
    kernels: frozenset[str] | None  # kernel names it changes; None: every kernel


PATCHES = {
    # A TTGIR pass removed: only kernels with tl.dot (benchpkg: mm_kernel) change.
    "no_accelerate_matmul": Patch(
        "backends/nvidia/compiler.py",
        "        passes.ttgpuir.add_accelerate_matmul(pm)\n",
        "",
        "ttgir",
        frozenset({"mm_kernel"}),
    ),
    # Hopper's software pipeliner removed (loops of loads no longer multi-buffered):
    # the TTGIR of kernels with a pipelined loop changes (benchpkg: mm_kernel only),
    # they compile and run, slower. The H200 gate's "selective" compiler change.
    "no_pipeline": Patch(
        "backends/nvidia/compiler.py",
        "            passes.ttgpuir.add_schedule_loops(pm)\n"
        "            passes.ttgpuir.add_pipeline(pm, opt.num_stages, dump_enabled)\n",
        "            passes.ttgpuir.add_schedule_loops(pm)\n",
        "ttgir",
        frozenset({"mm_kernel"}),
    ),
    # ptxas without optimisation: every kernel's SASS changes, IR and PTX do not.
    "ptxas_O0": Patch(
        "backends/nvidia/compiler.py",
        "disable_opt = ['--opt-level', '0'] if knobs.nvidia.disable_ptxas_opt else []",
        "disable_opt = ['--opt-level', '0']",
        "sass",
        None,
    ),
}

# Fails the TTGIR stage of every kernel with a tl.dot (benchpkg: mm_kernel).
NO_DOT = Patch(
    "backends/nvidia/compiler.py",
    "        # Set maxnreg on all kernels, if it was provided.\n",
    "        if 'tt.dot' in str(mod):\n            raise RuntimeError('zl patch: no dot')\n",
    "ttgir",
    frozenset({"mm_kernel"}),
)


def ptxas_O0_for(kernel: str) -> Patch:
    """ptxas without optimisation for the kernel named ``kernel`` only: its SASS changes,
    no other kernel's (a compiler change that touches one kernel)."""
    return Patch(
        "backends/nvidia/compiler.py",
        "disable_opt = ['--opt-level', '0'] if knobs.nvidia.disable_ptxas_opt else []",
        "disable_opt = ['--opt-level', '0'] if knobs.nvidia.disable_ptxas_opt "
        f"or metadata['name'] == {kernel!r} else []",
        "sass",
        frozenset({kernel}),
    )


def triton_dir() -> Path:
    spec = importlib.util.find_spec("triton")
    assert spec is not None and spec.submodule_search_locations, "triton is not installed"
    return Path(list(spec.submodule_search_locations)[0])


def _link_tree(src: Path, dst: Path, rel: Path, text: str) -> None:
    """dst mirrors src with symlinks, except the file ``rel`` (written with ``text``)
    and the real dirs on its way; no __pycache__ there, so nothing is written to src."""
    dst.mkdir(parents=True)
    head = rel.parts[0]
    for entry in src.iterdir():
        if entry.name == head and len(rel.parts) == 1:
            (dst / entry.name).write_text(text, encoding="utf-8")
        elif entry.name == head:
            _link_tree(entry, dst / entry.name, Path(*rel.parts[1:]), text)
        elif entry.name != "__pycache__":
            (dst / entry.name).symlink_to(entry)


def patched_triton(dest: Path, patch: str | Patch) -> Path:
    """Build a patched copy of the installed triton under ``dest``; returns the dir to
    put first on PYTHONPATH."""
    p = PATCHES[patch] if isinstance(patch, str) else patch
    original = (triton_dir() / p.file).read_text(encoding="utf-8")
    if original.count(p.old) != 1:
        raise AssertionError(f"patch text found {original.count(p.old)} times in {p.file}")
    _link_tree(triton_dir(), dest / "triton", Path(p.file), original.replace(p.old, p.new))
    return dest


def subprocess_env(tmp: Path, *front: Path, src: Path = BENCHPKG_SRC) -> dict[str, str]:
    """Environment for a compile subprocess: ``front`` dirs first on PYTHONPATH, then
    the benchpkg sources (``src``) and this repo; own triton/FlagGems caches; no
    interpreter."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "GEMS_VENDOR")}
    paths = [*map(str, front), str(src), str(REPO)]
    if os.environ.get("PYTHONPATH"):  # what this process runs on (a GPU host's wheels) last
        paths.append(os.environ["PYTHONPATH"])
    env.update(
        PYTHONPATH=os.pathsep.join(paths),
        TRITON_CACHE_DIR=str(tmp / "triton-cache"),
        FLAGGEMS_CACHE_DIR=str(tmp / "flaggems-cache"),
        PYTHONHASHSEED="0",
    )
    return env


# A helper module with a JIT "scalar function", and a generator that writes a kernel
# module calling it without importing it (as FlagGems' pointwise_dynamic does).
SCALAR_MODULE = """
import triton


@triton.jit
def twice(x):
    return x * 2
"""

GENERATED = """
import triton
import triton.language as tl


@triton.jit
def gen_twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, twice(x), mask=offs < n)
"""

RECORD_SCRIPT = textwrap.dedent("""
    import importlib.util, sys
    from pathlib import Path
    import torch
    from zlbench.plugins import codegen
    from zlbench.plugins.compiler import standin

    out, gen_dir = Path(sys.argv[1]), Path(sys.argv[2])
    recorder = codegen.Recorder(sass={sass})
    standin.activate("{target}", launch="skip")
    codegen.install(recorder)
    import flag_gems.ops as ops
    from flaggems_vllm.ops import scale
    import zl_scalar

    x = torch.randn(64, 128)
    ops.add(x, x)
    ops.softmax(x)
    ops.sum(x)
    ops.mm(torch.randn(32, 64), torch.randn(64, 32))
    scale(x, 2.0)
    path = gen_dir / "gen_twice.py"
    spec = importlib.util.spec_from_file_location("_gen_module_twice", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.__dict__.update(zl_scalar.__dict__)
    mod.gen_twice_kernel[(1,)](x, x, x.numel(), BLOCK=128)
    recorder.write("", out)
""")


def record_benchpkg(dest: Path, target: str = TARGET, sass: bool = True) -> Path:
    """Compile the benchpkg kernels + one generated kernel with the recorder; returns
    the codegen dir (``dest/codegen``). Helper modules go to ``dest/helpers``.
    ``sass=False``: the recorder of ``--zl-codegen-no-sass`` (no disassembly).

    The recording (a triton compile of every kernel: tens of seconds) is made once per
    test run and copied (tests.support.cache: shared by the xdist workers, keyed by the
    script, the target and the benchpkg sources)."""
    key = input_key(RECORD_SCRIPT, SCALAR_MODULE, GENERATED, target, str(sass), _src_digest())
    cached = locked_cache_dir("record-benchpkg", key, lambda d: _record(d, target, sass))
    if cached is None:
        return _record(dest, target, sass)
    for sub in ("helpers", "gencache", "codegen"):
        shutil.copytree(cached / sub, dest / sub, symlinks=True)
    return dest / "codegen"


def _src_digest() -> str:
    """The benchpkg sources' contents, as one hash."""
    files = sorted(
        p for p in BENCHPKG_SRC.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    return input_key(*(f"{p.relative_to(BENCHPKG_SRC)}\0".encode() + p.read_bytes() for p in files))


def _record(dest: Path, target: str, sass: bool) -> Path:
    helpers, gen_dir = dest / "helpers", dest / "gencache"
    helpers.mkdir(parents=True)
    gen_dir.mkdir(parents=True)
    (helpers / "zl_scalar.py").write_text(SCALAR_MODULE, encoding="utf-8")
    (gen_dir / "gen_twice.py").write_text(GENERATED, encoding="utf-8")
    script = RECORD_SCRIPT.format(target=target, sass=sass)
    out = dest / "codegen"
    run_script(script, [str(out), str(gen_dir)], subprocess_env(dest, helpers))
    return out


def run_script(script: str, args: list[str], env: dict[str, str]) -> None:
    """Run ``python -c script *args`` under ``env``; it must succeed."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def rebuild(
    index: Path,
    out: Path,
    tmp: Path,
    site: Path | None = None,
    *extra: str,
    src: Path = BENCHPKG_SRC,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run the rebuild worker on ``index`` (``dest/codegen/index.json`` of
    :func:`record_benchpkg`: its ``dest/helpers`` go on the path), with the patched
    triton at ``site`` first when given, the benchpkg sources from ``src`` and ``env``
    added to its environment."""
    front = [p for p in (site, index.parents[1] / "helpers") if p is not None]
    worker = [sys.executable, "-m", "zlbench.plugins.compiler.rebuild"]
    # the records are the test's own: their generated kernel's source may run
    cmd = [*worker, "--exec-generated", str(index), str(out), *extra]
    return subprocess.run(
        cmd,
        env={**subprocess_env(tmp, *front, src=src), **(env or {})},
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def load_index(cg_dir: Path) -> CodegenIndex:
    return load_json_model(cg_dir / "index.json", CodegenIndex)


def write_op_codegen(recorded: Path, root: Path, ops: dict[str, str], shape: str) -> None:
    """``root/main/<op>/codegen/`` for each op of ``ops`` (op -> kernel name): the
    benchpkg records of its kernel (``recorded``, :func:`record_benchpkg`), used by its
    one bfloat16 row ``shape``, and their blobs; a baseline's codegen records."""
    index = load_index(recorded / "codegen")
    for op, name in ops.items():
        cg = root / "main" / op / "codegen"
        shutil.copytree(recorded / "codegen" / CODEGEN_BLOBS, cg / CODEGEN_BLOBS)
        use = KernelUse(run_name=op, op=op, dtype="bfloat16", shape=shape)
        recs = [
            r.model_copy(update={"used_by": [use]})
            for r in index.records
            if r.request.kernel.name == name
        ]
        assert recs, name
        dump_json_model(cg / "index.json", CodegenIndex(compiler=index.compiler, records=recs))


def digests(index: CodegenIndex) -> dict[str, dict[str, str]]:
    return {
        r.id: {s: d.sha256 for s, d in r.result.stages.items()} if r.result else {}
        for r in index.records
    }

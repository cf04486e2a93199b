"""What a run was measured on (``RunResult.environment``).

Why: a speedup is only comparable with a baseline measured on the same GPU
model, FlagGems commit and timing mode, and the compiler under test is
whichever distribution provides ``import triton`` (``flagtree`` on a runner,
``triton`` in CPU CI). Everything is read from the running process; what
cannot be found stays None, never guessed. No nvidia-smi (it can hang).

Two builds of one compiler often share a version string (every FlagTree build of
the 3.6 line says ``3.6.0``) and record no commit, so the directory ``triton`` is
imported from (``compiler_path``) and a fingerprint of that build
(``compiler_build``, :func:`compiler_build`) are recorded beside them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import importlib.util
import json
import os
import platform
import re
import socket
import struct
import sys
from pathlib import Path
from types import ModuleType

from zlbench.gitinfo import git_state
from zlbench.models import Environment, Timing
from zlbench.models.run import arch_text
from zlbench.protocol.turn import GPU_SHARE_VAR

_DRIVER_FILE = Path("/proc/driver/nvidia/version")
_DRIVER_RE = re.compile(r"Kernel Module[^\n]*?\s(\d+\.\d+(?:\.\d+)?)(?:\s|$)")


def triton_distribution() -> tuple[str | None, str | None, str | None]:
    """(distribution, version, vcs commit) of the package that provides ``triton``."""
    try:
        dists = md.packages_distributions().get("triton", [])
    except Exception:  # noqa: BLE001 - broken metadata must not stop a run
        dists = []
    if not dists:
        return None, None, None
    dist = "flagtree" if "flagtree" in dists else dists[0]
    try:
        version = md.version(dist)
    except md.PackageNotFoundError:
        version = None
    return dist, version, _vcs_commit(dist)


def _vcs_commit(dist: str) -> str | None:
    try:
        text = md.distribution(dist).read_text("direct_url.json")
        return json.loads(text).get("vcs_info", {}).get("commit_id") if text else None
    except Exception:  # noqa: BLE001
        return None


# What the build fingerprint covers, relative to the triton package dir: the NVIDIA
# backend's compiler driver by content, and the native library by name, size and
# ELF build id (a hash the linker writes over the linked bytes; reading it costs a
# few KB, hashing the ~400 MB library would cost a second per benchmark process).
BUILD_SOURCES = ("backends/nvidia/compiler.py",)
BUILD_LIBS = "_C/libtriton*.so*"
BUILD_DIGITS = 16
_PT_NOTE, _NT_GNU_BUILD_ID = 4, 3
_NOTE_MAX = 1 << 16  # bytes of one note segment read at most


def compiler_path() -> Path | None:
    """The directory ``import triton`` loads from (None: not importable). Does not
    import triton when this process has not."""
    mod = sys.modules.get("triton")
    where = getattr(mod, "__file__", None) if mod is not None else None
    if where is None:
        try:
            spec = importlib.util.find_spec("triton")
        except (ImportError, ValueError):  # ValueError: a module without __spec__
            spec = None
        where = spec.origin if spec is not None else None
    if not where or where in ("built-in", "frozen"):
        return None
    # absolute, symlinks kept: a triton copy made of links to another install (a
    # patched backend file among them) is that copy, not the install it links to
    return Path(os.path.abspath(where)).parent


def elf_build_id(path: Path) -> str | None:
    """The GNU build id (hex) of an ELF file, from its PT_NOTE segments; None when the
    file is no ELF or carries none."""
    try:
        with path.open("rb") as f:
            ident = f.read(16)
            if len(ident) < 16 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2):
                return None
            end = "<" if ident[5] == 1 else ">"
            if ident[4] == 2:  # ELF64: e_phoff at 32, e_phentsize/e_phnum at 54/56
                head, ph_fmt = f.read(48), "I4xQ16xQ8xQ"  # type, offset, filesz, align
                phoff, (phentsize, phnum) = (
                    struct.unpack_from(end + "Q", head, 16)[0],
                    struct.unpack_from(end + "HH", head, 38),
                )
            else:  # ELF32: e_phoff at 28, e_phentsize/e_phnum at 42/44
                head, ph_fmt = f.read(36), "II8xI8xI"
                phoff, (phentsize, phnum) = (
                    struct.unpack_from(end + "I", head, 12)[0],
                    struct.unpack_from(end + "HH", head, 26),
                )
            size = struct.calcsize(end + ph_fmt)
            for i in range(min(phnum, 256)):
                f.seek(phoff + i * phentsize)
                raw = f.read(size)
                if len(raw) < size:
                    return None
                p_type, offset, filesz, align = struct.unpack(end + ph_fmt, raw)
                if p_type != _PT_NOTE:
                    continue
                f.seek(offset)
                found = _build_id_note(f.read(min(filesz, _NOTE_MAX)), end, 8 if align == 8 else 4)
                if found:
                    return found
    except (OSError, struct.error):
        return None
    return None


def _build_id_note(data: bytes, end: str, align: int) -> str | None:
    pos = 0
    while pos + 12 <= len(data):
        namesz, descsz, kind = struct.unpack_from(end + "III", data, pos)
        name_at = pos + 12
        desc_at = name_at + -(-namesz // align) * align
        if kind == _NT_GNU_BUILD_ID and data[name_at : name_at + namesz] == b"GNU\0":
            desc = data[desc_at : desc_at + descsz]
            return desc.hex() if len(desc) == descsz and desc else None
        pos = desc_at + -(-descsz // align) * align
    return None


def compiler_build(root: Path | None) -> str | None:
    """A short, deterministic fingerprint of the triton build in ``root``: the first
    BUILD_DIGITS hex digits of a sha256 over each BUILD_SOURCES file's path and
    sha256, and each BUILD_LIBS library's path, size and ELF build id. None when
    none of them exists. Cheap: no file over a few KB is read whole but the sources."""
    if root is None:
        return None
    h, found = hashlib.sha256(), False
    for rel in BUILD_SOURCES:
        try:
            digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
        except OSError:
            continue
        h.update(f"{rel}\0{digest}\n".encode())
        found = True
    for lib in sorted(root.glob(BUILD_LIBS)):
        try:
            if not lib.is_file():
                continue
            size = lib.stat().st_size
        except OSError:
            continue
        rel = lib.relative_to(root).as_posix()
        h.update(f"{rel}\0{size}\0{elf_build_id(lib) or ''}\n".encode())
        found = True
    return h.hexdigest()[:BUILD_DIGITS] if found else None


def dist_version(import_name: str, module: ModuleType | None = None) -> str | None:
    try:
        dists = md.packages_distributions().get(import_name, [])
    except Exception:  # noqa: BLE001
        dists = []
    for dist in [*dists, import_name, import_name.replace("_", "-")]:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return getattr(module, "__version__", None) if module is not None else None


def nvidia_driver(text: str | None = None) -> str | None:
    """Driver version from ``/proc/driver/nvidia/version``, e.g. "... Kernel Module  580.159 ..."
    or "... Open Kernel Module for x86_64  580.159.03  Release Build ..."."""
    if text is None:
        try:
            text = _DRIVER_FILE.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    m = _DRIVER_RE.search(text)
    return m.group(1) if m else None


def _gpu() -> tuple[str | None, int | None, str | None, str | None]:
    try:
        import torch
    except ImportError:
        return None, None, None, None
    cuda = getattr(torch.version, "cuda", None)
    if not torch.cuda.is_available():
        return None, 0, None, cuda
    return torch.cuda.get_device_name(0), torch.cuda.device_count(), nvidia_driver(), cuda


def gpu_arch() -> str | None:
    """This process's GPU 0 architecture: "sm_90" from torch's compute capability
    (:func:`zlbench.models.run.arch_text`), the gfx name on hip ("gfx942"); None
    without a GPU or when torch cannot tell."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        if getattr(torch.version, "hip", None):
            name = getattr(torch.cuda.get_device_properties(0), "gcnArchName", "") or ""
            return name.split(":")[0] or None
        major, minor = torch.cuda.get_device_capability(0)
        return arch_text((int(major), int(minor)))
    except Exception:  # noqa: BLE001  (a broken driver: not recorded, never guessed)
        return None


def _torch_version() -> str | None:
    mod = sys.modules.get("torch")
    return getattr(mod, "__version__", None) if mod is not None else None


def probe(
    flaggems: ModuleType | None,
    mode: str | None,
    level: str | None,
    timing: Timing | None = None,
) -> Environment:
    """The environment of this process; ``flaggems`` is the package the tests imported;
    ``timing``: how it times (:func:`zlbench.plugins.timing.configured_timing`)."""
    gpu_model, gpu_count, driver, cuda = _gpu()
    dist, version, commit = triton_distribution()
    where = compiler_path()
    env = Environment(
        gpu_model=gpu_model,
        gpu_arch=gpu_arch() if gpu_model is not None else None,
        gpu_count=gpu_count,
        driver=driver,
        cuda=cuda,
        torch=_torch_version(),
        triton_dist=dist,
        triton_version=version,
        flagtree_commit=commit if dist == "flagtree" else None,
        compiler_path=str(where) if where is not None else None,
        compiler_build=compiler_build(where),
        python=platform.python_version(),
        hostname=socket.gethostname(),
        mode=mode,
        level=level,
        zlbench_version=dist_version("zlbench"),
        # ZLBENCH_COMMIT names the snapshot that runs; it wins over a checkout's git state,
        # which a copied tree can carry stale (the H200 runs of 2026-12-01 recorded b722cbb
        # for three later snapshots, docs/measurements.md "tenth session")
        zlbench_commit=os.environ.get("ZLBENCH_COMMIT") or git_state(Path(__file__).parent)[0],
        use_flagtune=os.environ.get("USE_FLAGTUNE"),
        gpu_share=_gpu_share(),
        timing=timing,
    )
    if flaggems is not None:
        name = flaggems.__name__.split(".")[0]
        env.flaggems_package = name
        env.flaggems_version = dist_version(name, flaggems)
        where = getattr(flaggems, "__file__", None)
        if where:
            env.flaggems_commit, env.flaggems_dirty = git_state(Path(where).parent)
    return env


def _gpu_share() -> int:
    """Benchmark processes sharing this GPU (``$ZLBENCH_GPU_SHARE``; 1 when unset or bad)."""
    try:
        return max(1, int(os.environ.get(GPU_SHARE_VAR, "1")))
    except ValueError:
        return 1

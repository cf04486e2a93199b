"""What a run was measured on (``RunResult.environment``).

Why: a speedup is only comparable with a baseline measured on the same GPU
model, FlagGems commit and timing mode, and the compiler under test is
whichever distribution provides ``import triton`` (``flagtree`` on a runner,
``triton`` in CPU CI). Everything is read from the running process; what
cannot be found stays None, never guessed. No nvidia-smi (it can hang).
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import platform
import re
import socket
import sys
from pathlib import Path
from types import ModuleType

from zlbench.gitinfo import git_state
from zlbench.models import Environment
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


def _torch_version() -> str | None:
    mod = sys.modules.get("torch")
    return getattr(mod, "__version__", None) if mod is not None else None


def probe(flaggems: ModuleType | None, mode: str | None, level: str | None) -> Environment:
    """The environment of this process; ``flaggems`` is the package the tests imported."""
    gpu_model, gpu_count, driver, cuda = _gpu()
    dist, version, commit = triton_distribution()
    env = Environment(
        gpu_model=gpu_model,
        gpu_count=gpu_count,
        driver=driver,
        cuda=cuda,
        torch=_torch_version(),
        triton_dist=dist,
        triton_version=version,
        flagtree_commit=commit if dist == "flagtree" else None,
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

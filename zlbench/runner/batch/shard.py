"""Shards and GPU assignment: pure, stable functions of an op set.

An op is identified by its key ``"<repo>/<run_name>"``. Both functions order the
ops by a stable hash (sha256 of the key; never Python's salted ``hash()``), so the
result depends only on the set of ops and N: not on input order, not on the
process, not on the machine. Dealing the sorted ops round-robin keeps shard sizes
within one of each other.

``--shard K/N`` is 1-based: ``1/3``, ``2/3``, ``3/3`` cover everything once.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence

from zlbench.errors import ZlbenchError

_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def stable_hash(text: str, salt: str = "") -> int:
    """64-bit hash of ``salt + text``, identical in every process and on every host."""
    digest = hashlib.sha256(f"{salt}{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _hash_order(ops: Iterable[str], salt: str) -> list[str]:
    return sorted(set(ops), key=lambda op: (stable_hash(op, salt), op))


def parse_shard(spec: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with 1 <= K <= N; anything else is a ZlbenchError."""
    m = _SHARD_RE.match(spec or "")
    if not m:
        raise ZlbenchError(f"bad shard spec {spec!r}: expected K/N, e.g. 1/3 (K counts from 1)")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1:
        raise ZlbenchError(f"bad shard spec {spec!r}: N must be at least 1")
    if not 1 <= k <= n:
        raise ZlbenchError(f"bad shard spec {spec!r}: K must be between 1 and {n} (1-based)")
    return k, n


def shard(ops: Iterable[str], k: int, n: int) -> list[str]:
    """The ops of shard ``k`` of ``n`` (1-based), in hash order.

    Every op lands in exactly one of the n shards; sizes differ by at most one."""
    if n < 1 or not 1 <= k <= n:
        raise ZlbenchError(f"bad shard {k}/{n}: K must be between 1 and N (K counts from 1)")
    ordered = _hash_order(ops, "shard:")
    return ordered[k - 1 :: n]


def assign_gpus(ops: Iterable[str], gpus: Sequence[str]) -> dict[str, list[str]]:
    """Deal ops over the GPU list by stable hash: ``{gpu: [ops]}`` (every gpu listed)."""
    if not gpus:
        raise ZlbenchError("no GPU to run on (empty GPU list)")
    if len(set(gpus)) != len(gpus):
        raise ZlbenchError(f"GPU list has duplicates: {','.join(gpus)}")
    ordered = _hash_order(ops, "gpu:")
    return {gpu: ordered[i :: len(gpus)] for i, gpu in enumerate(gpus)}


def parse_gpu_list(text: str) -> list[str]:
    """``"0,1"`` -> ``["0", "1"]``; ids may also be GPU UUIDs or MIG ids."""
    gpus = [g.strip() for g in text.split(",") if g.strip()]
    if not gpus:
        raise ZlbenchError(f"bad GPU list {text!r}: expected e.g. 0,1")
    return gpus


def count_visible_gpus() -> int:
    """Number of GPUs nvidia-smi lists (0 when it is absent or fails)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def gpu_model(gpu: str, timeout_s: float = 10.0) -> str | None:
    """The model name nvidia-smi gives GPU ``gpu`` (an index or UUID as the batch deals
    them), None when it cannot say (no GPU named, no nvidia-smi, a failure or a hang)."""
    exe = shutil.which("nvidia-smi")
    if not exe or not gpu:
        return None
    argv = [exe, "--query-gpu=name", "--format=csv,noheader", "-i", gpu]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [x.strip() for x in out.stdout.splitlines() if x.strip()]
    return lines[0] if out.returncode == 0 and lines else None


def default_gpus(cuda_visible_devices: str | None, visible_count: int | None = None) -> list[str]:
    """The GPU list when ``--gpus`` is not given.

    CUDA_VISIBLE_DEVICES when set (its ids are passed on to the workers unchanged);
    else every GPU nvidia-smi lists; else ``[""]``: one worker that leaves
    CUDA_VISIBLE_DEVICES alone (CPU / interpreter runs)."""
    if cuda_visible_devices is not None and cuda_visible_devices.strip():
        return parse_gpu_list(cuda_visible_devices)
    if cuda_visible_devices is not None:  # set but empty: no GPU visible
        return [""]
    count = count_visible_gpus() if visible_count is None else visible_count
    return [str(i) for i in range(count)] or [""]

"""SASS and resource usage of a cubin, through the disassembler triton bundles.

``cuobjdump -sass`` gives the instruction listing (the ``sass`` stage) and
``cuobjdump -res-usage`` the registers and local memory per function; both run
on a machine without a GPU. Without cuobjdump (not an NVIDIA build, or a
stripped wheel) every answer is None.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass

_RES = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


@dataclass
class Disassembly:
    sass: str | None = None
    n_regs: int | None = None
    n_spills: int | None = None


@functools.lru_cache(maxsize=1)
def cuobjdump() -> str | None:
    """Path of the cuobjdump triton uses (TRITON_CUOBJDUMP_PATH or bundled), or None."""
    try:
        from triton import knobs

        path = knobs.nvidia.cuobjdump.path
    except Exception:  # noqa: BLE001 - no NVIDIA backend: no disassembler
        return None
    return path if path and os.access(path, os.X_OK) else None


def _run(args: list[str]) -> str | None:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def parse_res_usage(text: str) -> tuple[int | None, int | None]:
    """(registers, spills as triton reports them: LOCAL bytes / 4) of the first function."""
    m = _RES.search(text)
    if not m:
        return None, None
    return int(m.group(1)), int(m.group(4)) // 4


def disassemble(cubin_path: str) -> Disassembly:
    tool = cuobjdump()
    if tool is None:
        return Disassembly()
    sass = _run([tool, "-sass", cubin_path])
    usage = _run([tool, "-res-usage", cubin_path])
    regs, spills = parse_res_usage(usage) if usage else (None, None)
    return Disassembly(sass=sass, n_regs=regs, n_spills=spills)

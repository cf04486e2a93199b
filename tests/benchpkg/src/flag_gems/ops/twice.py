"""twice: a LibTuner kernel behind a LibEntry (upstream's ``@libentry() @libtuner(...)``):
two ops launching it with the same arguments share the LibEntry's launch cache when
they run in one process."""

import torch
import triton
import triton.language as tl
from fakegems_support import default_do_bench, slowdown

from flag_gems.utils.libentry import libentry, libtuner

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=1, num_stages=1) for b in (16, 32, 64)]


@libentry()
@libtuner(configs=CONFIGS, key=["n"], do_bench=default_do_bench())
@triton.jit
def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def twice(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    for _ in range(slowdown()):
        twice_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out

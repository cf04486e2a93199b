"""scale: ``x * alpha`` tuned by flaggems_vllm's own LibTuner."""

import torch
import triton
import triton.language as tl
from fakegems_support import default_do_bench, slowdown

from flaggems_vllm.utils.libentry import libtuner

CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=1), triton.Config({"BLOCK": 128}, num_warps=2)]


@libtuner(configs=CONFIGS, key=["n"], do_bench=default_do_bench())
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n).to(tl.float32)
    tl.store(out_ptr + offs, (x * alpha).to(out_ptr.dtype.element_ty), mask=offs < n)


def scale(x: torch.Tensor, alpha: float = 2.0) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    for _ in range(slowdown()):
        scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, alpha)
    return out

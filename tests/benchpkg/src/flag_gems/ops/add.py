"""add: a single-config autotuned kernel (the tuner never benchmarks, docs/design.md §5.3)."""

import torch
import triton
import triton.language as tl
from fakegems_support import default_do_bench, slowdown


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}, num_warps=4)], key=["n"], do_bench=default_do_bench()
)
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x + alpha * y).to(out_ptr.dtype.element_ty), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    x, y = torch.broadcast_tensors(x, y)
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    for _ in range(slowdown()):
        add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, alpha)
    return out

"""softmax over the last dim: a multi-config ``triton.autotune`` (explicit do_bench
under the interpreter). BLOCK_N is capped by a static_assert, so a record that
names a larger BLOCK_N fails to "compile" on replay (eviction test)."""

import torch
import triton
import triton.language as tl
from fakegems_support import default_do_bench, slowdown

CONFIGS = [
    triton.Config({"BLOCK_N": 32}, num_warps=1),
    triton.Config({"BLOCK_N": 64}, num_warps=2),
    triton.Config({"BLOCK_N": 128}, num_warps=4),
]


@triton.autotune(configs=CONFIGS, key=["N"], do_bench=default_do_bench())
@triton.jit
def softmax_kernel(x_ptr, out_ptr, N: tl.constexpr, BLOCK_N: tl.constexpr):
    tl.static_assert(BLOCK_N <= 1024, "BLOCK_N too large")
    row = tl.program_id(0)
    base = row * N
    m = tl.full((BLOCK_N,), float("-inf"), tl.float32)
    for start in range(0, N, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + base + offs, mask=offs < N, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, 0)
    s = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, N, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + base + offs, mask=offs < N, other=float("-inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    denom = tl.sum(s, 0)
    for start in range(0, N, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + base + offs, mask=offs < N, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / denom
        tl.store(out_ptr + base + offs, y.to(out_ptr.dtype.element_ty), mask=offs < N)


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    if dim not in (-1, x.ndim - 1):
        return softmax(x.transpose(dim, -1), -1).transpose(dim, -1)
    x = x.contiguous()
    n = x.shape[-1]
    rows = x.numel() // max(n, 1)
    out = torch.empty_like(x)
    for _ in range(slowdown()):
        softmax_kernel[(rows,)](x, out, n)
    return out

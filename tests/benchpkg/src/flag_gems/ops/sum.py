"""sum of all elements: autotune configs that carry a ``pre_hook`` (it zeroes the
atomic accumulator), the case docs/design.md §5.4 drops from records for a plain
Autotuner."""

import torch
import triton
import triton.language as tl
from fakegems_support import default_do_bench, slowdown


def zero_accumulator(nargs):
    nargs["acc_ptr"].zero_()


CONFIGS = [
    triton.Config({"BLOCK": 128}, num_warps=2, pre_hook=zero_accumulator),
    triton.Config({"BLOCK": 256}, num_warps=4, pre_hook=zero_accumulator),
]


@triton.autotune(configs=CONFIGS, key=["n"], do_bench=default_do_bench())
@triton.jit
def sum_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.atomic_add(acc_ptr, tl.sum(x, 0))


def sum(x: torch.Tensor, dim=None, keepdim: bool = False, dtype=None) -> torch.Tensor:
    if dim is not None:
        return torch.sum(x, dim=dim, keepdim=keepdim, dtype=dtype)
    x = x.contiguous()
    n = x.numel()
    acc = torch.zeros(1, dtype=torch.float32, device=x.device)
    for _ in range(slowdown()):
        sum_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, acc, n)
    return acc[0].to(dtype or x.dtype)

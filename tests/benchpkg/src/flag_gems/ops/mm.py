"""mm: tuned by the sqlite-backed ``LibTuner`` (docs/design.md §5.1: a warm DB must
still be recorded and replayed). BLOCK_K is capped by a static_assert, so a
record naming BLOCK_K=128 fails to "compile" on replay; the sqlite cache cannot
evict it (``_no_evict``)."""

import torch
import triton
import triton.language as tl
from fakegems_support import default_do_bench, slowdown

from flag_gems.utils.libentry import libtuner

CONFIGS = [
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}, num_warps=1, num_stages=2),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}, num_warps=2, num_stages=3),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32}, num_warps=4, num_stages=3),
]


@libtuner(configs=CONFIGS, key=["M", "N", "K"], do_bench=default_do_bench())
@triton.jit
def mm_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    tl.static_assert(BLOCK_K <= 64, "BLOCK_K too large")
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a_mask = (rm[:, None] < M) & ((k + rk)[None, :] < K)
        b_mask = ((k + rk)[:, None] < K) & (rn[None, :] < N)
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=a_mask, other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=b_mask, other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32))
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a, b = a.contiguous(), b.contiguous()
    (M, K), (_, N) = a.shape, b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))

    for _ in range(slowdown()):
        mm_kernel[grid](a, b, c, M, N, K)
    return c

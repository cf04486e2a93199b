"""A captured launch's arguments, rebuilt on a device (issue 51, ``LaunchSpec``).

:func:`materialize` turns a :class:`zlbench.models.replay.LaunchSpec` into the launch's
arguments in parameter order (:func:`materialize_row`: each of a row's launches', one
allocation per buffer number across them all, so a buffer one launch writes and the
next reads is one storage, as in the op):

* Scalars by value (``int``, ``float``, ``bool``, ``None``, ``str``); a ``dtype``
  argument as the triton dtype its string names (``"fp32"`` -> ``tl.float32``; the
  string itself where triton is not importable). A ``kind "other"`` argument, or a
  launch with a ``why_not``, is a :class:`ReplayError`.
* Tensors as views of one flat allocation per ``buffer``: every tensor argument with
  the same ``buffer`` number shares one storage, big enough for each view's
  ``storage`` (in its own dtype's elements, so views of one buffer in two dtypes share
  bytes, as they did), and each argument is ``torch.as_strided(flat, shape, strides,
  offset)``. In-place kernels and aliasing survive the replay. The allocation is
  zeroed first (bytes no view covers are deterministic).
* A host tensor descriptor (``tensordesc``) as triton's ``TensorDescriptor`` over its
  base, the base rebuilt as a tensor argument is (:func:`descriptor`); one that triton
  refuses (a rank, a block shape, an alignment) is a :class:`ReplayError`. The launcher
  turns it into the TMA descriptor at each launch, as in the op.

Tensor values:

* Exact ``data`` is written into the viewed elements. Order: **the distinct storage
  positions the view addresses, in increasing storage order** (:func:`viewed_positions`;
  for a contiguous tensor that is its row-major order; a broadcast stride 0 element
  once). Its ``digest`` is checked first: sha256[:16] of the values' bytes in the
  tensor's dtype, in that order (:func:`values_digest`; the capture computes it with
  the same function). A mismatch, missing digest or wrong length is a ReplayError.
* A stats-only tensor gets deterministic stand-in values over the span of storage its
  view reaches (``offset`` .. the last addressed element): drawn on the tensor's own
  device (a host generator cost 0.4 s for one 4096x4096 tensor on the 2-core CI
  machine, a row's whole budget) from a generator of that device seeded by ``seed``,
  the buffer and the argument's index (the same values on every run on one device
  type and torch; both sides of a row share them), ``normal(mean, std)``
  clamped to ``[min, max]``, rounded when ``integral``, bool tensors Bernoulli(mean),
  then cast to the dtype. **Nonfinite values are not re-injected**: the capture keeps
  only their count, not where they were; a nan/inf written at a guessed place would
  propagate through reductions and blind the PR-vs-base output comparison, while a
  GPU's speed does not depend on them. A tensor whose statistics are themselves not
  finite (all of it nan or inf) is filled with its one value (nan, or ``min`` when
  ``min == max``). Stats fills are written before exact data, so where two views of a
  buffer overlap the exact values win.
* A tensor with neither (a launch past a capture's first 64 distinct launches, on a
  buffer an earlier launch of the row valued: ``models.replay.unvalued``) is not
  filled: its buffer holds the earlier launches' values, and the launches before it in
  the call leave there what they wrote.

Refused (:class:`ReplayError`, one line): strides that address outside the recorded
storage (or negative strides), a dtype torch does not know, a tensor with neither
data nor statistics whose buffer no earlier launch of the row values, and **an
alignment other than the capture's**: triton specialises a pointer argument on 16-byte
alignment, so a replay whose pointer is aligned differently from ``align16`` would
compile and time another binary.

:func:`snapshot` / :func:`restore` copy each distinct storage of the arguments once and
copy it back in place (storage-wise, so aliasing is respected): every repetition of a
replay sees the same inputs, whatever an in-place kernel, an atomic or an output write
did to them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

from zlbench.errors import ZlbenchError
from zlbench.models.replay import TENSOR_KINDS, ArgSpec, LaunchSpec, unvalued

ALIGN = 16  # bytes: triton's pointer specialisation (tt.divisibility = 16)
DRAW_CHUNK = 1 << 22  # stand-in values drawn per chunk (float64, on the tensor's device)


class ReplayError(ZlbenchError):
    """A row cannot be replayed (one line): it falls back to the op path or fails."""


def _torch() -> Any:
    import torch

    return torch


def torch_dtype(name: str) -> Any:
    """The torch dtype ``name`` names (``"bfloat16"``, ``"torch.int64"``)."""
    torch = _torch()
    dt = getattr(torch, name.removeprefix("torch."), None) if name else None
    if not isinstance(dt, torch.dtype):
        raise ReplayError(f"unknown tensor dtype {name!r}")
    return dt


def extent(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Elements from a view's first addressed element to its last, inclusive (0 for an
    empty view)."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))


def viewed_positions(shape: Sequence[int], strides: Sequence[int], offset: int) -> Any:
    """The distinct storage positions (elements) a view addresses, increasing: the
    order of an exact tensor's ``data`` (int64 tensor on the host)."""
    torch = _torch()
    idx = torch.full((), offset, dtype=torch.int64)
    for n, s in zip(shape, strides, strict=True):
        idx = idx.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * s
    return torch.unique(idx.reshape(-1), sorted=True)


def values_digest(values: Any) -> str:
    """sha256[:16] of a tensor's values' bytes in its dtype, in its row-major order
    (the capture's ``digest`` of exact ``data``)."""
    torch = _torch()
    t = values.detach().reshape(-1).contiguous().cpu()
    raw = t.view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
    return hashlib.sha256(raw.numpy().tobytes()).hexdigest()[:16]


def _check_view(i: int, a: ArgSpec) -> int:
    """The view's extent, once its geometry is within its recorded storage."""
    where = f"argument {i} {a.name!r}".replace(" ''", "")
    if len(a.shape) != len(a.strides):
        raise ReplayError(f"{where}: shape {a.shape} and strides {a.strides} differ in rank")
    if any(n < 0 for n in a.shape) or any(s < 0 for s in a.strides):
        raise ReplayError(f"{where}: negative size or stride ({a.shape}, {a.strides})")
    span = extent(a.shape, a.strides)
    if span and a.offset + span > a.storage:
        raise ReplayError(
            f"{where}: strides {a.strides} of shape {a.shape} at offset {a.offset} address "
            f"element {a.offset + span - 1}, outside its storage of {a.storage}"
        )
    return span


def _seed(seed: int, buffer: int, index: int) -> int:
    h = hashlib.sha256(f"{seed}|{buffer}|{index}".encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


def _fill_stats(flat: Any, a: ArgSpec, dtype: Any, span: int, seed: int) -> None:
    """Stand-in values of ``a.stats`` into ``flat[offset : offset + span]``."""
    torch = _torch()
    st = a.stats
    assert st is not None
    lo, hi, mu, sd = float(st.min), float(st.max), float(st.mean), float(st.std)
    target = flat[a.offset : a.offset + span]
    if lo == hi or not (math.isfinite(lo) and math.isfinite(hi)):  # nan, inf, one value
        one = lo if lo == hi else math.nan
        target.fill_(one if dtype.is_floating_point or not math.isnan(one) else 0)
        return
    if not math.isfinite(mu):
        mu = (lo + hi) / 2
    mu = min(max(mu, lo), hi)
    sd = sd if math.isfinite(sd) and sd >= 0 else (hi - lo) / 4
    dev = flat.device
    gen = torch.Generator(device=dev).manual_seed(seed)
    for start in range(0, span, DRAW_CHUNK):
        n = min(DRAW_CHUNK, span - start)
        if dtype == torch.bool:
            p = torch.full((n,), min(max(mu, 0.0), 1.0), dtype=torch.float64, device=dev)
            vals = torch.bernoulli(p, generator=gen)
        else:
            vals = torch.empty(n, dtype=torch.float64, device=dev).normal_(mu, sd, generator=gen)
            vals = vals.clamp_(lo, hi)
            if st.integral or not (dtype.is_floating_point or dtype.is_complex):
                vals = vals.round_()
        target[start : start + n].copy_(vals.to(dtype))


def _fill_exact(flat: Any, a: ArgSpec, dtype: Any, where: str) -> None:
    torch = _torch()
    assert a.data is not None
    if dtype.is_complex:
        raise ReplayError(f"{where}: exact data of a complex tensor is not supported")
    values = torch.tensor(a.data, dtype=dtype)
    if not a.digest:
        raise ReplayError(f"{where}: tensor data without a digest")
    if values_digest(values) != a.digest:
        raise ReplayError(f"{where}: tensor data digest mismatch")
    pos = viewed_positions(a.shape, a.strides, a.offset)
    if pos.numel() != values.numel():
        raise ReplayError(
            f"{where}: {values.numel()} data values for a view of {pos.numel()} elements"
        )
    if pos.numel():
        # torch has no index_copy for uint16/32/64 (isin's and unique2's uint32 buffers on
        # an H100, 2026-12-07): their bits go in through the signed type of their width
        signed = _SIGNED_OF.get(str(dtype).removeprefix("torch."))
        if signed is not None:
            flat, values = flat.view(getattr(torch, signed)), values.view(getattr(torch, signed))
        flat.index_copy_(0, pos.to(flat.device), values.to(flat.device))


# an unsigned dtype without torch's index kernels -> the signed dtype of its width
_SIGNED_OF = {"uint16": "int16", "uint32": "int32", "uint64": "int64"}


def _scalar(i: int, a: ArgSpec) -> Any:
    if a.kind == "none":
        return None
    if a.kind == "dtype":
        try:
            import triton.language as tl

            return tl.dtype(str(a.value))
        except ImportError:
            return a.value
        except Exception as e:  # an unknown name: triton refuses it
            raise ReplayError(f"argument {i} {a.name!r}: unknown triton dtype {a.value!r}") from e
    if a.kind == "other":
        raise ReplayError(f"argument {i} {a.name!r}: unsupported argument (kind other)")
    return a.value  # int, float, bool, str


def materialize(launch: LaunchSpec, device: str, seed: int) -> list[Any]:
    """``launch``'s arguments in parameter order on ``device`` (module docstring)."""
    return materialize_row([launch], device, [seed])[0]


def materialize_row(
    launches: Sequence[LaunchSpec], device: str, seeds: Sequence[int]
) -> list[list[Any]]:
    """Each of a row's ``launches``' arguments in parameter order (module docstring),
    one allocation per ``buffer`` number across all of them: a buffer one launch writes
    and the next reads (an intermediate buffer) is one storage, as it was. ``seeds``:
    one per launch, for its stats-drawn values."""
    torch = _torch()
    for launch in launches:
        if launch.why_not:
            raise ReplayError(f"launch of {launch.kernel} not replayable: {launch.why_not}")
    for n, i in unvalued(launches):  # nothing to fill it from (models.replay.unvalued)
        a = launches[n].args[i]
        raise ReplayError(f"argument {i} {a.name!r} of launch {n}: tensor without data or "
                          "statistics, its buffer valued by no earlier launch")  # fmt: skip
    # (launch, arg index) -> (spec, dtype, extent)
    tensors: dict[tuple[int, int], tuple[ArgSpec, Any, int]] = {}
    nbytes: dict[int, int] = {}  # buffer -> bytes to allocate
    for n, launch in enumerate(launches):
        for i, a in enumerate(launch.args):
            if a.kind not in TENSOR_KINDS:
                continue
            dtype = torch_dtype(a.dtype)
            span = _check_view(i, a)
            tensors[(n, i)] = (a, dtype, span)
            size = max(a.storage, a.offset + span) * dtype.itemsize
            nbytes[a.buffer] = max(nbytes.get(a.buffer, 0), size)
    raw = {
        b: torch.zeros(max(ALIGN, -(-need // ALIGN) * ALIGN), dtype=torch.uint8, device=device)
        for b, need in nbytes.items()
    }
    views: dict[tuple[int, int], Any] = {}
    for (n, i), (a, dtype, span) in tensors.items():  # stats first: exact data wins overlaps
        flat = raw[a.buffer].view(dtype)
        if a.data is None and a.stats is not None and span:
            _fill_stats(flat, a, dtype, span, _seed(seeds[n], a.buffer, i))
    for (n, i), (a, dtype, _span) in tensors.items():
        flat = raw[a.buffer].view(dtype)
        where = f"argument {i} {a.name!r}" + (f" of launch {n}" if len(launches) > 1 else "")
        if a.data is not None:
            _fill_exact(flat, a, dtype, where)
        view = torch.as_strided(flat, a.shape, a.strides, a.offset)
        aligned = view.data_ptr() % ALIGN == 0
        if aligned != a.align16:
            raise ReplayError(
                f"{where}: pointer {'is' if aligned else 'is not'} 16-byte aligned, the "
                f"capture's {'was not' if aligned else 'was'} (triton would compile another "
                "specialisation)"
            )
        views[(n, i)] = descriptor(view, a, where) if a.kind == "tensordesc" else view
    return [
        [views[(n, i)] if (n, i) in views else _scalar(i, a) for i, a in enumerate(launch.args)]
        for n, launch in enumerate(launches)
    ]


def descriptor(base: Any, a: ArgSpec, where: str) -> Any:
    """Triton's host ``TensorDescriptor`` of ``a`` over ``base`` (its rebuilt base)."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError as e:
        raise ReplayError(f"{where}: a tensor descriptor needs triton ({e})") from e
    try:
        return TensorDescriptor(
            base, list(a.desc_shape), list(a.desc_strides), list(a.block_shape), a.padding
        )
    except (AssertionError, TypeError, ValueError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ReplayError(f"{where}: triton refuses its tensor descriptor: {why}") from e


def is_descriptor(x: Any) -> bool:
    """Whether ``x`` is a host tensor descriptor (triton's ``TensorDescriptor``, known by
    its class name: the capture reads FlagGems' without importing triton's tools)."""
    return type(x).__name__ == "TensorDescriptor"


def tensor_of(x: Any) -> Any:
    """The tensor an argument holds: a tensor itself, a tensor descriptor's base; else
    None."""
    torch = _torch()
    if isinstance(x, torch.Tensor):
        return x
    base = getattr(x, "base", None) if is_descriptor(x) else None
    return base if isinstance(base, torch.Tensor) else None


def _storages(args: Sequence[Any]) -> list[Any]:
    """One uint8 tensor over each distinct storage of ``args``' tensors (a descriptor's
    base included), in first-seen order."""
    torch = _torch()
    seen: dict[tuple[str, int], Any] = {}
    for x in map(tensor_of, args):
        if x is not None:
            s = x.untyped_storage()
            key = (str(x.device), s.data_ptr())
            if key not in seen and s.nbytes():
                seen[key] = torch.empty(0, dtype=torch.uint8, device=x.device).set_(s)
    return list(seen.values())


def snapshot(args: Sequence[Any]) -> list[Any]:
    """A copy of each distinct storage of ``args`` (once per storage), to
    :func:`restore` before each repetition."""
    return [(live, live.clone()) for live in _storages(args)]


def restore(snap: Sequence[Any]) -> None:
    """Copy :func:`snapshot`'s storages back into the arguments' storages (the live
    ones it holds), in place (on the current stream: ordered before the next launch)."""
    for live, saved in snap:
        live.copy_(saved)


__all__ = [
    "ReplayError",
    "descriptor",
    "extent",
    "is_descriptor",
    "materialize",
    "restore",
    "snapshot",
    "tensor_of",
    "torch_dtype",
    "values_digest",
    "viewed_positions",
]

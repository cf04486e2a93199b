"""Capture at record time, for the kernel-replay tier (issue 51, docs/replay.md).

For every kernel a row launches inside its timed region (``state.in_timed_region()``,
with an op and a row in flight), what replaying that launch needs
(:class:`~zlbench.models.replay.LaunchSpec`): the kernel's compile record id, the grid
and every argument in parameter order (constexprs included). Per op it is written as
``<run_dir>/codegen/launches.json`` (:class:`~zlbench.models.replay.LaunchCapture`),
next to the codegen index, by the codegen recorder (``zlbench.plugins.codegen``, whose
``CompiledKernel.launch_metadata`` wrapper calls :meth:`LaunchRecorder.on_launch`).

The rules:

* A launch is keyed by (row, triton kernel hash, grid, argument structure: each
  tensor's dtype, shape, strides, storage offset and 16-byte alignment, each scalar's
  value). The first launch of a key captures the values (a device sync: only then);
  later launches of the key only count.
* ``count`` is the number of runs of the launch in the row's **last timed call** (one
  call = one outermost ``state.timed_region()``: ``state.timed_calls()``). A launch
  that did not run in the last timed call is dropped: an autotune sweep inside the
  row's first call (every config timed) leaves only the launches of the steady state.
* Tensors: dtype, shape, strides, storage offset, storage size in elements,
  ``buffer`` (the n-th distinct storage, by its data pointer, among the row's kept
  launches, in first-launch order: one buffer in two launches is an intermediate
  buffer; twice in one launch, in-place), ``align16``. Values exactly (``data``, see
  :func:`exact_values` for the order, and ``digest``) when the tensor has at
  most EXACT_MAX elements, or is an integer or bool tensor of at most EXACT_INT_MAX;
  else :class:`~zlbench.models.replay.TensorStats`, computed on the tensor's device.
* A tensor-like wrapper that triton launches as a pointer (FlagGems' ``StridedBuffer``,
  which every pointwise kernel of its fast path gets) is described as the view of its
  storage it is; one with a negative stride (``flip``) is an unsupported argument.
* A host tensor descriptor (``triton.tools.tensor_descriptor.TensorDescriptor``, the
  TMA argument ``a_desc`` of FlagGems' Hopper matmuls: mm, mm_out, grouped_mm,
  router_gemm) is kind ``tensordesc``: its base described and valued as a tensor, and
  its own shape, strides, block shape and padding (:func:`descriptor_parts`).
* Scalars by value; a triton dtype as kind ``dtype``; anything else is kind ``other``
  (its repr) and the launch's ``why_not`` is ``unsupported argument <name>``.
* ``why_not "graph"``: the key's first launch came while a CUDA graph was being
  captured (``torch.cuda.is_current_stream_capturing()``): no values (they cannot be
  read then). Except a launch that ran eagerly in the row's previous timed call with
  only integer scalars other (:func:`scalar_twin`: a random kernel's philox seed and
  offset advance at every call, so each call is a new key, and the graph's launch was
  never seen eagerly: v7's uniform, normal, randn and dropout rows on an H100,
  2026-12-06): the same binary on tensors of the same layout, so it takes that
  launch's tensor values and keeps its own scalars.
* ``why_not "side stream"``: an eager launch on another stream than the row's stream,
  which is the stream of the row's first eager timed launch (the one the harness runs
  the benchmark on); launches during a graph capture are not compared (the capture
  runs on a stream of its own).
* ``order``: the row's runs in its last timed call, each by its launch's index, when
  every run of a launch in that call used the storages (data pointers) of its first run
  there and the call ran at most MAX_RUNS_PER_ROW launches; else None (a call's
  allocations may move from call to call; within one, a key run on other storages is a
  ping-pong its key cannot tell). A buffer passed between
  launches that run more than once (a radix sort's passes and the counter reset between
  them) is replayed in that order, and not at all without it.
* At most MAX_LAUNCHES_PER_ROW distinct launches in one timed call; beyond, the row
  is ``truncated``. Past the first VALUED_LAUNCHES of a call, a new launch's tensor on
  a buffer that a launch of the call before it valued has no values read: the replay
  fills the buffer from that launch and runs them in order (``models.replay.unvalued``;
  ormqr and linalg_lstsq launch a kernel per reflector on one matrix, up to 4,096).
  An exception while capturing is one ZLBENCH_CODEGEN_WARNING line (the recorder's)
  and the row's ``why_not`` says so; it never breaks the benchmark.
* The values are read with torch ops, which FlagGems may serve with its own Triton
  kernels: while capturing, launches and compiles are not attributed (``busy``), and
  tuner calls are zlbench's own work (``state.own_work``), never the op's records,
  pins or sweeps (an H100's v5 gates marked five ops ``key_missing`` for the index
  kernel that read their small tensors).
* FlagGems runs a kernel's first launch of each specialisation holding that kernel's
  lock (``LibEntry.run``: ``with self.lock: self.fn.run(...)``, a lock that the same
  thread cannot take twice). Reading values then can reach the same kernel and wait on
  its own lock for ever: ``argsort``, ``sort``, ``isin`` and ``index_select`` hung so
  in the capture pass (an H100, 2026-12-06). A launch made while a FlagGems lock is held
  on this thread's stack (:func:`flaggems_lock_held`) is described and counted, its
  values read at the next launch of the same key; a key that never comes again is
  ``why_not`` :data:`VALUES_NOT_READ`.

Every row the capture saw timed is listed (``LaunchCapture.lists_every_row``): at each
timed call's start (``state.on_timed_call``) the row in flight gets its entry, so a row
whose timed calls launched no Triton kernel is listed with no launches. A timed call
that starts while the op's row is not named yet (its dtype or shape unknown: a
benchmark that names its shape after measuring) is counted (``unnamed_calls``) and its
launches are attributed to no row: then a row listed without launches may have launched
some, and ``LaunchCapture.launched_nothing`` says no. So does a capture written where
FlagGems' C extension was loaded (:func:`c_extension_loaded`: its kernels launch from
C++, unseen here; ``LaunchCapture.every_launch_hooked``).

Row occurrences: a row (dtype, shape) whose timed calls come again after another row's
is the next occurrence.

torch and triton are never imported here: a tensor is recognised through
``sys.modules["torch"]`` (no torch loaded: no tensor arguments), a triton dtype through
``sys.modules["triton.language"]``. An exact tensor's order and digest are the replay's
own functions (``zlbench.plugins.replay.materialize``, which imports torch only when
given a tensor).
"""

from __future__ import annotations

import json
import numbers
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zlbench.models.base import atomic_write_text
from zlbench.models.replay import (
    EXACT_INT_MAX,
    EXACT_MAX,
    LAUNCHES_JSON,
    TENSOR_KINDS,
    ArgSpec,
    LaunchCapture,
    LaunchSpec,
    RowLaunches,
    TensorStats,
    has_values,
)
from zlbench.plugins import state
from zlbench.plugins.replay.materialize import is_descriptor, values_digest, viewed_positions

# distinct launches of one timed call; 16 until 2026-12-06 cut v7's unbind_copy (32
# slices), concat_and_cache_mla and ormqr (a launch per reflector) on an H100; 64 until
# 2026-12-08 cut v7's ormqr and linalg_lstsq rows (29 rows, up to 4,096 reflectors)
MAX_LAUNCHES_PER_ROW = 4160
# distinct launches of one timed call whose every tensor's values are read; past them,
# a tensor on a buffer an earlier launch of the call valued is described without values
# (``models.replay.unvalued``): ormqr's 4,096 launches each pass the same 4096² matrix,
# whose statistics would be read 4,096 times and kept 4,096 times in the capture
VALUED_LAUNCHES = 64
# Runs of a row's launches in one timed call whose order is kept (``order``); beyond,
# the order is not given (v7's sorts: 8-12 runs a call)
MAX_RUNS_PER_ROW = 4096
STATS_CHUNK = 1 << 24  # elements per chunk of a statistics pass (bounds its memory)
_DIGITS = 7  # significant digits kept of a statistic (float32's)
_REPR_MAX = 80


# --------------------------------------------------------------------------- arguments


def _torch() -> Any:
    return sys.modules.get("torch")


def _is_tensor(v: Any) -> bool:
    torch = _torch()
    return torch is not None and isinstance(v, torch.Tensor)


def _wrapper_layout(v: Any) -> tuple | None:
    """(dtype, shape, strides, storage, offset in elements) of a tensor-like wrapper
    that triton launches as a pointer (FlagGems' ``StridedBuffer``, which its pointwise
    kernels' fast path passes: ``data_ptr()``, a torch ``dtype``, ``shape``,
    ``stride()``, ``untyped_storage()``); None for anything else, and for a wrapper
    this capture cannot describe as a view of its storage (a negative stride, an
    address inside an element)."""
    torch = _torch()
    dtype = getattr(v, "dtype", None)
    if torch is None or not isinstance(dtype, torch.dtype) or not hasattr(v, "shape"):
        return None
    if not all(callable(getattr(v, m, None)) for m in ("data_ptr", "stride", "untyped_storage")):
        return None
    storage = v.untyped_storage()
    if not isinstance(storage, torch.UntypedStorage):
        return None
    shift, size, strides = v.data_ptr() - storage.data_ptr(), dtype.itemsize, tuple(v.stride())
    if shift < 0 or not size or shift % size or any(s < 0 for s in strides):
        return None
    return dtype, tuple(v.shape), strides, storage, shift // size


def as_tensor(v: Any) -> Any:
    """``v`` itself when it is a torch tensor; a tensor-like wrapper's
    (:func:`_wrapper_layout`) view as a torch tensor over the same storage (no copy);
    else None."""
    if _is_tensor(v):
        return v
    layout = _wrapper_layout(v)
    if layout is None:
        return None
    dtype, shape, strides, storage, offset = layout
    return (
        _torch().empty(0, dtype=dtype, device=storage.device).set_(storage, offset, shape, strides)
    )


def descriptor_parts(v: Any) -> tuple[Any, list[int], list[int], list[int], str] | None:
    """(base, shape, strides, block shape, padding) of a host tensor descriptor (triton's
    ``TensorDescriptor``, read by its fields: its base a tensor or a tensor-like
    wrapper, :func:`as_tensor`); None for anything else."""
    if not is_descriptor(v):
        return None
    base = getattr(v, "base", None)
    try:
        shape, strides, block = (
            [int(x) for x in getattr(v, f)] for f in ("shape", "strides", "block_shape")
        )
    except (TypeError, ValueError):
        return None
    if base is None or as_tensor(base) is None:
        return None
    return base, shape, strides, block, str(getattr(v, "padding", "zero"))


def _tensor_value(v: Any) -> Any:
    """The tensor whose values an argument of a tensor kind holds: a descriptor's base,
    else the argument itself."""
    parts = descriptor_parts(v)
    return parts[0] if parts is not None else v


def _is_triton_dtype(v: Any) -> bool:
    tl = sys.modules.get("triton.language")
    return tl is not None and isinstance(v, getattr(tl, "dtype", ()))


def _dtype_name(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def _integer(t: Any) -> bool:
    return not t.dtype.is_floating_point and not t.dtype.is_complex


def arg_key(v: Any) -> tuple:
    """An argument's part of a launch's key: its structure (a tensor's layout, a
    scalar's value), never a tensor's values or address beyond its alignment."""
    if _is_tensor(v):
        return ("t", v.dtype, tuple(v.shape), v.stride(), v.storage_offset(), v.data_ptr() % 16)
    if (desc := descriptor_parts(v)) is not None:
        base, shape, strides, block, padding = desc
        return ("desc", arg_key(base), tuple(shape), tuple(strides), tuple(block), padding)
    layout = _wrapper_layout(v) if hasattr(v, "untyped_storage") else None
    if layout is not None:
        dtype, shape, strides, _, offset = layout
        return ("t", dtype, shape, strides, offset, v.data_ptr() % 16)
    if v is None or isinstance(v, bool | str):
        return (type(v).__name__, v)
    if isinstance(v, numbers.Integral):
        return ("i", int(v))
    if isinstance(v, numbers.Real):
        return ("f", repr(float(v)))  # nan equals itself here
    if _is_triton_dtype(v):
        return ("d", str(v))
    return ("o", type(v).__qualname__)


def grid3(grid: Any) -> list[int]:
    """The launch grid as three ints (a shorter grid is padded with 1s)."""
    g = [int(x) for x in (grid if isinstance(grid, Sequence) else (grid,))]
    return (g + [1, 1, 1])[:3]


def storage_of(v: Any) -> int | None:
    """The address of the storage ``v`` views (a tensor, a tensor-like wrapper, a tensor
    descriptor's base): a buffer's identity (:func:`describe_arg` numbers buffers by it);
    None for anything else."""
    if (desc := descriptor_parts(v)) is not None:
        v = desc[0]
    v = t if (t := as_tensor(v)) is not None else v
    return v.untyped_storage().data_ptr() if _is_tensor(v) else None


def describe_arg(name: str, v: Any, buffers: dict[int, int]) -> ArgSpec:
    """An argument's structure (no values): a tensor's layout and buffer, a scalar's
    value. ``buffers`` maps storage data pointers to buffer numbers (added to). A
    tensor-like wrapper is described as the view it is (:func:`as_tensor`); a host
    tensor descriptor as its base with its own fields (:func:`descriptor_parts`)."""
    if (desc := descriptor_parts(v)) is not None:
        base, shape, strides, block, padding = desc
        spec = describe_arg(name, base, buffers)
        return spec.model_copy(
            update={"kind": "tensordesc", "desc_shape": shape, "desc_strides": strides,
                    "block_shape": block, "padding": padding}
        )  # fmt: skip
    v = t if (t := as_tensor(v)) is not None else v
    if _is_tensor(v):
        storage = v.untyped_storage()
        size = v.element_size()
        return ArgSpec(
            name=name,
            kind="tensor",
            dtype=_dtype_name(v),
            shape=list(v.shape),
            strides=list(v.stride()),
            offset=v.storage_offset(),
            storage=storage.nbytes() // size if size else 0,
            buffer=buffers.setdefault(storage_of(v), len(buffers)),
            align16=v.data_ptr() % 16 == 0,
        )
    if v is None:
        return ArgSpec(name=name, kind="none")
    if isinstance(v, bool):
        return ArgSpec(name=name, kind="bool", value=v)
    if isinstance(v, numbers.Integral):
        return ArgSpec(name=name, kind="int", value=int(v))
    if isinstance(v, numbers.Real):
        return ArgSpec(name=name, kind="float", value=float(v))
    if isinstance(v, str):
        return ArgSpec(name=name, kind="str", value=v)
    if _is_triton_dtype(v):
        return ArgSpec(name=name, kind="dtype", value=str(v))
    return ArgSpec(name=name, kind="other", value=repr(v)[:_REPR_MAX])


def exact(t: Any) -> bool:
    """Whether a tensor's values are kept exactly (else by statistics)."""
    n = t.numel()
    return n <= EXACT_MAX or (_integer(t) and n <= EXACT_INT_MAX)


def exact_values(t: Any) -> tuple[list, str]:
    """(values, digest) of a small tensor: the storage elements its view touches, each
    once, in increasing storage order (for a contiguous tensor, its elements in order;
    an expanded view's repeated element is there once: the replay's
    :func:`~zlbench.plugins.replay.materialize.viewed_positions`), and the sha256[:16]
    of their bytes (the dtype's own, little-endian as stored), as the replay checks it
    (:func:`~zlbench.plugins.replay.materialize.values_digest`)."""
    torch = _torch()
    idx = viewed_positions(list(t.shape), list(t.stride()), t.storage_offset())
    storage = t.untyped_storage().nbytes() // t.element_size()
    base = t.detach().as_strided((storage,), (1,), 0)
    vals = base[idx.to(t.device)].cpu()
    if t.dtype == torch.bool:
        data = [bool(x) for x in vals.tolist()]
    elif _integer(t):
        data = [int(x) for x in vals.tolist()]
    else:
        data = [float(x) for x in vals.to(torch.float64).tolist()]
    return data, values_digest(vals)


def _round(x: float) -> float:
    return float(f"{x:.{_DIGITS}g}")


def tensor_stats(t: Any) -> TensorStats:
    """min, max, mean and std of the finite values, whether they are all whole, and how
    many are not finite: computed on the tensor's device, chunk by chunk, with one
    device sync at the end."""
    torch = _torch()
    x = t.detach().reshape(-1)
    parts = []
    for chunk in x.split(STATS_CHUNK):
        c = chunk.to(torch.float64)
        fin = torch.isfinite(c)
        z = torch.where(fin, c, torch.zeros_like(c))
        parts.append(
            torch.stack(
                [
                    fin.sum().to(torch.float64),
                    torch.where(fin, c, torch.full_like(c, float("inf"))).min(),
                    torch.where(fin, c, torch.full_like(c, float("-inf"))).max(),
                    z.sum(),
                    (z * z).sum(),
                    (z != z.trunc()).sum().to(torch.float64),
                ]
            )
        )
    n, lo, hi, s, ss, frac = 0.0, float("inf"), float("-inf"), 0.0, 0.0, 0.0
    for p in torch.stack(parts).cpu().tolist() if parts else []:
        n, s, ss, frac = n + p[0], s + p[3], ss + p[4], frac + p[5]
        lo, hi = min(lo, p[1]), max(hi, p[2])
    nonfinite = x.numel() - int(n)
    if n == 0:
        return TensorStats(min=0.0, max=0.0, mean=0.0, integral=True, nonfinite=nonfinite)
    mean = s / n
    std = max(ss / n - mean * mean, 0.0) ** 0.5
    integral = frac == 0
    if integral:
        lo, hi = int(lo), int(hi)
    return TensorStats(
        min=lo if integral else _round(lo),
        max=hi if integral else _round(hi),
        mean=_round(mean),
        std=_round(std),
        integral=integral,
        nonfinite=nonfinite,
    )


def add_values(spec: ArgSpec, t: Any) -> None:
    """Fill a tensor argument's values: exact (``data``, ``digest``) or ``stats``
    (``t`` a tensor or a tensor-like wrapper, :func:`as_tensor`)."""
    t = as_tensor(t)
    if exact(t):
        spec.data, spec.digest = exact_values(t)
    else:
        spec.stats = tensor_stats(t)


VALUES_NOT_READ = "values not read: every launch held a FlagGems first-run lock"


def flaggems_lock_held() -> bool:
    """A FlagGems ``LibEntry.run`` on this thread's stack holds its kernel's lock (its
    first run of a specialisation): reading values with torch ops now may wait on it
    for ever (module doc). The lock is tried without blocking: a lock this thread
    holds is not taken again."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "run" and "self" in f.f_code.co_varnames:
            obj = f.f_locals.get("self")
            lock = getattr(obj, "lock", None)
            if type(obj).__name__ == "LibEntry" and callable(getattr(lock, "acquire", None)):
                if not lock.acquire(False):
                    return True
                lock.release()
        f = f.f_back
    return False


def capturing() -> bool:
    """A CUDA graph is being captured on the current stream (never on a machine
    without CUDA, or without torch loaded)."""
    torch = _torch()
    if torch is None or not torch.cuda.is_available():
        return False
    return bool(torch.cuda.is_current_stream_capturing())


# --------------------------------------------------------------------------- per row


@dataclass
class _Entry:
    spec: LaunchSpec
    call: int  # the newest timed call this launch ran in
    count: int  # its runs in that call
    pending: bool = False  # its values are still to be read (a FlagGems lock was held)
    skip: frozenset[int] = frozenset()  # its arguments whose values are not read
    storages: tuple = ()  # its first run's in that call: arguments' data pointers


def storage_ptrs(args: Sequence[Any]) -> tuple:
    """Each argument's :func:`storage_of` (None for anything but a tensor): two runs of
    one launch key on other storages read other data."""
    return tuple(storage_of(a) for a in args)


@dataclass
class RowCapture:
    """One row's distinct timed launches."""

    run_name: str
    op: str
    dtype: str
    shape: str
    occurrence: int = 0
    entries: dict[tuple, _Entry] = field(default_factory=dict)
    buffers: dict[int, int] = field(default_factory=dict)  # storage data_ptr -> buffer
    stream: Any = None  # the row's stream: its first eager launch's
    call: int | None = None  # the newest timed call with a launch of the row
    in_call: int = 0  # distinct launches seen in that call
    valued: set[int] = field(default_factory=set)  # buffers valued by that call's launches
    overflow: int | None = None  # the timed call that had more than the cap
    why_not: str = ""
    # that call's launch keys, run by run; None: its order given up (_ran)
    runs: list[tuple] | None = field(default_factory=list)

    def launch(
        self,
        kernel_id: str,
        kernel: str,
        triton_hash: str,
        grid: Any,
        stream: Any,
        names: Sequence[str],
        args: Sequence[Any],
        call: int,
        in_graph: bool,
        read_values: Callable[[ArgSpec, Any], None] = add_values,
        lock_held: Callable[[], bool] = lambda: False,
    ) -> None:
        g = grid3(grid)
        key = (triton_hash, tuple(g), tuple(arg_key(a) for a in args))
        if call != self.call:
            if self.call is not None:  # keep only what ran in the call just finished
                last = self.call
                self.entries = {k: e for k, e in self.entries.items() if e.call == last}
            self.call, self.in_call, self.runs, self.valued = call, 0, [], set()
        known = self.entries.get(key)
        if known is not None:
            ptrs = storage_ptrs(args)
            if known.call != call:  # its first run in this call: the storages to keep
                known.call, known.count, known.storages = call, 0, ptrs
                self.in_call += 1
                self._mark_valued(known.spec)
            known.count += 1
            self._ran(key, known.storages != ptrs)
            if not in_graph and not known.spec.why_not and self._other_stream(stream):
                known.spec.why_not = "side stream"
            if known.pending and not known.spec.why_not and not lock_held():
                _read(known.spec, args, read_values, known.skip)
                known.pending = False
            return
        if self.in_call >= MAX_LAUNCHES_PER_ROW:
            self.overflow = call
            return
        spec = LaunchSpec(kernel_id=kernel_id, kernel=kernel, grid=g)
        spec.args = [
            describe_arg(names[i] if i < len(names) else "", a, self.buffers)
            for i, a in enumerate(args)
        ]
        twin = scalar_twin(key, self.entries, call) if in_graph else None
        if twin is not None:  # values read eagerly a call ago, its checks passed there
            _borrow_values(spec, twin.spec)
        else:
            spec.why_not = self._why_not(kernel_id, spec.args, stream, in_graph)
        past = self.in_call >= VALUED_LAUNCHES  # its tensors on valued buffers: not read
        skip = frozenset(
            i
            for i, a in enumerate(spec.args)
            if past and a.kind in TENSOR_KINDS and a.buffer in self.valued
        )
        entry = self.entries[key] = _Entry(spec, call, 1, storages=storage_ptrs(args), skip=skip)
        self.in_call += 1
        self._ran(key, moved=False)
        if not spec.why_not and twin is None:
            if not lock_held():
                _read(spec, args, read_values, skip)
            else:
                entry.pending = True
        self._mark_valued(spec)

    def _mark_valued(self, spec: LaunchSpec) -> None:
        """The buffers ``spec``'s tensors give values to, as valued in this call."""
        self.valued.update(a.buffer for a in spec.args if a.kind in TENSOR_KINDS and has_values(a))

    def _ran(self, key: tuple, moved: bool) -> None:
        """One run of launch ``key`` in this call, in order; the order is given up when a
        run is on other storages than the key's first run in the call, or past
        MAX_RUNS_PER_ROW."""
        if self.runs is None:
            return
        if moved or len(self.runs) >= MAX_RUNS_PER_ROW:
            self.runs = None
            return
        self.runs.append(key)

    def _other_stream(self, stream: Any) -> bool:
        if self.stream is None:
            self.stream = stream
        return stream != self.stream

    def _why_not(self, kernel_id: str, args: list[ArgSpec], stream: Any, in_graph: bool) -> str:
        if in_graph:
            return "graph"
        if self._other_stream(stream):
            return "side stream"
        if not kernel_id:
            return "unrecorded kernel"
        other = next((a for a in args if a.kind == "other"), None)
        return f"unsupported argument {other.name}" if other is not None else ""

    def model(self) -> RowLaunches:
        """The row's launches of its last timed call, buffers numbered densely in
        first-launch order."""
        kept_keys = [k for k, e in self.entries.items() if e.call == self.call]
        kept = [self.entries[k] for k in kept_keys]
        index = {k: i for i, k in enumerate(kept_keys)}
        order = None
        if self.runs is not None and all(k in index for k in self.runs):
            order = [index[k] for k in self.runs]
        renumber: dict[int, int] = {}
        launches = []
        for e in kept:
            if e.pending:
                e.spec.why_not = e.spec.why_not or VALUES_NOT_READ
            args = []
            for a in e.spec.args:
                if a.kind in TENSOR_KINDS:
                    n = renumber.setdefault(a.buffer, len(renumber))
                    a = a.model_copy(update={"buffer": n})
                args.append(a)
            launches.append(e.spec.model_copy(update={"count": e.count, "args": args}))
        return RowLaunches(
            run_name=self.run_name,
            op=self.op,
            dtype=self.dtype,
            shape=self.shape,
            occurrence=self.occurrence,
            launches=launches,
            truncated=self.overflow is not None and self.overflow == self.call,
            why_not=self.why_not,
            order=order,
        )


def scalar_twin(key: tuple, entries: Mapping[tuple, _Entry], call: int) -> _Entry | None:
    """The launch of an earlier timed call that ``key`` (a launch first seen during a
    graph capture) repeats with other integer scalars: the same kernel hash and grid,
    every tensor's and every other argument's key equal, at least one integer's value
    other; its values read eagerly (no ``why_not``, none pending). None: there is none."""
    kernel, grid, args = key
    for (k, g, other), e in entries.items():
        if e.call >= call or e.pending or e.spec.why_not or (k, g) != (kernel, grid):
            continue
        if (
            len(other) == len(args)
            and other != args
            and all(a == b or (a[0] == b[0] == "i") for a, b in zip(args, other, strict=True))
        ):
            return e
    return None


def _borrow_values(spec: LaunchSpec, twin: LaunchSpec) -> None:
    """``twin``'s tensor values (exact data, digest, statistics) into ``spec``'s tensors,
    argument by argument: the same layout, by :func:`scalar_twin`."""
    for a, b in zip(spec.args, twin.args, strict=True):
        if a.kind in TENSOR_KINDS:
            a.data, a.digest, a.stats = b.data, b.digest, b.stats


def _read(
    spec: LaunchSpec,
    args: Sequence[Any],
    read_values: Callable[[ArgSpec, Any], None],
    skip: frozenset[int] = frozenset(),
):
    for i, (a, v) in enumerate(zip(spec.args, args, strict=True)):
        if a.kind in TENSOR_KINDS and i not in skip:
            read_values(a, _tensor_value(v))


# --------------------------------------------------------------------------- per process


@dataclass
class LaunchRecorder:
    """Every run's rows' timed launches (see the module doc)."""

    rows: dict[str, list[RowCapture]] = field(default_factory=dict)  # run -> rows
    unnamed: dict[str, int] = field(default_factory=dict)  # run -> timed calls, no row named
    busy: bool = False  # values being read: launches and compiles now are not the row's
    in_graph: Callable[[], bool] = capturing
    read_values: Callable[[ArgSpec, Any], None] = add_values
    lock_held: Callable[[], bool] = flaggems_lock_held

    def row_for(self, op: state.OpState) -> RowCapture:
        """The row in flight's capture: the run's newest unless the row changed."""
        rows = self.rows.setdefault(op.entry.run_name, [])
        if rows and (rows[-1].dtype, rows[-1].shape) == (op.dtype, op.shape):
            return rows[-1]
        occ = sum((r.dtype, r.shape) == (op.dtype, op.shape) for r in rows)
        row = RowCapture(op.entry.run_name, op.entry.op, op.dtype or "", op.shape or "", occ)
        rows.append(row)
        return row

    def on_timed_call(self) -> None:
        """A timed call begins (``state.on_timed_call``): the row in flight gets its
        entry, launches or not; a call whose op has no row named is counted for its run.
        Never raises."""
        try:
            op = state.current_op()
            if self.busy or op is None:
                return
            if op.dtype is None or op.shape is None:
                run = op.entry.run_name
                self.unnamed[run] = self.unnamed.get(run, 0) + 1
                return
            self.row_for(op)
        except Exception:  # noqa: BLE001, S110 - a capture must never break a benchmark
            pass

    def on_launch(
        self,
        kernel: Any,
        grid: Any,
        stream: Any,
        args: Sequence[Any],
        kernel_id: str,
        warn: Callable[[str], None],
    ) -> None:
        """One launch of ``kernel`` (a triton CompiledKernel: ``hash``, ``name``,
        ``src.fn.arg_names``), ``args`` its bound arguments in parameter order. Never
        raises."""
        if self.busy or not state.in_timed_region():
            return
        op = state.current_op()
        if op is None or op.dtype is None or op.shape is None:
            return
        row = None
        self.busy = True
        try:
            row = self.row_for(op)
            if row.why_not:
                return
            names = getattr(getattr(getattr(kernel, "src", None), "fn", None), "arg_names", ())
            row.launch(
                kernel_id,
                str(getattr(kernel, "name", "")),
                str(kernel.hash),
                grid,
                stream,
                list(names or ()),
                args,
                state.timed_calls(),
                self.in_graph(),
                self._own_read,
                self.lock_held,
            )
        except Exception as e:  # noqa: BLE001 - a capture must never break a benchmark
            why = f"capture failed: {type(e).__name__}: {e}".splitlines()[0][:200]
            if row is not None:
                row.why_not = why
            warn(f"launch capture of {getattr(kernel, 'name', '?')}: {why}")
        finally:
            self.busy = False

    def _own_read(self, spec: ArgSpec, t: Any) -> None:
        """Read a tensor argument's values as zlbench's own work: FlagGems serves the torch
        ops that read them with its own (tuned) kernels (``state.own_work``)."""
        with state.own_work():
            self.read_values(spec, t)

    def capture_for(self, run: str) -> LaunchCapture:
        return LaunchCapture(
            rows=[r.model() for r in self.rows.get(run, [])],
            lists_every_row=True,
            unnamed_calls=self.unnamed.get(run, 0),
            every_launch_hooked=not c_extension_loaded(),
            gpu_model=device_name(),
        )

    def write(self, run: str, cg_dir: Path) -> None:
        write_launches(Path(cg_dir), self.capture_for(run))


# FlagGems' C extension (``USE_C_EXTENSION=1`` with its library built: flag_gems/config.py
# imports ``flag_gems.c_operators`` and sets ``use_c_extension``) launches its kernels
# from C++, past ``CompiledKernel``: this hook does not see them.
C_EXTENSION_MODULE = "flag_gems.c_operators"


def c_extension_loaded(modules: dict[str, Any] | None = None) -> bool:
    """Whether FlagGems' C extension is loaded in this process (``modules``:
    ``sys.modules``): its module imported, or FlagGems' config saying it is in use.
    Then a row the capture lists without launches may have launched kernels from C++
    (``LaunchCapture.every_launch_hooked`` is False)."""
    modules = sys.modules if modules is None else modules
    if any(m == C_EXTENSION_MODULE or m.startswith(C_EXTENSION_MODULE + ".") for m in modules):
        return True
    config = modules.get("flag_gems.config")
    return bool(getattr(config, "use_c_extension", False) or getattr(config, "c_operators", None))


def device_name() -> str:
    """The current CUDA device's name as torch gives it (``NVIDIA H100 80GB HBM3``, the
    name nvidia-smi gives), "" without torch or a CUDA device. Never raises."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_available():
            return ""
        return str(torch.cuda.get_device_name(torch.cuda.current_device()))
    except Exception:  # noqa: BLE001 - a capture must never break a benchmark
        return ""


def launches_text(capture: LaunchCapture) -> str:
    """A capture's file text: compact JSON, one line, defaults left out (a packed
    baseline's size, benchmarks/replay_capture_size.py); non-finite exact values are
    written as JSON's NaN / Infinity, which the loaders read."""
    data = capture.model_dump(exclude_defaults=True)
    data = {"schema_version": capture.schema_version, "kind": capture.kind, **data}
    return json.dumps(data, separators=(",", ":")) + "\n"


def write_launches(cg_dir: Path, capture: LaunchCapture) -> None:
    """``<cg_dir>/launches.json``, atomically."""
    atomic_write_text(Path(cg_dir) / LAUNCHES_JSON, launches_text(capture))

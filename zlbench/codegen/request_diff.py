"""What makes one compile request another kernel: the fields in which a kernel a run
compiled differs from the nearest record of the same kernel (pure; docs/replay.md
"Captures for an existing baseline").

A capture that names a kernel its baseline's records lack is left out; the line that
says so names what differs (a constexpr, an argument's specialisation, the launch
config, the source, the target), so that the cause reads off the derive instead of
another GPU run. Two differences are no other kernel, only what no other process gives
again (:func:`twins`): triton's cache key holding an address, and the module name and
file a generator gave the code it wrote (FlagGems names them by its pid or a hash).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from zlbench.codegen.pinned import kernel_of
from zlbench.models.codegen import PORTABLE_KEY, CodegenIndex, CompileRecord, CompileRequest
from zlbench.models.replay import LaunchCapture

SHOWN = 4  # differences named in a line; the rest counted


def _flat(value: Any, at: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(v, f"{at}.{k}" if at else str(k), out)
    else:
        out[at] = value


def _path(entry: dict) -> str:
    return ",".join(map(str, entry["path"]))


def flatten(request: CompileRequest) -> dict[str, Any]:
    """``request`` as field path -> value; constexprs and attrs by their argument path
    (``constexprs[3]``, ``attrs[0]``), as triton keys them."""
    data = request.model_dump(mode="json")
    out: dict[str, Any] = {}
    for entry in data.pop("constexprs"):
        out[f"constexprs[{_path(entry)}]"] = entry["value"]
    for entry in data.pop("attrs"):  # [["tt.divisibility", 16]] -> "tt.divisibility=16"
        out[f"attrs[{_path(entry)}]"] = ",".join(f"{k}={v}" for k, v in entry["attrs"])
    _flat(data, "", out)
    return out


def differences(found: CompileRequest, held: CompileRequest) -> list[str]:
    """Each field in which ``found`` differs from ``held``: ``field: held → found``
    (``-`` for a field one of them lacks), sorted by field."""
    a, b = flatten(held), flatten(found)
    out = []
    for key in sorted(set(a) | set(b)):
        if a.get(key, "-") != b.get(key, "-"):
            out.append(f"{key}: {_show(a.get(key, '-'))} → {_show(b.get(key, '-'))}")
    return out


def _show(v: Any) -> str:
    text = v if isinstance(v, str) else repr(v)
    return text if len(text) <= 32 else text[:12] + "…"


def same_kernel(a: CompileRecord, b: CompileRecord) -> bool:
    """Whether ``a`` and ``b`` compile the same ``@triton.jit`` function: the same
    module and qualname (``pinned.kernel_of``), or both generated with the same qualname
    (a generator's module name is where it put the file: FlagGems names them by a pid or
    a hash, :data:`PLACE`)."""
    if kernel_of(a) == kernel_of(b):
        return True
    ka, kb = a.request.kernel, b.request.kernel
    generated = ka.generated_source is not None and kb.generated_source is not None
    return generated and ka.qualname == kb.qualname


def nearest(
    found: CompileRecord, held: Iterable[CompileRecord]
) -> tuple[CompileRecord, list[str]] | None:
    """The record of the same kernel (:func:`same_kernel`) that ``found`` differs least
    from, with those differences (ties: the smaller id); None when none is that kernel."""
    best = None
    for rec in sorted(held, key=lambda r: r.id):
        if not same_kernel(rec, found):
            continue
        diff = differences(found.request, rec.request)
        if best is None or len(diff) < len(best[1]):
            best = (rec, diff)
    return best


def why_not_held(kernel_id: str, compiled: CodegenIndex | None, held: CodegenIndex) -> str:
    """Why ``kernel_id`` (a kernel a run compiled, per its own index ``compiled``) is not
    one of ``held``'s records, in a few words: what it differs in from the nearest record
    of the same kernel, or that ``held`` records no such kernel."""
    mine = {r.id: r for r in compiled.records} if compiled is not None else {}
    rec = mine.get(kernel_id)
    if rec is None:
        return "the run's own codegen records do not hold it either"
    name = rec.request.kernel.qualname
    near = nearest(rec, held.records)
    if near is None:
        return f"{name}: the baseline records no kernel of that name for this op"
    other, diff = near
    if not diff:  # the same request under another id: ids of another zlbench
        return f"{name}: the same request as record {other.id} under another id"
    more = f" (+{len(diff) - SHOWN} more)" if len(diff) > SHOWN else ""
    return f"{name} differs from record {other.id} in {'; '.join(diff[:SHOWN])}{more}"


# Why a run's kernel is taken as a baseline record it is not byte for byte (twins):
KEY = "address key"  # the run kept a portable key where the record holds triton's, an address
PLACE = "generated module"  # a generated module's name and file, where its generator put it


class Twin(NamedTuple):
    id: str  # the baseline's record
    reasons: frozenset[str]  # KEY, PLACE: what the run's request differs from it in


def twin_reasons(found: CompileRequest, held: CompileRequest) -> frozenset[str] | None:
    """What ``found`` differs from ``held`` in, when that is only what no other process
    gives again (None: it differs in more, or in nothing): :data:`KEY`, ``found`` keyed
    portably (``PORTABLE_KEY``) and ``held`` by triton's own key, which held an address;
    :data:`PLACE`, the module name and file of a generated kernel whose whole module
    text (``generated_source``) is the same, named by the generator after its process or
    a hash of an address (FlagGems' ``_gen_module_rank_2_pid_6117``)."""
    fk, hk = found.kernel, held.kernel
    reasons, update = set(), {}
    if fk.cache_key != hk.cache_key:
        if not (fk.cache_key or "").startswith(PORTABLE_KEY):
            return None
        if (hk.cache_key or "").startswith(PORTABLE_KEY):
            return None
        reasons.add(KEY)
        update["cache_key"] = hk.cache_key
    if (fk.module, fk.path) != (hk.module, hk.path):
        if fk.generated_source is None:  # a package's module: its name is the same anywhere
            return None
        reasons.add(PLACE)
        update.update(module=hk.module, path=hk.path)
    kernel = fk.model_copy(update=update)
    same = found.model_copy(update={"kernel": kernel}) == held
    return frozenset(reasons) if reasons and same else None


def twins(compiled: CodegenIndex, held: CodegenIndex) -> dict[str, Twin]:
    """Record id of ``compiled`` (a run's own index) -> the :class:`Twin` of ``held``
    (the baseline's), for each record ``held`` lacks that is exactly one of ``held``'s
    records but for what no other process gives again (:func:`twin_reasons`): a kernel
    recorded before records kept portable keys, or a generated kernel recorded under
    another process's module name (docs/replay.md "Captures for an existing baseline")."""
    ids = {r.id for r in held.records}
    out = {}
    for rec in compiled.records:
        if rec.id in ids:
            continue
        found = [
            Twin(h.id, why)
            for h in held.records
            if (why := twin_reasons(rec.request, h.request)) is not None
        ]
        if len(found) == 1:
            out[rec.id] = found[0]
    return out


def renamed(capture: LaunchCapture, ids: dict[str, str]) -> LaunchCapture:
    """``capture`` with each kernel id of ``ids`` (launches and ``replay_timed``) renamed."""
    if not ids:
        return capture
    rows = []
    for row in capture.rows:
        launches = [
            s.model_copy(update={"kernel_id": ids.get(s.kernel_id, s.kernel_id)})
            for s in row.launches
        ]
        timed = (
            None if row.replay_timed is None else sorted(ids.get(k, k) for k in row.replay_timed)
        )
        rows.append(row.model_copy(update={"launches": launches, "replay_timed": timed}))
    return capture.model_copy(update={"rows": rows})


def renamed_index(index: CodegenIndex, ids: dict[str, str]) -> CodegenIndex:
    """``index`` with each record id of ``ids`` renamed."""
    if not ids:
        return index
    records = [r.model_copy(update={"id": ids.get(r.id, r.id)}) for r in index.records]
    return index.model_copy(update={"records": records})


__all__ = [
    "KEY",
    "PLACE",
    "Twin",
    "differences",
    "flatten",
    "nearest",
    "renamed",
    "renamed_index",
    "same_kernel",
    "twin_reasons",
    "twins",
    "why_not_held",
]

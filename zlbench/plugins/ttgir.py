"""TTGIR of the kernel variants actually used (docs/design.md §5.13).

Why: when a FlagTree change moves a speedup, the compiler engineer needs the
TritonGPU IR of exactly the variant that was measured, per shape, to diff it
against the baseline's. Triton keeps IR only in its (per-run, deleted) cache
under hashed names, and says nothing about which config won. This plugin
listens to every tuned launch (through the adapter in ``_tuners``) and writes

    <run_dir>/ttgir/<shape_slug>/<kernel>/<variant>.ttgir
    <run_dir>/ttgir/index.tsv     every variant used, plus the sweep losers
                                  (configs benchmarked but not chosen, no file)
    <run_dir>/ttgir/naming.md     how the directory and variant names are built

Under ``TRITON_INTERPRET=1`` nothing is compiled: the index is still written,
its rows carry a note, and no ``.ttgir`` file exists. Only kernels behind a
triton ``Autotuner`` / FlagGems ``LibTuner`` are seen (they are the ones with
variants). Disabled by ``WorkerPlan.ttgir = false``.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from zlbench.models import atomic_write_text
from zlbench.plugins import state
from zlbench.protocol.layout import TTGIR_DIR

INDEX_COLUMNS = ("shape", "dtype", "kernel", "variant", "role", "ms", "file", "note")
INTERPRET_NOTE = "TRITON_INTERPRET=1: no compilation, no TTGIR"

NAMING_MD = """\
# TTGIR dump: naming

`<shape_slug>/<kernel>/<variant>.ttgir`, one file per variant that actually ran.

* **shape_slug**: `<dtype>_<dims>` from the row being measured, e.g.
  `bfloat16_1024x1024_1024x1024` for `[torch.Size([1024, 1024]), torch.Size([1024, 1024])]`:
  each bracketed list of integers becomes `AxBxC`, lists joined by `_`. Shape
  text without such lists is reduced to `[A-Za-z0-9]` runs joined by `_`;
  a second shape text with the same slug gets `-2`, `-3`... When no row is being
  measured, the slug is `key_<tuning key>`. `index.tsv` has the exact shape text.
* **kernel**: the name of the kernel's Python function (module-qualified in
  `index.tsv`, where `kernel` is the id used by the autotune records).
* **variant**: the config's meta-parameters in their order as `NAMEvalue`, then
  `w<num_warps>`, `s<num_stages>`, `c<num_ctas>` (only when not 1) and
  `r<maxnreg>` (only when set), joined by `_`, e.g. `BLOCK_M128_BLOCK_N64_w4_s3`.
  In values `.` becomes `p` and `-` becomes `m`.

`index.tsv` columns: shape, dtype, kernel, variant, role (`chosen`: tuned and
chosen here; `pinned`: replayed from records; `single`: the kernel's only
config; `loser`: benchmarked but not chosen, no file), ms (the tuner's median
timing, when it benchmarked), file (relative to this dir), note.
"""


# --------------------------------------------------------------------------- naming (pure)


def _value_text(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v).replace(".", "p").replace("-", "m")


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "_"


def variant_name(kwargs: dict, num_warps=None, num_stages=None, num_ctas=1, maxnreg=None) -> str:
    parts = [f"{k}{_value_text(v)}" for k, v in kwargs.items()]
    if num_warps is not None:
        parts.append(f"w{num_warps}")
    if num_stages is not None:
        parts.append(f"s{num_stages}")
    if num_ctas not in (None, 1):
        parts.append(f"c{num_ctas}")
    if maxnreg is not None:
        parts.append(f"r{maxnreg}")
    return _safe("_".join(parts)) if parts else "default"


def config_variant(config: Any) -> str:
    """:func:`variant_name` of a ``triton.Config``."""
    return variant_name(
        dict(config.kwargs),
        getattr(config, "num_warps", None),
        getattr(config, "num_stages", None),
        getattr(config, "num_ctas", 1),
        getattr(config, "maxnreg", None),
    )


def shape_slug(dtype: str | None, shape: str | None) -> str:
    """Readable directory name of one (dtype, shape_detail) row; see NAMING_MD."""
    groups = re.findall(r"\[([\d,\s]+)\]", shape or "")
    dims = ["x".join(re.findall(r"\d+", g)) for g in groups]
    dims = [d for d in dims if d]
    base = "_".join(dims) if dims else _safe(shape or "noshape")
    slug = f"{_safe(dtype)}_{base}" if dtype else base
    if len(slug) > 96:
        digest = hashlib.sha256((shape or "").encode()).hexdigest()[:8]
        slug = f"{slug[:80]}_{digest}"
    return slug


def kernel_dirname(kernel_id: str) -> str:
    name = kernel_id.split(":")[-1].split("#")[0].split(".")[-1]
    return _safe(name)


def render_index(rows: list[dict]) -> str:
    lines = ["\t".join(INDEX_COLUMNS)]
    for row in rows:
        cells = [str(row.get(c, "") if row.get(c) is not None else "") for c in INDEX_COLUMNS]
        lines.append("\t".join(c.replace("\t", " ").replace("\n", " ") for c in cells))
    return "\n".join(lines) + "\n"


def _ms(timing: Any) -> float | None:
    from zlbench.plugins._tuners import first_timing

    value = first_timing(timing)
    try:
        return round(float(value), 6)
    except (TypeError, ValueError):
        return None


def loser_rows(base: dict, timings: dict, chosen: Any) -> list[dict]:
    """Index rows for the configs a sweep benchmarked but did not choose."""
    rows = []
    chosen_kwargs = chosen.all_kwargs() if chosen is not None else None
    for config, timing in timings.items():
        if config.all_kwargs() == chosen_kwargs:
            continue
        variant = config_variant(config)
        rows.append({**base, "variant": variant, "role": "loser", "ms": _ms(timing)})
    return rows


# --------------------------------------------------------------------------- dumping


def _ttgir_text(ret: Any) -> str | None:
    asm = getattr(ret, "asm", None)
    if asm is None:
        return None
    try:
        text = asm.get("ttgir") if hasattr(asm, "get") else asm["ttgir"]
    except (KeyError, TypeError):
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text or None


@dataclass
class OpDump:
    """The TTGIR index of one plan entry."""

    root: Path
    rows: list[dict] = field(default_factory=list)
    seen: set[tuple[str, str, str]] = field(default_factory=set)
    slugs: dict[str, str] = field(default_factory=dict)  # shape text -> slug
    kernels: dict[str, str] = field(default_factory=dict)  # kernel id -> dir name

    def slug(self, dtype: str | None, shape: str | None, key_text: str) -> str:
        if shape is None:
            return "key_" + shape_slug(None, key_text)
        ident = f"{dtype}|{shape}"
        if ident not in self.slugs:
            base, n = shape_slug(dtype, shape), 1
            taken = set(self.slugs.values())
            slug = base
            while slug in taken:
                n += 1
                slug = f"{base}-{n}"
            self.slugs[ident] = slug
        return self.slugs[ident]

    def kernel_dir(self, kernel: str) -> str:
        if kernel not in self.kernels:
            name, taken = kernel_dirname(kernel), set(self.kernels.values())
            if name in taken:
                name = f"{name}_{hashlib.sha256(kernel.encode()).hexdigest()[:6]}"
            self.kernels[kernel] = name
        return self.kernels[kernel]

    def write_index(self) -> None:
        atomic_write_text(self.root / "index.tsv", render_index(self.rows))


def _role(call: Any) -> str:
    if call.single:
        return "single"
    return "pinned" if call.pinned else "chosen"


class TtgirDumper:
    """Adapter listener: writes the TTGIR of each new (shape, kernel, variant)."""

    def __init__(self) -> None:
        self.dumps: dict[str, OpDump] = {}
        self.done: set = set()  # fast path: (run, dtype, shape, kernel, key) already indexed

    def dump_for(self, op: state.OpState) -> OpDump:
        dump = self.dumps.get(op.entry.run_name)
        if dump is None:
            root = Path(op.entry.run_dir) / TTGIR_DIR
            dump = self.dumps[op.entry.run_name] = OpDump(root=root)
            atomic_write_text(root / "naming.md", NAMING_MD)  # constant: written once per op
        return dump

    def __call__(self, call: Any) -> None:
        op = state.current_op()
        if op is None or call.config is None or not state.active().plan.ttgir:
            return
        fast = (op.entry.run_name, op.dtype, op.shape, call.kernel, call.key, call.pinned)
        try:
            if not call.timings and fast in self.done:
                return
            self.done.add(fast)
        except TypeError:  # an unhashable key element: take the slow path
            pass
        dump = self.dump_for(op)
        from zlbench.plugins.autotune import serialize_key

        key_text = serialize_key(call.key)
        slug = dump.slug(op.dtype, op.shape, key_text)
        variant = config_variant(call.config)
        ident = (slug, call.kernel, variant)
        if ident in dump.seen and not call.timings:
            return
        base = {"shape": op.shape or key_text, "dtype": op.dtype or "",
                "kernel": call.kernel}  # fmt: skip
        if ident not in dump.seen:
            dump.seen.add(ident)
            dump.rows.append(self._chosen_row(dump, base, slug, variant, call))
        if call.timings:
            dump.rows.extend(loser_rows(base, call.timings, call.config))
        dump.write_index()

    def _chosen_row(self, dump: OpDump, base: dict, slug: str, variant: str, call) -> dict:
        row = {**base, "variant": variant, "role": _role(call)}
        if call.timings:
            row["ms"] = _ms(call.timings.get(call.config))
        text = _ttgir_text(call.ret)
        if text is None:
            interp = os.environ.get("TRITON_INTERPRET", "0") == "1"
            row["note"] = INTERPRET_NOTE if interp else "no compiled kernel returned"
            return row
        rel = Path(slug) / dump.kernel_dir(call.kernel) / f"{variant}.ttgir"
        atomic_write_text(dump.root / rel, text)
        row["file"] = rel.as_posix()
        return row

    def on_end(self, op: state.OpState) -> None:
        session = state.active()
        if session is None or not session.plan.ttgir:
            return
        self.dump_for(op).write_index()  # an op that tuned nothing still gets its index


# --------------------------------------------------------------------------- pytest hooks

DUMPER_KEY = pytest.StashKey[TtgirDumper]()


def pytest_configure(config: pytest.Config) -> None:
    dumper = TtgirDumper()
    config.stash[DUMPER_KEY] = dumper
    state.subscribe(on_end=dumper.on_end)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    dumper = session.config.stash.get(DUMPER_KEY, None)
    if dumper is None or state.active() is None:
        return
    from zlbench.plugins import _tuners

    _tuners.install()
    _tuners.patch_packages(_tuners.imported_packages())
    _tuners.add_listener(dumper)


def pytest_unconfigure(config: pytest.Config) -> None:
    dumper = config.stash.get(DUMPER_KEY, None)
    if dumper is None:
        return
    state.unsubscribe(on_end=dumper.on_end)
    tuners = sys.modules.get("zlbench.plugins._tuners")
    if tuners is not None:
        tuners.remove_listener(dumper)

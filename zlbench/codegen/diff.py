"""Compare a baseline compilation with its rebuild (pure: no triton, no files).

A kernel's class is decided by the first stage, in compile order
(``models.codegen.STAGES``: ttir → ttgir → llir → ptx → sass), whose normalised
output differs; stage outputs are compared by their sha256, so no blob is opened
to classify. A stage that only one side has counts as different (skipping a
kernel is allowed only on proof), and a pair with no stage to compare is never
called identical. Where neither side has SASS (no disassembler), the raw cubins'
digests stand in for it: equal cubins prove equal SASS, and unequal ones may
differ only in embedded source paths, so they count as a SASS change.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from zlbench.models.codegen import STAGES, CompileRecord, CompileRequest, CompileResult
from zlbench.models.codegen_screen import (
    RESOURCES,
    CodegenClass,
    KernelScreen,
    Resources,
)
from zlbench.models.run import RowKey

_CLASS_OF_STAGE = {
    "ttir": CodegenClass.TTGIR,
    "ttgir": CodegenClass.TTGIR,
    "llir": CodegenClass.LLIR_PTX,
    "ptx": CodegenClass.LLIR_PTX,
    "sass": CodegenClass.SASS,
}
LOAD_FAILED = "load failed"  # the rebuild worker's error prefix: source not importable
DIFF_LINE_LIMIT = 20000  # lines of one diff file; the rest is cut with a note


def stage_digests(base: CompileResult, cur: CompileResult) -> tuple[dict, dict]:
    """stage -> sha256 of each side's outputs; the raw cubins' digests as "sass"
    when neither side has SASS."""
    a = {name: d.sha256 for name, d in base.stages.items()}
    b = {name: d.sha256 for name, d in cur.stages.items()}
    if "sass" not in a and "sass" not in b and base.cubin_sha256 and cur.cubin_sha256:
        a["sass"], b["sass"] = base.cubin_sha256, cur.cubin_sha256
    return a, b


def first_differing_stage(base: CompileResult, cur: CompileResult) -> str | None:
    """The first stage whose output differs; None when every stage is the same.

    Raises ValueError when the two results have no stage in common at all."""
    a, b = stage_digests(base, cur)
    if not set(a) & set(b):
        raise ValueError("no stage output to compare")
    for stage in STAGES:
        if stage in a or stage in b:
            if a.get(stage) != b.get(stage):
                return stage
    return None


CODE_DIGEST_HEX = 16  # hex digits of a kernel's code digest (KernelScreen.code_digest)


def code_digest(rec: CompileRecord | None) -> str:
    """What a rebuild built, in 16 hex: the sha256 of its stages' digests
    (``{"ttir": sha, ..., "ptx": sha, "sass": sha}`` as sorted JSON, the form
    ``benchmarks/history_sim.py`` stores), the cubin's code digest standing in for SASS
    where no disassembler ran; of ``{"error": its first line}`` where it failed to
    compile; "" where nothing was compiled (no rebuild, its source not loadable).
    Equal digests: the same code, whatever the baseline it was compared with."""
    if rec is None or (rec.result is None and (rec.error or "").startswith(LOAD_FAILED)):
        return ""
    if rec.result is None:
        parts = {"error": (rec.error or "compile failed").splitlines()[0][:300]}
    else:
        parts = {name: d.sha256 for name, d in rec.result.stages.items()}
        if "sass" not in parts and rec.result.cubin_code_sha256:
            parts["cubin"] = rec.result.cubin_code_sha256
        if not parts:
            return ""
    text = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:CODE_DIGEST_HEX]


def resources(result: CompileResult | None) -> Resources | None:
    """A result's resource figures; compile time only when it really compiled."""
    if result is None:
        return None
    compile_s = None if result.cache_hit or not result.times else sum(result.times.values())
    return Resources(
        n_regs=result.n_regs,
        n_spills=result.n_spills,
        shared=result.shared,
        sass_instructions=result.sass_instructions,
        compile_s=compile_s,
    )


def resource_deltas(base: Resources, cur: Resources | None) -> dict[str, float]:
    """current - baseline for every figure both sides know."""
    if cur is None:
        return {}
    out: dict[str, float] = {}
    for name in RESOURCES:
        a, b = getattr(base, name), getattr(cur, name)
        if a is not None and b is not None:
            out[name] = round(b - a, 6) if isinstance(a, float) or isinstance(b, float) else b - a
    return out


def config_text(request: CompileRequest) -> str:
    """``BLOCK=256 num_warps=4 num_stages=3``: constexprs, then the launch config."""
    names = list(request.signature)
    parts = []
    for c in request.constexprs:
        idx = c.path[0] if c.path else None
        name = names[idx] if idx is not None and idx < len(names) else str(c.path)
        parts.append(f"{name}={c.value}")
    cfg = request.config
    parts += [f"num_warps={cfg.num_warps}", f"num_stages={cfg.num_stages}"]
    if cfg.num_ctas != 1:
        parts.append(f"num_ctas={cfg.num_ctas}")
    if cfg.maxnreg is not None:
        parts.append(f"maxnreg={cfg.maxnreg}")
    return " ".join(parts)


def classify(
    base: CompileRecord, cur: CompileRecord | None
) -> tuple[CodegenClass, str | None, str | None]:
    """(class, first differing stage, why) of one baseline kernel and its rebuild."""
    if base.result is None:
        return CodegenClass.MISSING, None, "the baseline record has no compile result"
    if cur is None:
        return CodegenClass.MISSING, None, "no rebuild result"
    if cur.result is None and (cur.error or "").startswith(LOAD_FAILED):
        # The kernel's source could not be found or imported here: nothing was
        # compiled, so nothing is proven (an environment problem, usually).
        return CodegenClass.MISSING, None, cur.error
    if cur.result is None:
        return CodegenClass.FAILED, None, cur.error or "compile failed"
    try:
        stage = first_differing_stage(base.result, cur.result)
    except ValueError as e:
        return CodegenClass.MISSING, None, str(e)
    if stage is None:
        return CodegenClass.IDENTICAL, None, None
    return _CLASS_OF_STAGE[stage], stage, None


def _row_order(r: RowKey) -> tuple:
    return (r.repo, r.run_name, r.op, r.dtype, r.shape, r.occurrence)


def _split_timed(where: Mapping[Any, set[bool | None]]) -> tuple[list, list]:
    """(places with a launch inside a timed region, places with every launch outside)."""
    timed = [w for w, flags in where.items() if True in flags]
    setup = [w for w, flags in where.items() if flags == {False}]
    return timed, setup


def screen_kernel(
    base: CompileRecord,
    cur: CompileRecord | None,
    ops: Iterable[str] = (),
    rows: Iterable[RowKey] = (),
    diff_file: str | None = None,
    op_timed: Mapping[str, set[bool | None]] | None = None,
    row_timed: Mapping[RowKey, set[bool | None]] | None = None,
) -> KernelScreen:
    """The screen's entry for one kernel. ``diff_file`` is kept only for a changed one;
    ``op_timed`` / ``row_timed``: the ``KernelUse.timed`` values of its uses per op
    and per row (collect.BaselineKernels)."""
    status, stage, why = classify(base, cur)
    timed_ops, setup_ops = _split_timed(op_timed or {})
    timed_rows, setup_rows = _split_timed(row_timed or {})
    base_res = resources(base.result) or Resources()
    cur_res = resources(cur.result) if cur is not None else None
    return KernelScreen(
        kernel_id=base.id,
        name=base.request.kernel.name,
        config=config_text(base.request),
        status=status,
        first_stage=stage,
        baseline=base_res,
        current=cur_res,
        deltas=resource_deltas(base_res, cur_res),
        diff_file=diff_file if stage is not None else None,
        error=why,
        notes=list(cur.notes) if cur is not None else [],
        ops=sorted(ops),
        rows=sorted(rows, key=_row_order),
        timed_ops=sorted(timed_ops),
        setup_ops=sorted(setup_ops),
        timed_rows=sorted(timed_rows, key=_row_order),
        setup_rows=sorted(setup_rows, key=_row_order),
        code_digest=code_digest(cur),
        binary_digest=(cur.result.cubin_code_sha256 or "") if cur and cur.result else "",
    )


def count_classes(kernels: list[KernelScreen]) -> dict[str, int]:
    """CodegenClass value -> kernels, every class present (zeros included)."""
    counts = {c.value: 0 for c in CodegenClass}
    for k in kernels:
        counts[k.status.value] += 1
    return counts


def stage_diff(
    kernel_id: str,
    stage: str,
    base: bytes,
    cur: bytes,
    labels: tuple[str, str] = ("baseline", "current"),
) -> str:
    """Unified diff of one stage's two outputs (``labels``: what each side is, "base"
    for the base compiler's rebuild); binary data (a cubin standing in for SASS) gets a
    one-line header naming both sizes."""
    a, b = _lines(base), _lines(cur)
    old, new = labels
    if a is None or b is None:
        return (
            f"# {kernel_id} {stage}: binary outputs differ "
            f"({old} {len(base)} bytes, {new} {len(cur)} bytes)\n"
        )
    lines = list(
        difflib.unified_diff(a, b, f"{old}/{kernel_id}.{stage}", f"{new}/{kernel_id}.{stage}", n=3)
    )
    if len(lines) > DIFF_LINE_LIMIT:
        cut = len(lines) - DIFF_LINE_LIMIT
        lines = lines[:DIFF_LINE_LIMIT] + [f"# ... {cut} more diff lines cut\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def changed_lines(diff: str) -> int | None:
    """Lines a :func:`stage_diff` adds or removes (its ``---``/``+++`` headers not
    counted); None for a binary diff, which has no lines."""
    if not diff.startswith("--- "):
        return None
    return sum(
        1
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))
    )


def _lines(data: bytes) -> list[str] | None:
    """Text lines of a stage output; None for binary data."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None

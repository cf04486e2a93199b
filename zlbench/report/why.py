"""The "why" lines under report.md's regressed table (comment.md keeps them while
they fit): short by construction.

One line per regressed row, at most ``WHY_MAX`` characters, naming the kernel that
explains it (``report.codegen.deciding``: the largest change among the kernels it
ran in its timed region), what changed in it in plain words and its diff file. A
kernel that explains several rows is explained once, in a line before the rows, and
those rows refer to it. The other changed kernels of these rows are named once, in
a last line; their details are in report.html and ``zlbench explain``.

Pure: returns strings. Every string from an artifact goes through
:mod:`zlbench.report.escape`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

from zlbench.models import UNPROVEN_CLASSES, KernelNote, RowVerdict
from zlbench.protocol.layout import op_key
from zlbench.report.codegen import (
    WHY_MAX,
    deciding,
    fit_kernel,
    row_explanation,
)
from zlbench.report.escape import md_code, md_text, one_line
from zlbench.report.facts import key_name, row_op

TITLE = (
    "Why, from the code-generation screen (per row, the largest change among the kernels "
    "it ran in its timed region; every changed kernel and its IR diff are in report.html):"
)
SHARED = 2  # a kernel that explains this many rows gets its own line
SHAPE_MIN = 24  # characters of a row's shape kept before a line drops its figures
NAMED = 8  # other changed kernels named in the last line


def within(render: Callable[[str, int], str], text: object, width: int) -> str:
    """``render(text, n)`` (``md_code`` or ``md_text``) for the largest ``n`` whose
    result is at most ``width`` characters ("" when none is): escaping can only grow a
    text, so the cut is chosen on the escaped form."""
    s = one_line(text)[: max(width, 0) + 1]
    for n in range(min(len(s), width), 0, -1):
        out = render(s, n)
        if len(out) <= width:
            return out
    return ""


def _code(text: object, width: int) -> str:
    return within(md_code, text, width)


def why_outro(
    rows: list[RowVerdict], explanations: Mapping[str, str], names: Mapping[str, str] | None = None
) -> str:
    """The section's outro: :data:`TITLE`, then :func:`why_lines`, then a line per op
    of ``explanations`` (op key -> plain text) that no row's kernels explain; "" when
    there is nothing to say. ``names``: each op's spelling (``facts.op_names``)."""
    names = names or {}
    lines = why_lines(rows, names)
    noted = {op_key(r.key.repo, r.key.run_name) for r in rows if r.codegen}
    seen = dict.fromkeys(op_key(r.key.repo, r.key.run_name) for r in rows)
    for k in seen:
        if k in explanations and k not in noted:
            label = _code(key_name(names, k), 60)
            lines.append(f"- {label}: {within(md_text, explanations[k], WHY_MAX - len(label) - 4)}")
    return "\n".join([TITLE, *lines]) if lines else ""


def why_lines(rows: list[RowVerdict], names: Mapping[str, str] | None = None) -> list[str]:
    """The bullet lines (module docstring), each at most ``WHY_MAX`` characters:
    first one per kernel that explains several rows, then one per row that carries
    its kernels (``RowVerdict.codegen``), in the order of ``rows``, then one naming
    the other changed kernels."""
    explained = [(r, deciding(r.codegen)) for r in rows if r.codegen]
    uses = Counter(n.kernel_id for _, n in explained if n is not None)
    shared: dict[str, KernelNote] = {}
    for _, n in explained:
        if n is not None and uses[n.kernel_id] >= SHARED:
            shared.setdefault(n.kernel_id, n)
    lines = [_kernel_line(n, uses[n.kernel_id]) for n in shared.values()]
    for r, n in explained:
        shared_rows = uses[n.kernel_id] if n and n.kernel_id in shared else 0
        lines.append(_row_line(r, n, shared_rows, names or {}))
    others = _others_line([r for r, _ in explained], set(uses))
    return lines + ([others] if others else [])


def _describe(n: KernelNote, width: int, lead: str = "") -> str:
    """The kernel's name (then ``lead``), what changed, its figures and its diff file,
    the fullest form within ``width`` (``report.codegen.fit_kernel``)."""
    diff = f"diff {_code(n.diff_file, 90)}" if n.diff_file else ""
    return fit_kernel(f"{_code(n.name, 50)}{lead}", n, diff, width)


def _kernel_line(n: KernelNote, rows: int) -> str:
    """A kernel that explains ``rows`` rows, once: ``- `k`, the largest change of 17
    rows below: TTGIR differs; regs +2; diff `…```."""
    return "- " + _describe(n, WHY_MAX - 2, f", the largest change of {rows} rows below")


def _row_line(r: RowVerdict, n: KernelNote | None, shared: int, names: Mapping[str, str]) -> str:
    """``- `op` `dtype` `shape…`: `kernel`: TTGIR differs; figures; diff `…```: the
    shape is cut to what the line leaves it; the figures, then the diff, are left out
    where even ``SHAPE_MIN`` characters of it would not fit."""
    occ = f" #{r.key.occurrence}" if r.key.occurrence else ""
    op = row_op(r.key, names)
    head = f"- {_code(op, 48)} {_code(r.key.dtype, 20)} "
    width = WHY_MAX - len(head) - SHAPE_MIN - 2
    if n is None:
        text = within(md_text, row_explanation(r.codegen), width)
    elif shared:
        text = f"{_code(n.name, 50)} (above: the largest change of {shared} rows)"
    else:
        text = _describe(n, width)
    shape = _code(r.key.shape + occ, WHY_MAX - len(head) - len(text) - 2)
    return f"{head}{shape}: {text}"


def _others_line(rows: list[RowVerdict], explaining: set[str]) -> str:
    """The changed kernels of ``rows`` that explain none of them, each once with the
    number of rows that ran it; "" when there is none."""
    count: Counter[str] = Counter()
    names: dict[str, str] = {}
    for r in rows:
        for n in r.codegen:
            if n.status in UNPROVEN_CLASSES and n.kernel_id not in explaining:
                count[n.kernel_id] += 1
                names[n.kernel_id] = n.name
    if not count:
        return ""
    head = "- Also changed in these rows, never a row's largest change:"
    ranked = sorted(count, key=lambda k: (-count[k], names[k], k))
    shown: list[str] = []
    for i, k in enumerate(ranked[:NAMED]):
        rest = len(ranked) - i - 1
        item = f"{_code(names[k], 50)} ({count[k]} row{'s' if count[k] > 1 else ''})"
        tail = f" and {rest} more" if rest else ""
        if len(f"{head} {', '.join([*shown, item])}{tail}") > WHY_MAX:
            break
        shown.append(item)
    more = len(ranked) - len(shown)
    return f"{head} {', '.join(shown)}" + (f" and {more} more" if more else "")

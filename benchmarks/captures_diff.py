"""Whether two captures of the same ops launched the same (issue 51, docs/replay.md): a
capture at the default budgets, at smaller ones, or ``--untimed``, against another.

    python benchmarks/captures_diff.py DIR_A DIR_B

DIR_A and DIR_B: batch or baseline dirs holding ``<repo>/<op>/codegen/launches.json``.
For each op both hold, each row (run name, dtype, shape, occurrence) is compared by
what a replay rebuilds from it, values apart: its launches in order (kernel id, grid,
count, ``why_not``), each argument's kind, dtype, layout, buffer, alignment and scalar
value, a tensor descriptor's own fields, and whether the row was truncated. Exact
tensor values and statistics are left out (a benchmark draws new inputs in each run).
A scalar that counts calls differs between modes by design (a random kernel's philox
offset advances at every call: v7's randn, uniform, normal and dropout ops).
Prints one line per op that differs (its first difference), then the counts; exit 0
when no shared op differs, 1 when one does, 2 for bad input (one line).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zlbench.errors import ZlbenchError  # noqa: E402
from zlbench.models import LAUNCHES_JSON, LaunchCapture, load_json_model  # noqa: E402
from zlbench.models.replay import ArgSpec, RowLaunches  # noqa: E402

# an argument's fields that are its values, not what the replay launches
VALUES = {"data", "stats", "digest"}


def arg_shape(a: ArgSpec) -> dict:
    """What of an argument a replay launches with, its values apart."""
    return a.model_dump(exclude=VALUES)


def row_shape(row: RowLaunches) -> list:
    launches = [
        (x.kernel_id, x.grid, x.count, x.why_not, [arg_shape(a) for a in x.args])
        for x in row.launches
    ]
    return [row.truncated, row.why_not, launches]


def captures(root: Path) -> dict[str, LaunchCapture]:
    """Op key (``repo/op``) -> its capture, of every launches.json under ``root``."""
    if not root.is_dir():
        raise ZlbenchError(f"{root}: not a dir")
    out = {}
    for path in sorted(root.rglob(f"codegen/{LAUNCHES_JSON}")):
        op_dir = path.parent.parent
        out[op_dir.relative_to(root).as_posix()] = load_json_model(path, LaunchCapture)
    return out


def first_difference(a: LaunchCapture, b: LaunchCapture) -> str | None:
    """The first row that differs between two captures of one op, in a few words."""

    def keyed(c: LaunchCapture) -> dict:
        return {(r.run_name, r.dtype, r.shape, r.occurrence): r for r in c.rows}

    ra, rb = keyed(a), keyed(b)
    if set(ra) != set(rb):
        only = sorted(set(ra) ^ set(rb), key=str)[0]
        return f"row {only[1]} {only[2]} in one capture only"
    for key in sorted(ra, key=str):
        sa, sb = row_shape(ra[key]), row_shape(rb[key])
        if sa != sb:
            what = "truncated" if sa[0] != sb[0] else "why_not" if sa[1] != sb[1] else "launches"
            return f"row {key[1]} {key[2]}: {what} differ"
    return None


def compare(dir_a: Path, dir_b: Path) -> tuple[list[str], int, int, int]:
    """(one line per op that differs, ops compared, ops only in A, ops only in B)."""
    a, b = captures(dir_a), captures(dir_b)
    lines = []
    for key in sorted(set(a) & set(b)):
        why = first_difference(a[key], b[key])
        if why is not None:
            lines.append(f"{key}: {why}")
    return lines, len(set(a) & set(b)), len(set(a) - set(b)), len(set(b) - set(a))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: captures_diff.py DIR_A DIR_B", file=sys.stderr)
        return 2
    try:
        lines, both, only_a, only_b = compare(Path(argv[0]), Path(argv[1]))
    except ZlbenchError as e:
        print(f"captures_diff: {e}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    print(f"{both} op(s) in both: {len(lines)} differ; {only_a} only in A, {only_b} only in B")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""What a record pass captured for the kernel-replay tier (issue 51, docs/replay.md).

    python benchmarks/launches_summary.py BATCH_OR_BASELINE_DIR

Per op with a ``codegen/launches.json``: its rows, their distinct timed launches, how
many are replayable (no ``why_not``, the row not truncated), the ``why_not`` reasons
counted, the rows the capture saw launch no Triton kernel while timed
(``LaunchCapture.launched_nothing``; ``-`` for a capture that lists only rows with a
launch) and its timed calls made before the row was named (``unnamed``), whether every
launch went through the hook (``hooked``: no FlagGems C extension; a row proven to time
no kernel needs it, ``LaunchCapture.proves_no_launch``), the GPU model it ran on, and
the file's bytes raw and xz-compressed per row; then the totals.
"""

from __future__ import annotations

import lzma
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zlbench.models import LAUNCHES_JSON, LaunchCapture, load_json_model  # noqa: E402


def main(root: str) -> int:
    files = sorted(Path(root).rglob(f"codegen/{LAUNCHES_JSON}"))
    if not files:
        print(f"{root}: no codegen/{LAUNCHES_JSON}")
        return 1
    rows = launches = ok_rows = raw = xz = none_timed = unnamed = 0
    why: Counter[str] = Counter()
    for f in files:
        cap = load_json_model(f, LaunchCapture)
        data = f.read_bytes()
        packed = len(lzma.compress(data))
        n = len(cap.rows)
        count = sum(len(r.launches) for r in cap.rows)
        good = sum(
            1
            for r in cap.rows
            if r.launches
            and not r.truncated
            and not r.why_not
            and all(not x.why_not for x in r.launches)
        )
        reasons = Counter(x.why_not for r in cap.rows for x in r.launches if x.why_not)
        op = f.parent.parent.name
        nothing = sum(cap.launched_nothing(r) for r in cap.rows)
        print(
            f"{op:32s} rows={n:3d} launches={count:3d} "
            f"replayable_rows={good:3d} why_not={dict(reasons)} "
            f"none_timed={nothing if cap.lists_every_row else '-'} "
            f"unnamed={cap.unnamed_calls} hooked={'yes' if cap.every_launch_hooked else 'no'} "
            f"gpu={cap.gpu_model or '-'!r} "
            f"bytes/row raw={len(data) / max(n, 1):.0f} xz={packed / max(n, 1):.0f}"
        )
        rows += n
        launches += count
        ok_rows += good
        raw += len(data)
        xz += packed
        why.update(reasons)
        none_timed += nothing
        unnamed += cap.unnamed_calls
    print(
        f"TOTAL ops={len(files)} rows={rows} launches={launches} replayable_rows={ok_rows} "
        f"why_not={dict(why)} none_timed={none_timed} unnamed={unnamed} "
        f"bytes/row raw={raw / max(rows, 1):.0f} xz={xz / max(rows, 1):.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""Where a shared GPU's time went, from a batch's turn log (``gpu_turns.csv``,
zlbench.protocol.turn), one paragraph per batch run in it:

    python benchmarks/turn_log.py FULL|FULL.tgz|gpu_turns.csv [--min-idle S]

FULL: a record-pass dir, or the full.tgz a device call packed (its ``gpu_turns.csv``).
Per run (turns cut where none began or ended for 10 minutes: a resumed pass appends
each call's, and the warm calls of one session fall into one run, their restarts, some
20-30 s each, counted as stretches without a timing too): its wall from the first turn
to the last, the timed turns and the share of the wall they took, the stretches of
``--min-idle`` seconds (20) or more without a timing and their sum, the longest wait
for a turn, and the longest shared holds with the op that held them (logs from
2026-12-02 on; docs/screening.md, "Sharing a GPU").
The seventeenth session's question (docs/measurements.md): are the stretches without
a timing gone once a sweep's compiles ahead give the shared turn up, and whose are
they if not.
"""

from __future__ import annotations

import argparse
import sys
import tarfile
from datetime import datetime, timezone
from pathlib import Path

from zlbench.protocol.turn import SHARED, TIMED
from zlbench.runner.batch.turns import idle_stretches, parse_turns, split_runs

LOG = "gpu_turns.csv"


def read_log(path: Path) -> str:
    """The turn log's text from a dir, a full.tgz or the csv itself."""
    if path.is_dir():
        path = path / LOG
    if not path.is_file():
        raise SystemExit(f"turn_log: no {path}")
    if tarfile.is_tarfile(path):
        with tarfile.open(path) as tar:
            try:
                member = tar.getmember(LOG)
            except KeyError:
                raise SystemExit(f"turn_log: {path} holds no {LOG}") from None
            return tar.extractfile(member).read().decode(errors="replace")
    return path.read_text(errors="replace")


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def report(text: str, min_idle_s: float = 20.0) -> list[str]:
    """The lines printed for a turn log's text."""
    lines = []
    for run in split_runs(parse_turns(text)):
        timed = [t for t in run if t.kind == TIMED]
        start, end = run[0].start, max(t.end for t in run)
        wall = max(end - start, 1e-9)
        busy = sum(t.held_s for t in timed)
        idle = idle_stretches(run, min_idle_s)
        wait = max((t.wait_s for t in timed), default=0.0)
        lines.append(
            f"{_utc(start)} UTC, {wall:.0f} s: {len(timed)} timed turns, timing {busy:.0f} s "
            f"({busy / wall:.0%}); {len(idle)} stretch(es) of {min_idle_s:g} s or more "
            f"without a timing, {sum(b - a for a, b in idle):.0f} s; longest wait {wait:.1f} s"
        )
        shared = sorted((t for t in run if t.kind == SHARED), key=lambda t: -t.held_s)
        for t in shared[:3]:
            lines.append(f"  shared hold {t.held_s:.1f} s by {t.op or '-'} at {_utc(t.start)}")
    return lines or ["turn_log: no turns"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path, help="a record-pass dir, its full.tgz, or gpu_turns.csv")
    ap.add_argument("--min-idle", type=float, default=20.0, metavar="S")
    a = ap.parse_args(argv)
    print("\n".join(report(read_log(a.log), a.min_idle)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

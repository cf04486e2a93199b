"""Rows per GPU-minute and A/A noise of screens run side by side (benchmarks/gpu_screen_speed.sh).

    python benchmarks/screen_speed.py LABEL=DIR_A1,DIR_A2 [LABEL=DIR_B1,DIR_B2 ...]

Each DIR is a batch dir that holds ``wall_s`` (the wall seconds of the whole
``zlbench batch`` command, precompile included, written by the shell script) and
``summary.csv``. Per label: rows measured (SUCCESS rows of summary.csv), wall time,
rows per GPU-minute (rows / wall minutes: the GPU is held for the whole command),
and the A/A noise between its two runs: |speedup_2 / speedup_1 - 1| per row present
in both, as median and p90. Prints one markdown table (docs/measurements.md), then a
second one comparing every other label with the first (the old path): the FlagGems
latency of its run i against the first label's run i (|lat / lat_first - 1|, median
and p90: the two paths measure the same thing) and its rows per GPU-minute as a
multiple of the first label's (mean over runs).
Optional: a ``timings.json`` per run dir (``--phase-timings``) is summed by
benchmarks/phase_breakdown.py, not here.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path


def rows_of(batch: Path, column: str = "speedup") -> dict[tuple[str, str, str, str, str], float]:
    """(repo, run_name, dtype, shape, occurrence) -> ``column`` of each SUCCESS row."""
    out = {}
    with open(batch / "summary.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["status"] == "SUCCESS" and r[column]:
                key = (r["repo"], r["run_name"], r["dtype"], r["shape"], r["occurrence"])
                out[key] = float(r[column])
    return out


def wall_of(batch: Path) -> float:
    return float((batch / "wall_s").read_text().strip())


def noise(a: dict, b: dict) -> tuple[float, float, int]:
    common = sorted(set(a) & set(b))
    devs = sorted(abs(b[k] / a[k] - 1) for k in common if a[k] > 0)
    if not devs:
        return float("nan"), float("nan"), 0
    p90 = devs[min(len(devs) - 1, int(0.9 * (len(devs) - 1) + 0.5))]
    return statistics.median(devs), p90, len(devs)


def line(label: str, dirs: list[Path]) -> str:
    rows = [len(rows_of(d)) for d in dirs]
    walls = [wall_of(d) for d in dirs]
    rate = [r / (w / 60) for r, w in zip(rows, walls, strict=True)]
    walls_txt = " / ".join(f"{w:.0f}" for w in walls)
    rate_txt = " / ".join(f"{x:.1f}" for x in rate)
    if len(dirs) < 2:  # one run: no A/A
        return f"| {label} | {rows[0]} | {walls_txt} | {rate_txt} | – | – | 0 |"
    med, p90, n = noise(rows_of(dirs[0]), rows_of(dirs[1]))
    return f"| {label} | {rows[0]} | {walls_txt} | {rate_txt} | {med:.2%} | {p90:.2%} | {n} |"


def rate(batch: Path) -> float:
    return len(rows_of(batch)) / (wall_of(batch) / 60)


def versus(label: str, dirs: list[Path | None], first: list[Path | None]) -> str:
    """``label``'s runs against the first label's, run i with run i (a run left out on
    either side leaves its pair out)."""
    devs = []
    for a, b in zip(first, dirs, strict=False):
        if a is None or b is None:
            continue
        lat_a, lat_b = rows_of(a, "latency_ms"), rows_of(b, "latency_ms")
        devs += [abs(lat_b[k] / lat_a[k] - 1) for k in set(lat_a) & set(lat_b) if lat_a[k] > 0]
    devs.sort()
    med = statistics.median(devs) if devs else float("nan")
    p90 = devs[min(len(devs) - 1, int(0.9 * (len(devs) - 1) + 0.5))] if devs else float("nan")
    ours, theirs = [d for d in dirs if d], [d for d in first if d]
    gain = statistics.fmean(rate(d) for d in ours) / statistics.fmean(rate(d) for d in theirs)
    return f"| {label} | {gain:.2f}x | {med:.2%} | {p90:.2%} | {len(devs)} |"


def complete(dirs: list[Path]) -> list[Path | None]:
    """Each run dir, or None for one without ``summary.csv`` or ``wall_s`` (a stage
    stopped by the device call's time limit), which is named on stderr."""
    kept: list[Path | None] = []
    for d in dirs:
        if (d / "summary.csv").is_file() and (d / "wall_s").is_file():
            kept.append(d)
        else:
            note = "no summary.csv or wall_s (stopped?): left out"
            print(f"screen_speed: {d}: {note}", file=sys.stderr)
            kept.append(None)
    return kept


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 0 if argv else 2
    print("| path | rows | wall s (run 1 / 2) | rows/GPU-min | A/A median | A/A p90 | compared |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    runs = []
    for arg in argv:
        label, _, dirs = arg.partition("=")
        kept = complete([Path(d) for d in dirs.split(",")])
        if any(kept):
            runs.append((label, kept))
            print(line(label, [d for d in kept if d]))
    if len(runs) > 1:
        first_label, first = runs[0]
        print()
        print(f"| path | rows/GPU-min vs {first_label} | FlagGems latency vs {first_label}: "
              "median | p90 | compared |")  # fmt: skip
        print("|---|---:|---:|---:|---:|")
        for label, dirs in runs[1:]:
            print(versus(label, dirs, first))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

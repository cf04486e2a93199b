"""The results store at scale (issue 52's goal): GATES simulated gates of ROWS rows
each (the whole inventory: ~6,500 rows) written through the store's own write path
(``Store.add_run``: one transaction per gate), then ``zlbench history --row`` for one
row timed as a user runs it (a fresh process) and in-process. Not a test: the numbers
go to docs/measurements.md and docs/history.md.

    python benchmarks/history_store.py --gates 1000 --rows 6500 --store /tmp/h.sqlite
    python benchmarks/history_store.py --gates 100 --store postgresql://...   # PostgreSQL

The rows' names are shaped like real ones (op, dtype, shape text); each row's value
moves ~1 % from gate to gate, with a step now and then; the timed-kernel digests
change every ~100 gates (``--change-every``); one gate in 20 is a REGRESSION somewhere.
A row's digest is one 16-hex hash by default; ``--kernel-digests`` writes it as a gate
records it since the per-kernel code digest (``name@kernel_id=code`` pairs, ``;``),
two kernels of the row's own, so no two rows share a digest (the store keeps each
distinct digest text once: the most it can cost):

    python benchmarks/history_store.py --gates 100 --kernel-digests --change-every 1
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from zlbench.history.store import open_store
from zlbench.models.history import GateRun, RowPoint

DTYPES = ("bfloat16", "float16", "float32")


def row_names(n: int) -> list[tuple[str, str]]:
    """``n`` (row label, op) pairs shaped like the inventory's."""
    out = []
    ops = max(1, n // 12)
    for i in range(n):
        op = f"op{i % ops:04d}"
        dtype = DTYPES[i % 3]
        shape = f"[torch.Size([{1024 * (1 + i % 7)}, {256 * (1 + i % 5)}]), {i}]"
        repo = "main" if i % 10 else "vllm"
        out.append((f"{repo}/{op} {dtype} {shape}", f"{repo}/{op}"))
    return out


def kernel_pairs(j: int, op: str, epoch: int) -> str:
    """Row ``j``'s digest as a gate records it: its two kernels, each
    ``name@kernel_id=code`` (16 hex each), the code a hash of the epoch."""
    pairs = []
    for k in range(2):
        kid = hashlib.sha256(f"{j}:{k}".encode()).hexdigest()[:16]
        code = hashlib.sha256(f"{kid}:{epoch}".encode()).hexdigest()[:16]
        pairs.append(f"{op.split('/')[1]}_kernel{k}@{kid}={code}")
    return ";".join(pairs)


def gate_rows(
    rows, g: int, rng: random.Random, base: list[float], every: int = 100, pairs: bool = False
) -> list[RowPoint]:
    pts = []
    epoch = g // every
    for j, (row, op) in enumerate(rows):
        v = base[j] * (1 + rng.gauss(0, 0.01))
        verdict = "REGRESSION" if (g % 20 == 0 and j % 997 == 0) else "PASS"
        pts.append(
            RowPoint(
                row=row,
                op=op,
                value_us=round(v, 3),
                change=round(v / base[j] - 1, 5),
                verdict=verdict,
                digest=kernel_pairs(j, op, epoch) if pairs else f"{(j * 31 + epoch) % 4096:016x}",
            )  # fmt: skip
        )
    return pts


def build(
    store_url: str, gates: int, nrows: int, seed: int = 52, every: int = 100, pairs: bool = False
) -> float:
    rng = random.Random(seed)
    rows = row_names(nrows)
    base = [rng.uniform(5, 500) for _ in rows]
    t0 = time.monotonic()
    with open_store(store_url) as s:
        for g in range(gates):
            run = GateRun(run_key=f"bench-{g}", commit=f"{g:040x}", gpu="NVIDIA H200",
                          baseline="baselines/v7", instrument="ratio + A/B interleaved",
                          verdict="PASS", runner="sim")  # fmt: skip
            s.add_run(run, gate_rows(rows, g, rng, base, every, pairs))
            if g % 50 == 49:
                el = time.monotonic() - t0
                print(
                    f"  {g + 1} gates, {el:.1f} s ({(g + 1) * nrows / el:,.0f} rows/s)", flush=True
                )
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gates", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=6500)
    ap.add_argument("--store", default="/tmp/zl-history-bench.sqlite")
    ap.add_argument("--reuse", action="store_true", help="time an existing store only")
    ap.add_argument("--change-every", type=int, default=100, metavar="N",
                    help="the kernels' code changes every N gates (default 100)")  # fmt: skip
    ap.add_argument("--kernel-digests", action="store_true",
                    help="digests as name@kernel_id=code pairs, two kernels a row")  # fmt: skip
    args = ap.parse_args()
    is_file = "://" not in args.store or args.store.startswith("sqlite:")
    path = Path(args.store.removeprefix("sqlite:///"))
    if not args.reuse:
        if is_file and path.exists():
            path.unlink()
        print(f"building {args.gates} gates x {args.rows} rows into {args.store}")
        secs = build(args.store, args.gates, args.rows, every=max(1, args.change_every),
                     pairs=args.kernel_digests)  # fmt: skip
        n = args.gates * args.rows
        rate, per = n / secs, secs / args.gates
        print(f"built: {n:,} rows in {secs:.1f} s ({rate:,.0f} rows/s, {per:.2f} s a gate)")
    if is_file:
        size = path.stat().st_size
        print(f"size: {size / 1e6:.1f} MB, {size / args.gates / 1e3:.1f} kB a gate, "
              f"{size / (args.gates * args.rows):.1f} bytes a row")  # fmt: skip
    row = row_names(args.rows)[args.rows // 2][0]
    with open_store(args.store) as s:
        times = []
        for _ in range(5):
            t0 = time.monotonic()
            pts = s.series(row)
            times.append(time.monotonic() - t0)
        op_t0 = time.monotonic()
        op_pts = s.op_series(row.split(" ")[0])
        op_s = time.monotonic() - op_t0
    med = statistics.median(times) * 1e3
    print(f"series of one row: {len(pts)} points, in-process median {med:.1f} ms; "
          f"op_series: {len(op_pts)} points in {op_s * 1e3:.0f} ms")  # fmt: skip
    cmd = [sys.executable, "-m", "zlbench", "history", "--store", args.store, "--row", row]
    walls = []
    for _ in range(3):
        t0 = time.monotonic()
        got = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ})
        walls.append(time.monotonic() - t0)
        assert got.returncode == 0, got.stderr
    lines = got.stdout.count("\n")
    print(f"`zlbench history --row` (a fresh process): {min(walls):.2f} s best, "
          f"{statistics.median(walls):.2f} s median of 3; {lines} lines")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# The record pass, old path vs new, side by side in one device call (issue 29 item 1;
# docs/autotune.md, "Fast record pass"):
#
#   bash benchmarks/record_speed.sh [BUDGET_S]
#
# Records $OPS (ops with big autotune sweeps) twice on one GPU, each time in one
# `zlbench batch` (record mode, one pytest process, its own fresh TRITON_CACHE_DIR and
# tuning DB, as every batch process gets): `old` with --no-aot-compile (each config
# compiles at its first benchmark launch, the GPU waiting), `new` with the default
# (each sweep's configs compiled ahead on the CPU cores). Before both, one untimed
# `import flag_gems` so neither batch pays the first import's bytecode compile. Each
# batch gets half of what is left of BUDGET_S (default 480: ends well inside a
# 9-minute call) and is stopped with SIGINT when it runs out; then compared are the
# ops both finished. Prints, and writes to $OUT/record_speed.md (+ .json): seconds per
# op (ops_status.csv: from the op's BEGIN, the process start-up not included) old vs
# new, the sum, each batch's wall seconds, the ahead-compile lines of the new path
# (ZLBENCH_AOT_COMPILE: sweeps, configs, compiled, failed, seconds) and whether the
# two recorded the same configs (they may differ where two configs time within noise).
#
# Needs $ZLBENCH_FLAGGEMS_DIR and zlbench importable (as benchmarks/gpu_full_screen.sh).
# Env: WORK (runs/record-speed), OPS, SHAPES (ops/shapes_single.yaml), DTYPES (bfloat16),
# GPUS (0), OP_TIMEOUT (200), ORDER ("new old": the new path pays any first-batch cost;
# "old new" to see the order's effect),
# OUT (where the report goes; default $WORK).
set -uo pipefail
BUDGET=${1:-480}
WORK=${WORK:-runs/record-speed}
OPS=${OPS:-"mm@test_mm.py addmm@test_addmm.py bmm@test_bmm.py baddbmm@test_baddbmm.py addbmm layer_norm softmax weight_norm"}
SHAPES=${SHAPES:-ops/shapes_single.yaml}
DTYPES=${DTYPES:-bfloat16}
GPUS=${GPUS:-0}
ORDER=${ORDER:-"new old"}
OUT=${OUT:-$WORK}
mkdir -p "$WORK" "$OUT"
t_start=$SECONDS
echo "=== [$(date -u +%H:%M:%S)] record_speed budget=${BUDGET}s ops: $OPS"

(cd "${ZLBENCH_FLAGGEMS_DIR:-.}" && timeout 120 python3 -c "import flag_gems" >/dev/null 2>&1)
echo "[$(date -u +%H:%M:%S)] warm import done ($((SECONDS - t_start)) s)"

n_left=2
for path in $ORDER; do
  left=$((BUDGET - (SECONDS - t_start) - 25))
  share=$((left / n_left))
  n_left=$((n_left - 1))
  extra=()
  [ "$path" = old ] && extra=(--no-aot-compile)
  rm -rf "$WORK/$path"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  timeout -s INT -k 20 "$share" python3 -m zlbench batch --ops $OPS --shape-file "$SHAPES" \
    --dtypes $DTYPES --gpus "$GPUS" --op-timeout "${OP_TIMEOUT:-200}" --max-retries 0 \
    --out "$WORK/$path" "${extra[@]}" >"$WORK/$path.log" 2>&1
  rc=$?
  mkdir -p "$WORK/$path"
  python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" \
    "$t0" "$(date +%s.%N)" >"$WORK/$path/wall_s"
  echo "[$(date -u +%H:%M:%S)] $path rc=$rc wall=$(cat "$WORK/$path/wall_s")s (limit ${share}s)"
  tail -4 "$WORK/$path.log"
done

python3 - "$WORK" "$OUT" <<'PY'
import csv, json, re, sys
from pathlib import Path

work, out = Path(sys.argv[1]), Path(sys.argv[2])


def ops(path):
    f = work / path / "ops_status.csv"
    rows = list(csv.DictReader(f.open())) if f.is_file() else []
    return {r["run_name"]: r for r in rows}


def aot_lines(path):
    got = {}
    for log in (work / path).glob("*/*/run.log"):
        for m in re.finditer(r"ZLBENCH_AOT_COMPILE (run_name=\S+.*)", log.read_text(errors="replace")):
            kv = dict(p.split("=", 1) for p in m.group(1).split())
            got[kv.pop("run_name")] = kv
    return got


def records(path, name):
    d = work / path / "main" / name / "autotune_records"
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    return json.loads(files[0].read_text()) if files else None


def wall(path):
    f = work / path / "wall_s"
    return float(f.read_text()) if f.is_file() else None


old, new, aot = ops("old"), ops("new"), aot_lines("new")
both = sorted(n for n in old if n in new and old[n]["status"] == new[n]["status"] == "PASS")
lines = ["| op | old s | new s | new/old | ahead: sweeps | configs | compiled | failed | compile s | same records |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
so = sn = 0.0
table = []
for n in both:
    o, w = float(old[n]["seconds"]), float(new[n]["seconds"])
    so, sn = so + o, sn + w
    a = aot.get(n, {})
    same = records("old", n) == records("new", n)
    table.append({"op": n, "old_s": o, "new_s": w, "aot": a, "same_records": same})
    lines.append(f"| {n} | {o:.1f} | {w:.1f} | {w / o:.2f} | {a.get('sweeps', 0)} | "
                 f"{a.get('configs', 0)} | {a.get('compiled', 0)} | {a.get('failed', 0)} | "
                 f"{float(a.get('seconds', 0)):.1f} | {'yes' if same else 'NO'} |")
if both:
    lines.append(f"| **sum** | **{so:.1f}** | **{sn:.1f}** | **{sn / so:.2f}** | | | | | | |")
missing = sorted((set(old) | set(new)) - set(both))
summary = {
    "ops_compared": table, "sum_old_s": so, "sum_new_s": sn,
    "wall_old_s": wall("old"), "wall_new_s": wall("new"),
    "not_compared": {n: [old.get(n, {}).get("status"), new.get(n, {}).get("status")] for n in missing},
}
lines.append("")
lines.append(f"batch wall s: old {summary['wall_old_s']}, new {summary['wall_new_s']} "
             "(process start-up, FlagGems import and codegen/SASS recording included)")
if missing:
    lines.append("not compared (status old, new): " + ", ".join(
        f"{n} ({a}, {b})" for n, (a, b) in summary["not_compared"].items()))
text = "\n".join(lines)
print(text)
(out / "record_speed.md").write_text(text + "\n")
(out / "record_speed.json").write_text(json.dumps(summary, indent=1) + "\n")
PY
echo "=== [$(date -u +%H:%M:%S)] done in $((SECONDS - t_start)) s; report: $OUT/record_speed.md"

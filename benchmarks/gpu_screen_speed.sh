#!/usr/bin/env bash
# Old screen path vs new, side by side on one GPU host, on ops/gate_core.txt
# (docs/screening.md, "Measuring the speed-up"; numbers go to docs/measurements.md):
#
#   benchmarks/gpu_screen_speed.sh STAGE...
#
# Stages (each fits one 10-minute device command on an H200):
#   record   a record-mode batch of $OPS (autotune records + codegen records), the
#            replay root of both paths; not timed against anything (~3 min)
#   old      two replays of it as today: fresh triton cache per process, default
#            warmup/replays (--phase-timings on the second only, see below)
#   new      two replays with --precompile-jobs $JOBS (kernels compiled on the CPU
#            cores into a shared cache before the GPU starts), same budgets
#   budget   two replays with the new path and smaller budgets ($WARMUP_MS, $REPLAYS)
#   report   rows per GPU-minute and A/A noise of every path run so far, and the
#            phase breakdown of the timed runs (prints markdown)
#   pack     tar $WORK (no TTGIR) into $OUT
#
# Every screen's wall time is the whole `zlbench batch` command (precompile
# included), written to <batch>/wall_s. Needs: $ZLBENCH_FLAGGEMS_DIR (FlagGems
# checkout), zlbench importable. Env: WORK (runs/screen-speed), OPS, SHAPES, DTYPES,
# JOBS (CPU cores - 1), WARMUP_MS (25), REPLAYS (5), GPUS (0).
set -uo pipefail
WORK=${WORK:-runs/screen-speed}
OPS=${OPS:-ops/gate_core.txt}
SHAPES=${SHAPES:-ops/shapes_single.yaml}
DTYPES=${DTYPES:-bfloat16}
JOBS=${JOBS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
GPUS=${GPUS:-0}
# shellcheck source=benchmarks/lib_screens.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_screens.sh"
COMMON=(--ops-file "$OPS" --shape-file "$SHAPES" --dtypes $DTYPES --gpus "$GPUS" --op-timeout 600)
mkdir -p "$WORK"

screen() {  # screen OUT_DIR ARGS...: one batch, its wall seconds in OUT_DIR/wall_s
  local out=$1
  shift
  timed_batch "$out" - "${COMMON[@]}" "$@"
}

for stage in "$@"; do
  echo "=== [$(date -u +%H:%M:%S)] stage $stage"
  case $stage in
    record) screen "$WORK/record" ;;
    old)
      screen "$WORK/old-1" --replay-root "$WORK/record"
      screen "$WORK/old-2" --replay-root "$WORK/record" --phase-timings
      ;;
    new)
      screen "$WORK/new-1" --replay-root "$WORK/record" --precompile-jobs "$JOBS"
      screen "$WORK/new-2" --replay-root "$WORK/record" --precompile-jobs "$JOBS" --phase-timings
      ;;
    budget)
      b=(--warmup-ms "${WARMUP_MS:-25}" --replays "${REPLAYS:-5}")
      screen "$WORK/budget-1" --replay-root "$WORK/record" --precompile-jobs "$JOBS" "${b[@]}"
      screen "$WORK/budget-2" --replay-root "$WORK/record" --precompile-jobs "$JOBS" "${b[@]}" --phase-timings
      ;;
    report)
      aa_report "$WORK" old new budget
      for p in old new budget; do
        [ -f "$WORK/$p-2/wall_s" ] && { echo; python3 benchmarks/phase_breakdown.py "$WORK/$p-2"; }
      done
      ;;
    pack) tar czf "$OUT/screen-speed.tgz" --exclude='*.ttgir' --exclude='blobs' "$WORK" && ls -la "$OUT" ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done

#!/usr/bin/env bash
# Neighbour noise (issue 15 item 5): does a replay screen get noisier when the other
# GPU of the host measures at the same time? Run on a 2-GPU host (the lent
# nvidia-h200-x2); numbers go to docs/measurements.md, the default GPU use to
# docs/screening.md.
#
#   benchmarks/gpu_neighbours.sh [STAGE...]      default: solo pair report
#
#   solo    two replays of $OPS against $BASE on GPU 0, one after the other, GPU 1 idle
#   pair    two rounds of two replays at once: GPU 0 and GPU 1, each its own batch
#   report  A/A noise (|speedup_2 / speedup_1 - 1| per row, median and p90) of
#           solo-1 vs solo-2, pair0-1 vs pair0-2, pair1-1 vs pair1-2, and wall times
#           (benchmarks/screen_speed.py); judge a run against the baseline with
#           `zlbench gate --baseline $BASE --results $WORK/pair0-1`
#   pack    tar $WORK into $OUT
# Each replay is a plain `zlbench batch --replay-root $BASE` (the gate's measure step).
# Needs: 2 CUDA GPUs, FlagGems checkout of $BASE's commit in $ZLBENCH_FLAGGEMS_DIR,
# zlbench importable. Env: WORK (runs/neighbours), OPS (ops/gate_core.txt),
# BASE (baselines/v2), DTYPES (bfloat16). About 4 replays' wall time (~9 min for gate_core on an H200).
set -uo pipefail
WORK=${WORK:-runs/neighbours}
OPS=${OPS:-ops/gate_core.txt}
BASE=${BASE:-baselines/v2}
DTYPES=${DTYPES:-bfloat16} # the baseline's (manifest dtypes), as the gate replays
# shellcheck source=benchmarks/lib_screens.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_screens.sh"
mkdir -p "$WORK"
stamp() { date -u +%H:%M:%S; }

replay() { # replay GPU OUT: one replay batch on that GPU (log: OUT.log); wall in OUT/wall_s
  timed_batch "$2" "$2.log" --ops-file "$OPS" --replay-root "$BASE" \
    --shape-file "$BASE/shapes.yaml" --dtypes $DTYPES --gpus "$1"
}

stages=("$@"); [ ${#stages[@]} -eq 0 ] && stages=(solo pair report)
for stage in "${stages[@]}"; do
  echo "=== [$(stamp)] stage $stage"
  case $stage in
    solo)
      replay 0 "$WORK/solo-1"
      replay 0 "$WORK/solo-2"
      ;;
    pair)
      for i in 1 2; do
        replay 0 "$WORK/pair0-$i" &
        replay 1 "$WORK/pair1-$i" &
        wait
      done
      ;;
    report) aa_report "$WORK" solo pair0 pair1 ;;
    pack) tar czf "${OUT:?}/neighbours.tgz" --exclude='*.ttgir' --exclude='codegen' "$WORK" && ls -la "$OUT" ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done

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
#   old-N    one replay as today (N = 1, 2, ...; --phase-timings on N >= 2), so the
#            paths can be interleaved: old-1 share4-1 old-2 share4-2
#   shareK-N one replay with --gpu-share K (K processes on the GPU, timing in turns;
#            no precompile: each process compiles outside its turns; long ops' rows
#            cut into parts over the processes, --split-rows auto)
#   nosplitK-N  the same with --split-rows off (each op whole in one process)
#   sbudgetK-N  shareK-N with the smaller timing budget ($WARMUP_MS, $REPLAYS)
#   preshareK-N  the same with --precompile-jobs $JOBS (compiling while the processes
#            start; each waits for it before its first op)
#   report   rows per GPU-minute and A/A noise of every path run so far, each path
#            against old, and the phase breakdown of the timed runs (prints markdown)
#   pack     tar $WORK (no TTGIR) into $OUT
#
# Every screen's wall time is the whole `zlbench batch` command (precompile
# included), written to <batch>/wall_s. Needs: $ZLBENCH_FLAGGEMS_DIR (FlagGems
# checkout), zlbench importable. Env: WORK (runs/screen-speed), OPS, SHAPES, DTYPES,
# JOBS (CPU cores - 1), WARMUP_MS (25), REPLAYS (5), GPUS (0), ROOT (the replay root:
# $WORK/record, or a baseline dir such as baselines/v2 with SHAPES=baselines/v2/shapes.yaml).
set -uo pipefail
WORK=${WORK:-runs/screen-speed}
OPS=${OPS:-ops/gate_core.txt}
SHAPES=${SHAPES:-ops/shapes_single.yaml}
DTYPES=${DTYPES:-bfloat16}
JOBS=${JOBS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
GPUS=${GPUS:-0}
ROOT=${ROOT:-$WORK/record}
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
      screen "$WORK/old-1" --replay-root "$ROOT"
      screen "$WORK/old-2" --replay-root "$ROOT" --phase-timings
      ;;
    new)
      screen "$WORK/new-1" --replay-root "$ROOT" --precompile-jobs "$JOBS"
      screen "$WORK/new-2" --replay-root "$ROOT" --precompile-jobs "$JOBS" --phase-timings
      ;;
    budget)
      b=(--warmup-ms "${WARMUP_MS:-25}" --replays "${REPLAYS:-5}")
      screen "$WORK/budget-1" --replay-root "$ROOT" --precompile-jobs "$JOBS" "${b[@]}"
      screen "$WORK/budget-2" --replay-root "$ROOT" --precompile-jobs "$JOBS" "${b[@]}" --phase-timings
      ;;
    old-[0-9])
      t=(); [ "${stage#old-}" -ge 2 ] && t=(--phase-timings)
      screen "$WORK/$stage" --replay-root "$ROOT" "${t[@]}"
      ;;
    share[0-9]-[0-9])
      k=${stage#share}; k=${k%-*}
      t=(); [ "${stage##*-}" -ge 2 ] && t=(--phase-timings)
      screen "$WORK/$stage" --replay-root "$ROOT" --gpu-share "$k" "${t[@]}"
      ;;
    nosplit[0-9]-[0-9])
      k=${stage#nosplit}; k=${k%-*}
      t=(); [ "${stage##*-}" -ge 2 ] && t=(--phase-timings)
      screen "$WORK/$stage" --replay-root "$ROOT" --gpu-share "$k" --split-rows off "${t[@]}"
      ;;
    sbudget[0-9]-[0-9])
      k=${stage#sbudget}; k=${k%-*}
      t=(); [ "${stage##*-}" -ge 2 ] && t=(--phase-timings)
      screen "$WORK/$stage" --replay-root "$ROOT" --gpu-share "$k" \
        --warmup-ms "${WARMUP_MS:-25}" --replays "${REPLAYS:-5}" "${t[@]}"
      ;;
    preshare[0-9]-[0-9])
      k=${stage#preshare}; k=${k%-*}
      t=(); [ "${stage##*-}" -ge 2 ] && t=(--phase-timings)
      screen "$WORK/$stage" --replay-root "$ROOT" --gpu-share "$k" --precompile-jobs "$JOBS" "${t[@]}"
      ;;
    report)
      shared=$(cd "$WORK" && ls -d share[0-9]-2 nosplit[0-9]-2 sbudget[0-9]-2 preshare[0-9]-2 2>/dev/null | sed 's/-2$//' | tr '\n' ' ')
      # shellcheck disable=SC2086
      aa_report "$WORK" old new budget $shared
      for p in old new budget $shared; do
        [ -f "$WORK/$p-2/wall_s" ] && { echo; python3 benchmarks/phase_breakdown.py "$WORK/$p-2"; }
      done
      ;;
    pack) tar czf "$OUT/screen-speed.tgz" --exclude='*.ttgir' --exclude='blobs' "$WORK" && ls -la "$OUT" ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done

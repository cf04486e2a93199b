#!/usr/bin/env bash
# One GPU session's work on a lent H200 (or any CUDA runner), in stages, so that
# every number in docs/measurements.md can be re-made:
#
#   benchmarks/gpu_session.sh STAGE... 
#
# Stages: smoke gputests refresh aa overhead. Needs: FlagGems checkout in
# $ZLBENCH_FLAGGEMS_DIR; zlbench importable (pip install -e . or PYTHONPATH).
# Writes under $WORK (default ./runs/gpu-session); `pack` tars what docs need into $OUT.
set -uo pipefail
WORK=${WORK:-runs/gpu-session}
OPS=${OPS:-ops/gate_core.txt}
BASE=${BASE:-baselines/v1}
ZL=(python3 -m zlbench)
mkdir -p "$WORK"
stamp() { date -u +%H:%M:%S; }
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "[$(stamp)] rc=$rc ${SECONDS}-${t0}=$((SECONDS - t0))s: $*" | tee -a "$WORK/timings.txt"; return $rc; }

for stage in "$@"; do
  echo "=== [$(stamp)] stage $stage"
  case $stage in
    smoke)
      timed "${ZL[@]}" run --op softmax --dtypes bfloat16 --mode cudagraph --out "$WORK/smoke-record" || exit 1
      timed "${ZL[@]}" run --op softmax --dtypes bfloat16 --mode cudagraph \
        --replay-from "$WORK/smoke-record" --out "$WORK/smoke-replay" || exit 1
      ;;
    gputests)
      ZLBENCH_GPU_NUMBERS="$WORK/gpu_numbers.json" timed python3 -m pytest -q -m gpu tests/gpu -k "${GPU_K:-not nothing}" 2>&1 | tee "$WORK/gputests.log"
      ;;
    refresh)
      timed "${ZL[@]}" baseline refresh --out "$BASE" --ops-file "$OPS" --repeats "${REPEATS:-3}" \
        --op-timeout "${OP_TIMEOUT:-300}" --keep-work "$WORK/refresh-work" 2>&1 | tee "$WORK/refresh.log"
      ;;
    aa)
      for i in $(seq 1 "${AA_RUNS:-3}"); do
        timed "${ZL[@]}" gate --baseline "$BASE" --out "$WORK/aa-$i" 2>&1 | tail -30 | tee "$WORK/aa-$i.log"
      done
      ;;
    overhead)
      for pp in 1 0; do
        extra=(); [ "$pp" = 1 ] && extra=(--per-process 1)
        timed "${ZL[@]}" batch --ops-file "$OPS" --replay-root "$BASE" --shape-file "$BASE/shapes.yaml" \
          --dtypes bfloat16 --out "$WORK/overhead-pp$pp" "${extra[@]}" 2>&1 | tail -8
      done
      ;;
    pack)
      tar czf "$OUT/session.tgz" --exclude='*.ttgir' "$WORK" "$BASE" 2>/dev/null
      tar czf "$OUT/baseline.tgz" "$BASE" 2>/dev/null
      ls -la "$OUT"
      ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done

#!/usr/bin/env bash
# A gate under a compiler that breaks most kernels (issue 15): it must finish within
# 1.5x an A/A gate's wall time and name the failure once (batch.json "systemic").
#
#   benchmarks/gpu_broken_compiler.sh [STAGE...]     default: copies aa broken check
#
#   copies  $WORK/triton/{same,broken}: symlink copies of the installed triton; broken's
#           CUDA launcher raises SystemError on every launch (ZL_BROKEN=1)
#   aa      one gate of $OPS against $BASE with the unchanged copy first on PYTHONPATH
#   broken  the same gate with the broken copy (expected: every op FAILED, no row measured:
#           ERROR, exit 2 "nothing measured", the systemic line leading the report)
#   check   wall times (timings.txt) and the diagnosis line (benchmarks/broken_triton.py)
# Needs: a CUDA GPU, FlagGems checkout in $ZLBENCH_FLAGGEMS_DIR, zlbench importable.
set -uo pipefail
WORK=${WORK:-runs/gpu-broken}
OPS=${OPS:-ops/gate_core.txt}
BASE=${BASE:-baselines/v2}
ZL=(python3 -m zlbench)
TOOLS=(python3 benchmarks/broken_triton.py)
mkdir -p "$WORK"
stamp() { date -u +%H:%M:%S; }
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "[$(stamp)] rc=$rc $((SECONDS - t0))s: $*" | tee -a "$WORK/timings.txt"; return $rc; }
gate() { # gate COPY OUT: zlbench gate with that triton copy first on PYTHONPATH
  local copy=$1 out=$2
  rm -rf "${WORK:?}/$out"
  ZL_BROKEN=1 PYTHONPATH="$WORK/triton/$copy${PYTHONPATH:+:$PYTHONPATH}" timed "${ZL[@]}" gate \
    --baseline "$BASE" --ops-file "$OPS" --out "$WORK/$out" 2>&1 | tail -40 | tee "$WORK/$out.log"
}

stages=("$@"); [ ${#stages[@]} -eq 0 ] && stages=(copies aa broken check)
for stage in "${stages[@]}"; do
  echo "=== [$(stamp)] stage $stage"
  case $stage in
    copies) rm -rf "$WORK/triton" && "${TOOLS[@]}" copies "$WORK/triton" || exit 1 ;;
    aa) gate same aa ;;
    broken) gate broken broken ;;
    check) "${TOOLS[@]}" check "$WORK" || exit 1 ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done

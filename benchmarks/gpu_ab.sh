#!/usr/bin/env bash
# Same-runner A/B against the base compiler on a GPU host (issue 12; docs/judging.md
# "A/B against the base compiler", numbers in docs/measurements.md).
#
#   benchmarks/gpu_ab.sh [STAGE...]        default: copies aa regress stale summary
#
# The base is the installed triton (given as an unchanged copy, a site dir, so that it
# comes before the PR's copy on PYTHONPATH); the PR is a copy of triton first on
# PYTHONPATH (benchmarks/ab_tools.py copies):
#   copies   $WORK/triton/{same,base,patched}: same = unchanged, patched = $PATCH (default
#            no_accelerate_matmul: a TTGIR pass removed, every tl.dot kernel gets slower)
#   aa       $AA_GATES A/A gates of $OPS with --full-ab (PR = the unchanged copy): the
#            paired A/A distribution over every row, false alarms per threshold
#   regress  one default gate (A/B of the suspects only), PR = the patched copy: the
#            matmul rows must be REGRESSION against the base (exit 1)
#   stale    one default gate, PR = the unchanged copy, against a copy of $BASE whose
#            $STALE_OP rows were made 10 % faster: reported PASS, inherited (exit 0)
#   summary  the tables for the docs (ab_tools.py aa / rows) and the wall times
# Needs: a CUDA GPU, FlagGems checkout in $ZLBENCH_FLAGGEMS_DIR, zlbench importable.
set -uo pipefail
WORK=${WORK:-runs/gpu-ab}
OPS=${OPS:-ops/gate_core.txt}
BASE=${BASE:-baselines/v2}
AA_GATES=${AA_GATES:-5}
AA_FIRST=${AA_FIRST:-1} # gates aa-$AA_FIRST ... (split the A/A gates over several calls)
ROUNDS=${ROUNDS:-3}
STALE_OP=${STALE_OP:-softmax}
PATCH=${PATCH:-no_accelerate_matmul}
ZL=(python3 -m zlbench)
TOOLS=(python3 benchmarks/ab_tools.py)
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd) # absolute: the workers run in the FlagGems checkout
stamp() { date -u +%H:%M:%S; }
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "[$(stamp)] rc=$rc $((SECONDS - t0))s: $*" | tee -a "$WORK/timings.txt"; return $rc; }
gate() { # gate PR_COPY OUT [ARGS...]: zlbench gate with the PR's triton first on PYTHONPATH
  local pr=$1 out=$2; shift 2
  PYTHONPATH="$WORK/triton/$pr${PYTHONPATH:+:$PYTHONPATH}" timed "${ZL[@]}" gate \
    --ops-file "$OPS" --base-compiler "$WORK/triton/base" --ab-rounds "$ROUNDS" --out "$WORK/$out" "$@" \
    2>&1 | tail -25 | tee "$WORK/$out.log"
}

stages=("$@"); [ ${#stages[@]} -eq 0 ] && stages=(copies aa regress stale summary)
for stage in "${stages[@]}"; do
  echo "=== [$(stamp)] stage $stage"
  case $stage in
    copies)
      rm -rf "$WORK/triton" && "${TOOLS[@]}" copies "$WORK/triton" --patch "$PATCH" || exit 1
      ;;
    aa)
      for i in $(seq "$AA_FIRST" $((AA_FIRST + AA_GATES - 1))); do
        gate same "aa-$i" --baseline "$BASE" --full-ab
      done
      ;;
    regress)
      gate patched regress --baseline "$BASE"
      ;;
    stale)
      rm -rf "$WORK/stale-baseline"
      "${TOOLS[@]}" stale "$BASE" "$WORK/stale-baseline" --op "$STALE_OP" || exit 1
      gate same stale --baseline "$WORK/stale-baseline"
      ;;
    summary)
      "${TOOLS[@]}" aa "$WORK"/aa-[0-9]* | tee "$WORK/aa-summary.txt"
      for g in regress stale; do
        [ -f "$WORK/$g/verdict.json" ] && "${TOOLS[@]}" rows "$WORK/$g" | tee "$WORK/$g-rows.txt"
      done
      cat "$WORK/timings.txt"
      ;;
    pack)
      tar czf "${OUT:?}/gpu-ab.tgz" --exclude='*.ttgir' --exclude='triton' "$WORK" 2>/dev/null
      ls -la "$OUT"
      ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done

#!/usr/bin/env bash
# Codegen records on the GPU host (docs/codegen.md): record every compiled kernel
# during a gate_core replay screen, then rebuild them with the same triton (must be
# 0 changed) and with patched tritons (only the patched kernels/stages change).
#
#   benchmarks/gpu_codegen.sh [STAGE...]      default: record sizes worker same patched
#
# Stages:
#   record   zlbench batch (replay of $BASE, bfloat16) into $WORK/batch: every op's
#            <run_dir>/codegen/ is written by the codegen plugin
#   sizes    kernels and compressed bytes per kernel
#   worker   rebuild with this triton by the worker alone (one process, all kernels
#            merged): every kernel must be identical (independent of `zlbench codegen`)
#   same     `zlbench codegen` of $CG_BASE with this triton for each --jobs in
#            $JOBS_LIST (timed)
#   patched  `zlbench codegen` of $CG_BASE with each patched triton of
#            tests/codegen_support.py
#   CG_BASE  what same and patched screen: $WORK/batch (the record stage's), or a
#            baseline dir (the whole inventory's: CG_BASE=<v6> ... same patched)
# Needs: FlagGems checkout in $ZLBENCH_FLAGGEMS_DIR (src/ importable), zlbench importable.
set -uo pipefail
WORK=${WORK:-runs/gpu-codegen}
OPS=${OPS:-ops/gate_core.txt}
BASE=${BASE:-baselines/v1}
JOBS=${JOBS:-16}
JOBS_LIST=${JOBS_LIST:-"1 4 8 16"}
PATCHES=${PATCHES:-"no_accelerate_matmul ptxas_O0"}
CG_BASE=${CG_BASE:-$WORK/batch}
ZL=(python3 -m zlbench)
CHECK=(python3 benchmarks/codegen_check.py)
mkdir -p "$WORK"
stamp() { date -u +%H:%M:%S; }
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "[$(stamp)] rc=$rc $((SECONDS - t0))s: $*" | tee -a "$WORK/timings.txt"; return $rc; }

stages=("$@"); [ ${#stages[@]} -eq 0 ] && stages=(record sizes worker same patched)
for stage in "${stages[@]}"; do
  echo "=== [$(stamp)] stage $stage"
  case $stage in
    record)
      timed "${ZL[@]}" batch --ops-file "$OPS" --replay-root "$BASE" --shape-file "$BASE/shapes.yaml" \
        --dtypes bfloat16 --out "$WORK/batch" 2>&1 | tail -15
      ;;
    sizes)
      "${CHECK[@]}" sizes "$WORK/batch" | tee "$WORK/sizes.txt"
      ;;
    worker)
      "${CHECK[@]}" merge "$WORK/batch" "$WORK/merged.json"
      timed python3 -m zlbench.plugins.compiler.rebuild "$WORK/merged.json" "$WORK/rebuild-same"
      mkdir -p "$WORK/recorded" && cp "$WORK/merged.json" "$WORK/recorded/index.json"
      "${CHECK[@]}" compare "$WORK/recorded" "$WORK/rebuild-same" | tail -20 | tee "$WORK/same-worker.txt"
      ;;
    same)
      for j in $JOBS_LIST; do
        timed "${ZL[@]}" codegen --baseline "$CG_BASE" --jobs "$j" --out "$WORK/cg-same-j$j" 2>&1 | tail -3
      done
      ;;
    patched)
      for p in $PATCHES; do
        site=$("${CHECK[@]}" patch "$p" "$WORK/site-$p" | tail -1) || exit 1
        PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" timed "${ZL[@]}" codegen --baseline "$CG_BASE" \
          --jobs "$JOBS" --out "$WORK/cg-$p" 2>&1 | tail -5
        head -30 "$WORK/cg-$p/codegen.md"
      done
      ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done

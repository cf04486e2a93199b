#!/usr/bin/env bash
# The whole-inventory baseline on a GPU host (issue 29, docs/baselines.md "v6",
# numbers in docs/measurements.md): its codegen screen on all the host's cores under
# the unchanged and a patched compiler, and a batch of named ops with another shape file.
#
#   benchmarks/gpu_v6.sh BUDGET_S STAGE...
#
# Stages (skipped when the estimate, the stage's last word after a colon, no longer fits
# BUDGET_S; e.g. same:300):
#   unpack       baselines/v6 from $V6_TAR (a tar.xz of baselines/v6 carried beside the
#                tree: the checked-out dir is larger than a call may carry) unless there
#   same         `zlbench codegen --baseline $V6 --jobs $JOBS` with the installed triton
#                (the one that recorded v6: 0 changed is the expected answer)
#   patched      the same with each patched triton of $PATCHES (tests/codegen_support.py)
#                first on PYTHONPATH, a fresh TRITON_CACHE_DIR each
#   ops          `zlbench batch` of the ops in $OPS_LIST (space separated) with
#                --shape-file $SHAPES_TRY into $W/ops (record mode, as the record pass)
#   pack         each screen's codegen.md / codegen.json, timings.txt and the ops batch's
#                ops_status.csv, summary.csv and run.log tails into $OUT/v6.tgz
# Env: V6 (baselines/v6), V6_TAR (.cache/carry/v6.tar.xz), W (/tmp/v6w), JOBS (nproc),
# PATCHES (no_accelerate_matmul), OPS_LIST, SHAPES_TRY. Needs $ZLBENCH_FLAGGEMS_DIR,
# zlbench importable (benchmarks/device_env.sh).
set -u
BUDGET=$1
shift
V6=${V6:-baselines/v6}
V6_TAR=${V6_TAR:-.cache/carry/v6.tar.xz}
W=${W:-/tmp/v6w}
JOBS=${JOBS:-$(nproc)}
PATCHES=${PATCHES:-no_accelerate_matmul}
mkdir -p "$W"
LOG=${OUT:-$W}/v6.log
# shellcheck source=benchmarks/lib_stages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_stages.sh"
stages_begin "$BUDGET" "$LOG"
timed() { # timed NAME CMD...: CMD cut 20 s before the budget, its wall in timings.txt
  local name=$1 t0=$SECONDS rc
  shift
  timeout -s INT -k 15 "$(($(left) - 20))" "$@" >"$W/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc wall=$((SECONDS - t0))s" | tee -a "$W/timings.txt" | tee -a "$LOG"
  tail -4 "$W/$name.log" | tee -a "$LOG"
}
for spec in "$@"; do
  stage_fits "$spec" || continue
  say "stage $stage"
  case $stage in
    unpack)
      [ -f "$V6/manifest.yaml" ] || tar xJf "$V6_TAR" -C "$(dirname "$V6")" || exit 2
      du -sh "$V6" | tee -a "$LOG" ;;
    same)
      TRITON_CACHE_DIR=$W/cache-same timed cg-same python3 -m zlbench codegen --baseline "$V6" \
        --jobs "$JOBS" --out "$W/cg-same" ;;
    patched)
      for p in $PATCHES; do
        site=$(python3 benchmarks/codegen_check.py patch "$p" "$W/site-$p" | tail -1) || exit 1
        PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" TRITON_CACHE_DIR=$W/cache-$p \
          timed "cg-$p" python3 -m zlbench codegen --baseline "$V6" --jobs "$JOBS" --out "$W/cg-$p"
      done ;;
    ops)
      # shellcheck disable=SC2086
      timed ops python3 -m zlbench batch --ops $OPS_LIST --shape-file "$SHAPES_TRY" \
        --gpu-share 3 --out "$W/ops" ;;
    pack)
      (cd "$W" && tar czf "${OUT:-$W}/v6.tgz" --exclude='blobs' --exclude='*.gz' \
        --exclude='autotune_records' --exclude='codegen' -- *.txt *.log \
        $(ls -d cg-*/codegen.md cg-*/*.json ops/ops_status.csv ops/summary.csv ops/*/*/run.log \
          ops/*/*/result.json 2>/dev/null))
      ls -la "${OUT:-$W}" ;;
    *) say "unknown stage $stage" ;;
  esac
done

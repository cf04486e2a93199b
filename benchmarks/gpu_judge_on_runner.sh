#!/usr/bin/env bash
# "Judge on the runner" on a GPU host (docs/judging.md, docs/measurements.md): A/A gates
# with the interleaved A/B, a broad compiler change, a one-sided --time all gate of the
# same change, and a compiler that cannot compile.
#
#   benchmarks/gpu_judge_on_runner.sh BUDGET_S STAGE...
#
# Stages (skipped when the estimate no longer fits BUDGET_S; the estimate is the stage's
# last word after a colon, e.g. aa-core-1:90):
#   host          which machine this is: GPU name, UUID, serial, PCI bus, driver, boot id
#                 (two calls on one host share the UUID; docs/measurements.md counts hosts)
#   copies        $W/triton/{same,base,patched,no_compile} (benchmarks/ab_tools.py copies):
#                 same and base unchanged, patched without the coalescing TTGIR pass,
#                 no_compile raising in make_ttgir
#   aa-core-N     A/A: the default gate of ops/gate_core.txt against $V2, PR = same, base = base
#   aafull-core-N the same with --full-ab (every op timed and paired: the A/A noise)
#   aa-pr-N       A/A: the default gate of ops/tiers/pr.txt against $V3
#   aafull-pr-N   the same with --full-ab
#   aa-v4-N, aafull-v4-N  the same two against $V4 (v3 plus the timed-kernel attribution)
#   patched-v4    the default gate of gate_core against $V4 with PR = patched
#   aa-v5-N, patched-v5  the same against $V5 (v3 plus the attribution of the narrowed
#                 timed region, compact layout)
#   aa-v6-N, patched-v6  the default gate of ops/tiers/pr.txt against $V6 (the whole
#                 inventory's record pass), PR = same resp. patched; patched-v6 with
#                 --time-budget $V6_BUDGET (the screen of v6's 5973 kernels alone took
#                 343 s under this change on 15 jobs, 2026-12-03: estimate it ~420)
#   patched       the default gate of gate_core against $V2 with PR = patched
#   patchedfull   the same with --full-ab --time all (the whole broad change paired)
#   timeall       the one-sided gate of the same change: --time all, no base compiler
#   nocompile     the default gate with PR = no_compile
#   swap-core-N   aa-core-N with the two copies' roles swapped (PR = base, base = same)
#   pack          verdicts, reports, steps, pairs, logs into $OUT/judge.tgz
# Env: W (/tmp/w), V2 (baselines/v2), V3 (baselines/v3), V4 (baselines/v4), V5 (baselines/v5),
# V6 (baselines/v6), V6_BUDGET (90), JOBS (nproc - 1). Needs:
# $ZLBENCH_FLAGGEMS_DIR, zlbench importable, a CUDA GPU.
set -u
BUDGET=$1; shift
W=${W:-/tmp/w}; mkdir -p "$W"
V2=${V2:-baselines/v2}; V3=${V3:-baselines/v3}; V4=${V4:-baselines/v4}; V5=${V5:-baselines/v5}
V6=${V6:-baselines/v6}
V6_BUDGET=${V6_BUDGET:-90}
JOBS=${JOBS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
LOG=${OUT:-$W}/log.txt
# shellcheck source=benchmarks/lib_stages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_stages.sh"
stages_begin "$BUDGET" "$LOG"
gate() { # gate NAME PR_COPY ARGS...: one zlbench gate with that triton copy first on PYTHONPATH
  local name=$1 pr=$2; shift 2
  local t0; t0=$(date +%s.%N)
  say "start $name (PR=$pr): $*"
  PYTHONPATH="$W/triton/$pr${PYTHONPATH:+:$PYTHONPATH}" timeout -s INT -k 20 "$(( $(left) - 30 ))" \
    python3 -m zlbench gate --codegen-jobs "$JOBS" --out "$W/$name" "$@" > "$W/$name.log" 2>&1
  local rc=$?
  local w; w=$(python3 -c "import sys;print(round(float(sys.argv[2])-float(sys.argv[1]),1))" "$t0" "$(date +%s.%N)")
  echo "$name rc=$rc wall=$w" >> "$W/walls.txt"
  say "end $name rc=$rc wall=${w}s"; grep -E "^(PASS|FAIL|ERROR)" "$W/$name.log" | tail -1 | cut -c1-400 | tee -a "$LOG"
}
core=(--baseline "$V2" --ops-file ops/gate_core.txt)
prt=(--baseline "$V3" --ops-file ops/tiers/pr.txt)
pr4=(--baseline "$V4" --ops-file ops/tiers/pr.txt)
pr5=(--baseline "$V5" --ops-file ops/tiers/pr.txt)
pr6=(--baseline "$V6" --ops-file ops/tiers/pr.txt)
ab=(--base-compiler "$W/triton/base")
for spec in "$@"; do
  stage_fits "$spec" || continue  # pack always runs (benchmarks/lib_stages.sh)
  case $stage in
    host)
      { nvidia-smi --query-gpu=name,uuid,serial,pci.bus_id,driver_version,clocks.max.sm \
          --format=csv,noheader; echo "boot_id $(cat /proc/sys/kernel/random/boot_id)";
        echo "hostname $(hostname)"; } 2>&1 | tee "$W/host.txt" | tee -a "$LOG" ;;
    copies) python3 benchmarks/ab_tools.py copies "$W/triton" --patch no_coalesce --also no_compile | tee -a "$LOG" ;;
    aa-core-*) gate "$stage" same "${core[@]}" "${ab[@]}" ;;
    aafull-core-*) gate "$stage" same "${core[@]}" "${ab[@]}" --full-ab ;;
    aa-pr-*) gate "$stage" same "${prt[@]}" "${ab[@]}" ;;
    aafull-pr-*) gate "$stage" same "${prt[@]}" "${ab[@]}" --full-ab ;;
    aa-v4-*) gate "$stage" same "${pr4[@]}" "${ab[@]}" ;;
    aafull-v4-*) gate "$stage" same "${pr4[@]}" "${ab[@]}" --full-ab ;;
    patched-v4) gate "$stage" patched --baseline "$V4" --ops-file ops/gate_core.txt "${ab[@]}" ;;
    aa-v5-*) gate "$stage" same "${pr5[@]}" "${ab[@]}" ;;
    patched-v5) gate "$stage" patched --baseline "$V5" --ops-file ops/gate_core.txt "${ab[@]}" ;;
    aa-v6-*) gate "$stage" same "${pr6[@]}" "${ab[@]}" ;;
    patched-v6) gate "$stage" patched "${pr6[@]}" "${ab[@]}" --time-budget "$V6_BUDGET" ;;
    patched) gate "$stage" patched "${core[@]}" "${ab[@]}" ;;
    patchedfull) gate "$stage" patched "${core[@]}" "${ab[@]}" --full-ab ;;
    timeall) gate "$stage" patched "${core[@]}" --time all ;;
    nocompile) gate "$stage" no_compile "${core[@]}" "${ab[@]}" ;;
    swap-core-*) gate "$stage" base "${core[@]}" --base-compiler "$W/triton/same" ;;
    pack)
      (cd "$W" && tar czf "${OUT:-$W}/judge.tgz" --exclude='ttgir' --exclude='*.ttgir' --exclude='blobs' \
        --exclude='autotune_records' --exclude='triton' -- *.log *.txt \
        $(ls -d */ | grep -v '^triton/$') 2>/dev/null)
      ls -la "${OUT:-$W}" ;;
    *) say "unknown stage $stage" ;;
  esac
done

#!/usr/bin/env bash
# Measure one shard of the gate in replay mode and leave it ready for upload.
#
# Usage: ci/run_shard.sh OUT_DIR
# Env:   ZL_BASELINE     baseline dir (e.g. baselines/v5)
#        ZL_SHARD_INDEX  K, 1-based          ZL_SHARD_COUNT  N
#        ZL_OPS_FILE     optional ops file (default: every op of the baseline)
#        ZL_THRESHOLDS   optional thresholds yaml (default: the manifest's); give the judge
#                        (ci/judge.sh) the same, so a shard confirms what the judge flags
#        ZL_BASE_COMPILER optional base compiler env (ci/install_base.sh's site dir): the
#                        shard's measure step is the interleaved A/B against it (ab/, docs/judging.md)
#        ZL_AB_MODE      changed (default; suspects: its old name) | full: every op timed and paired
#        ZL_ACCEPT       optional accept list (give the judge the same)
#        ZL_SCREEN       optional screen dir from the screen job (ci/run_screen.sh's
#                        OUT_DIR/screen): the shard takes its codegen screen and times the
#                        ops it lists (`zlbench gate --screen`) instead of screening again
#        ZL_TIME         unset: zlbench gate's default (changed; all with --full-ab) | all |
#                        changed: time only the ops the codegen screen did
#                        not prove unchanged, plus ops/sentinels.txt (docs/codegen.md)
# Writes OUT_DIR/gate/ (`zlbench gate --shard K/N --out`: results/, confirm/<i>/ with
# the re-measures of the ops this shard flagged, and this shard's own reports) and
# OUT_DIR/shard.json ({"shard": K, "count": N, "exit_code": rc}), which
# ci/collect_shards.py checks. Exit 0 when the shard measured or had no op to measure
# (more shards than ops): gate exit 0 (or 1), the judge job gives the verdict; else
# the gate's exit code with one message in the job summary.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=${1:?usage: run_shard.sh OUT_DIR}
k=${ZL_SHARD_INDEX:-}
n=${ZL_SHARD_COUNT:-}
baseline=${ZL_BASELINE:-}
if ! [[ "$k" =~ ^[0-9]+$ && "$n" =~ ^[0-9]+$ ]] || ((k < 1 || k > n)); then
  zl_fail 2 "bad shard '$k/$n': K/N needs 1 <= K <= N"
fi
zl_check_baseline "$baseline"
args=(gate --baseline "$baseline" --shard "$k/$n" --out "$out/gate")
if [[ -n "${ZL_OPS_FILE:-}" ]]; then
  [[ -f "$ZL_OPS_FILE" ]] || zl_fail 2 "ops file '$ZL_OPS_FILE' does not exist"
  args+=(--ops-file "$ZL_OPS_FILE")
fi
if [[ -n "${ZL_THRESHOLDS:-}" ]]; then
  args+=(--thresholds "$ZL_THRESHOLDS")
fi
if [[ -n "${ZL_BASE_COMPILER:-}" ]]; then
  args+=(--base-compiler "$ZL_BASE_COMPILER")
  [[ "${ZL_AB_MODE:-changed}" == full ]] && args+=(--full-ab)
fi
case ${ZL_TIME:-} in
  "") ;; # zlbench gate's default: changed (all with --full-ab)
  all) args+=(--time all) ;;
  changed) args+=(--time changed) ;;
  *) zl_fail 2 "bad time mode '${ZL_TIME}': all or changed" ;;
esac
if [[ -n "${ZL_ACCEPT:-}" ]]; then
  [[ -f "$ZL_ACCEPT" ]] || zl_fail 2 "accept list '$ZL_ACCEPT' does not exist"
  args+=(--accept "$ZL_ACCEPT")
fi
if [[ -n "${ZL_SCREEN:-}" ]]; then
  [[ -d "$ZL_SCREEN" ]] || zl_fail 2 "screen dir '$ZL_SCREEN' does not exist (the screen job's artifact)"
  args+=(--screen "$ZL_SCREEN")
fi

mkdir -p "$out"
echo "+ zlbench ${args[*]}"
rc=0
env -u GITHUB_STEP_SUMMARY zlbench "${args[@]}" || rc=$?
printf '{"shard": %d, "count": %d, "exit_code": %d}\n' "$k" "$n" "$rc" >"$out/shard.json"
zl_output exit_code "$rc"
zl_gate_summary "$out/gate" "<details><summary>shard $k/$n report</summary>" "</details>"
case $rc in
  0 | 1) echo "shard $k/$n measured (zlbench gate exit $rc); the judge job gives the verdict" ;;
  *) zl_fail "$rc" "shard $k/$n could not measure (zlbench gate exit $rc); see this job's log" ;;
esac

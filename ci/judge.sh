#!/usr/bin/env bash
# Merge the shards' gate dirs and judge them offline: the judge job's core step.
#
# Usage: ci/judge.sh SHARD_LIST OUT_DIR
#   SHARD_LIST  file from ci/collect_shards.py, one shard gate dir per line
# Env:   ZL_BASELINE  baseline dir          ZL_THRESHOLDS  optional thresholds yaml
#        ZL_OPS_FILE  optional ops file: the op set the shards measured (ci/run_shard.sh);
#                     the judge judges the same set, else every other op is MISSING
#        ZL_ACCEPT    optional accept list (docs/judging.md); the shards' A/B rounds
#                     (ab/) are merged and judged without further options
# Writes OUT_DIR/merged (zlbench merge: results/ and the shards' confirm/<i>/, the
# re-measures of the ops each shard flagged) and OUT_DIR/gate (junit.xml, report.md,
# verdict.json from `zlbench gate --results`), appends comment.md to the job summary
# and sets the step output `exit_code` (0 pass, 1 regression/marker/failed op,
# 2 could not judge). Exits 0 whenever the gate ran, so the publishing steps run
# normally; ci/verdict.sh ends the job with the gate's exit code. A failed merge
# exits 2 here, at the step that found it.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

list=${1:?usage: judge.sh SHARD_LIST OUT_DIR}
out=${2:?usage: judge.sh SHARD_LIST OUT_DIR}
baseline=${ZL_BASELINE:-}
zl_check_baseline "$baseline"
[[ -s "$list" ]] || zl_fail 2 "no shard results listed in $list"
if [[ -n "${ZL_OPS_FILE:-}" && ! -f "$ZL_OPS_FILE" ]]; then
  zl_fail 2 "ops file '$ZL_OPS_FILE' does not exist"
fi
mapfile -t shards <"$list"
mkdir -p "$out"

echo "+ zlbench merge ${shards[*]} --out $out/merged"
env -u GITHUB_STEP_SUMMARY zlbench merge "${shards[@]}" --out "$out/merged" ||
  zl_fail 2 "merging the ${#shards[@]} shard results failed (zlbench merge exit $?)"

args=(gate --baseline "$baseline" --results "$out/merged" --out "$out/gate")
if [[ -n "${ZL_THRESHOLDS:-}" ]]; then
  args+=(--thresholds "$ZL_THRESHOLDS")
fi
if [[ -n "${ZL_OPS_FILE:-}" ]]; then
  args+=(--ops-file "$ZL_OPS_FILE")
fi
if [[ -n "${ZL_ACCEPT:-}" ]]; then
  [[ -f "$ZL_ACCEPT" ]] || zl_fail 2 "accept list '$ZL_ACCEPT' does not exist"
  args+=(--accept "$ZL_ACCEPT")
fi
echo "+ zlbench ${args[*]}"
rc=0
env -u GITHUB_STEP_SUMMARY zlbench "${args[@]}" || rc=$?
zl_output exit_code "$rc"
zl_gate_summary "$out/gate"
echo "zlbench gate exit $rc"

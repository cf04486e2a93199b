#!/usr/bin/env bash
# Run the gate's codegen screen alone (a CPU runner: no GPU) and leave it ready for upload.
#
# Usage: ci/run_screen.sh OUT_DIR
# Env:   ZL_BASELINE     baseline dir (e.g. baselines/v5)
#        ZL_OPS_FILE     optional ops file: the op set the shards measure (ci/run_shard.sh)
#        ZL_TIME         unset | all | changed, as ci/run_shard.sh passes it to the shards
#        ZL_AB_MODE      full, with ZL_BASE_SHA set and ZL_TIME unset: the shards time every
#                        op (--full-ab), so the plan is --time all
#        ZL_BASE_SHA     the base build's commit ("": no A/B)
#        ZL_BASE_COMPILER optional base compiler env (ci/install_base.sh's site dir): the
#                        screen diffs the PR's kernels against the base's (--base-compiler;
#                        its rebuild is cached on the runner per base build and baseline)
#        ZL_TIME_BUDGET  optional GPU seconds for the changed ops (--time-budget)
#        GEMS_VENDOR     FlagGems' vendor (default nvidia: without a device FlagGems
#                        finds none, and every kernel would be missing; docs/codegen.md)
#        ZL_REBUILD_COUNT  N rebuild jobs (the screen_shards input; unset or 1: the
#                        screen rebuilds the kernels itself)
#        ZL_REBUILT      with N > 1: the dir holding the N rebuild artifacts, one dir
#                        zlbench-rebuild-K-of-N each (ci/run_rebuild.sh), passed as
#                        --rebuilt DIR (every K once): the screen classifies, rebuilds nothing
# Writes OUT_DIR/screen/ (`zlbench gate --screen-only --out`: codegen/ with codegen.json,
# diffs/ and timing.json, the ops to time in priority order, stamped with the baseline
# and the compiler under test) for the shards' `zlbench gate --screen`, and
# OUT_DIR/screen.json ({"exit_code": rc}). Exit 0 when the screen ran: gate exit 0, or
# 1 (a kernel that no longer compiles: the shards' reports and the judge fail on it);
# else the gate's exit code with one message in the job summary.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=${1:?usage: run_screen.sh OUT_DIR}
baseline=${ZL_BASELINE:-}
zl_check_baseline "$baseline"
args=(gate --baseline "$baseline" --screen-only --out "$out/screen")
if [[ -n "${ZL_OPS_FILE:-}" ]]; then
  [[ -f "$ZL_OPS_FILE" ]] || zl_fail 2 "ops file '$ZL_OPS_FILE' does not exist"
  args+=(--ops-file "$ZL_OPS_FILE")
fi
case ${ZL_TIME:-} in
  "") # zlbench gate's default: changed; all when the shards run --full-ab
    if [[ -n "${ZL_BASE_SHA:-}" && "${ZL_AB_MODE:-changed}" == full ]]; then
      args+=(--time all)
    fi
    ;;
  all) args+=(--time all) ;;
  changed) args+=(--time changed) ;;
  *) zl_fail 2 "bad time mode '${ZL_TIME}': all or changed" ;;
esac
if [[ -n "${ZL_TIME_BUDGET:-}" ]]; then
  args+=(--time-budget "$ZL_TIME_BUDGET")
fi
if [[ -n "${ZL_BASE_COMPILER:-}" ]]; then
  [[ -d "$ZL_BASE_COMPILER" ]] || zl_fail 2 "base compiler dir '$ZL_BASE_COMPILER' does not exist"
  args+=(--base-compiler "$ZL_BASE_COMPILER")
fi
n=${ZL_REBUILD_COUNT:-1}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || zl_fail 2 "bad rebuild count '$n' (ZL_REBUILD_COUNT): a positive integer"
if ((n > 1)); then
  rebuilt=${ZL_REBUILT:-}
  [[ -n "$rebuilt" && -d "$rebuilt" ]] || zl_fail 2 "rebuild dir '$rebuilt' (ZL_REBUILT) does not exist: no rebuild shard of $n downloaded"
  for ((k = 1; k <= n; k++)); do
    d="$rebuilt/zlbench-rebuild-$k-of-$n"
    [[ -d "$d" ]] || zl_fail 2 "rebuild shard $k/$n is missing: no artifact zlbench-rebuild-$k-of-$n in $rebuilt"
    args+=(--rebuilt "$d")
  done
  shopt -s nullglob
  found=("$rebuilt"/zlbench-rebuild-*-of-"$n")
  shopt -u nullglob
  if ((${#found[@]} != n)); then
    zl_fail 2 "expected $n rebuild shard dirs in $rebuilt, found ${#found[@]}"
  fi
fi
export GEMS_VENDOR=${GEMS_VENDOR:-nvidia}

mkdir -p "$out"
echo "+ zlbench ${args[*]}"
rc=0
env -u GITHUB_STEP_SUMMARY zlbench "${args[@]}" || rc=$?
printf '{"exit_code": %d}\n' "$rc" >"$out/screen.json"
zl_output exit_code "$rc"
if [[ -f "$out/screen/codegen/codegen.md" ]]; then
  zl_summary "<details><summary>codegen screen</summary>" "" "$(cat "$out/screen/codegen/codegen.md")" "" "</details>"
fi
case $rc in
  0 | 1) echo "codegen screen done (zlbench gate --screen-only exit $rc); the shards time its plan" ;;
  *) zl_fail "$rc" "the codegen screen could not run (zlbench gate --screen-only exit $rc); see this job's log" ;;
esac

#!/usr/bin/env bash
# Rebuild one shard of the baseline's kernels for the codegen screen (a CPU runner: no
# GPU) and leave it ready for upload (docs/codegen.md, "Sharded rebuild").
#
# Usage: ci/run_rebuild.sh OUT_DIR
# Env:   ZL_BASELINE       baseline dir (e.g. baselines/v5)
#        ZL_REBUILD_INDEX  K, this job's shard (1-based)
#        ZL_REBUILD_COUNT  N, the rebuild jobs in all (the screen_shards input)
#        ZL_REBUILD_JOBS   optional rebuild processes (default: the CPU count)
#        GEMS_VENDOR       FlagGems' vendor (default nvidia, as ci/run_screen.sh)
# Writes OUT_DIR (`zlbench codegen --shard K/N --out`: rebuilt.json, index.json, blobs/),
# uploaded as zlbench-rebuild-K-of-N; the screen job passes every one of them to
# `zlbench gate --screen-only --rebuilt` (ci/run_screen.sh). Exit 0 when the shard was
# rebuilt, else zlbench's exit code with one message in the job summary.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=${1:?usage: run_rebuild.sh OUT_DIR}
baseline=${ZL_BASELINE:-}
zl_check_baseline "$baseline"
k=${ZL_REBUILD_INDEX:-}
n=${ZL_REBUILD_COUNT:-}
if [[ ! "$k" =~ ^[1-9][0-9]*$ || ! "$n" =~ ^[1-9][0-9]*$ ]] || ((k > n)); then
  zl_fail 2 "bad rebuild shard '$k/$n': ZL_REBUILD_INDEX K and ZL_REBUILD_COUNT N with 1 <= K <= N"
fi
jobs=${ZL_REBUILD_JOBS:-$(nproc)}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || zl_fail 2 "bad ZL_REBUILD_JOBS '$jobs': a positive integer"
export GEMS_VENDOR=${GEMS_VENDOR:-nvidia}

args=(codegen --baseline "$baseline" --shard "$k/$n" --out "$out" --jobs "$jobs")
echo "+ zlbench ${args[*]}"
rc=0
env -u GITHUB_STEP_SUMMARY zlbench "${args[@]}" || rc=$?
if [[ $rc -ne 0 ]]; then
  zl_fail "$rc" "rebuild shard $k/$n could not run (zlbench codegen --shard exit $rc); see this job's log"
fi
[[ -f "$out/rebuilt.json" ]] || zl_fail 2 "rebuild shard $k/$n wrote no $out/rebuilt.json"
echo "rebuild shard $k/$n done; the screen job classifies it (--rebuilt)"

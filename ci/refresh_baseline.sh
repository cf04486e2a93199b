#!/usr/bin/env bash
# Record a new baseline version and write the pull request description for it.
#
# Usage: ci/refresh_baseline.sh OUT_DIR      (run in the zlbench checkout)
# Env:   ZL_VERSION  new version name, vN (baselines/vN must not exist yet: a baseline
#                    is never modified, a refresh writes the next version)
#        ZL_REPEATS  replay passes for the per-row noise (1..50)
#        ZL_OPS_FILE optional ops file
# Runs `zlbench baseline refresh --out OUT_DIR/baselines/vN`, then writes
# `zlbench baseline show` into OUT_DIR/pr-body.md and the job summary; the
# open-pr job moves OUT_DIR/baselines/vN into the repository. Any failure: one message, exit 2 (or the
# refresh's own exit code).
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=${1:?usage: refresh_baseline.sh OUT_DIR}
body=$out/pr-body.md
ver=${ZL_VERSION:-}
repeats=${ZL_REPEATS:-}
[[ "$ver" =~ ^v[0-9]+$ ]] || zl_fail 2 "baseline version must look like v7, got '$ver'"
[[ ! -e "baselines/$ver" ]] || zl_fail 2 "baselines/$ver already exists; a baseline is never modified, pick the next version"
if ! [[ "$repeats" =~ ^[0-9]+$ ]] || ((repeats < 1 || repeats > 50)); then
  zl_fail 2 "repeats must be an integer from 1 to 50, got '$repeats'"
fi
args=(baseline refresh --out "$out/baselines/$ver" --repeats "$repeats")
if [[ -n "${ZL_OPS_FILE:-}" ]]; then
  [[ -f "$ZL_OPS_FILE" ]] || zl_fail 2 "ops file '$ZL_OPS_FILE' does not exist"
  args+=(--ops-file "$ZL_OPS_FILE")
fi

mkdir -p "$out/baselines"
echo "+ zlbench ${args[*]}"
rc=0
env -u GITHUB_STEP_SUMMARY zlbench "${args[@]}" || rc=$?
((rc == 0)) || zl_fail "$rc" "zlbench baseline refresh failed (exit $rc); see this job's log"
[[ -f "$out/baselines/$ver/manifest.yaml" ]] || zl_fail 2 "refresh wrote no baselines/$ver/manifest.yaml"

show=$(zlbench baseline show "$out/baselines/$ver") || zl_fail 2 "zlbench baseline show failed"
{
  echo "Adds baseline \`baselines/$ver\`, recorded by the baseline-refresh workflow"
  echo "(run ${GITHUB_SERVER_URL:-}/${GITHUB_REPOSITORY:-}/actions/runs/${GITHUB_RUN_ID:-local})."
  echo
  echo '```'
  printf '%s\n' "$show"
  echo '```'
} >"$body"
zl_summary "$(cat "$body")"
zl_output version "$ver"

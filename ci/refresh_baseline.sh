#!/usr/bin/env bash
# Record a new baseline (a version, or a runner class's first one) and write the pull
# request description for it.
#
# Usage: ci/refresh_baseline.sh OUT_DIR      (run in the zlbench checkout)
# Env:   ZL_VERSION  the new dir's name under baselines/: vN for a refresh (a baseline
#                    is never modified, a refresh writes the next version); with ZL_TIER
#                    the runner class's name (h100, h100-pr: lower case, digits, . _ -)
#        ZL_TIER     optional: bootstrap a runner class from zero, the tier
#                    ops/tiers/ZL_TIER.txt (pr, nightly, ...): `zlbench baseline
#                    bootstrap` records, verifies and only then writes the dir
#        ZL_REPEATS  replay passes for the per-row noise (1..50)
#        ZL_OPS_FILE optional ops file (not with ZL_TIER: the tier is the op set)
# Runs `zlbench baseline refresh --out OUT_DIR/baselines/vN` (or `zlbench baseline
# bootstrap --tier T --out OUT_DIR/baselines/NAME`), then writes `zlbench baseline
# show` into OUT_DIR/pr-body.md and the job summary; the open-pr job moves
# OUT_DIR/baselines/NAME into the repository. baselines/NAME and baselines/NAME.lock
# (a packed baseline of that name) must not exist. Any failure: one message, exit 2
# (or the refresh's own exit code).
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out=${1:?usage: refresh_baseline.sh OUT_DIR}
body=$out/pr-body.md
ver=${ZL_VERSION:-}
tier=${ZL_TIER:-}
repeats=${ZL_REPEATS:-}
if [[ -n "$tier" ]]; then
  [[ "$tier" =~ ^[a-z0-9][a-z0-9_-]*$ ]] || zl_fail 2 "tier must be a name of ops/tiers/ (pr, nightly, ...), got '$tier'"
  [[ -f "ops/tiers/$tier.txt" ]] || zl_fail 2 "no tier '$tier': ops/tiers/$tier.txt does not exist"
  [[ -z "${ZL_OPS_FILE:-}" ]] || zl_fail 2 "give tier or ops_file, not both: the tier is the op set"
  [[ "$ver" =~ ^[a-z0-9][a-z0-9._-]*$ ]] || zl_fail 2 "with a tier, version names the runner class's baseline dir (e.g. h100), got '$ver'"
else
  [[ "$ver" =~ ^v[0-9]+$ ]] || zl_fail 2 "baseline version must look like v7, got '$ver'"
fi
[[ ! -e "baselines/$ver" ]] || zl_fail 2 "baselines/$ver already exists; a baseline is never modified, pick the next version"
[[ ! -e "baselines/$ver.lock" ]] || zl_fail 2 "baselines/$ver.lock (a packed baseline of that name) already exists; pick another name"
if ! [[ "$repeats" =~ ^[0-9]+$ ]] || ((repeats < 1 || repeats > 50)); then
  zl_fail 2 "repeats must be an integer from 1 to 50, got '$repeats'"
fi
if [[ -n "$tier" ]]; then
  what="zlbench baseline bootstrap"
  args=(baseline bootstrap --tier "$tier" --out "$out/baselines/$ver" --repeats "$repeats")
else
  what="zlbench baseline refresh"
  args=(baseline refresh --out "$out/baselines/$ver" --repeats "$repeats")
fi
if [[ -n "${ZL_OPS_FILE:-}" ]]; then
  [[ -f "$ZL_OPS_FILE" ]] || zl_fail 2 "ops file '$ZL_OPS_FILE' does not exist"
  args+=(--ops-file "$ZL_OPS_FILE")
fi

mkdir -p "$out/baselines"
echo "+ zlbench ${args[*]}"
rc=0
env -u GITHUB_STEP_SUMMARY zlbench "${args[@]}" || rc=$?
((rc == 0)) || zl_fail "$rc" "$what failed (exit $rc); see this job's log"
[[ -f "$out/baselines/$ver/manifest.yaml" ]] || zl_fail 2 "$what wrote no baselines/$ver/manifest.yaml"

show=$(zlbench baseline show "$out/baselines/$ver") || zl_fail 2 "zlbench baseline show failed"
{
  if [[ -n "$tier" ]]; then
    echo "Adds baseline \`baselines/$ver\`: tier \`$tier\` bootstrapped on this runner class"
    echo "(\`zlbench baseline bootstrap\`: recorded and verified) by the baseline-refresh workflow"
  else
    echo "Adds baseline \`baselines/$ver\`, recorded by the baseline-refresh workflow"
  fi
  echo "(run ${GITHUB_SERVER_URL:-}/${GITHUB_REPOSITORY:-}/actions/runs/${GITHUB_RUN_ID:-local})."
  echo
  echo '```'
  printf '%s\n' "$show"
  echo '```'
  if [[ -n "$tier" ]]; then
    echo
    echo "Gate against it: \`baseline: baselines/$ver\` in FlagTree's caller workflow"
    echo "(docs/ci.md \"Adopt zlbench in FlagTree\"); by hand:"
    echo "\`zlbench gate --baseline baselines/$ver --out out/gate-$ver\`."
  fi
} >"$body"
zl_summary "$(cat "$body")"
zl_output version "$ver"

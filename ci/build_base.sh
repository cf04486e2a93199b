#!/usr/bin/env bash
# Build (or reuse) the base FlagTree wheel for the A/B against the base compiler.
#
# Usage: ci/build_base.sh FLAGTREE_SRC OUT_DIR
# Env:   ZL_AB_MODE      changed (default; suspects: its old name) | full | off
#        ZL_BASE_REF     the base commit or ref to build; empty: the merge base of the
#                        checkout's HEAD with ZL_PR_BASE_SHA
#        ZL_PR_BASE_SHA  the pull request's base commit (empty outside pull requests)
# FLAGTREE_SRC must be a checkout with history (fetch-depth 0). The base is checked
# out as a worktree next to it and built by ci/build_flagtree.sh, so its wheel is
# cached by commit like the PR's (a merge base shared by many PRs is built once).
# Sets the step outputs `base_sha` (empty: no A/B, e.g. a push without ZL_BASE_REF
# or ZL_AB_MODE=off) and `wheel`. A base that cannot be found or built: exit 2.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=ci/lib.sh
source "$here/lib.sh"

src=${1:?usage: build_base.sh FLAGTREE_SRC OUT_DIR}
out=${2:?usage: build_base.sh FLAGTREE_SRC OUT_DIR}
mode=${ZL_AB_MODE:-changed}
case $mode in
  changed | suspects | full) ;;
  off)
    echo "A/B against the base compiler: off"
    zl_output base_sha ""
    exit 0
    ;;
  *) zl_fail 2 "ab_mode '$mode' is not one of changed, full, off" ;;
esac
git -C "$src" rev-parse --verify -q 'HEAD^{commit}' >/dev/null || zl_fail 2 "$src is not a git checkout"

want=${ZL_BASE_REF:-}
if [[ -z "$want" && -n "${ZL_PR_BASE_SHA:-}" ]]; then
  git -C "$src" fetch --no-tags -q origin "$ZL_PR_BASE_SHA" 2>/dev/null || true
  want=$(git -C "$src" merge-base HEAD "$ZL_PR_BASE_SHA" 2>/dev/null) ||
    zl_fail 2 "no merge base of HEAD and the pull request's base $ZL_PR_BASE_SHA in $src (fetch-depth 0?)"
fi
if [[ -z "$want" ]]; then
  echo "A/B against the base compiler: no base (not a pull request and no base_ref given)"
  zl_output base_sha ""
  exit 0
fi
git -C "$src" fetch --no-tags -q origin "$want" 2>/dev/null || true
sha=$(git -C "$src" rev-parse --verify -q "$want^{commit}") || zl_fail 2 "base '$want' not found in $src"

base_src="$src.base"
rm -rf "$base_src"
git -C "$src" worktree add -q --detach "$base_src" "$sha" || zl_fail 2 "cannot check out base $sha"
git -C "$base_src" submodule update -q --init --recursive || zl_fail 2 "base $sha: submodules failed"
echo "base compiler: FlagTree $sha"
bash "$here/build_flagtree.sh" "$base_src" "$out"
zl_output base_sha "$sha"

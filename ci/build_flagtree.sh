#!/usr/bin/env bash
# Build the FlagTree wheel of a checkout, or reuse the one already built for its SHA.
#
# Usage: ci/build_flagtree.sh FLAGTREE_SRC OUT_DIR
# Env:   ZLBENCH_CACHE (default ~/.cache/zlbench): wheels are kept in
#        $ZLBENCH_CACHE/flagtree-wheels/<sha>/, so a re-run or a second workflow on
#        the same commit skips the (long) build. FlagTree's own build variables
#        (e.g. FLAGTREE_BACKEND, MAX_JOBS) pass through.
# Copies exactly one flagtree-*.whl into OUT_DIR and sets the step outputs `sha`
# and `wheel`. A commit that does not build, or builds something that is not the
# `flagtree` distribution, fails with one message (exit 2).
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

src=${1:?usage: build_flagtree.sh FLAGTREE_SRC OUT_DIR}
out=${2:?usage: build_flagtree.sh FLAGTREE_SRC OUT_DIR}
[[ -d "$src" ]] || zl_fail 2 "FlagTree source dir $src does not exist"
sha=$(git -C "$src" rev-parse --verify 'HEAD^{commit}' 2>/dev/null) ||
  zl_fail 2 "$src is not a git checkout of FlagTree"
cache_root=${ZLBENCH_CACHE:-$HOME/.cache/zlbench}/flagtree-wheels
cached="$cache_root/$sha"
mkdir -p "$out" "$cache_root"

shopt -s nullglob
wheels=("$cached"/flagtree-*.whl)
if ((${#wheels[@]} == 1)); then
  echo "reusing the FlagTree wheel built for $sha: ${wheels[0]##*/}"
else
  if [[ -f "$src/python/setup.py" ]]; then
    pkg=$src/python # FlagTree (Triton 3.x layout)
  elif [[ -f "$src/setup.py" ]]; then
    pkg=$src
  else
    zl_fail 2 "FlagTree $sha has no setup.py (looked in $src and $src/python)"
  fi
  tmp=$(mktemp -d "$cache_root/.build-$sha.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "building FlagTree $sha from $pkg (this takes a while)"
  # FLAGTREE_WHEEL_NAME renames the distribution; the gate needs it to be `flagtree`.
  if ! env -u FLAGTREE_WHEEL_NAME "$ZL_PYTHON" -m pip wheel --no-deps -w "$tmp/wheel" "$pkg"; then
    zl_fail 2 "FlagTree $sha does not build (pip wheel failed; the build log is above)"
  fi
  built=("$tmp"/wheel/*.whl)
  if ((${#built[@]} != 1)) || [[ "${built[0]##*/}" != flagtree-* ]]; then
    zl_fail 2 "FlagTree $sha built '${built[*]##*/}', not one flagtree-*.whl: is this a FlagTree checkout?"
  fi
  # Publish atomically; another job may have finished the same SHA meanwhile.
  if mv -T "$tmp/wheel" "$cached" 2>/dev/null; then
    echo "cached ${built[0]##*/} for $sha"
  fi
  wheels=("$cached"/flagtree-*.whl)
  ((${#wheels[@]} == 1)) || zl_fail 2 "wheel cache $cached holds ${#wheels[@]} wheels, expected 1"
fi

rm -f "$out"/flagtree-*.whl
cp "${wheels[0]}" "$out/"
zl_output sha "$sha"
zl_output wheel "${wheels[0]##*/}"
zl_summary "FlagTree \`$sha\`: \`${wheels[0]##*/}\`"

#!/usr/bin/env bash
# Install the base FlagTree wheel into its own site dir and check it is FlagTree.
#
# Usage: ci/install_base.sh WHEEL_DIR SITE_DIR
# The wheel goes into SITE_DIR only (`pip install --no-deps --target`): the job's
# venv keeps the PR's build, and `zlbench gate --base-compiler SITE_DIR` puts
# SITE_DIR first on PYTHONPATH of the base's workers, so the two sides share
# everything but triton (docs/judging.md). Sets the step output `site`.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=ci/lib.sh
source "$here/lib.sh"

dir=${1:?usage: install_base.sh WHEEL_DIR SITE_DIR}
site=${2:?usage: install_base.sh WHEEL_DIR SITE_DIR}
shopt -s nullglob
wheels=("$dir"/flagtree-*.whl)
((${#wheels[@]} == 1)) || zl_fail 2 "expected one base flagtree-*.whl in $dir, found ${#wheels[@]}"
rm -rf "$site"
"$ZL_PYTHON" -m pip install -q --no-deps --target "$site" "${wheels[0]}" ||
  zl_fail 2 "installing the base ${wheels[0]##*/} into $site failed"
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" "$ZL_PYTHON" "$here/check_triton_dist.py" --expect flagtree
zl_output site "$site"

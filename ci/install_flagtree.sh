#!/usr/bin/env bash
# Install the FlagTree wheel into the job's python and prove `import triton` is FlagTree.
#
# Usage: ci/install_flagtree.sh WHEEL_DIR
# Upstream Triton is removed first (`pip uninstall -y triton`): the gate must never
# measure the wrong compiler. Then the wheel is installed without dependencies
# (none of them may bring triton back) and ci/check_triton_dist.py checks which
# distribution `import triton` resolves to. Any failure: one message, exit 2.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=ci/lib.sh
source "$here/lib.sh"

dir=${1:?usage: install_flagtree.sh WHEEL_DIR}
shopt -s nullglob
wheels=("$dir"/flagtree-*.whl)
((${#wheels[@]} == 1)) || zl_fail 2 "expected one flagtree-*.whl in $dir, found ${#wheels[@]}"

"$ZL_PYTHON" -m pip uninstall -y triton || zl_fail 2 "pip uninstall -y triton failed"
"$ZL_PYTHON" -m pip install --no-deps --force-reinstall "${wheels[0]}" ||
  zl_fail 2 "installing ${wheels[0]##*/} failed"
"$ZL_PYTHON" "$here/check_triton_dist.py" --expect flagtree

#!/usr/bin/env bash
# Install zlbench and the FlagGems checkout(s) next to FlagTree, then re-check triton.
#
# Usage: ci/install_bench.sh ZLBENCH_DIR FLAGGEMS_DIR [FLAGGEMS_VLLM_DIR]
# FlagGems is installed with --no-deps: a requirement on `triton` would replace the
# FlagTree build under test. zlbench itself never requires triton (docs/design.md §2).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=ci/lib.sh
source "$here/lib.sh"

zl=${1:?usage: install_bench.sh ZLBENCH_DIR FLAGGEMS_DIR [FLAGGEMS_VLLM_DIR]}
fg=${2:?usage: install_bench.sh ZLBENCH_DIR FLAGGEMS_DIR [FLAGGEMS_VLLM_DIR]}
vllm=${3:-}
"$ZL_PYTHON" -m pip install "$zl" || zl_fail 2 "installing zlbench from $zl failed"
for d in "$fg" ${vllm:+"$vllm"}; do
  [[ -d "$d" ]] || zl_fail 2 "FlagGems checkout $d does not exist"
  "$ZL_PYTHON" -m pip install --no-deps -e "$d" || zl_fail 2 "installing FlagGems from $d failed"
done
"$ZL_PYTHON" "$here/check_triton_dist.py" --expect flagtree

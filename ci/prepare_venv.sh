#!/usr/bin/env bash
# Create the job's own venv and put it first on PATH for the following steps.
#
# Usage: ci/prepare_venv.sh DIR [--with-torch]
#        DIR: use one under $RUNNER_TEMP (the runner empties it around each job).
#        --with-torch: fail unless torch imports (measuring jobs; building needs none)
# Env:   ZLBENCH_PYTHON: the runner's base interpreter, with torch (and FlagGems'
#        runtime requirements) preinstalled; default python3. The venv sees its
#        site-packages, so torch is not reinstalled per job, while FlagTree, FlagGems
#        and zlbench are installed into the venv and vanish with it.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dir=${1:?usage: prepare_venv.sh DIR [--with-torch]}
with_torch=${2:-}
base=${ZLBENCH_PYTHON:-python3}
command -v "$base" >/dev/null 2>&1 || zl_fail 2 "base python '$base' not found (set ZLBENCH_PYTHON on the runner)"
"$base" -m venv --system-site-packages "$dir" || zl_fail 2 "could not create a venv with $base"
if [[ "$with_torch" == --with-torch ]]; then
  "$dir/bin/python" -c 'import torch; print("torch", torch.__version__)' ||
    zl_fail 2 "torch is not importable from $base (install it in the runner's base python)"
fi
if [[ -n "${GITHUB_PATH:-}" ]]; then
  echo "$dir/bin" >>"$GITHUB_PATH"
fi
echo "venv $dir ready"

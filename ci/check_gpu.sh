#!/usr/bin/env bash
# Fail clearly when this runner has no usable NVIDIA GPU (or too little disk for caches).
#
# Usage: ci/check_gpu.sh
# Env:   ZLBENCH_MIN_FREE_GB (default 20): free space needed under ZLBENCH_CACHE
#        (default ~/.cache/zlbench), where FlagTree wheels and pip caches live.
# Prints one line per visible GPU (name, driver, memory) and exits 0; else exit 2
# with one message in the log, an error annotation and the job summary.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

host=$(hostname 2>/dev/null || echo unknown)
if ! command -v nvidia-smi >/dev/null 2>&1; then
  zl_fail 2 "runner ${RUNNER_NAME:-$host} has no GPU: nvidia-smi not found (is the NVIDIA driver installed and is this a GPU runner?)"
fi
if ! gpus=$(nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1); then
  zl_fail 2 "runner ${RUNNER_NAME:-$host}: nvidia-smi failed: $(printf '%s' "$gpus" | head -n 1)"
fi
gpus=$(printf '%s\n' "$gpus" | sed '/^[[:space:]]*$/d')
if [[ -z "$gpus" ]]; then
  zl_fail 2 "runner ${RUNNER_NAME:-$host} has no GPU: nvidia-smi lists none (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset})"
fi
printf 'GPU %s\n' "$gpus"

cache=${ZLBENCH_CACHE:-$HOME/.cache/zlbench}
mkdir -p "$cache"
free_kb=$(df -Pk "$cache" | awk 'NR == 2 {print $4}')
need_gb=${ZLBENCH_MIN_FREE_GB:-20}
if [[ "$free_kb" =~ ^[0-9]+$ ]] && ((free_kb < need_gb * 1024 * 1024)); then
  zl_fail 2 "runner ${RUNNER_NAME:-$host}: only $((free_kb / 1024 / 1024)) GB free in $cache, need ${need_gb} GB for caches"
fi
echo "cache $cache: $((free_kb / 1024 / 1024)) GB free"

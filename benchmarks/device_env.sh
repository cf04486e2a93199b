#!/usr/bin/env bash
# On the device, from the repo root of the copy a call sends: the environment that
# benchmarks/device_kit.sh made the kit for, then CMD. The same on a fresh machine and a
# warm one (what is already there is not made again), so every call of a session is
#
#   bash benchmarks/device_env.sh bash .cache/snap/benchmarks/gpu_full_screen.sh STAGE...
#
# with carry [".cache/kit", ".whl", ".cache/snap"]:
#   .whl/*.whl               installed into $DEVICE_TMP/site (no index, no deps)
#   .cache/kit/flaggems.tgz  unpacked into $DEVICE_TMP/fg (ZLBENCH_FLAGGEMS_DIR)
#   .cache/snap/             zlbench at the commit in .cache/snap/COMMIT (ZLBENCH_COMMIT,
#                            which each result records)
# Exports PYTHONPATH (site, snapshot, FlagGems src), ZLBENCH_FLAGGEMS_DIR,
# ZLBENCH_COMMIT, GEMS_VENDOR=nvidia, PYTHONUNBUFFERED=1, and prints one line naming the
# GPU and the commits. Env: DEVICE_TMP (/tmp). A missing kit part: one line, exit 2.
# The working tree's zlbench/ must be the snapshot's: `python3 -m zlbench` from the repo
# root puts the current directory first on sys.path, ahead of PYTHONPATH, so it runs the
# working tree's code, not the commit the results name (2026-12-06: calls that carried
# uncommitted edits ran them). Otherwise one line, exit 2: commit, remake the kit.
#
#   bash benchmarks/device_env.sh --check   (here, before the first call of a session)
#
# makes only those checks, installs and runs nothing: exit 0 with one line when the kit
# is whole and its snapshot is the working tree's zlbench/, else as above (a stale kit
# found before a machine is started for it, not after: the forty-third session).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 CMD [ARG...] | --check" >&2; exit 2; }
T=${DEVICE_TMP:-/tmp}
for need in .cache/kit/flaggems.tgz .cache/snap/zlbench .cache/snap/COMMIT; do
  [ -e "$need" ] || { echo "device_env: no $need (make the kit with benchmarks/device_kit.sh and carry it)" >&2; exit 2; }
done
if ! diff -rq --exclude=__pycache__ zlbench .cache/snap/zlbench >/dev/null 2>&1; then
  echo "device_env: zlbench/ here is not the snapshot's (.cache/snap, $(cut -c1-7 .cache/snap/COMMIT)): python3 -m zlbench would run uncommitted code; commit and remake the kit" >&2
  exit 2
fi
if [ "$1" = --check ]; then
  echo "device_env: the kit is whole and its snapshot is this zlbench/ ($(cut -c1-7 .cache/snap/COMMIT))"
  exit 0
fi
if [ ! -e "$T/site/.done" ]; then
  if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$T/site" .whl/*.whl >/dev/null 2>&1 || { echo "device_env: the wheels of .whl/ did not install" >&2; exit 2; }
  fi
  mkdir -p "$T/site" && touch "$T/site/.done"
fi
if [ ! -d "$T/fg/flaggems" ]; then
  mkdir -p "$T/fg"
  tar xzf .cache/kit/flaggems.tgz -C "$T/fg" || { echo "device_env: .cache/kit/flaggems.tgz did not unpack" >&2; exit 2; }
fi
export PYTHONPATH="$T/site:$PWD/.cache/snap:$T/fg/flaggems/src${PYTHONPATH:+:$PYTHONPATH}"
export ZLBENCH_FLAGGEMS_DIR="$T/fg/flaggems" GEMS_VENDOR=nvidia PYTHONUNBUFFERED=1
ZLBENCH_COMMIT=$(cat .cache/snap/COMMIT)
export ZLBENCH_COMMIT
gpu=$(nvidia-smi --query-gpu=uuid,name,driver_version --format=csv,noheader 2>/dev/null | head -1)
fg=$(git -C "$ZLBENCH_FLAGGEMS_DIR" rev-parse --short=12 HEAD 2>/dev/null || echo "no git")
echo "device_env: ${gpu:-no GPU}; zlbench ${ZLBENCH_COMMIT:0:7}; FlagGems $fg"
"$@"

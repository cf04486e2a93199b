#!/usr/bin/env bash
# What a device call carries (docs/screening.md, "the full-inventory screen"), made the
# same way every session:
#   .cache/kit/flaggems.tgz  a FlagGems git checkout at COMMIT, shallow (.git kept, so
#                            every result.json names the commit it ran; a `git archive`
#                            names none, as on 2026-12-02)
#   .whl/                    cp312 wheels of what the device lacks (sqlalchemy, greenlet
#                            for FlagGems; pydantic, gitpython, junit-xml for zlbench)
#   .cache/snap/             `git archive HEAD` of zlbench, benchmarks and ops: the code
#                            of the commit in .cache/snap/COMMIT, which
#                            benchmarks/device_env.sh exports as ZLBENCH_COMMIT there
# Usage: benchmarks/device_kit.sh FLAGGEMS_REPO COMMIT   (a path or URL git can fetch;
# COMMIT in full for a URL, a short one is resolved in a local repo)
# Env: WHEELS (1; 0: leave .whl/ as it is), KIT (.cache/kit). Prints the sizes and
# whether tracked files + carry fit the device's 64 MiB.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 FLAGGEMS_REPO COMMIT" >&2; exit 2; }
repo=$1
commit=$2
if [ -d "$repo" ]; then  # a local repo (a mirror): a short commit is resolved there
  commit=$(git -C "$repo" rev-parse --verify -q "$commit^{commit}") || {
    echo "device_kit: no commit $2 in $repo" >&2
    exit 2
  }
fi
KIT=${KIT:-.cache/kit}
src=$(dirname "$KIT")/kit-src
rm -rf "$src" && mkdir -p "$src/flaggems" "$KIT"
git -C "$src/flaggems" init -q
git -C "$src/flaggems" fetch -q --depth 1 "$repo" "$commit" || {
  echo "device_kit: cannot fetch $commit from $repo" >&2
  exit 2
}
git -C "$src/flaggems" checkout -q FETCH_HEAD
got=$(git -C "$src/flaggems" rev-parse HEAD)
case $got in
  "$commit"*) ;;
  *) echo "device_kit: fetched $got, not $commit" >&2; exit 2 ;;
esac
tar czf "$KIT/flaggems.tgz.tmp" -C "$src" flaggems && mv "$KIT/flaggems.tgz.tmp" "$KIT/flaggems.tgz"
if [ "${WHEELS:-1}" = 1 ]; then
  mkdir -p .whl
  python3 -m pip download -q --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 -d .whl \
    sqlalchemy==2.0.48 greenlet pydantic GitPython junit-xml
fi
rm -rf .cache/snap && mkdir -p .cache/snap
# tests.support too, where HEAD has it (benchmarks/ab_tools.py imports it)
mapfile -t support < <(git ls-tree --name-only HEAD tests/__init__.py tests/support 2>/dev/null)
git archive HEAD zlbench benchmarks ops "${support[@]}" | tar x -C .cache/snap
git rev-parse HEAD >.cache/snap/COMMIT  # ZLBENCH_COMMIT on the device (device_env.sh)
python3 - "$KIT" "$got" <<'PY'
import subprocess, sys
from pathlib import Path
kit, got = Path(sys.argv[1]), sys.argv[2]
def in_tar(f: Path) -> int:
    # what a file costs the device's 64 MiB: the working tree travels as a tar, a
    # 512-byte header per file and its data padded to 512 bytes (2026-12-02: 61.1 MiB
    # of files, 5,084 of them, were refused; as a tar they are 65.0 MiB)
    return 512 + (f.stat().st_size + 511) // 512 * 512
tracked = sum(
    in_tar(Path(p))
    for p in subprocess.run(["git", "ls-files", "-z"], capture_output=True, text=True,
                            check=True).stdout.split("\0")
    if p and Path(p).is_file()
)
def size(p: Path) -> int:
    return sum(in_tar(f) for f in p.rglob("*") if f.is_file()) if p.is_dir() else 0
carry = {str(kit): size(kit), ".whl": size(Path(".whl")), ".cache/snap": size(Path(".cache/snap"))}
total = tracked + sum(carry.values())
mib = 1024 * 1024
print(f"device_kit: FlagGems {got[:12]}; tracked {tracked / mib:.1f} MiB + carry "
      + ", ".join(f"{k} {v / mib:.1f} MiB" for k, v in carry.items())
      + f" = {total / mib:.1f} MiB of 64 MiB as a tar" + ("" if total < 64 * mib else
      ": TOO BIG; park what the calls do not need: benchmarks/device_park.sh park "
      "examples/h200-full-screen (and unpark after)"))
sys.exit(0 if total < 64 * mib else 1)
PY

#!/usr/bin/env bash
# v6 or v7 from the full-inventory record pass, every step of docs/baselines.md ("v6") in one
# run, each step's wall seconds in $SCRATCH/steps.tsv:
#
#   bash benchmarks/v6_assemble.sh SCRATCH [JOBS]
#
# Reads $PASS_TGZ (results, ops_status.csv; default $SRC/full.tgz, the pass as it stands:
# v6 was assembled from the copy kept as full-v6.tgz, before the TIMEOUT retries of
# 2026-12-03, whose ops have no result.json there), $SHAPES (default baselines/v6/shapes.yaml)
# and $SRC/records/
# packs; writes only under SCRATCH (created; must not exist, so that a rerun never
# mixes two passes): RECS (the packs unpacked), WORK/record (results + records),
# v6-full (`baseline refresh --no-replay --require-codegen --from-work`), v6c
# (compacted), rebuilt (one rebuild with every kernel disassembled), $NAME (`baseline
# code-digests`: the baseline), screen (the codegen screen of it under the compiler
# installed: 0 changed when it is the one that recorded) and size.txt
# (benchmarks/baseline_size.py --git). Stops at the first step that fails (its exit
# code), the steps before it kept.
#
# NAME (default v6; v7's: NAME=v7 REUSE=baselines/v6): the name of the baseline the
# digests step writes, SCRATCH/NAME, which verify, size and screen read.
# REUSE (unset; an earlier compact version, e.g. baselines/v6): `compact --reuse` it, so
# the packs holding texts it already has are copied byte for byte (what a further
# version adds in git: docs/baselines.md).
#
# Needs $ZLBENCH_FLAGGEMS_DIR (FlagGems at the recorded commit) and triton (the
# version that recorded). FlagGems imports sqlalchemy: the screen's workers need it
# importable (PYTHONPATH). JOBS: the screen's processes (default: the CPU count).
set -uo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 SCRATCH [JOBS]" >&2; exit 2; }
SCRATCH=$1
JOBS=${2:-$(nproc)}
SRC=${SRC:-examples/h200-full-screen}
[ -e "$SCRATCH" ] && { echo "v6_assemble: $SCRATCH exists; give a new dir" >&2; exit 2; }
PASS_TGZ=${PASS_TGZ:-$SRC/full.tgz}
NAME=${NAME:-v6}  # the version the last steps make (its manifest's name: its dir's)
[ -f "$PASS_TGZ" ] || { echo "v6_assemble: no $PASS_TGZ" >&2; exit 2; }
ls "$SRC"/records/*.tar.xz >/dev/null 2>&1 || { echo "v6_assemble: no packs in $SRC/records" >&2; exit 2; }
[ -d "${ZLBENCH_FLAGGEMS_DIR:-}" ] || { echo "v6_assemble: ZLBENCH_FLAGGEMS_DIR is not a dir" >&2; exit 2; }
PY=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
# the shape file the pass recorded with (refresh refuses another): v6's copy of it, since
# ops/shapes_single.yaml got curated rows after the pass (docs/ops.md); v6 is packed, so
# its unpacked copy's (zlbench unpack)
SHAPES=${SHAPES:-$("$PY" -m zlbench unpack "$HERE/../baselines/v6")/shapes.yaml}
[ -f "$SHAPES" ] || { echo "v6_assemble: no shape file $SHAPES" >&2; exit 2; }
mkdir -p "$SCRATCH"
STEPS=$SCRATCH/steps.tsv
printf 'step\twall_s\trc\n' >"$STEPS"

step() {  # step NAME CMD...: runs CMD, its output in SCRATCH/NAME.log (and the tail shown)
  local name=$1 t0 rc
  shift
  echo "=== [$(date -u +%H:%M:%S)] $name"
  t0=$EPOCHREALTIME
  "$@" >"$SCRATCH/$name.log" 2>&1
  rc=$?
  "$PY" -c 'import sys; print("%s\t%.1f\t%s" % (sys.argv[1], float(sys.argv[3]) - float(sys.argv[2]), sys.argv[4]))' \
    "$name" "$t0" "$EPOCHREALTIME" "$rc" >>"$STEPS"
  tail -4 "$SCRATCH/$name.log"
  [ $rc -eq 0 ] || { echo "v6_assemble: step $name failed (rc=$rc), see $SCRATCH/$name.log" >&2; exit $rc; }
}

zl() { "$PY" -m zlbench "$@"; }
unpack_work() {
  mkdir -p "$SCRATCH/WORK/record" && tar xzf "$PASS_TGZ" -C "$SCRATCH/WORK/record" &&
    cp -r "$SCRATCH/RECS/main/." "$SCRATCH/WORK/record/main/"
}

step unpack "$PY" "$HERE/full_records.py" unpack "$SRC"/records/*.tar.xz "$SCRATCH/RECS"
step work unpack_work
step refresh zl baseline refresh --out "$SCRATCH/v6-full" --all \
  --shape-file "$SHAPES" --no-replay --require-codegen --from-work "$SCRATCH/WORK"
step compact zl baseline compact "$SCRATCH/v6-full" --out "$SCRATCH/v6c" ${REUSE:+--reuse "$REUSE"}
step rebuild zl codegen --baseline "$SCRATCH/v6c" --shard 1/1 --jobs "$JOBS" --out "$SCRATCH/rebuilt"
step digests zl baseline code-digests "$SCRATCH/v6c" --out "$SCRATCH/$NAME" --rebuilt "$SCRATCH/rebuilt"
step verify zl baseline verify "$SCRATCH/$NAME"
step size "$PY" "$HERE/baseline_size.py" --git "$SCRATCH/$NAME"
cp "$SCRATCH/size.log" "$SCRATCH/size.txt"
step screen zl codegen --baseline "$SCRATCH/$NAME" --jobs "$JOBS" --out "$SCRATCH/screen"
cat "$STEPS"

#!/usr/bin/env bash
# The full-inventory screen in record mode, as the seed ran it, across device calls
# (issue 13 item 6; docs/screening.md, numbers in docs/measurements.md):
#
#   benchmarks/gpu_full_screen.sh STAGE...
#
# Stages:
#   run S      `zlbench batch --all` (each op's own dtypes, $SHAPES) on $GPUS with
#              --gpu-share $SHARE, --resume --keep-failed into $FULL (an op that failed or
#              timed out in an earlier call is not run again); stopped with SIGINT after S
#              seconds (complete ops are kept, the ones in flight run again on resume).
#              Refused (exit 2) when $FULL holds no pass (no ops_status.csv) unless
#              NEW_PASS=1: on 2026-12-02 a call that found a fresh machine instead of the
#              warm one began the pass again from its first op and spent 9 minutes of
#              the H200 on 111 ops already final
#   restore F  $FULL emptied, then the tarball written by `pack` unpacked into it (a fresh
#              machine resumes; on a warm one, the last call's records are not packed
#              again by `records`: they came back with that call)
#   resume F   the stage of every call after a session's first: on a warm machine (its
#              $FULL holds a pass) nothing; on a fresh one (the warm machine was given
#              back between the calls) `restore F`, F being the last call's full.tgz
#              copied here before the call (.cache/carry/full.tgz). No `unrecorded`
#              then: the ops the session's calls recorded are complete in F and their
#              records.tgz files are here, not yet packed
#   pack       $OUT/full.tgz: batch.json, ops_status.csv, summary.csv, gpu_turns.csv and
#              per op result.json, .complete and the last 200 lines of run.log (no
#              codegen blobs, no TTGIR): what the screen's counts and the dismiss list
#              need, and what --resume needs to skip the complete ops; and
#              records_sent.txt (`full_records.py sent`: every op whose records a call
#              sent back, so that `unrecorded` can tell when a call's records.tgz was
#              not merged and packed before the next call)
#   unrecorded D  every PASS op complete in $FULL whose records no D/*.tar.xz (the packs of
#              benchmarks/full_records.py) holds loses its .complete: --resume records it
#              again, after the ops not started yet (ops final before the records stage
#              existed kept none, and the next baseline needs them); so does every op
#              whose packed records show the recorder's gap before 2026-12-01's fix
#              (`full_records.py gaps D` lists them); refused (exit 2, nothing
#              unmarked, no later stage run) while an op of records_sent.txt is in
#              no pack of D
#   retry "R…" the FAIL/TIMEOUT/CRASH ops named (run names) leave ops_status.csv, so that
#              --resume --keep-failed runs them again, after the ops not started yet
#              (`full_records.py retry`; any other name: exit 2, nothing changed)
#   records    $OUT/records.tgz: what a baseline of the complete ops needs beyond that, of
#              the ops complete on this machine that still have it (a restored op has
#              not: its records came back with an earlier call): autotune_records/ and
#              codegen/index.json with the TTIR and TTGIR texts only (blobs/<sha>.gz; the
#              other stages keep their digests, blob "", as `zlbench baseline compact`
#              keeps them); benchmarks/full_records.py merges every call's and packs
#              them for git (docs/baselines.md, v6)
#
# Needs $ZLBENCH_FLAGGEMS_DIR and zlbench importable. Env: FULL (runs/full-screen),
# GPUS (0), SHARE (3), SHAPES (ops/shapes_single.yaml; the pass of
# examples/h200-full-screen was recorded with the file before its curated rows, kept as
# baselines/v6/shapes.yaml: --resume refuses another, so resume it with a copy of that
# one, e.g. SHAPES=.cache/carry/shapes_pass.yaml), OP_TIMEOUT (300), RETRIES (0),
# RECHECK (unset; 1: `run` adds --recheck-dismissed, so the resumed pass also runs the
# ops the dismiss list names and those marked unconditional skip: does an H20 limit
# hold on this GPU? docs/ops.md), NEW_PASS (unset; 1: `run` may begin a new pass in an
# empty $FULL), OPS (unset: `run` selects --all; else these op specs, space separated:
# with RECHECK=1, NEW_PASS=1 and a $FULL of its own, the dismissed entries a re-check is
# for, apart from the pass, whose own dismissals were found on the H200).
set -uo pipefail
FULL=${FULL:-runs/full-screen}
GPUS=${GPUS:-0}
SHARE=${SHARE:-3}
SHAPES=${SHAPES:-ops/shapes_single.yaml}

restore_pass() { # $FULL emptied, then the pack F unpacked into it; exit 2 when F is not there
  [ -f "$1" ] || { echo "$2 no $1 to restore" >&2; exit 2; }
  rm -rf "$FULL" && mkdir -p "$FULL" && tar xzf "$1" -C "$FULL" || exit 2
}

final_ops() { # the ops final in $FULL: ops_status.csv's rows
  if [ -f "$FULL/ops_status.csv" ]; then echo $(($(wc -l <"$FULL/ops_status.csv") - 1)); else echo 0; fi
}

while [ $# -gt 0 ]; do
  stage=$1
  shift
  echo "=== [$(date -u +%H:%M:%S)] stage $stage"
  case $stage in
    run)
      secs=$1
      shift
      if [ ! -f "$FULL/ops_status.csv" ] && [ -z "${NEW_PASS:-}" ]; then
        echo "run: $FULL holds no pass (no ops_status.csv): restore or resume one first, or NEW_PASS=1 to begin a new pass" >&2
        exit 2
      fi
      chosen=(--all)
      # shellcheck disable=SC2206 # $OPS: the op specs, one word each
      [ -n "${OPS:-}" ] && chosen=(--ops $OPS)
      timeout -s INT -k 30 "$secs" python3 -m zlbench batch "${chosen[@]}" --shape-file "$SHAPES" \
        --gpus "$GPUS" --gpu-share "$SHARE" --op-timeout "${OP_TIMEOUT:-300}" \
        --max-retries "${RETRIES:-0}" --out "$FULL" --resume --keep-failed \
        ${RECHECK:+--recheck-dismissed} 2>&1 | tail -40
      echo "rc=${PIPESTATUS[0]}"
      ;;
    restore)
      restore_pass "$1" restore:
      shift
      ;;
    resume)
      if [ -f "$FULL/ops_status.csv" ]; then
        echo "resume: warm machine, $FULL kept ($(final_ops) op(s) final)"
      else
        restore_pass "$1" "resume: a fresh machine and"
        echo "resume: fresh machine, $FULL restored from $1 ($(final_ops) op(s) final)"
      fi
      shift
      ;;
    pack)
      python3 "$(dirname "$0")/full_records.py" sent "$FULL" || exit 2
      python3 - "$FULL" "$OUT/full.tgz" <<'PY'
import io, sys, tarfile
from pathlib import Path
full, dest = Path(sys.argv[1]), sys.argv[2]
keep = ("batch.json", "ops_status.csv", "summary.csv", "gpu_turns.csv", "records_sent.txt")
with tarfile.open(dest, "w:gz") as tar:
    for name in keep:
        if (full / name).is_file():
            tar.add(full / name, arcname=name)
    for run in sorted(p.parent for p in full.glob("*/*/run.log")):
        rel = run.relative_to(full)
        for name in ("result.json", ".complete"):
            if (run / name).is_file():
                tar.add(run / name, arcname=str(rel / name))
        tail = "".join((run / "run.log").read_text(errors="replace").splitlines(True)[-200:])
        data = tail.encode()
        info = tarfile.TarInfo(str(rel / "run.log"))
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
print(dest, Path(dest).stat().st_size, "bytes")
PY
      ;;
    unrecorded)
      python3 "$(dirname "$0")/full_records.py" unrecorded "$FULL" "$1" || exit 2
      shift
      ;;
    records)
      python3 "$(dirname "$0")/full_records.py" records "$FULL" "$OUT/records.tgz"
      ;;
    retry)
      # shellcheck disable=SC2086 # the run names, one word each
      python3 "$(dirname "$0")/full_records.py" retry "$FULL" $1 || exit 2
      shift
      ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done

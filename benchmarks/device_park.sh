#!/usr/bin/env bash
# The tree a device call sends must fit 64 MiB as a tar (benchmarks/device_kit.sh counts
# it); the shipped examples/ and baselines/ alone are ~48 MiB of it. A call needs few of
# them: park the rest in .cache/parked/ (ignored, and not carried, so it stays here) for
# the calls, and put them back before anything is committed.
#
#   benchmarks/device_park.sh park KEEP...   every dir under examples/ and baselines/
#                                            not named in KEEP moves to .cache/parked/
#   benchmarks/device_park.sh unpark         every parked dir moves back
#   benchmarks/device_park.sh status         what is parked (exit 1 if anything is)
#
# park refuses (exit 2, nothing moved) while something is parked or a KEEP is no such
# dir; unpark refuses (exit 2, nothing moved) where a parked dir's place is taken.
# While parked, `git status` shows the parked dirs as deleted: unpark before a commit.
set -euo pipefail
PARK=${PARK:-.cache/parked}
usage() { echo "usage: $0 park KEEP... | unpark | status" >&2; exit 2; }
[ $# -ge 1 ] || usage
parked() {  # the parked dirs, one a line (none: nothing, exit 0)
  if [ -d "$PARK" ]; then
    (cd "$PARK" && find examples baselines -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort)
  fi
  return 0
}

case $1 in
  park)
    shift
    if [ -n "$(parked)" ]; then
      echo "device_park: $PARK already holds $(parked | wc -l) dir(s); unpark first" >&2
      exit 2
    fi
    for k in "$@"; do
      [ -d "$k" ] || { echo "device_park: KEEP $k is no dir" >&2; exit 2; }
    done
    moved=0
    for d in examples/*/ baselines/*/; do
      d=${d%/}
      [ -d "$d" ] || continue
      keep=0
      for k in "$@"; do [ "${k%/}" = "$d" ] && keep=1; done
      [ $keep = 1 ] && continue
      mkdir -p "$PARK/$(dirname "$d")"
      mv "$d" "$PARK/$d"
      moved=$((moved + 1))
    done
    echo "device_park: $moved dir(s) parked in $PARK, kept: ${*:-none}"
    ;;
  unpark)
    list=$(parked)
    [ -n "$list" ] || { echo "device_park: nothing parked in $PARK"; exit 0; }
    for d in $list; do
      [ ! -e "$d" ] || { echo "device_park: $d exists; nothing moved back" >&2; exit 2; }
    done
    for d in $list; do mv "$PARK/$d" "$d"; done
    echo "device_park: $(echo "$list" | wc -l) dir(s) moved back"
    ;;
  status)
    list=$(parked)
    [ -n "$list" ] || { echo "device_park: nothing parked"; exit 0; }
    echo "device_park: parked in $PARK:"
    while read -r d; do echo "  $d"; done <<<"$list"
    exit 1
    ;;
  *) usage ;;
esac

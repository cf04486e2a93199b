#!/usr/bin/env bash
# A baseline's launch captures taken over device calls, as batches only (issue 51,
# docs/replay.md "Captures for an existing baseline"): each call runs bands of the
# baseline's ops by recorded seconds, shortest first (benchmarks/gpu_adopt.sh band/LO/HI,
# `baseline capture --batch-only`: no derive on the device, which took minutes of a call
# for v7), and packs this call's batches, without their kernels' stage records, into
# $OUT/cap-$TAG.tgz (over 15 MiB: cap-$TAG.tgz.part-aa, -ab...; cat them into one). The
# captured version is derived off the device with `zlbench baseline capture --baseline B
# --out DIR --from` every batch, and the batches are kept in git packed, so that a
# machine lost between sessions loses none of them (the thirty-ninth session lost eight).
#
#   bash benchmarks/device_env.sh bash benchmarks/gpu_capture.sh BUDGET_S
#
# The first call on a machine checks --untimed: the baseline's CHECK_OPS shortest ops
# captured untimed (batch chku-TAG), then with the small budgets (--warmup-ms 5 --replays
# 1, the thirty-eighth session's; chkt-TAG), compared by benchmarks/captures_diff.py
# ($OUT/diff-$TAG.txt): the same launches, values apart, and every band runs untimed;
# else with the small budgets.
# Later calls on the same machine read that decision from $W/mode.
# Env: W (/tmp/w), TAG (c1: names this call's batches; another call's band of the same
# seconds takes the ops the first left), CAP_FROM (baselines/v7), CAP_SHARE (8),
# CHECK_OPS (30), BANDS (0/5 5/10 10/15 15/25 25/60 60/100000).
set -u
BUDGET=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TAG=${TAG:-c1}
W=${W:-/tmp/w}
R=${OUT:-$W}
export W CAP_FROM=${CAP_FROM:-baselines/v7} CAP_SHARE=${CAP_SHARE:-8} CAP_BATCH_ONLY=1 \
  KEEP_BL=0 BAND_TAG=$TAG OUT=$W/o-$TAG
mkdir -p "$OUT"
t0=$SECONDS
rem() { echo $((BUDGET - (SECONDS - t0))); }
adopt() { bash "$here/gpu_adopt.sh" "$@"; }
if [ ! -e "$W/mode" ]; then  # the --untimed check, on the baseline's shortest ops
  python3 "$here/ops_by_seconds.py" "$CAP_FROM" | head -"${CHECK_OPS:-30}" > "$W/check.txt"
  CAP_UNTIMED=1 NAME=chku-$TAG OPS_FILE=$W/check.txt OP_TIMEOUT=120 \
    adopt "$(( $(rem) - 60 ))" capture:60
  NAME=chkt-$TAG OPS_FILE=$W/check.txt CAP_WARMUP_MS=5 CAP_REPLAYS=1 OP_TIMEOUT=120 \
    adopt "$(( $(rem) - 30 ))" capture:40
  python3 "$here/captures_diff.py" "$W/capwork-chku-$TAG/replay" \
    "$W/capwork-chkt-$TAG/replay" > "$R/diff-$TAG.txt" 2>&1
  rc=$?
  tail -5 "$R/diff-$TAG.txt"
  if [ "$rc" = 0 ]; then echo untimed > "$W/mode"; else echo budgets > "$W/mode"; fi
fi
mode=$(cat "$W/mode" 2>/dev/null || echo budgets)
echo "gpu_capture: mode $mode"
if [ "$mode" = untimed ]; then export CAP_UNTIMED=1; else export CAP_WARMUP_MS=5 CAP_REPLAYS=1; fi
for b in ${BANDS:-0/5 5/10 10/15 15/25 25/60 60/100000}; do
  r=$(( $(rem) - 25 ))
  [ "$r" -gt 60 ] || break
  case $b in */100000) ot=240 ;; *) ot=120 ;; esac
  OP_TIMEOUT=$ot adopt "$r" "band/$b:60"
done
cd "$W" || exit 2
batches=(capwork-*-"$TAG")
[ -e "${batches[0]}" ] || { echo "gpu_capture: no batch this call"; exit 1; }
tar czf "$R/cap-$TAG.tgz" --exclude='*.gz' --exclude='*.ttgir' "${batches[@]}" \
  ops-*-"$TAG".txt check.txt o-"$TAG"/log.txt mode 2>/dev/null
if [ "$(stat -c %s "$R/cap-$TAG.tgz")" -gt $((15 << 20)) ]; then
  split -b 15M "$R/cap-$TAG.tgz" "$R/cap-$TAG.tgz.part-" && rm "$R/cap-$TAG.tgz"
fi
ls -la "$R"
echo "gpu_capture: $((SECONDS - t0))s"

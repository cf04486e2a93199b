#!/usr/bin/env bash
# One device call that picks its stages by the GPU model it finds (docs/replay.md "The
# next GPU session"): a call that names no kind may come as an H100 or an H200, and a
# start is scarce. `bash benchmarks/device_env.sh bash benchmarks/gpu_by_model.sh CALL`,
# carrying .cache/kit .whl .cache/snap (and what the branch carries); CALL 1, 2, 3 on
# one warm machine (a machine stays warm 30 s after a call: issue the next at once).
# On an H200: v5g's capture, its A/As and its broad change (docs/replay.md item 4). On
# an H100: v7's op-path shards 2-4 of 4 (calls 1-3) over the forty-ninth session's
# replay parts, carried as .cache/s49-parts.tgz with .cache/wvscreen.tgz (this
# machine's, not committed: elsewhere the parts must run again, `wv-part/K/4`); then
# `clean`'s broad change beside the op path's (4). Edit the branches for the session's
# plan. BUDGET: a call's seconds when less device time is left.
S=.cache/snap/benchmarks; export W=/tmp/w
call=${1:-1}
fresh=(); [ -d "$W/triton" ] || fresh=(host copies unpack:20)  # a fresh machine: set up again
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader
case "$gpu:$call" in
  *H200*:1)
    NAME=v5g CAP_OPS=all CAP_FROM=baselines/v5 CAP_SHARE=8 CAP_WARMUP_MS=5 CAP_REPLAYS=1 \
      REPLAY=1 bash "$S/gpu_adopt.sh" 555 host copies capture:140 aa-1:145 broad-1:145 pack ;;
  *H200*:2)  # an H100's capture, aa-1 and broad-1 took 425 s (forty-second session)
    NAME=v5g KEEP_BL=0 REPLAY=1 bash "$S/gpu_adopt.sh" 555 aa-2:135 aa-3:135 broad-op:250 pack ;;
  *H200*:*)
    NAME=v5g KEEP_BL=0 REPLAY=1 REPLAY_L2=clean bash "$S/gpu_adopt.sh" 555 aa-4:145 broad-2:150 pack ;;
  *:[123])  # v7's op path, shard CALL+1 of 4, on the forty-ninth session's four replay
    # parts (.cache/s49-parts.tgz: their replay.json and pairs.json; shard 1 ran there)
    [ -d "$W/wv-part-1" ] || fresh+=(carried/.cache/wvscreen.tgz:10 carried/.cache/s49-parts.tgz:10)
    k=$((call + 1))
    NAME=v7h CAP_FROM=baselines/v7h REPLAY=1 GATE_EXTRA=--phase-timings \
      bash "$S/gpu_adopt.sh" "${BUDGET:-565}" "${fresh[@]}" "wv-op/$k/4:520"
    logs=(); [ -f "$W/wv-op-$k.log" ] && logs=("wv-op-$k.log")  # the gate's own lines
    tar czf "$OUT/op$k.tgz" -C "$W" --exclude=diffs --exclude=plan.json "wv-op-$k" "${logs[@]}" ;;
  *)  # `clean`: its broad change beside the op path's (its A/As: the forty-seventh session)
    NAME=v5h CAP_FROM=baselines/v5h REPLAY=1 REPLAY_L2=clean \
      bash "$S/gpu_adopt.sh" "${BUDGET:-560}" "${fresh[@]}" broad-1:150 broad-op:270 pack ;;
esac
cp "$W/walls.txt" "$W/log.txt" "$OUT/" 2>/dev/null; ls -la "$OUT"

#!/usr/bin/env bash
# One device call that picks its stages by the GPU model it finds (docs/replay.md "The
# next GPU session"): a call that names no kind may come as an H100 or an H200, and a
# start is scarce. `bash benchmarks/device_env.sh bash benchmarks/gpu_by_model.sh CALL`,
# carrying .cache/kit .whl .cache/snap; CALL 1, 2, 3 on one warm machine (a machine
# stays warm 30 s after a call: issue the next at once). As the forty-eighth session
# ran it: on an H200, v5g's capture, its A/As and its broad change (item 4); on an
# H100, the L2 policies' broad changes and `warm`'s A/As over v5h (item 3), and the
# base's further runs over v7's 27 ops of outputs that differ. Edit the branches for
# the session's plan. BUDGET: the H100 calls' seconds (560) when less device time is left.
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
  *:1)  # v7's broad change, its replay's parts 1-2 of 4 (the forty-fifth session's screen)
    NAME=v7h CAP_FROM=baselines/v7h REPLAY=1 bash "$S/gpu_adopt.sh" "${BUDGET:-565}" \
      host copies unpack:40 carried/.cache/wvscreen.tgz:10 wv-part/1/4:200 pack wv-part/2/4:200 pack ;;
  *:2)  # parts 3-4 on the warm machine (a fresh one sets up again)
    [ -d "$W/wv-screen" ] || fresh+=(carried/.cache/wvscreen.tgz:10)
    NAME=v7h CAP_FROM=baselines/v7h REPLAY=1 bash "$S/gpu_adopt.sh" "${BUDGET:-565}" \
      "${fresh[@]}" wv-part/3/4:200 pack wv-part/4/4:200 pack ;;
  *)  # `clean`: its broad change beside the op path's (its A/As: the forty-seventh session)
    NAME=v5h CAP_FROM=baselines/v5h REPLAY=1 REPLAY_L2=clean \
      bash "$S/gpu_adopt.sh" "${BUDGET:-560}" "${fresh[@]}" broad-1:150 broad-op:270 pack ;;
esac
cp "$W/walls.txt" "$W/log.txt" "$OUT/" 2>/dev/null; ls -la "$OUT"

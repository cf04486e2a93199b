#!/usr/bin/env bash
# One device call that picks its stages by the GPU model it finds (docs/replay.md "The
# next GPU session"): a call that names no kind may come as an H100 or an H200, and a
# start is scarce. `bash benchmarks/device_env.sh bash benchmarks/gpu_by_model.sh CALL`,
# carrying .cache/kit .whl .cache/snap (and what the branch carries); CALL 1, 2, 3 on
# one warm machine (a machine stays warm 30 s after a call: issue the next at once).
# On an H200: v5g's capture, its A/As and its broad change (docs/replay.md item 4). On
# an H100: the L2 policies (item 3): `clean`'s broad change beside the op path's (call
# 1), then `warm`'s A/As (2) and its broad change (3), v5h. (v7's op-path shards 2-4 of
# the forty-ninth session needed that machine's replay parts, which are gone: v7 runs
# again whole, `wv-part/K/4` then `wv-op/K/4`.) Edit the branches for the session's
# plan. BUDGET: a call's seconds when less device time is left.
S=.cache/snap/benchmarks; export W=/tmp/w
call=${1:-1}
fresh=(); [ -d "$W/triton" ] || fresh=(host copies unpack:20)  # a fresh machine: set up again
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader
case "$gpu:$call" in
  *H200*:1)
    NAME=v5g CAP_OPS=all CAP_FROM=baselines/v5 CAP_SHARE=8 CAP_WARMUP_MS=5 CAP_REPLAYS=1 \
      REPLAY=1 bash "$S/gpu_adopt.sh" "${BUDGET:-555}" host copies capture:140 aa-1:145 broad-1:145 pack ;;
  *H200*:2)  # an H100's capture, aa-1 and broad-1 took 425 s (forty-second session)
    NAME=v5g KEEP_BL=0 REPLAY=1 bash "$S/gpu_adopt.sh" "${BUDGET:-555}" aa-2:135 aa-3:135 broad-op:250 pack ;;
  *H200*:*)
    NAME=v5g KEEP_BL=0 REPLAY=1 REPLAY_L2=clean bash "$S/gpu_adopt.sh" "${BUDGET:-555}" aa-4:145 broad-2:150 pack ;;
  *:1)  # `clean`: its broad change beside the op path's (its A/As: the forty-seventh session)
    NAME=v5h CAP_FROM=baselines/v5h REPLAY=1 REPLAY_L2=clean \
      bash "$S/gpu_adopt.sh" "${BUDGET:-560}" "${fresh[@]}" broad-1:150 broad-op:270 pack ;;
  *:2)  # `warm`'s A/As (an H100: 116-141 s an A/A)
    NAME=v5h CAP_FROM=baselines/v5h REPLAY=1 REPLAY_L2=warm \
      bash "$S/gpu_adopt.sh" "${BUDGET:-560}" "${fresh[@]}" aa-1:145 aa-2:145 aa-3:145 pack ;;
  *)  # `warm`'s broad change (read beside call 1's broad-op: replay_read.py compare),
    # then an op-path A/A of v7h's ops whose calls outlast the warmup budget (ormqr to
    # 704 ms a call, cholesky_inverse to 452 ms): two warmup calls, not five (47fbc02b)
    NAME=v5h CAP_FROM=baselines/v5h REPLAY=1 REPLAY_L2=warm \
      bash "$S/gpu_adopt.sh" "${BUDGET:-300}" "${fresh[@]}" broad-2:150 pack
    printf 'ormqr\ncholesky_inverse\n' > "$W/long_ops.txt"
    NAME=v7h CAP_FROM=baselines/v7h OPS_FILE=$W/long_ops.txt GATE_EXTRA="--time all" \
      bash "$S/gpu_adopt.sh" 250 unpack:10 aa-long-1:220 pack ;;
esac
cp "$W/walls.txt" "$W/log.txt" "$OUT/" 2>/dev/null; ls -la "$OUT"

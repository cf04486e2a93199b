#!/usr/bin/env bash
# One device call that picks its stages by the GPU model it finds (docs/replay.md "The
# next GPU session"): a call that names no kind may come as an H100 or an H200, and a
# start is scarce. As the forty-seventh session ran it (`bash benchmarks/device_env.sh
# bash benchmarks/gpu_by_model.sh`, carrying .cache/kit .whl .cache/snap): on an H200,
# v5g's capture and A/As (item 4); on an H100, the outputs that race over v7's 27 ops and
# the L2 `clean` A/As (items 1 and 3). Edit the two branches for the session's plan.
S=.cache/snap/benchmarks; export W=/tmp/w
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader
case "$gpu" in
  *H200*)
    NAME=v5g CAP_OPS=all CAP_FROM=baselines/v5 CAP_SHARE=8 CAP_WARMUP_MS=5 CAP_REPLAYS=1 \
      REPLAY=1 bash "$S/gpu_adopt.sh" 555 host copies capture:140 aa-1:145 broad-1:145 aa-2:145 pack ;;
  *)
    NAME=v7h CAP_FROM=baselines/v7h REPLAY=1 OPS_FILE=benchmarks/v7_differ_ops.txt \
      bash "$S/gpu_adopt.sh" 260 host copies unpack:40 rp-differ:170 pack
    mv "$OUT/adopt.tgz" "$OUT/differ.tgz"
    NAME=v5h CAP_FROM=baselines/v5h REPLAY=1 REPLAY_L2=clean \
      bash "$S/gpu_adopt.sh" $((565 - SECONDS)) unpack:20 aa-1:140 aa-2:140 pack ;;
esac
cp "$W/walls.txt" "$W/log.txt" "$OUT/" 2>/dev/null; ls -la "$OUT"

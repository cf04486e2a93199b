#!/usr/bin/env bash
# One device call that picks its stages by the GPU model it finds (docs/replay.md "The
# next GPU session"): a call that names no kind may come as an H100 or an H200, and a
# start is scarce. `bash benchmarks/device_env.sh bash benchmarks/gpu_by_model.sh CALL`,
# carrying .cache/kit .whl .cache/snap (and what the branch carries); CALL 1, 2, 3 on
# one warm machine (a machine stays warm 30 s after a call: issue the next at once).
# On an H200: v5g's capture, its A/As and its broad change under the default L2 policy
# (`warm` since the fiftieth session), then the broad change under `flush` beside it
# (docs/replay.md item 4). On an H100: `warm`'s third A/A and the op-path A/A of v7h's
# calls longer than the warmup budget (call 1; the fiftieth session ran `clean`'s broad
# change, two of `warm`'s A/As and its broad change), then v7h's ormqr, linalg_lstsq and
# linalg_svdvals (a cap of 4,160 launches a row since the fifty-first session) and nine
# ops whose run order v7h's capture predates captured again (call 2: with their A/A
# with the replay, the capture's batch back to ship; call 3 their broad change), then
# v7 again under `warm`: its screen and replay parts (4, 5; docs/replay.md item 2).
# Edit the branches for the session's plan. BUDGET: a call's seconds when less device
# time is left.
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
    NAME=v5g KEEP_BL=0 REPLAY=1 REPLAY_L2=flush bash "$S/gpu_adopt.sh" "${BUDGET:-555}" broad-2:150 pack ;;
  *:1)  # `warm`'s third A/A (the fiftieth session's was cut in its op path), then an
    # op-path A/A of v7h's ops whose calls outlast the warmup budget (ormqr to 704 ms a
    # call, cholesky_inverse to 452 ms): two warmup calls, not five (47fbc02b)
    NAME=v5h CAP_FROM=baselines/v5h REPLAY=1 \
      bash "$S/gpu_adopt.sh" "${BUDGET:-300}" "${fresh[@]}" aa-3:160 pack
    printf 'ormqr\ncholesky_inverse\n' > "$W/long_ops.txt"
    NAME=v7h CAP_FROM=baselines/v7h OPS_FILE=$W/long_ops.txt GATE_EXTRA="--time all" \
      bash "$S/gpu_adopt.sh" 260 unpack:10 aa-long-1:230 pack ;;
  *:2)  # v7h's rows the op path took for their capture alone (docs/replay.md item 2):
    # 29 truncated at 64 launches (a launch per reflector), 46 whose run order v7h's
    # capture predates (thnn_fused_lstm_cell_backward_impl 25), 8 under FlagGems'
    # first-run lock: captured again (untimed, into v7h's records), derived over v7h,
    # then their A/A with the replay (every captured row, none changed); capwork.tgz
    # comes back (`baseline capture --replace --from` on the CPU ships it into
    # baselines/v7h)
    tr ' ' '\n' > "$W/cap_ops.txt" <<< "ormqr linalg_lstsq linalg_svdvals \
thnn_fused_lstm_cell_backward_impl as_strided_scatter unsafe_masked_index_put_accumulate \
scatter_reduce_two_ float_power_ unique_dim fused_moving_avg_obs_fq_helper svd quantile"
    NAME=v7c CAP_FROM=baselines/v7h OPS_FILE=$W/cap_ops.txt CAP_UNTIMED=1 CAP_BATCH_ONLY=1 \
      REPLAY=1 KEEP_BL=0 bash "$S/gpu_adopt.sh" "${BUDGET:-560}" "${fresh[@]}" capture:240 \
      pack-capwork derive/v7c:60 aa-cap:200 pack ;;
  *:3)  # their broad change with the replay: ormqr's and linalg_lstsq's rows replay at
    # the PR's pace (ormqr float32 4096²: 4.9 s a call against 0.26 s, forty-ninth
    # session), several minutes of the call by the model
    NAME=v7c CAP_FROM=baselines/v7h OPS_FILE=$W/cap_ops.txt REPLAY=1 KEEP_BL=0 \
      bash "$S/gpu_adopt.sh" "${BUDGET:-565}" broad-cap:540 pack ;;
  *:4)  # v7 again, under `warm`: its screen (296 s in the forty-fifth session, there
    # a call of its own) and the first replay part; then `wv-part/2/4` ... and the op
    # path's shards `wv-op/K/4` in calls of their own (docs/replay.md item 2)
    NAME=v7h CAP_FROM=baselines/v7h REPLAY=1 \
      bash "$S/gpu_adopt.sh" "${BUDGET:-565}" "${fresh[@]}" wv-screen:330 wv-part/1/4:200 pack ;;
  *)  # the next replay parts of v7 on the same warm machine
    NAME=v7h CAP_FROM=baselines/v7h REPLAY=1 \
      bash "$S/gpu_adopt.sh" "${BUDGET:-565}" "${fresh[@]}" wv-part/2/4:200 pack wv-part/3/4:200 pack ;;
esac
cp "$W/walls.txt" "$W/log.txt" "$OUT/" 2>/dev/null; ls -la "$OUT"

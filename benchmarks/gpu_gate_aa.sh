#!/usr/bin/env bash
# The fifth and sixth sessions' GPU runs (2026-11-30, nvidia-h200-x2; docs/measurements.md
# "fifth session", "sixth session"): A/A gates with a full A/B on one and on two GPUs at
# once (issues 12, 15), the old replay path beside the gate's measure step (issue 13), a
# stale-row gate, the PR tier's replay, a shorter timing budget and the PR tier's gate.
#
#   benchmarks/gpu_gate_aa.sh BUDGET_S STAGE...    e.g. 555 info copies solo1 old solo2 pack
#
# Stages (each is skipped when its estimate does not fit what is left of BUDGET_S;
# "a+b" runs stages a and b at once, each on its own GPU):
#   info      GPUs, driver, torch and triton versions
#   copies    triton copies in $W/triton (benchmarks/ab_tools.py copies): same, base, patched
#   old       plain replay batch of gate_core against $V2 on GPU 0 (each process compiles)
#   soloN     one A/A gate on GPU 0: --full-ab --ab-rounds 1, PR = same, base = base
#   pairN     two A/A gates at once, GPU 0 and GPU 1
#   prN       the PR tier's replay against $REC (its record pass) on GPU $PRG (default 1)
#   budgetN   gate_core replay with --warmup-ms 25 --replays 5 on GPU $BG (default 0)
#   prtier    the default gate (suspects A/B) of ops/tiers/pr.txt against $V3 on every GPU, PR = same
#   stale     a default gate against a copy of $V2 whose softmax row is made faster (ab_tools stale: 11 %)
#   pack      tar the results into $OUT
# Needs: CUDA GPUs, FlagGems checkout of $V2's commit in $ZLBENCH_FLAGGEMS_DIR, zlbench
# importable. Env: W (work dir, /tmp/w), V2 (baselines/v2), V3 (baselines/v3), REC (a PR-tier
# record batch), AA_ARGS (more arguments of every A/A gate, e.g. a threshold to test),
# PR_ARGS (more arguments of the prtier gate; the sixth session's ran with its AA_ARGS).
set -u
BUDGET=$1; shift
T0=$SECONDS
W=${W:-/tmp/w}; mkdir -p "$W"
LOG=${OUT:-$W}/log.txt; mkdir -p "$(dirname "$LOG")"
V2=${V2:-baselines/v2}
REC=${REC:-runs/pr-record}
stamp() { date -u +%H:%M:%S; }
say() { echo "[$(stamp) +$((SECONDS - T0))s] $*" | tee -a "$LOG"; }
left() { echo $(( $1 - (SECONDS - T0) )); }   # seconds left of a budget
# timed LIMIT NAME CMD...: run with a time limit, output to $W/NAME.out, wall to $W/walls.txt
timed() { local lim=$1 name=$2; shift 2; local wdir=${WALL_TO:-}; local t0; t0=$(date +%s.%N); say "start $name"
  timeout -s INT -k 20 "$lim" "$@" >> "$W/$name.out" 2>&1; local rc=$?
  local w; w=$(python3 -c "import sys;print(round(float(sys.argv[2])-float(sys.argv[1]),1))" "$t0" "$(date +%s.%N)")
  echo "$name rc=$rc wall=$w" >> "$W/walls.txt"; [ -n "$wdir" ] && [ -d "$wdir" ] && echo "$w" > "$wdir/wall_s"
  say "end $name rc=$rc wall=${w}s"; tail -6 "$W/$name.out" | tee -a "$LOG"; return $rc; }
AB=$W/triton
gate() { # gate GPU PR_COPY NAME EST [ARGS...]: one gate on GPU (all: every GPU) with the PR's triton first
  local g=$1 pr=$2 name=$3 est=$4; shift 4
  if [ "$(left $BUDGET)" -lt "$est" ]; then say "SKIP $name (left $(left $BUDGET)s < $est)"; return 0; fi
  local vis=$g; [ "$g" = all ] && vis=${CUDA_VISIBLE_DEVICES:-0,1}
  WALL_TO= CUDA_VISIBLE_DEVICES=$vis PYTHONPATH=$AB/$pr${PYTHONPATH:+:$PYTHONPATH} timed $(($(left $BUDGET) - 25)) $name \
    python3 -m zlbench gate --ops-file ${OPS:-ops/gate_core.txt} --base-compiler $AB/base \
    --codegen-jobs 15 --phase-timings --out $W/$name "$@"
  echo "$(date -u +%FT%TZ) $name gpu=$g" >> $W/when.txt
}
# shellcheck disable=SC2086  # AA_ARGS: extra gate arguments, word-split on purpose
aa() { gate "$1" same "$2" "$3" --baseline $V2 --full-ab --ab-rounds 1 ${AA_ARGS:-}; }
run_stage() {
  local stage=$1
  say "=== stage $stage (left $(left $BUDGET)s)"
  case $stage in
    info)
      nvidia-smi -L | tee -a $LOG; nproc | tee -a $LOG
      nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv | tee -a $LOG
      python3 -c "import torch,triton;print(torch.__version__,triton.__version__)" | tee -a $LOG
      ;;
    copies) [ -d $AB ] || python3 benchmarks/ab_tools.py copies $AB --patch no_pipeline | tail -3 | tee -a $LOG ;;
    old) # the old path: a plain replay batch, each process compiles (GPU 1 idle)
      mkdir -p $W/old
      WALL_TO=$W/old timed $(($(left $BUDGET) - 25)) old python3 -m zlbench batch --ops-file ops/gate_core.txt \
        --replay-root $V2 --shape-file $V2/shapes.yaml --dtypes bfloat16 --gpus 0 --phase-timings --out $W/old
      ;;
    solo[1-9]) aa 0 aa-$stage 260 ;;
    pair[1-9])
      aa 0 aa-$stage-g0 260 & aa 1 aa-$stage-g1 260 & wait ;;
    pr1|pr2) # the PR tier's replay as one screen (GPU ${PRG:-1}), precompiled from its record pass
      mkdir -p $W/$stage
      WALL_TO=$W/$stage timed $(($(left $BUDGET) - 25)) $stage python3 -m zlbench batch --ops-file ops/tiers/pr.txt \
        --replay-root $REC --shape-file ops/shapes_single.yaml --dtypes bfloat16 --gpus ${PRG:-1} \
        --precompile-jobs 15 --phase-timings --out $W/$stage ;;
    budget1|budget2) # gate_core replay, precompiled, 25 ms warmup / 5 replays (GPU ${BG:-0})
      mkdir -p $W/$stage
      WALL_TO=$W/$stage timed $(($(left $BUDGET) - 25)) $stage python3 -m zlbench batch --ops-file ops/gate_core.txt \
        --replay-root $V2 --shape-file $V2/shapes.yaml --dtypes bfloat16 --gpus ${BG:-0} \
        --precompile-jobs 15 --warmup-ms 25 --replays 5 --phase-timings --out $W/$stage ;;
    prtier) # the default PR check of the PR tier (A/A: PR = same) on every GPU, against $V3
      # shellcheck disable=SC2086
      OPS=ops/tiers/pr.txt gate all same prtier 240 --baseline ${V3:-baselines/v3} ${PR_ARGS:-} ;;
    stale)
      [ -d $W/stale-v2 ] || python3 benchmarks/ab_tools.py stale $V2 $W/stale-v2 --op softmax | tail -2 | tee -a $LOG
      gate 0 same stale 200 --baseline $W/stale-v2 ;;
    pack)
      OUT=${OUT:-$W/out}; mkdir -p "$OUT"; cp $W/walls.txt $W/when.txt $OUT/ 2>/dev/null
      for f in $W/*.out; do echo "=== $f"; tail -40 $f; done > $OUT/tails.txt 2>&1
      tar czf $W/res.tgz --exclude='*.ttgir' --exclude='blobs' --exclude=triton --exclude='stale-v2' \
        --exclude='*.out' --exclude=res.tgz --exclude='pr[12]' -C $W . ; split -b 15M $W/res.tgz $OUT/res.tgz.
      tar czf $W/pr.tgz --exclude='*.ttgir' -C $W pr1 pr2 2>/dev/null; split -b 15M $W/pr.tgz $OUT/pr.tgz.
      ls -la $OUT | tee -a $LOG ;;
    *) say "unknown stage $stage" ;;
  esac
}
for stage in "$@"; do # a+b: stages a and b at once (each on its own GPU)
  for s in ${stage//+/ }; do run_stage $s & done; wait
done
say "done (left $(left $BUDGET)s)"

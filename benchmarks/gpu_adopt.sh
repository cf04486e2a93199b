#!/usr/bin/env bash
# Adopting zlbench on a GPU no baseline was recorded on (issue 48, docs/ci.md "Adopt
# zlbench in FlagTree", docs/measurements.md): bootstrap the PR tier's baseline on this
# runner, gate it, and gate the H200's v5 here with a base compiler.
#
#   benchmarks/gpu_adopt.sh BUDGET_S STAGE...
#
# Stages (skipped when the estimate, the word after the last ':', no longer fits):
#   host        which machine this is (GPU name, UUID, driver, boot id)
#   copies      $W/triton/{same,base} (unchanged), patched (ptxas_O0_three: ptxas -O0
#               for the softmax, rms_norm and exp kernels only: slower), no_compile, no_coalesce, and
#               no_coalesce_no_pipeline (benchmarks/ab_tools.py copies)
#   bootstrap   zlbench baseline bootstrap --tier pr --out $W/bl/$NAME (REPEATS replay
#               passes, 0: --no-replay; --work $W/bootwork: a call cut by its limit, the
#               next call on the warm machine resumes); then $OUT/bl.tgz holds it, and
#               benchmarks/launches_summary.py says what its capture can replay
#   capture     zlbench baseline capture --baseline $CAP_FROM --out $W/bl/$NAME (one
#               replay pass of $OPS_FILE's ops of v5 pinned to its records, each within
#               capture's --op-timeout, --work $W/capwork-$NAME: resumed
#               by the next call on the warm machine): v5 with launch captures, then
#               $OUT/bl.tgz holds it; the aa-N and broad-N stages gate it
#               (CAP_OPS=all: every op of $CAP_FROM instead of $OPS_FILE's; CAP_SHARE=N:
#               --gpu-share N, the recorded seconds then kept; CAP_WARMUP_MS, CAP_REPLAYS:
#               --warmup-ms, --replays, smaller budgets, the same captures, the seconds kept;
#               CAP_UNTIMED=1: --untimed, two eager calls a measurement, no timing;
#               CAP_BATCH_ONLY=1: --batch-only, the batch and no $W/bl/NAME: derived
#               elsewhere with --from, not in the call: v7's derive took minutes of one)
#   pack-capwork  $W/capwork-$NAME (the capture's batch so far, a cut one too, without
#               its kernels' stage records) into $OUT/capwork.tgz (over 15 MiB: split
#               into capwork.tgz.part-aa, -ab..., each under the 16 MiB a file back from
#               the device may be; cat them into one): `baseline capture --from` takes
#               its captures on any machine; restore/ gives it back to a fresh one, whose
#               capture resumes it
#   pack-boot   $W/bootwork (the bootstrap's passes so far) into $OUT/boot.tgz
#   unpack      $W/bl/$NAME from the unpacked tree of $CAP_FROM (a shipped capture
#               version, baselines/v5h: its gates need no capture on this machine)
#   overlay/F   $W/bl/$NAME from the unpacked tree of $CAP_FROM (a packed baseline) and
#               F, a tar of NAME/manifest.yaml, NAME/ops_status.csv and every
#               NAME/main/OP/codegen/launches.json (a capture version of it too large to
#               carry whole: v7's, 117 MB unpacked, 0.5 MB so), then `baseline verify`
#   band/LO/HI  a capture (as `capture`) of $CAP_FROM's ops recorded in (LO, HI] s, shortest
#               first, less every op a batch on this machine ran and every op $CAP_FROM
#               holds a capture of (a capture version: v7h), within $BAND_WITHIN's
#               ops when set (e.g. those not yet captured), NAME band-LO-HI[-$BAND_TAG],
#               packed into $OUT/capwork-NAME.tgz (split as pack-capwork): several bands a call,
#               each a batch `baseline capture --from` takes with the others
#   derive/B    $W/bl/$NAME = $CAP_FROM with the captures of the batch $W/capwork-B
#               (`baseline capture --replace --from`: a capture batch of some ops taken
#               again over a shipped capture version, e.g. for their run order; the
#               derived baseline is verified), then what its capture can replay (the
#               ops of $OPS_FILE, and in all)
#   restore F   $W/bl from F (a bl.tgz an earlier call brought back: a fresh machine),
#               or $W/bootwork from a boot.tgz (the bootstrap resumes from it), or
#               $W/capwork-NAME from a capwork.tgz
#   aa-N        A/A: the default gate of the PR tier against $W/bl/$NAME, PR = same,
#               base = base (the same build: the baseline's records decide); with
#               REPLAY=1, --time all: every captured row replayed (none changed)
#   patched     the same gate with PR = patched: PR vs base, only softmax, rms_norm, exp
#               timed (with the sentinels)
#   nocompile   the same gate with PR = no_compile (FAIL, exit 1)
#   broad-N     the same gate with PR = no_coalesce (a broad change: most kernels)
#   broad-op    after a REPLAY=1 broad-1: the same change without --replay (the op path)
#               on the ops broad-1's replay judged REGRESSION and 6 of its others
#               (benchmarks/replay_read.py opsfile; then replay_read.py compare)
#   position    after a REPLAY=1 broad-1, under its PR: its two-launch reductions (and abs, argmax)
#               replayed again with 0, 1 and 3 untimed calls before each sample
#               (benchmarks/replay_position.py: the first-sample probe; the gate's gone
#               binaries rebuilt first, the base side under $W/triton/base)
#   l2probe     after a REPLAY=1 broad-1: its pointwise 4096² rows (and add, avg_pool2d,
#               bmm) replayed with and without the L2 flush (the replay's larger slowdowns)
#   wbprobe     after a REPLAY=1 broad-1: its pointwise 4096² rows (and avg_pool2d)
#               replayed with the flush zeroing, reading and off, the buffers restored
#               before each timed call and once a sample: whether the written lines the
#               flush and the restore leave in L2 slow the replay's call (forty-third
#               session: 11-13 % below the op path's, the PR's loss 2-12x the op path's)
#   v5-patched, v5-nocompile  patched / nocompile against v5 (the H200's baseline)
#   v5-aa       the H200's baselines/v5 here, PR = same, base = base: the GPU model
#               differs, the architecture does not (accepted, named in the report)
#   v5-prbase   v5 with a base that is not v5's recording compiler: base = no_coalesce,
#               PR = no_coalesce_no_pipeline: only the PR's own change (the kernels with
#               a pipelined loop) is timed, not the kernels both differ in from v5
#   v7-unpack   baselines/v7 unpacked into the cache (so no screen below pays for it)
#   v7-one      the screen alone (`gate --screen-only`) of v7 under PR = no_coalesce (a
#               broad change), one-sided: against v7's recording compiler
#   v7-uncached the same PR against base = base (unchanged triton), the base side
#               rebuilt and kept in $W/basecache (emptied first)
#   v7-cached   the same again: the base side from $W/basecache
#   v7-aa       PR = same, base = base, cached: the A/A's screen (decided by the records)
#   v7-opside   v7's op path in replay mode, one side: `zlbench batch --replay-root`
#               v7 of $OPS2 (benchmarks/v7_oppath_sample.txt) with v7's shape file (as
#               the gate's op path: without it, upstream's shapes), each op within
#               --op-timeout $OP_TIMEOUT (100), then benchmarks/replay_read.py opside
#               (replayed against recorded seconds) and phase_breakdown.py
#   v7-sentinels  v7's family sentinels at their one row, one side, replay mode
#               (benchmarks/oppath_rows.py of $SENT_FILE, benchmarks/v7_sentinel_sample.txt:
#               each op's row picks, v7's shape file, --op-timeout $OP_TIMEOUT): the
#               model's seconds beside the measured
#   wv-screen, wv-part/K/N, wv-merge  a whole gate of the broad change against $W/bl/$NAME
#               over device calls (REPLAY=1): its screen (`gate --screen-only`), part K of
#               N of its replay each (`--screen` it, `--replay-part K/N`), then `--replayed`
#               every part: the op path and the verdict (the calls' gate steps summed);
#               each with --kernel-cache $W/kcache, so a call's gate builds as cache hits
#               what the screen and the calls before it compiled
#   wv-op/K/N, wv-judge  instead of wv-merge when the op path does not fit one call:
#               shard K/N of it (`--replayed` every part, `--shard K/N`), then the shards
#               merged (`zlbench merge`, their replay with them) and judged (`--results`)
#   rp-NAME     the replay alone (`--replay-part 1/1`) of the broad change over $OPS_FILE
#   carried/F   F (a tar.gz the call carries: an earlier session's wv-screen/, wv-part-K/
#               dirs) unpacked into $W, so that wv-part, wv-op and wv-merge take them
#   pack        gate dirs (verdicts, reports, screens, logs; not the screens' diffs/ nor
#               the replay's plan.json) into $OUT/adopt.tgz
#   pack-v7     the v7 screens' logs, codegen.md and timing.json into $OUT/v7.tgz
# Env: W (/tmp/w), NAME (h100), TIER (pr; smoke: 5 ops, minutes), OPS_FILE (the ops of
# capture and of the aa/patched/nocompile/broad gates; default ops/tiers/$TIER.txt: a
# file of fewer ops keeps a call's gates within its limit), OP_TIMEOUT (capture's
# --op-timeout; default: capture's own), CAP_FROM (capture's --baseline: baselines/v5, or
# an earlier capture's $W/bl/NAME, whose ops keep their captures), KEEP_BL (1; 0: no
# $OUT/bl.tgz after a capture: its batch, pack-capwork, is what comes back), REPEATS (2), REPLAY (0; 1:
# every gate with --replay, docs/replay.md "The next GPU session"), REPLAY_L2 (with
# REPLAY=1: every gate's --replay-l2, flush clean or warm; unset: the gate's default),
# GATE_EXTRA (words added to every `gate` stage's command, e.g. --phase-timings: each
# op's timings.json on both A/B sides, read by benchmarks/phase_breakdown.py), JOBS
# (nproc - 1).
# Needs
# $ZLBENCH_FLAGGEMS_DIR, zlbench importable, a CUDA GPU (benchmarks/device_env.sh).
set -u
BUDGET=$1; shift
W=${W:-/tmp/w}; mkdir -p "$W"
NAME=${NAME:-h100}
REPEATS=${REPEATS:-2}
TIER=${TIER:-pr}
OPS_FILE=${OPS_FILE:-ops/tiers/$TIER.txt}
JOBS=${JOBS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
LOG=${OUT:-$W}/log.txt
# shellcheck source=benchmarks/lib_stages.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_stages.sh"
stage=""
stages_begin "$BUDGET" "$LOG"
timed() { # timed NAME PR_COPY CMD...: CMD with that triton copy first on PYTHONPATH
  local name=$1 pr=$2; shift 2
  local t0=$SECONDS
  say "start $name (PR=$pr): $*"
  PYTHONPATH="$W/triton/$pr${PYTHONPATH:+:$PYTHONPATH}" timeout -s INT -k 20 "$(( $(left) - 30 ))" \
    "$@" > "$W/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc wall=$((SECONDS - t0))" >> "$W/walls.txt"
  say "end $name rc=$rc wall=$((SECONDS - t0))s"
  grep -E "^(PASS|FAIL|ERROR)|zlbench gate: (codegen|environment|error)|baseline recorded" \
    "$W/$name.log" | cut -c1-400 | tee -a "$LOG"
}
replay=(); every=()
if [ "${REPLAY:-0}" = 1 ]; then  # kernel replay (issue 51)
  replay=(--replay ${REPLAY_L2:+--replay-l2 "$REPLAY_L2"}); every=(--time all)  # an A/A replays every captured row
fi
read -ra gate_extra <<< "${GATE_EXTRA:-}"
gate() { local name=$1 pr=$2; shift 2; timed "$name" "$pr" python3 -m zlbench gate \
  --codegen-jobs "$JOBS" --out "$W/$name" "${replay[@]}" "${gate_extra[@]}" "$@"; }
pr=(--baseline "$W/bl/$NAME" --ops-file "$OPS_FILE")
# the whole gate over calls (wv-*): every call the same baseline, screen and base
# and one kernel cache (docs/replay.md "The kernel cache"): the screen's kernels and each
# part's builds are cache hits for the calls after it
wv=(--baseline "$W/bl/$NAME" --screen "$W/wv-screen" --base-compiler "$W/triton/base"
  --kernel-cache "$W/kcache")
keep_baseline() { # what $W/bl/$NAME's capture can replay, then $OUT/bl.tgz holds it
  [ -d "$W/bl/$NAME" ] && [ "${KEEP_BL:-1}" = 1 ] || return 0
  python3 benchmarks/launches_summary.py "$W/bl/$NAME" 2>&1 | tail -40 | tee -a "$LOG"
  tar czf "${OUT:-$W}/bl.tgz" -C "$W" bl
}
capture_run() { # capture_run NAME SELECTION...: `baseline capture` of $CAP_FROM into
  # $W/bl/NAME, its batch in $W/capwork-NAME (resumed by the same NAME on this machine)
  local name=$1 untimed=() out=(); shift
  out=(--out "$W/bl/$name")
  mkdir -p "$W/bl"
  [ "${CAP_UNTIMED:-0}" = 1 ] && untimed=(--untimed)
  [ "${CAP_BATCH_ONLY:-0}" = 1 ] && out=(--batch-only)
  timed capture same python3 -m zlbench baseline capture --baseline "${CAP_FROM:-baselines/v5}" \
    "${out[@]}" --work "$W/capwork-$name" "$@" "${untimed[@]}" \
    ${OP_TIMEOUT:+--op-timeout "$OP_TIMEOUT"} ${CAP_SHARE:+--gpu-share "$CAP_SHARE"} \
    ${CAP_WARMUP_MS:+--warmup-ms "$CAP_WARMUP_MS"} ${CAP_REPLAYS:+--replays "$CAP_REPLAYS"}
  tail -8 "$W/capture.log" | tee -a "$LOG"
}
pack_capwork() { # pack_capwork NAME FILE: $W/capwork-NAME into $OUT/FILE, without the
  # kernels' stage records (*.gz, *.ttgir: `baseline capture --from` reads each op's
  # launches.json, codegen index and result, not them; v7h's batch 22 MB -> 5.3 MB, the
  # same captured baseline); over 15 MiB (a file back from the device is at most 16)
  # into FILE.part-aa, -ab... (cat them into one)
  local o=${OUT:-$W}
  [ -d "$W/capwork-$1" ] && tar czf "$o/$2" --exclude='*.gz' --exclude='*.ttgir' \
    -C "$W" "capwork-$1" \
    && [ "$(stat -c %s "$o/$2")" -gt $((15 << 20)) ] \
    && split -b 15M "$o/$2" "$o/$2.part-" && rm "$o/$2"
  ls -la "$o/$2"* 2>&1 | tee -a "$LOG"
}
for spec in "$@"; do
  stage_fits "$spec" || continue
  case $stage in
    host)
      { nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version,clocks.max.sm,compute_cap \
          --format=csv,noheader; echo "boot_id $(cat /proc/sys/kernel/random/boot_id)"; } 2>&1 \
        | tee "$W/host.txt" | tee -a "$LOG" ;;
    copies)
      rm -rf "$W/triton"
      python3 benchmarks/ab_tools.py copies "$W/triton" --patch ptxas_O0_three \
        --also no_compile no_coalesce no_coalesce_no_pipeline | tee -a "$LOG" ;;
    bootstrap)
      mkdir -p "$W/bl"
      reps=(--repeats "$REPEATS"); [ "$REPEATS" = 0 ] && reps=(--no-replay)
      timed bootstrap same python3 -m zlbench baseline bootstrap --tier "$TIER" \
        --out "$W/bl/$NAME" "${reps[@]}" --work "$W/bootwork"
      tail -5 "$W/bootstrap.log" | tee -a "$LOG"
      keep_baseline ;;
    capture)  # $W/bl/$NAME = baselines/v5 with launch captures (one replay pass of v5)
      ops=(--ops-file "$OPS_FILE"); [ "${CAP_OPS:-}" = all ] && ops=()
      capture_run "$NAME" "${ops[@]}"
      keep_baseline ;;
    pack-capwork)  # the capture's replay batch so far (a cut one too): `baseline capture
      # --from` derives its captures anywhere, and restore/ gives it to a fresh machine
      pack_capwork "$NAME" capwork.tgz ;;
    band/*)  # band/LO/HI: a capture of $CAP_FROM's ops recorded in (LO, HI] s, shortest
      # first (a batch deals longest first: a call cut at its limit keeps the most ops),
      # less every op a batch on this machine ran ($W/capwork-*/replay) and every op
      # $CAP_FROM holds a capture of (ops_by_seconds.py), within the ops
      # of $BAND_WITHIN when set; NAME band-LO-HI (-$BAND_TAG when set: another call's
      # band of the same seconds, the ops the first left), packed into $OUT/capwork-NAME.tgz
      IFS=/ read -r _ lo hi <<< "$stage"
      name=band-$lo-$hi${BAND_TAG:+-$BAND_TAG}; done_=()
      for b in "$W"/capwork-*/replay; do [ -d "$b" ] && done_+=(--done "$b"); done
      python3 benchmarks/ops_by_seconds.py "${CAP_FROM:-baselines/v5}" --above "$lo" \
        --upto "$hi" "${done_[@]}" > "$W/ops-$name.all" 2>> "$LOG"
      if [ -n "${BAND_WITHIN:-}" ]; then
        grep -Fxf "$BAND_WITHIN" "$W/ops-$name.all" > "$W/ops-$name.txt"
      else
        cp "$W/ops-$name.all" "$W/ops-$name.txt"
      fi
      say "$name: $(wc -l < "$W/ops-$name.txt") op(s)"
      [ -s "$W/ops-$name.txt" ] && capture_run "$name" --ops-file "$W/ops-$name.txt" \
        && pack_capwork "$name" "capwork-$name.tgz" ;;
    pack-boot)  # the bootstrap's passes so far: a fresh machine resumes from them
      [ -d "$W/bootwork" ] && tar czf "${OUT:-$W}/boot.tgz" -C "$W" bootwork
      ls -la "${OUT:-$W}" ;;
    unpack)
      t=$(python3 -m zlbench unpack "${CAP_FROM:-baselines/v5h}" | tail -1)
      rm -rf "${W:?}/bl/$NAME" && mkdir -p "$W/bl" && cp -r "$t" "$W/bl/$NAME" \
        && say "unpacked ${CAP_FROM:-baselines/v5h} into $W/bl/$NAME" ;;
    carried/*)  # a tar.gz the call carried (an earlier session's screen, parts or
      # shards of one gate: wv-screen/, wv-part-K/, wv-op-K/) unpacked into $W; a gate
      # that takes a screen refuses one of another compiler or baseline in one line
      f=${stage#carried/}
      tar xzf "$f" -C "$W" && say "unpacked $f into $W: $(tar tzf "$f" | cut -d/ -f1 | sort -u | paste -sd' ')" ;;
    overlay/*)
      f=${stage#overlay/}
      t=$(python3 -m zlbench unpack "${CAP_FROM:-baselines/v7}" | tail -1)
      rm -rf "${W:?}/bl/$NAME" && mkdir -p "$W/bl" && cp -r "$t" "$W/bl/$NAME" \
        && tar xf "$f" -C "$W/bl" && python3 -m zlbench baseline verify "$W/bl/$NAME" 2>&1 \
        | tail -2 | tee -a "$LOG" ;;
    derive/*)  # $CAP_FROM with the batch's captures (--replace), verified, as $W/bl/$NAME
      b=${stage#derive/}
      rm -rf "${W:?}/bl/$NAME" && mkdir -p "$W/bl"
      timed "derive-$b" same python3 -m zlbench baseline capture \
        --baseline "${CAP_FROM:-baselines/v5}" --replace --out "$W/bl/$NAME" \
        --from "$W/capwork-$b/replay"
      tail -6 "$W/derive-$b.log" | tee -a "$LOG"
      python3 benchmarks/launches_summary.py "$W/bl/$NAME" > "$W/derive-$b.summary" 2>&1
      grep -E "^TOTAL|^($(sed 's|^[^/]*/||' "$OPS_FILE" | paste -sd'|')) " \
        "$W/derive-$b.summary" | cut -c1-300 | tee -a "$LOG" ;;
    restore/*)
      f=${stage#restore/}; mkdir -p "$W" && tar xzf "$f" -C "$W" && say "restored $f" ;;
    aa-*) gate "$stage" same "${pr[@]}" --base-compiler "$W/triton/base" "${every[@]}" ;;
    patched) gate "$stage" patched "${pr[@]}" --base-compiler "$W/triton/base" ;;
    nocompile) gate "$stage" no_compile "${pr[@]}" --base-compiler "$W/triton/base" ;;
    broad-op)
      python3 benchmarks/replay_read.py opsfile "$W/broad-1" > "$W/broad_ops.txt" \
        && tee -a "$LOG" < "$W/broad_ops.txt" \
        && timed "$stage" no_coalesce python3 -m zlbench gate --codegen-jobs "$JOBS" \
          --out "$W/$stage" --baseline "$W/bl/$NAME" --ops-file "$W/broad_ops.txt" \
          --base-compiler "$W/triton/base" "${gate_extra[@]}" \
        && python3 benchmarks/replay_read.py compare "$W/broad-1" "$W/$stage" 2>&1 \
          | tee -a "$LOG" ;;
    position)
      timed position no_coalesce python3 benchmarks/replay_position.py "$W/broad-1" \
        --ops amax,mean,prod,sum,vector_norm,var_mean,abs,argmax --settle 0 1 3 \
        --base-compiler "$W/triton/base" --jobs "$JOBS"
      grep -E "settle|first/second|rebuilding|not " "$W/position.log" | tee -a "$LOG" ;;
    l2probe)
      timed l2probe no_coalesce python3 benchmarks/replay_position.py "$W/broad-1" \
        --ops mul,tanh,silu_and_mul,silu,relu,add,avg_pool2d,bmm --flush on off \
        --base-compiler "$W/triton/base" --jobs "$JOBS" --out "$W/broad-1/l2probe"
      grep -E "settle|first/second|rebuilding|not " "$W/l2probe.log" | tee -a "$LOG" ;;
    wbprobe)
      timed wbprobe no_coalesce python3 benchmarks/replay_position.py "$W/broad-1" \
        --ops mul,sigmoid,silu,silu_and_mul,tanh,abs,where_self,avg_pool2d \
        --flush on read off --restore each sample \
        --base-compiler "$W/triton/base" --jobs "$JOBS" --out "$W/broad-1/wbprobe"
      grep -E "flush|rebuilding|not " "$W/wbprobe.log" | tee -a "$LOG" ;;
    rp-*)  # the replay alone of the broad change over $OPS_FILE (its own screen, builds
      # and replay; `--replay-part 1/1`: no op path, no verdict), e.g. the rows whose
      # outputs differed (benchmarks/v7_differ_ops.txt)
      gate "$stage" no_coalesce "${pr[@]}" --base-compiler "$W/triton/base" \
        --replay-part 1/1 --kernel-cache "$W/kcache" ;;
    broad-*) gate "$stage" no_coalesce "${pr[@]}" --base-compiler "$W/triton/base" ;;
    v5-patched) gate "$stage" patched --baseline baselines/v5 --ops-file ops/tiers/pr.txt \
      --base-compiler "$W/triton/base" ;;
    v5-nocompile) gate "$stage" no_compile --baseline baselines/v5 --ops-file ops/tiers/pr.txt \
      --base-compiler "$W/triton/base" ;;
    v5-aa) gate "$stage" same --baseline baselines/v5 --ops-file ops/tiers/pr.txt \
      --base-compiler "$W/triton/base" ;;
    v5-prbase) gate "$stage" no_coalesce_no_pipeline --baseline baselines/v5 \
      --ops-file ops/tiers/pr.txt --base-compiler "$W/triton/no_coalesce" ;;
    v7-unpack) timed v7-unpack same python3 -m zlbench unpack baselines/v7 ;;
    v7-one) timed "$stage" no_coalesce python3 -m zlbench gate --baseline baselines/v7 \
      --screen-only --codegen-jobs "$JOBS" --out "$W/$stage" ;;
    v7-uncached) rm -rf "$W/basecache"
      timed "$stage" no_coalesce python3 -m zlbench gate --baseline baselines/v7 \
        --screen-only --codegen-jobs "$JOBS" --out "$W/$stage" \
        --base-compiler "$W/triton/base" --base-screen-cache "$W/basecache" ;;
    v7-cached) timed "$stage" no_coalesce python3 -m zlbench gate --baseline baselines/v7 \
      --screen-only --codegen-jobs "$JOBS" --out "$W/$stage" \
      --base-compiler "$W/triton/base" --base-screen-cache "$W/basecache" ;;
    wv-screen)  # a whole gate over calls: the broad change's screen of $W/bl/$NAME;
      # WV_BASE_SCREEN=0: one-sided, against the baseline's records (half the rebuild;
      # the same kernels differ when the base is the baseline's recording compiler, as
      # unchanged triton 3.6.0 is v7's: 5663 either way, twenty-sixth session), which a
      # gate with --base-compiler takes (it times a superset)
      base=(--base-compiler "$W/triton/base" --base-screen-cache "$W/basecache")
      [ "${WV_BASE_SCREEN:-1}" = 0 ] && base=()
      timed "$stage" no_coalesce python3 -m zlbench gate --baseline "$W/bl/$NAME" \
        --screen-only --codegen-jobs "$JOBS" --out "$W/$stage" "${base[@]}" \
        --kernel-cache "$W/kcache" ;;
    wv-part/*)  # part K/N of its replay (docs/replay.md "Parts over device calls")
      k=${stage#wv-part/}
      gate "wv-part-${k%/*}" no_coalesce "${wv[@]}" --replay-part "$k" ;;
    wv-merge)  # every part's replay taken, the op path measured, the verdict
      gate "$stage" no_coalesce "${wv[@]}" --replayed "$W"/wv-part-*/ ;;
    wv-op/*)  # instead of wv-merge, over calls: shard K/N of the op path, the parts taken
      k=${stage#wv-op/}
      gate "wv-op-${k%/*}" no_coalesce "${wv[@]}" --replayed "$W"/wv-part-*/ --shard "$k" ;;
    wv-judge)  # the wv-op shards merged (their replay with them), then judged: CPU only
      rm -rf "$W/wv-merged" && python3 -m zlbench merge "$W"/wv-op-*/ --out "$W/wv-merged" \
        2>&1 | tail -2 | tee -a "$LOG"
      timed "$stage" same python3 -m zlbench gate --baseline "$W/bl/$NAME" \
        --results "$W/wv-merged" --out "$W/$stage" ;;
    v7-aa) timed "$stage" same python3 -m zlbench gate --baseline baselines/v7 \
      --screen-only --codegen-jobs "$JOBS" --out "$W/$stage" \
      --base-compiler "$W/triton/base" --base-screen-cache "$W/basecache" ;;
    v7-opside)
      v7=$(python3 -m zlbench unpack baselines/v7)  # its shapes, as a gate's op path replays
      timed "$stage" same python3 -m zlbench batch --ops-file "${OPS2:-benchmarks/v7_oppath_sample.txt}" \
        --replay-root "$v7" --shape-file "$v7/shapes.yaml" --op-timeout "${OP_TIMEOUT:-100}" \
        --phase-timings --no-ttgir --out "$W/$stage"
      python3 benchmarks/replay_read.py opside "$W/$stage" baselines/v7 2>&1 | tee -a "$LOG"
      python3 benchmarks/phase_breakdown.py "$W/$stage" 2>&1 | tee -a "$LOG" ;;
    v7-sentinels)
      v7=$(python3 -m zlbench unpack baselines/v7)  # its shapes, as a gate's op path replays
      timed "$stage" same python3 benchmarks/oppath_rows.py \
        "${SENT_FILE:-benchmarks/v7_sentinel_sample.txt}" "$v7" -- --shape-file "$v7/shapes.yaml" \
        --op-timeout "${OP_TIMEOUT:-100}" --phase-timings --no-ttgir --out "$W/$stage"
      tail -30 "$W/$stage.log" | tee -a "$LOG"
      python3 benchmarks/phase_breakdown.py "$W/$stage" 2>&1 | tee -a "$LOG" ;;
    pack-v7)
      (cd "$W" && shopt -s nullglob && tar czf "${OUT:-$W}/v7.tgz" ./*.log ./*.txt \
        v7-*/codegen/codegen.md v7-*/codegen/timing.json v7-*/codegen/*.partial.*)
      ls -la "${OUT:-$W}" ;;
    pack)
      dirs=()
      for d in "$W"/*/; do
        d=$(basename "$d"); [ "$d" = triton ] || [ "$d" = bl ] || [ "$d" = kcache ] || dirs+=("$d")
      done
      # without the screen's diffs (v7's: 154 MB a gate dir) and the replay worker's
      # input (replay/plan.json, 37 MB a v7 part): a file back is at most 16 MiB
      (cd "$W" && tar czf "${OUT:-$W}/adopt.tgz" --exclude='ttgir' --exclude='*.ttgir' \
        --exclude='diffs' --exclude='*/replay/plan.json' \
        --exclude='blobs' --exclude='triton' --exclude='store' --exclude='cache-pr' \
        --exclude='cache-base' --exclude='build-pr' --exclude='build-base' -- ./*.log ./*.txt \
        "${dirs[@]}" 2>/dev/null)
      ls -la "${OUT:-$W}" ;;
    *) say "unknown stage $stage" ;;
  esac
done

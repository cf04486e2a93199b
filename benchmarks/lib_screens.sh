# Shared by benchmarks/gpu_screen_speed.sh and benchmarks/gpu_neighbours.sh (sourced).
#
# timed_batch OUT LOG ARGS...: `python3 -m zlbench batch ARGS... --out OUT`, its output
#   to LOG ("-": the last 12 lines to stdout); its wall seconds (the whole command,
#   precompile included) in OUT/wall_s, also when the batch died before making OUT.
# aa_report WORK LABEL...: rows per GPU-minute and A/A noise of WORK/LABEL-1 vs
#   WORK/LABEL-2 for each label whose second run exists (benchmarks/screen_speed.py).

timed_batch() {
  local out=$1 log=$2 t0 rc
  shift 2
  rm -rf "$out"
  t0=$(date +%s.%N)
  if [ "$log" = - ]; then
    python3 -m zlbench batch "$@" --out "$out" 2>&1 | tail -12
    rc=${PIPESTATUS[0]}
  else
    python3 -m zlbench batch "$@" --out "$out" >"$log" 2>&1
    rc=$?
  fi
  mkdir -p "$out"
  python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" \
    "$t0" "$(date +%s.%N)" >"$out/wall_s"
  echo "[$(date -u +%H:%M:%S)] rc=$rc wall=$(cat "$out/wall_s")s $out"
}

aa_report() {
  local work=$1 args=() p
  shift
  for p in "$@"; do
    [ -f "$work/$p-2/wall_s" ] && args+=("$p=$work/$p-1,$work/$p-2")
  done
  python3 benchmarks/screen_speed.py "${args[@]}"
}

# shellcheck shell=bash
# The budgeted stage loop of benchmarks/gpu_v6.sh and benchmarks/gpu_judge_on_runner.sh
# (sourced). A device call is cut at its limit and loses what it did not pack, so each
# script runs its stages in order within BUDGET_S and skips a stage whose estimate no
# longer fits; `pack` always runs.
#
# stages_begin BUDGET_S LOG   the budget starts now; say() appends to LOG
# say MSG...                  "[HH:MM:SS +Ns] MSG" to stdout and LOG
# left                        seconds left of the budget
# stage_fits SPEC             sets $stage (SPEC up to its first ':') and $est (the word
#                             after its last ':', default 60); returns 1, having said
#                             "SKIP ...", when $est no longer fits and the stage is not pack

stages_begin() {
  STAGES_BUDGET=$1
  STAGES_LOG=$2
  STAGES_T0=$SECONDS
  mkdir -p "$(dirname "$STAGES_LOG")"
}

say() { echo "[$(date -u +%H:%M:%S) +$((SECONDS - STAGES_T0))s] $*" | tee -a "$STAGES_LOG"; }

left() { echo $((STAGES_BUDGET - (SECONDS - STAGES_T0))); }

stage_fits() {
  stage=${1%%:*}
  est=${1##*:}
  [ "$est" = "$1" ] && est=60
  if [ "$stage" != pack ] && [ "$(left)" -lt "$est" ]; then
    say "SKIP $stage (left $(left)s < $est)"
    return 1
  fi
  return 0
}

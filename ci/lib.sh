# shellcheck shell=bash
# Helpers sourced by the ci/*.sh scripts that the GitHub Actions workflows run.
#
# Every failure goes through zl_fail: one line in the log, one error annotation,
# and the same line at the top of the job summary, so a red run says what went
# wrong without anyone opening the log. Outside Actions the GITHUB_* files are
# unset and the helpers only print.

# Escape a message for a workflow command (`%`, CR and LF must be encoded).
zl_escape() {
  local s=$1
  s=${s//'%'/'%25'}
  s=${s//$'\r'/'%0D'}
  s=${s//$'\n'/'%0A'}
  printf '%s' "$s"
}

# zl_summary LINE...: append markdown lines to the job summary (no-op outside Actions).
zl_summary() {
  if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
    printf '%s\n' "$@" >>"$GITHUB_STEP_SUMMARY"
  fi
}

# zl_gate_summary GATE_DIR [BEFORE AFTER]: append the gate's comment.md (report.md cut
# at row and section boundaries; report.md when there is none) to the job summary,
# between the optional BEFORE and AFTER lines. Nothing when the gate wrote neither.
zl_gate_summary() {
  local md="$1/comment.md"
  [[ -f "$md" ]] || md="$1/report.md"
  [[ -f "$md" ]] || return 0
  if [[ $# -ge 3 ]]; then
    zl_summary "$2" "" "$(cat "$md")" "" "$3"
  else
    zl_summary "$(cat "$md")"
  fi
}

# zl_fail CODE MESSAGE: report MESSAGE and exit with CODE.
zl_fail() {
  local code=$1
  shift
  local msg="$*"
  echo "::error title=zlbench::$(zl_escape "$msg")"
  echo "error: $msg" >&2
  zl_summary "### ❌ ${msg}" ""
  exit "$code"
}

# zl_warn MESSAGE: a warning annotation that does not fail the step.
zl_warn() {
  echo "::warning title=zlbench::$(zl_escape "$*")"
  echo "warning: $*" >&2
}

# zl_output KEY VALUE: set a step output (printed outside Actions).
zl_output() {
  if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
  else
    printf 'output %s=%s\n' "$1" "$2"
  fi
}

# Python interpreter of the job (the venv put on PATH by prepare_venv.sh); overridable.
ZL_PYTHON=${ZL_PYTHON:-python}

# zl_check_baseline DIR: the baseline exists, checked out as a dir or packed as
# DIR.lock (zlbench unpacks it on first use: docs/baselines.md "Packed versions").
zl_check_baseline() {
  [[ -n "$1" && (-d "$1" || -f "$1.lock") ]] ||
    zl_fail 2 "baseline dir '$1' does not exist (nor its lock '$1.lock')"
}

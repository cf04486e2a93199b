#!/usr/bin/env bash
# End the judge job with the gate's exit code and one message that says what it means.
#
# Usage: ci/verdict.sh        Env: ZL_GATE_EXIT (the `exit_code` output of ci/judge.sh;
#                             empty when the gate never ran)
# 0 passes; 1 (regression, fallback marker, failed or missing op) and 2 (could not
# judge: infra, bad input, nothing measured) both fail, with different messages.
set -euo pipefail
# shellcheck source=ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${ZL_GATE_EXIT:-} in
  0)
    echo "zlbench gate passed"
    zl_summary "**zlbench gate: PASS**"
    ;;
  1) zl_fail 1 "zlbench gate FAILED: a regression, a replay fallback marker or a failed/missing op (exit 1); see the report and junit results" ;;
  2) zl_fail 2 "zlbench gate could not judge (exit 2): infrastructure problem, bad input, environment mismatch or nothing measured; see the report" ;;
  "") zl_fail 2 "zlbench gate did not run: an earlier step failed (see the first error above)" ;;
  *) zl_fail 2 "zlbench gate ended with unexpected exit code ${ZL_GATE_EXIT}" ;;
esac

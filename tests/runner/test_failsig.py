"""Error signatures of failed ops (zlbench.runner.execute.failsig) on real log shapes."""

from __future__ import annotations

from zlbench.models import RunStatus
from zlbench.protocol.boundary import error_line, find_error
from zlbench.protocol.signature import short_path
from zlbench.runner.execute.failsig import first_error_line, signature

# pytest's long traceback of upstream's pytest.fail(str(e)) after a launcher error:
# the chained cause first, then pytest's own Failed.
LAUNCH_LOG = """\
benchmark/test_unary_pointwise_perf.py ZLBENCH_OP_BEGIN run_name=abs
    def run(self, *args, **kwargs):
>       self.launch(gridX, gridY, gridZ, stream, function, *args)
E       SystemError: <built-in function launch> returned NULL without setting an exception

/venv/lib/python3.12/site-packages/triton/backends/nvidia/driver.py:328: SystemError

During handling of the above exception, another exception occurred:
>                   pytest.fail(str(e))  # raise exception again
E                   Failed: <built-in function launch> returned NULL

benchmark/base.py:481: Failed
ZLBENCH_OP_END run_name=abs status=FAIL
"""

PY_LOG = """\
Traceback (most recent call last):
  File "/home/u/flaggems/src/flag_gems/ops/mm.py", line 91, in mm
    return kernel[grid](a, b)
  File "/opt/py/site-packages/triton/runtime/jit.py", line 712, in run
    raise CompilationError("bad")
triton.compiler.errors.CompilationError: bad
"""


def test_traceback_location_skips_pytest_fail_and_machine_paths():
    sig = signature(RunStatus.FAIL, 1, "", LAUNCH_LOG)
    assert sig == "SystemError in triton/backends/nvidia/driver.py:328"


def test_python_traceback_innermost_frame_and_exception_type():
    sig = signature(RunStatus.FAIL, 1, "", PY_LOG)
    assert sig == "CompilationError in triton/runtime/jit.py:712"


def test_signal_without_traceback():
    assert signature(RunStatus.CRASH, -11, "process killed by signal 11", "x") == (
        "signal 11 (SIGSEGV)"
    )


def test_death_before_the_op_began_names_the_first_error_line():
    log = "=== test session starts ===\nImportError while loading conftest '/a/b/conftest.py'.\n"
    note = "pytest exit code 4 before the op began; see run.log"
    assert signature(RunStatus.ERROR, 4, note, log) == (
        "pytest exit code 4 before the op began: ImportError while loading conftest 'conftest.py'."
    )


def test_passing_skipped_and_timed_out_ops_have_no_signature():
    for status in (RunStatus.PASS, RunStatus.SKIP, RunStatus.TIMEOUT):
        assert signature(status, None, "timed out", LAUNCH_LOG) is None


def test_short_path_and_first_error_line_edges():
    assert short_path("/x/y/z/w.py") == "y/z/w.py"
    assert short_path("/r/flaggems/src/flag_gems/ops/add.py") == "flag_gems/ops/add.py"
    assert first_error_line("all good\nfine") == ""


# What the H200 run.log of abs held under a launcher that raises: the test FAILed
# and pytest printed the traceback only after the END line (in another op's log).
SEGMENT_ONLY = """\
ZLBENCH_OP_BEGIN run_name=abs
benchmark/test_abs.py F
ZLBENCH_OP_ERROR run_name=abs signature=SystemError in triton/backends/nvidia/driver.py:328
ZLBENCH_OP_END run_name=abs status=FAIL
ZLBENCH_RUNNER run_name=abs status=FAIL
"""


def test_the_plugins_error_line_names_a_failure_whose_traceback_came_later():
    assert signature(RunStatus.FAIL, 1, "", SEGMENT_ONLY) == (
        "SystemError in triton/backends/nvidia/driver.py:328"
    )
    without = SEGMENT_ONLY.replace("ZLBENCH_OP_ERROR", "x")
    assert signature(RunStatus.FAIL, 1, "", without) is None


def test_the_plugins_error_line_wins_over_a_later_traceback_of_another_op():
    later = SEGMENT_ONLY + PY_LOG  # pytest's end-of-session summary lands in the last op's log
    assert signature(RunStatus.FAIL, 1, "", later) == (
        "SystemError in triton/backends/nvidia/driver.py:328"
    )


def test_error_line_round_trips_on_one_line():
    line = error_line("abs", "SystemError in  a.py:3\n")
    assert "\n" not in line and find_error("benchmark/test_abs.py F" + line) == (
        "abs",
        "SystemError in a.py:3",
    )
    assert find_error("ZLBENCH_OP_END run_name=abs status=FAIL") is None

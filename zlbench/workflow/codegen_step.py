"""The gate's codegen step as the other codegen modules share it: :class:`CodegenStep`
(the screen of one gate, or of the results dir a report re-judges), its summary
(:func:`summarize`), the names of the plan file and the no-records note, and the lines
the reports and the plan share (:func:`failed_line`, :func:`not_timed_line`,
:func:`cpu_note`). docs/codegen.md, "Gate integration"; the modules:
:mod:`zlbench.workflow.codegen` (the screen run), :mod:`~zlbench.workflow.codegen_plan`
(the timing plan, sentinels), :mod:`~zlbench.workflow.codegen_artifact` (a CPU job's
screen), :mod:`~zlbench.workflow.codegen_verdict` (the screen in the verdict and the
reports).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from zlbench.codegen.timed import TimedKernels
from zlbench.models import CodegenScreen, CodegenSummary, KernelScreen, TimingPlanFile
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR
from zlbench.report.escape import one_line

TIMING_JSON = "timing.json"
NO_RECORDS = "the baseline has no codegen records: no codegen screen, every op is timed"


@dataclass
class CodegenStep:
    """The codegen screen of one gate (or of the results dir a report re-judges)."""

    summary: CodegenSummary
    screen: CodegenScreen | None = None
    dir: Path | None = None  # where codegen.json and diffs/ are
    diff_prefix: str = f"{CODEGEN_SCREEN_DIR}/"  # diff paths as the report's reader sees them
    # op key -> the compile failure that keeps it from being timed (its rows FAILED)
    held_back: dict[str, str] = field(default_factory=dict)
    sentinel_only: set[str] = field(default_factory=set)  # timed only as sentinels
    # the plan of a screen-only gate (a CPU job's artifact, --screen): timed as listed
    given: TimingPlanFile | None = None
    plan: TimingPlanFile | None = None  # the plan written to timing.json (plan_timing)

    @property
    def skipped(self) -> dict[str, str]:
        """Op key -> proof that its kernels are unchanged: the ops not timed."""
        return self.summary.not_timed


def failed_line(k: KernelScreen) -> str:
    config = f" [{k.config}]" if k.config else ""
    return one_line(f"{k.name}{config}: {k.error or 'compile failed'}", 300)


def summarize(screen: CodegenScreen, time: str, screen_file: str) -> CodegenSummary:
    missing = len(screen.missing())
    notes = [f"{missing} kernel(s) could not be rebuilt: their ops are timed"] * bool(missing)
    view = TimedKernels.of(screen)
    notes.append(view.note(view.by_op))  # setup kernels counted as timed, when any are
    notes.append(decided_note(screen.decided_by, screen.base_compiler))
    return CodegenSummary(
        screened=True,
        note="; ".join(n for n in notes if n),
        time=time,
        kernels=len(screen.kernels),
        changed=len(screen.changed()),
        failed=[failed_line(k) for k in screen.failed()],
        screen_file=screen_file,
        wall_s=screen.wall_s,  # the JUnit codegen suite's time
    )


def decided_note(decided_by: str, base_compiler: str) -> str:
    """Which comparison decided what was timed, for a screen against the base compiler
    ("" otherwise: the baseline's records decided, as they always did)."""
    if decided_by != "base":
        return ""
    return (
        f"codegen screen: PR vs base compiler {base_compiler} (a kernel that differs only "
        "from the baseline's recording compiler is not timed)"
    )


def no_screen(time: str) -> CodegenStep:
    return CodegenStep(CodegenSummary(screened=False, note=NO_RECORDS, time=time))


def cpu_note(plan: TimingPlanFile) -> str:
    """The reports' line for a screen taken from a CPU job's artifact."""
    when = f" at {plan.generated}" if plan.generated else ""
    return f"codegen screen from a CPU job (gate --screen-only{when}, {plan.compiler})"


def not_timed_line(name: str, config: str, error: str | None) -> str:
    """``not timed: mm_kernel [BLOCK=64 …] fails to compile: RuntimeError: …``."""
    config = f" [{config}]" if config else ""
    why = (error or "compile failed").removeprefix("compile failed: ")
    return one_line(f"not timed: {name}{config} fails to compile: {why}", 300)

"""The gate's codegen step (docs/codegen.md, "Gate integration").

Before measuring, :func:`screen_for_gate` rebuilds every kernel the baseline
recorded with the compiler under test (``<out>/codegen/``); a baseline without
codegen records (v1) gets a note and every op is timed. :func:`plan_timing`
chooses the ops to time: all of them (``--time all``) or only those the screen
did not prove unchanged plus the sentinel ops (``--time changed``); the plan is
kept in ``<out>/codegen/timing.json`` so that ``zlbench report`` re-judges the
same op set (:func:`load_for_rejudge`). After judging, :func:`apply_screen` puts
the screen into the verdict (each explained row's kernels, a kernel that stopped
compiling fails the gate) and :func:`report_extras` into the reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from zlbench.codegen.collect import has_codegen_records
from zlbench.codegen.screen import SCREEN_JSON, SCREEN_MD, ScreenOptions
from zlbench.codegen.select import EXPLAINED, SENTINELS_FILE, explain_row, ops_to_time, row_notes
from zlbench.codegen.timed import TimedKernels
from zlbench.errors import ZlbenchError
from zlbench.gate.load import BaselineSet
from zlbench.gate.verdict import SUMMARY_SEP
from zlbench.models import (
    UNPROVEN_CLASSES,
    CodegenScreen,
    CodegenSummary,
    GateVerdict,
    KernelNote,
    KernelScreen,
    RowVerdict,
    TimingPlanFile,
    Verdict,
    dump_json_model,
    load_json_model,
    resolve_inside,
)
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR, op_key
from zlbench.protocol.ops import read_ops_file
from zlbench.report.codegen import headline, row_explanation, setup_line
from zlbench.report.escape import one_line
from zlbench.report.facts import ReportExtras

TIME_MODES = ("all", "changed")
TIMING_JSON = "timing.json"
NO_RECORDS = "the baseline has no codegen records: no codegen screen, every op is timed"
IR_DIFF_LIMIT = 200_000  # characters of IR diff per op in report.html

Screen = Callable[[ScreenOptions, Callable[[str], None]], CodegenScreen]


def run_screen(opts: ScreenOptions, say: Callable[[str], None]) -> CodegenScreen:
    """The real screen (worker processes); the gate's default ``GateSeams.screen``."""
    from zlbench.codegen.screen import run_screen as screen

    return screen(opts, say)


@dataclass
class CodegenStep:
    """The codegen screen of one gate (or of the results dir a report re-judges)."""

    summary: CodegenSummary
    screen: CodegenScreen | None = None
    dir: Path | None = None  # where codegen.json and diffs/ are
    diff_prefix: str = f"{CODEGEN_SCREEN_DIR}/"  # diff paths as the report's reader sees them

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
    return CodegenSummary(
        screened=True,
        note="; ".join(n for n in notes if n),
        time=time,
        kernels=len(screen.kernels),
        changed=len(screen.changed()),
        failed=[failed_line(k) for k in screen.failed()],
        screen_file=screen_file,
    )


def no_screen(time: str) -> CodegenStep:
    return CodegenStep(CodegenSummary(screened=False, note=NO_RECORDS, time=time))


def screen_for_gate(
    baseline_dir: Path,
    out: Path,
    *,
    time: str,
    jobs: int,
    pythonpath: list[str],
    screen: Screen,
    say: Callable[[str], None],
    progress: Callable[[str], None],
    cache_out: Path | None = None,
) -> CodegenStep:
    """Screen the baseline's kernels into ``<out>/codegen/`` (nothing when the
    baseline has no codegen records: a note, every op timed). ``say``: what it
    found (stdout); ``progress``: the screen's progress lines (stderr);
    ``cache_out``: a triton cache dir the rebuilt kernels are also put in."""
    if not has_codegen_records(baseline_dir):
        say(f"zlbench gate: {NO_RECORDS}")
        return no_screen(time)
    cg_dir = out / CODEGEN_SCREEN_DIR
    opts = ScreenOptions(
        baseline=baseline_dir, out=cg_dir, jobs=jobs, pythonpath=pythonpath, cache_out=cache_out
    )
    result = screen(opts, progress)
    setup = TimedKernels.of(result).setup_changed()
    apart = f", {len(setup)} of them only outside the timed region" if setup else ""
    say(f"zlbench gate: codegen screen: {headline(result)}{apart} ({cg_dir / SCREEN_MD})")
    for k in result.failed():
        progress(f"zlbench gate: codegen: FAILED {failed_line(k)}")
    summary = summarize(result, time, f"{CODEGEN_SCREEN_DIR}/{SCREEN_JSON}")
    return CodegenStep(summary, result, cg_dir)


def cached_kernels(cache: Path) -> int:
    """How many compiled kernels the triton cache dir ``cache`` holds (triton's file
    cache: one ``<key>/__grp__<name>.json`` group per compiled kernel)."""
    return sum(1 for _ in Path(cache).glob("*/__grp__*"))


def plan_timing(
    step: CodegenStep, baseline: BaselineSet, scope: set[str] | None, ops_dir: Path
) -> set[str]:
    """The ops to measure (within ``scope``; None: every baseline op). ``--time
    changed`` leaves out the ops the screen proves unchanged (never a sentinel op,
    never a row whose kernels the records do not name); the plan is written to
    ``<out>/codegen/timing.json`` and the skipped ops kept in ``step.summary.not_timed``."""
    in_scope = {k: r for k, r in baseline.ops.items() if scope is None or k in scope}
    if step.screen is None or step.dir is None:
        return set(in_scope)
    sentinels = _sentinels(ops_dir) if step.summary.time == "changed" else []
    plan = ops_to_time(step.screen, in_scope, sentinels)
    if step.summary.time == "all":
        plan.time.update({k: "--time all" for k in plan.skip})
        plan.skip = {}
    step.summary.not_timed = dict(plan.skip)
    timing = TimingPlanFile(time=step.summary.time, timed=plan.time, skipped=plan.skip)
    dump_json_model(step.dir / TIMING_JSON, timing)
    return plan.timed_ops()


def _sentinels(ops_dir: Path) -> list[str]:
    path = Path(ops_dir) / SENTINELS_FILE
    if not path.is_file():
        raise ZlbenchError(
            f"{path}: no sentinel op list; --time changed needs one (docs/codegen.md)"
        )
    return read_ops_file(path)


def load_for_rejudge(results: Path, label: str) -> CodegenStep | None:
    """The screen and timing plan a gate left in ``<results>/codegen/`` (None when it
    holds none); diff paths shown as ``<label>/codegen/diffs/…`` (the results dir as
    given)."""
    cg_dir = results / CODEGEN_SCREEN_DIR
    if not (cg_dir / SCREEN_JSON).is_file():
        return None
    screen = load_json_model(cg_dir / SCREEN_JSON, CodegenScreen)
    timing = (
        load_json_model(cg_dir / TIMING_JSON, TimingPlanFile)
        if (cg_dir / TIMING_JSON).is_file()
        else TimingPlanFile()
    )
    prefix = f"{label.rstrip('/')}/{CODEGEN_SCREEN_DIR}/"
    summary = summarize(screen, timing.time, prefix + SCREEN_JSON)
    summary.not_timed = dict(timing.skipped)
    return CodegenStep(summary, screen, cg_dir, prefix)


# --------------------------------------------------------------------------- the verdict


def _noted(r: RowVerdict, notes: list[KernelNote]) -> bool:
    """Rows that carry their kernels in verdict.json: the explained verdicts and any
    row that launched a kernel the screen did not prove identical."""
    return r.verdict in EXPLAINED or any(n.status in UNPROVEN_CLASSES for n in notes)


def apply_screen(v: GateVerdict, step: CodegenStep | None) -> GateVerdict:
    """``v`` with the codegen summary, each explained row's kernels (``codegen``) and
    its explanation in its reason; a kernel that no longer compiles fails the gate
    (exit 1; an ERROR stays an ERROR)."""
    if step is None:
        return v
    update: dict = {"codegen": step.summary}
    if step.screen is not None:
        notes = row_notes([r.key for r in v.rows], step.screen, step.diff_prefix)
        rows = [explain_row(r, notes[r.key]) for r in v.rows]
        update["rows"] = [
            r.model_copy(update={"codegen": notes[r.key]}) if _noted(r, notes[r.key]) else r
            for r in rows
        ]
    failed = step.summary.failed
    if failed and v.exit_code != 2:
        why = f"{len(failed)} kernel(s) the baseline compiled fail to compile"
        rest = v.summary.split(": ", 1)[-1].split(SUMMARY_SEP)[-1]
        update.update(verdict="FAIL", exit_code=1, summary=f"FAIL: {why}{SUMMARY_SEP}{rest}")
    return v.model_copy(update=update)


# --------------------------------------------------------------------------- the reports


def _op_notes(rows: Iterable[RowVerdict], verdicts: frozenset) -> dict[str, list[KernelNote]]:
    """Op key -> the kernels of its rows with these verdicts, each once."""
    out: dict[str, dict[str, KernelNote]] = {}
    for r in rows:
        if r.verdict in verdicts and r.codegen:
            for n in r.codegen:
                out.setdefault(op_key(r.key.repo, r.key.run_name), {}).setdefault(n.kernel_id, n)
    return {k: list(v.values()) for k, v in out.items()}


def report_extras(v: GateVerdict, step: CodegenStep | None, artifact_url: str) -> ReportExtras:
    """The reports' extras: the run's link, the screen's counts, per failing op its
    codegen explanation and (for report.html) the IR diffs of its changed kernels."""
    extras = ReportExtras(artifact_url=artifact_url)
    if step is None or step.screen is None:
        return extras
    extras.codegen = (step.summary.changed, step.summary.kernels)
    extras.setup_changed = [setup_line(k) for k in TimedKernels.of(step.screen).setup_changed()]
    regressed = _op_notes(v.rows, frozenset({Verdict.REGRESSION}))
    extras.explanations = {k: row_explanation(ns) for k, ns in regressed.items()}
    explained = _op_notes(v.rows, EXPLAINED)
    extras.ir_diffs = {k: t for k, ns in explained.items() if (t := _diffs(step, ns))}
    return extras


def _diffs(step: CodegenStep, notes: list[KernelNote]) -> str:
    """The diff files of ``notes`` (read from the screen's dir), up to IR_DIFF_LIMIT."""
    texts = []
    for n in notes:
        if not n.diff_file or step.dir is None:
            continue
        try:  # a path from an artifact: read only inside the screen's dir
            path = resolve_inside(step.dir, n.diff_file.removeprefix(step.diff_prefix))
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ZlbenchError):
            continue
    text = "\n".join(texts)
    if len(text) > IR_DIFF_LIMIT:
        text = text[:IR_DIFF_LIMIT] + "\n… (cut: the whole diff is in the codegen/diffs/ dir)\n"
    return text

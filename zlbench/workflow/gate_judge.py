"""The gate's judging: the inputs every entry path loads once (:func:`load_inputs`:
the baseline, the thresholds, the judge's :class:`GateOptions` built once from the job
by :func:`gate_options`), the judge and the evidence it decides on
(:func:`judge_and_write`), and the files it writes into the out dir: ``junit.xml``,
``report.md``, ``comment.md`` (report.md cut to fit a PR comment), ``report.html``,
``verdict.json`` (:func:`write_reports`) and ``steps.json`` (:func:`write_steps`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate import verdict as judging
from zlbench.gate.baselines import check_out_outside_baseline
from zlbench.gate.confirm import Remeasure
from zlbench.gate.decide import decide
from zlbench.gate.load import RESULTS_DIR, BaselineSet, ResultsSet, load_baseline, report_label
from zlbench.gate.plan import baseline_scope, read_ops_file
from zlbench.gate.thresholds import load_thresholds, override_names
from zlbench.gate.verdict import SUMMARY_SEP, GateOptions
from zlbench.models import STEPS_JSON, GateSteps, GateVerdict, ThresholdsFile, dump_json_model
from zlbench.protocol.layout import (
    COMMENT_MD,
    JUNIT_XML,
    REPORT_HTML,
    REPORT_MD,
    VERDICT_JSON,
    split_op_key,
)
from zlbench.protocol.ops import selector_for
from zlbench.report.error import unjudged
from zlbench.report.escape import log_line
from zlbench.report.facts import ReportExtras
from zlbench.report.html import render_html
from zlbench.report.junit import render_junit
from zlbench.report.markdown import STEP_SUMMARY_LIMIT, render_comment, render_markdown
from zlbench.runner.catalog.inventory import inventory_op_keys
from zlbench.runner.catalog.select import current_specs
from zlbench.runner.claim import hold_dir, write_file_set
from zlbench.workflow.ab import AbContext, AbOptions, evidence, prepare
from zlbench.workflow.codegen import check_budget
from zlbench.workflow.codegen_step import CodegenStep
from zlbench.workflow.codegen_verdict import explain, report_extras, screen_evidence
from zlbench.workflow.gate_history import record_verdict, with_history
from zlbench.workflow.gate_job import GateJob, GateSeams
from zlbench.workflow.gate_record import load_record

COMMENT_LIMIT = 64_000  # comment.md: room for ci/pr_comment.py's footer under GitHub's 65,536


def write_reports(
    verdict: GateVerdict,
    out: Path,
    job: GateJob,
    seams: GateSeams,
    extras: ReportExtras | None = None,
) -> None:
    """junit.xml, report.md, comment.md, report.html, verdict.json into ``out`` as one
    set (verdict.json last; an I/O error leaves none of them:
    :func:`zlbench.runner.claim.write_file_set`); the report cut to the step
    summary's limit is then appended to the job's step summary file when it has one."""
    extras = extras or ReportExtras(artifact_url=job.artifact_url)
    files = {
        JUNIT_XML: render_junit(verdict),
        REPORT_MD: render_markdown(verdict, extras),
        COMMENT_MD: render_comment(verdict, COMMENT_LIMIT, extras),
        REPORT_HTML: render_html(verdict, extras),
        # an ERROR judged nothing: written without rows and counts (report.error)
        VERDICT_JSON: unjudged(verdict).model_dump_json(indent=2) + "\n",
    }
    write_file_set(out, files, last=VERDICT_JSON)
    if job.step_summary:
        try:
            with open(job.step_summary, "a", encoding="utf-8") as f:
                f.write(render_comment(verdict, STEP_SUMMARY_LIMIT, extras) + "\n")
        except OSError as e:
            seams.warn(f"zlbench: cannot append to GITHUB_STEP_SUMMARY: {e}")


def dismissed_ops(ops_dir: Path, keys: Iterable[str]) -> dict[str, str]:
    """``<repo>/<run_name>`` -> reason, for the ops that the dismiss list names."""
    from zlbench.runner.catalog.dismiss import find_dismissal, load_dismiss
    from zlbench.runner.catalog.select import DISMISS_FILE

    entries = load_dismiss(Path(ops_dir) / DISMISS_FILE)
    out = {}
    for key in keys:
        repo, run_name = split_op_key(key)
        entry = find_dismissal(entries, repo, selector_for(run_name))
        if entry is not None:
            out[key] = f"{entry.reason} ({entry.when})"
    return out


def with_batch_notes(verdict: GateVerdict, results_dir: Path) -> GateVerdict:
    """The verdict with the batch's systemic failures (one line each) and the ops it
    never measured (``batch.json``), which the reports lead with."""
    from zlbench.models import resolve_inside
    from zlbench.runner.batch.info import read_batch_info

    path = Path(results_dir)
    if (path / RESULTS_DIR).is_dir():  # a gate dir: its batch is results/
        path = resolve_inside(path, RESULTS_DIR)
    info = read_batch_info(path)
    if info is None:
        return verdict
    notes = {"systemic": [f.line for f in info.systemic], "not_measured": list(info.not_measured)}
    return verdict.model_copy(update=notes)


@dataclass
class GateInputs:
    """What every entry path loads once (:func:`load_inputs`). ``opts``: the judge's
    options as the job gives them (:func:`gate_options`); :func:`judge_and_write` adds
    the facts of the results it judges (their label, the dismissed ops, the op scope
    the path judged) in one ``replace``."""

    baseline: BaselineSet
    thresholds: ThresholdsFile
    opts: GateOptions
    ab: AbContext = field(default_factory=lambda: AbContext(AbOptions()))
    steps: GateSteps = field(default_factory=GateSteps)  # written to <out>/steps.json
    ab_measured: bool = False  # the measure step was the interleaved A/B
    specs: list[str] = field(default_factory=list)  # --ops, or the ops file's SPECs


@contextmanager
def timed(steps: GateSteps, name: str) -> Iterator[None]:
    """Add the wall seconds of the ``with`` body to ``steps.seconds[name]``."""
    t0 = time.monotonic()
    try:
        yield
    finally:
        steps.seconds[name] = round(steps.seconds.get(name, 0.0) + time.monotonic() - t0, 3)


def load_inputs(job: GateJob, seams: GateSeams) -> GateInputs:
    """The baseline, the thresholds in force and the judge's options (with the op
    scope that the selection's ``ops`` / ``ops_file`` ask for)."""
    baseline = load_baseline(job.baseline)
    check_out_outside_baseline(job.out, baseline.path)
    names = override_names(baseline.ops.values())  # an override of no baseline op: refused
    th = load_thresholds(job.thresholds, baseline.manifest.thresholds, names)
    sel = job.selection
    specs = list(sel.ops) or (read_ops_file(sel.ops_file) if sel.ops_file else None)
    given = list(specs or ())
    if specs:  # an old scripts' op name -> its op(s), one warning each (docs/ops.md)
        specs = current_specs(sel.ops_dir, specs, current=baseline.ops, warn=seams.warn)
    from_file = not sel.ops and sel.ops_file is not None  # only a file may be wider (plan.py)
    known = inventory_op_keys(sel.ops_dir) if from_file else None
    source = f"--ops-file {sel.ops_file}" if from_file else "--ops"
    scope, unmatched = baseline_scope(baseline, specs, source=source, known=known)
    if unmatched:
        seams.warn(f"zlbench: not in the baseline, skipped: {', '.join(unmatched)}")
    opts = gate_options(job, scope, th, seams.now())
    ab = prepare(job.ab, measuring=job.results is None)  # before any GPU time
    if job.results is None:
        check_budget(job.time, job.time_budget_s)  # before the screen
    if job.results is None and seams.preflight is not None:  # before the screen and --out
        keys = scope if scope is not None else baseline.ops
        seams.preflight(job, {split_op_key(k)[0] for k in keys})
    return GateInputs(baseline, th, opts, ab, specs=given)


def gate_options(
    job: GateJob, scope: set[str] | None, thresholds: ThresholdsFile, generated: str
) -> GateOptions:
    """The judge's options, built once per job: the op ``scope`` the selection asks
    for (None: every baseline op), the re-measures of a flagged op (``--confirm``, else
    the thresholds' default; used only when the path measures), the labels of the
    baseline and thresholds as given, ``generated`` (the clock's ISO time)."""
    return GateOptions(
        scope=scope,
        allow_env_mismatch=job.allow_env_mismatch,
        paired_base=job.ab.base_compiler is not None,  # measured beside the PR, row by row
        confirm_times=thresholds.confirm_repeats if job.confirm is None else job.confirm,
        baseline_label=report_label(job.baseline),
        generated=generated,
        thresholds_label=job.thresholds_label,
    )


def judge_and_write(
    inputs: GateInputs,
    results: ResultsSet,
    out: Path,
    job: GateJob,
    seams: GateSeams,
    *,
    scope: set[str] | None,
    results_label: str,
    remeasure: Remeasure | None = None,
    command: str = "gate",
    ab_measure: Callable[..., Path] | None = None,
    ab_dir: Path | None = None,
    codegen: CodegenStep | None = None,
) -> int:
    """Judge ``results`` (shown as ``results_label``) against the baseline within
    ``scope`` (the ops the path timed; None: every baseline op; the ops that the job's
    dismiss list names are dismissed), then on the A/B against the base compiler (measured with
    ``ab_measure`` into ``<out>/ab/``, or read from ``<ab_dir>/ab/``) and the accept
    list; put the codegen screen's findings in (``codegen``); write the reports
    into ``out``; the verdict's exit code."""
    dismissed = dismissed_ops(job.selection.ops_dir, {*inputs.baseline.ops, *results.ops})
    opts = replace(inputs.opts, scope=scope, results_label=results_label, dismissed=dismissed)
    opts.paired_base = opts.paired_base or interleaved_ab(ab_dir or out)  # gate --results
    with hold_dir(out):  # one writer of out's reports at a time; exit 2 for the other
        verdict = judging.run_gate(inputs.baseline, results, inputs.thresholds, opts, remeasure)
        screen = screen_evidence(codegen, verdict.rows)
        ev = evidence(verdict, inputs.ab, ab_dir or out, ab_measure, screen, inputs.baseline)
        verdict = decide(verdict, ev)
        if base := base_given(job, ab_dir or out):  # said also when nothing was A/B-measured
            verdict = verdict.model_copy(update={"base_compiler": base})
        verdict = explain(verdict, codegen)
        verdict = with_batch_notes(verdict, results.path)
        extras = report_extras(verdict, codegen, job.artifact_url)
        if ev.replay is not None:  # issue 51: what the kernel replay timed
            extras = replace(extras, replay=ev.replay.run, replay_budget_s=job.time_budget_s)
        extras = with_history(job, verdict, extras, seams)  # the results store, if any
        write_reports(verdict, out, job, seams, extras)
        record_verdict(job, verdict, inputs.baseline.path, seams)
    seams.say(log_line(verdict.summary))
    seams.say(f"reports: {out / REPORT_MD}, {out / COMMENT_MD}, {out / REPORT_HTML}, "
              f"{out / JUNIT_XML}, {out / VERDICT_JSON}")  # fmt: skip
    if verdict.exit_code == 2:
        why = verdict.summary.split(SUMMARY_SEP)[0].removeprefix("ERROR: ")
        seams.warn(f"zlbench {command}: error: {why}")
    return verdict.exit_code


def base_given(job: GateJob, gate_dir: Path) -> str:
    """``--base-compiler`` as this gate was given it, else as ``gate_dir``'s record
    (gated.json) says a re-judged gate was ("": none, or no readable record)."""
    if job.ab.base_compiler:
        return str(job.ab.base_compiler)
    try:
        rec = load_record(gate_dir)
    except ZlbenchError:  # as_gated already refused a record it had to read
        return ""
    return rec.base_compiler or "" if rec is not None else ""


def interleaved_ab(gate_dir: Path) -> bool:
    """``gate_dir`` holds an interleaved A/B whose PR side is its ``results/`` (a gate
    measured with a base compiler, or the judge job's merge of its shards): every row
    judged was paired with the base on the GPU that measured it."""
    from zlbench.runner.ab.rounds import load_summary

    found = load_summary(gate_dir)
    return found is not None and found[0].method == "interleaved" and found[0].pr_is_screen


def claim_out(out: Path, seams: GateSeams) -> Path:
    from zlbench.runner.claim import claim_batch_dir

    if out.exists() and not out.is_dir():
        raise ZlbenchError(f"--out {out}: exists and is not a directory")
    claimed = claim_batch_dir(out, resume=False)  # never mix two gate runs in one dir
    if claimed != out:
        seams.warn(f"zlbench gate: {out} is in use; writing to {claimed}")
    return claimed


def write_steps(out: Path, steps: GateSteps, seams: GateSeams) -> None:
    """``<out>/steps.json`` (atomic) when ``out`` exists; a write error is one line
    (the file only informs: it never changes the gate's outcome)."""
    if not out.is_dir():
        return
    try:
        dump_json_model(out / STEPS_JSON, steps)
    except OSError as e:
        seams.warn(f"zlbench gate: cannot write {out / STEPS_JSON}: {e}")

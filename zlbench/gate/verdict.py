"""The whole gate, pure: baseline + results + thresholds -> ``GateVerdict``.

Exit codes (docs/judging.md; :func:`zlbench.gate.aggregate.gate_outcome`): 0 pass;
1 a failing verdict (confirmed or unconfirmable regression, fallback marker, failed
op, missing row); 2 could not judge (environment mismatch without
``allow_env_mismatch``, results of another op set, nothing measured).
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass, field

from zlbench.gate.aggregate import SUMMARY_SEP as SUMMARY_SEP  # re-exported
from zlbench.gate.aggregate import gate_outcome, summary_line
from zlbench.gate.confirm import Remeasure, apply_samples, confirm, flagged_ops
from zlbench.gate.env import (
    accept_gpu,
    baseline_environment,
    check_environment,
    common_timing,
    current_environment,
    env_error,
    gpu_difference,
    measured_results,
    mismatches,
)
from zlbench.gate.judge import JudgeConfig, Judgement, judge, op_verdict
from zlbench.gate.load import BaselineSet, ResultsSet, in_scope
from zlbench.models import (
    FAILING_VERDICTS,
    FLAGGEMS_DIR_VARS,
    BaselineManifest,
    GateVerdict,
    MachineSpeed,
    OpVerdict,
    RunResult,
    ThresholdsFile,
    Timing,
    Verdict,
)
from zlbench.models.timing import number_text


@dataclass
class GateOptions:
    scope: set[str] | None = None  # op keys; None: every baseline op
    dismissed: dict[str, str] = field(default_factory=dict)
    allow_env_mismatch: bool = False
    # a base compiler is measured beside the PR on this GPU (the interleaved A/B, row
    # by row): the stored timings are context, so a baseline of another GPU model of
    # the same architecture is accepted (gate.env.gpu_difference)
    paired_base: bool = False
    confirm_times: int = 0  # re-measures per flagged op (with a remeasure callable)
    baseline_label: str = ""  # the baseline path as the user gave it (reproduce commands)
    results_label: str = ""
    generated: str = ""  # ISO timestamp, supplied by the caller
    thresholds_label: str = ""  # the --thresholds file as given; "" = the manifest's


# ``zlbench run``'s flags of a Timing beyond upstream's --mode (zlbench.cli.run_cmd)
METHOD_FLAG, WARMUP_FLAG, REPLAYS_FLAG = "--timing-method", "--warmup-ms", "--replays"


def timing_flags(how: Timing | None) -> list[str]:
    """``zlbench run``'s flags that time as ``how`` does (its method and, for a method
    with budgets, the budgets); none when it is not known. Upstream's mode is
    ``--mode``, rendered beside them."""
    if how is None:
        return []
    out = [METHOD_FLAG, how.method.value]
    if how.warmup_ms is not None:
        out += [WARMUP_FLAG, number_text(how.warmup_ms)]
    if how.replays is not None:
        out += [REPLAYS_FLAG, str(how.replays)]
    return out


def timing_from_words(words: list[str]) -> Timing | None:
    """The Timing that :func:`timing_flags` (and ``--mode``) rendered into a command's
    words; None when the command names no method."""

    def after(flag: str) -> str | None:
        return words[words.index(flag) + 1] if flag in words[:-1] else None

    method = after(METHOD_FLAG)
    if method is None:
        return None
    fields = {"mode": after("--mode"), "method": method}
    fields |= {"warmup_ms": after(WARMUP_FLAG), "replays": after(REPLAYS_FLAG)}
    return Timing.model_validate(fields)


def reproduce_command(
    op: OpVerdict,
    dtypes: list[str],
    timing: str,
    baseline: str,
    shape_file: str | None = None,
    how: Timing | None = None,
) -> str:
    """The exact ``zlbench run`` that re-measures an op of the gate in replay mode,
    with the baseline's records and the baseline's shape file, timed as ``how`` (the
    baseline's Timing, :func:`reproduce_timing`) with upstream's mode ``timing``."""
    var = FLAGGEMS_DIR_VARS.get(op.repo, FLAGGEMS_DIR_VARS["main"])
    parts = [
        "zlbench run --op",
        shlex.quote(op.op),
        "--repo",
        shlex.quote(op.repo),
        f'--flaggems-dir "${var}"',
    ]
    if dtypes:
        parts += ["--dtypes", *(shlex.quote(d) for d in dtypes)]
    if shape_file:
        parts += ["--shape-file", shlex.quote(f"{baseline.rstrip('/')}/{shape_file}")]
    parts += ["--mode", shlex.quote(timing), *timing_flags(how)]
    parts += [
        "--replay-from",
        shlex.quote(f"{baseline.rstrip('/')}/{op.repo}/{op.run_name}"),
        "--out",
        shlex.quote(f"repro/{op.run_name}"),
    ]
    return " ".join(parts)


def reproduce_template(
    timing: str, baseline: str, shape_file: str | None = None, how: Timing | None = None
) -> str:
    """:func:`reproduce_command` with placeholders (``$OP $REPO $RUN $DTYPES``) that the
    reports fill from a per-op table, and ``$FLAGGEMS_DIR`` for the repo's checkout."""
    root = baseline.rstrip("/")
    parts = ['zlbench run --op "$OP" --repo "$REPO" --flaggems-dir "$FLAGGEMS_DIR"']
    parts.append("--dtypes $DTYPES")
    if shape_file:
        parts.append("--shape-file " + shlex.quote(f"{root}/{shape_file}"))
    parts += ["--mode", shlex.quote(timing), *timing_flags(how)]
    parts += ["--replay-from", f'"{root}/$REPO/$RUN"']
    parts.append('--out "repro/$RUN"')
    return " ".join(parts)


def machine_speed(j: Judgement) -> list[MachineSpeed]:
    """The judgement's machine-speed correction, one entry per host that measured rows."""
    return [
        MachineSpeed(host=h.host, torch_change=h.drift - 1.0, rows=h.rows, applied=h.applied)
        for h in j.hosts
        if h.rows
    ]


def _no_overlap_line(baseline: BaselineSet, results: ResultsSet, opts: GateOptions) -> str:
    got = sorted(k for k in results.ops if in_scope(k, opts.scope))
    want = sorted(k for k in baseline.ops if in_scope(k, opts.scope))
    shown = ", ".join(got[:5]) + (f" (+{len(got) - 5} more)" if len(got) > 5 else "")
    return (
        f"results dir {opts.results_label or results.path} holds another op set: "
        f"none of its {len(got)} op(s) ({shown}) are among the baseline's {len(want)}"
    )


def reproduce_timing(baseline: BaselineSet, runs: list[RunResult]) -> Timing | None:
    """How a reproduce command times: the baseline's Timing (what the gate compares
    with), else the results' when the baseline never recorded one; None when neither
    side agrees on one."""
    return common_timing(baseline.ops.values()) or common_timing(runs)


def _finish_ops(
    j: Judgement,
    th: ThresholdsFile,
    manifest: BaselineManifest,
    opts: GateOptions,
    how: Timing | None = None,
) -> list[OpVerdict]:
    ops = []
    for case in j.cases.values():
        ov = op_verdict(case, th)
        if ov.verdict in FAILING_VERDICTS:
            bad = [r.key.dtype for r in case.rows if r.verdict in FAILING_VERDICTS]
            dtypes = list(dict.fromkeys(bad))
            ov.reproduce = reproduce_command(
                ov, dtypes, manifest.timing, opts.baseline_label, manifest.shape_file, how
            )
        ops.append(ov)
    return sorted(ops, key=lambda o: (o.repo, o.run_name))


def _summary(verdict: str, counts: Counter, ops: list[OpVerdict], why: str) -> str:
    return summary_line(verdict, why, counts, ops)  # the rule: gate.aggregate


def run_gate(
    baseline: BaselineSet,
    results: ResultsSet,
    th: ThresholdsFile,
    opts: GateOptions,
    remeasure: Remeasure | None = None,
) -> GateVerdict:
    """Judge ``results`` against ``baseline``; confirm flagged ops when samples exist
    in the results (``confirm/``) or a ``remeasure`` callable is given."""
    j = judge(baseline, results, th, JudgeConfig(opts.scope, opts.dismissed))
    speed = machine_speed(j)
    runs = measured_results(results, opts.scope)
    findings = check_environment(baseline, runs)
    gpu = gpu_difference(baseline, runs, findings, opts.paired_base)
    findings = accept_gpu(findings, gpu)  # accepted: informational, not a refusal
    bad_env = mismatches(findings)
    error = ""
    if j.overlap == 0 and results.ops:
        error = _no_overlap_line(baseline, results, opts)
    elif j.measured_rows == 0:
        error = f"nothing measured: results dir {opts.results_label or results.path} has no row"
    elif bad_env and not opts.allow_env_mismatch:
        error = env_error(bad_env, gpu)
    if not error:
        flagged = flagged_ops(j, th)
        if results.confirm:
            j = apply_samples(j, results.confirm, baseline, th, flagged)
        elif remeasure is not None and opts.confirm_times > 0:
            j = confirm(j, remeasure, opts.confirm_times, baseline, th)
    how = reproduce_timing(baseline, runs)
    ops = _finish_ops(j, th, baseline.manifest, opts, how)
    rows = [r for c in j.cases.values() for r in c.rows]
    rows.sort(
        key=lambda r: (r.key.repo, r.key.run_name, r.key.dtype, r.key.shape, r.key.occurrence)
    )
    counts = Counter(r.verdict.value for r in rows)
    verdict, code = gate_outcome(ops, error=bool(error))
    return GateVerdict(
        verdict=verdict,
        exit_code=code,
        summary=_summary(verdict, counts, ops, error),
        baseline=baseline.manifest.name,
        baseline_dir=opts.baseline_label or str(baseline.path),
        results_dir=opts.results_label or str(results.path),
        generated=opts.generated,
        counts={v.value: counts[v.value] for v in Verdict if counts[v.value]},
        ops=ops,
        rows=rows,
        environment=findings,
        allow_env_mismatch=opts.allow_env_mismatch,
        gpu_difference=gpu,
        baseline_env=baseline_environment(baseline),
        current_env=current_environment(runs),
        markers=[m for r in runs for m in r.markers],
        estimator=j.estimator.value,
        machine_speed=speed,
        thresholds=th,
        thresholds_source=opts.thresholds_label or "baseline manifest",
        reproduce_template=reproduce_template(
            baseline.manifest.timing,
            opts.baseline_label or str(baseline.path),
            baseline.manifest.shape_file,
            how,
        ),
    )

"""The gate as a CI job graph has it (docs/codegen.md, "The screen on a CPU job"):
``gate``, ``gate --screen-only`` (the codegen screen and the plan of the ops to time,
made on a CPU job) and ``gate --screen DIR`` (a measuring gate that takes that plan
instead of screening again)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.protocol.cache import cached_kernels
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR
from zlbench.workflow import codegen, codegen_artifact
from zlbench.workflow.codegen_step import TIMING_JSON
from zlbench.workflow.gate import kernel_caches, mark_screened, run_gate, screen_step
from zlbench.workflow.gate_job import GateJob, GateSeams
from zlbench.workflow.gate_judge import claim_out, load_inputs


def run_gate_job(
    job: GateJob,
    seams: GateSeams,
    *,
    screen_only: bool = False,
    screen: Path | None = None,
    time_given: str | None = None,
) -> int:
    """``gate``, ``gate --screen-only`` (the screen and the plan of a CPU job) or ``gate
    --screen DIR`` (a measuring gate that takes that plan: docs/codegen.md, "The screen on
    a CPU job"). ``time_given``: ``--time`` as given (None: not given)."""
    if screen_only and screen is not None:
        raise ZlbenchError("--screen-only writes what --screen takes: not both")
    if (screen_only or screen is not None) and job.results is not None:
        raise ZlbenchError(
            "--screen-only and --screen are for a gate that screens or measures: not with --results"
        )
    if job.replay:
        _check_replay(job, screen_only)
    elif job.replay_part is not None or job.replayed or job.replay_l2 is not None:
        raise ZlbenchError(
            "--replay-part, --replayed and --replay-l2 are parts of a --replay gate: give --replay"
        )
    base = _base_side(job)  # the base compiler the screen diffs against (before --out)
    if screen_only:
        return _screen_only(replace(job, codegen_base=base), seams)
    if screen is None:
        return run_gate(replace(job, codegen_base=base), seams)
    if job.codegen_rebuilt:
        raise ZlbenchError(
            "--rebuilt feeds the screen; --screen takes a finished one: give --rebuilt to "
            "the screen job (`gate --screen-only`)"
        )
    if job.time_budget_s is not None or job.time_first is not None:
        raise ZlbenchError(
            "--time-budget and --time-first are the screen job's "
            "(`gate --screen-only`): --screen times the ops it listed"
        )
    inputs = load_inputs(job, seams)  # the baseline verified, the op set
    artifact = codegen_artifact.load_screen_artifact(
        screen,
        inputs.baseline,
        inputs.opts.scope,
        codegen.compiler_fingerprint(),
        base.fingerprint if base is not None else "",
    )
    mode = artifact.plan.time
    wanted = time_given or ("all" if job.ab.full else None)  # --full-ab: --time all
    if wanted is not None and wanted != mode:
        given = f"--time {time_given}" if time_given else "--full-ab (--time all)"
        raise ZlbenchError(
            f"--screen {screen}: planned with --time {mode}, this gate asks for "
            f"{given}: run the screen job with the same time mode"
        )
    # the base goes with the job (not to the screen, which is taken as it is): a
    # --kernel-cache keeps the base's builds in its dir (gate.kernel_caches)
    job = replace(job, time=mode, time_budget_s=artifact.plan.budget_s, codegen_base=base)
    return run_gate(job, replace(seams, screen=artifact))


def _check_replay(job: GateJob, screen_only: bool) -> None:
    """``--replay`` times PR and base binaries on this GPU: one line when it cannot."""
    if not job.ab.base_compiler:
        raise ZlbenchError(
            "--replay times the PR's and the base's binaries side by side: give --base-compiler ENV"
        )
    if screen_only or job.results is not None:
        raise ZlbenchError("--replay measures on a GPU: not with --screen-only or --results")
    if job.shard is not None and not job.replayed:  # each shard would replay every row
        raise ZlbenchError(
            "--replay with --shard: replay in parts (--replay-part K/N), then shard the op "
            "path of the gate that takes them (--replayed ... --shard K/N)"
        )
    if job.replay_part is not None and job.replayed:
        raise ZlbenchError(
            "--replay-part replays one part; --replayed takes every part's: give one of them"
        )


def _screen_only(job: GateJob, seams: GateSeams) -> int:
    """The codegen screen and the plan of the ops to time into ``<out>/codegen/``; no GPU."""
    if job.shard is not None:
        raise ZlbenchError(
            "--screen-only measures nothing: --shard belongs to the GPU job that takes its --screen"
        )
    inputs = load_inputs(job, seams)  # the baseline verified; FlagGems found
    out = claim_out(Path(job.out), seams)
    pr_cache, base_cache = kernel_caches(job) or (None, None)  # --kernel-cache: kept
    before = cached_kernels(pr_cache) if pr_cache is not None else 0
    step = screen_step(inputs, job, out, seams, pr_cache, base_cache)
    if pr_cache is not None:
        mark_screened(step, pr_cache, before)
    plan = codegen_artifact.screen_only(
        step,
        inputs.baseline,
        inputs.opts.scope,
        job.selection.ops_dir,
        budget_s=job.time_budget_s,
        first=job.time_first,
        compiler=codegen.compiler_fingerprint(),
        generated=seams.now(),
        out=out,
    )
    over = f", {len(plan.over_budget)} beyond the budget" if plan.over_budget else ""
    base = f" --base-compiler {job.ab.base_compiler}" if job.codegen_base else ""
    seams.say(
        f"zlbench gate --screen-only: {len(plan.order)} op(s) to time, "
        f"{len(plan.skipped)} proven unchanged{over} "
        f"({out / CODEGEN_SCREEN_DIR / TIMING_JSON}); the GPU job: "
        f"zlbench gate --baseline {job.baseline} --screen {out}{base} ..."
    )
    return 1 if step.summary.failed else 0


def _base_side(job: GateJob) -> codegen.BaseSide | None:
    """With ``--base-compiler`` on a gate that screens or measures: the screen's base
    side (:func:`zlbench.workflow.codegen.base_side`; one that is the PR's own build is
    one line, exit 2); else None (the baseline's records decide, as without a base)."""
    if not job.ab.base_compiler or job.results is not None:
        return None
    return codegen.base_side(job.ab.base_compiler, job.base_screen_cache, print)


__all__ = ["run_gate_job"]

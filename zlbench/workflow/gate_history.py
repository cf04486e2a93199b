"""The gate and the results store (issue 52, docs/history.md): with ``gate --store URL``
(or ``ZLBENCH_STORE``) the judge reads each judged row's history for the report
(:func:`with_history`) and, once the reports are written, records its verdict
(:func:`record_verdict`) on ``job.store_branch``. A shard (``--shard K/N``) records
nothing: its verdict is a slice; the judge that merges the shards records the gate.

The store never changes the gate's outcome: a store that cannot be read or written
(absent server, newer schema, no FlagTree commit in the results) is one warning line,
the reports and the exit code are the verdict's (``zlbench history add`` records such
a gate afterwards, one line and exit 2 on the same errors)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.history.context import gate_context
from zlbench.history.record import manifest_digest
from zlbench.history.store import open_store
from zlbench.models import GateVerdict
from zlbench.report.escape import log_line
from zlbench.report.facts import ReportExtras
from zlbench.workflow.gate_job import GateJob, GateSeams


def with_history(
    job: GateJob, verdict: GateVerdict, extras: ReportExtras, seams: GateSeams
) -> ReportExtras:
    """``extras`` with the judged rows' history from the job's store (unchanged without
    one, or when the store does not exist yet)."""
    if not job.store or job.shard is not None:
        return extras
    if "://" not in job.store and not Path(job.store).exists():
        return extras  # a first gate: nothing to compare with yet
    try:
        with open_store(job.store, create=False) as store:
            found = gate_context(store, verdict.rows, branch=job.store_branch)
    except ZlbenchError as e:
        seams.warn(f"zlbench gate: results store not read: {log_line(e)}")
        return extras
    return replace(extras, history=found) if found else extras


def record_verdict(job: GateJob, verdict: GateVerdict, baseline: Path, seams: GateSeams) -> None:
    """Record ``verdict`` (this judge's own) in the job's store, at the FlagTree commit
    its results recorded, one line saying where; nothing for an ERROR verdict (nothing
    was judged) or a shard."""
    if not job.store or job.shard is not None:
        return
    if verdict.verdict == "ERROR":
        seams.warn("zlbench gate: ERROR verdict: not recorded in the results store")
        return
    try:
        with open_store(job.store) as store:
            run_id = store.add_gate(
                verdict, branch=job.store_branch, baseline_digest=manifest_digest(baseline)
            )
    except ZlbenchError as e:
        seams.warn(f"zlbench gate: not recorded in the results store: {log_line(e)}")
        return
    seams.say(f"results store {store.label}: run {run_id} ({len(verdict.rows)} rows, "
                  f"{verdict.current_env.flagtree_commit} on {job.store_branch})")  # fmt: skip

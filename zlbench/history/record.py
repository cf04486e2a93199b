"""What the store keeps of one gate: its :class:`GateRun` and :class:`RowPoint`\\ s,
built from the gate's judged verdict (pure).

The verdict is the judge's own (``gate --store``), or the one ``zlbench history add``
re-derives by re-judging the gate dir against a trusted baseline (docs/security.md:
the judge re-derives, never believes an artifact's verdict.json).

A row's **timed-kernel digest** names each kernel the row timed with what the compiler
under test built of it (``RowVerdict.kernel_code``, written for every row of a gate
with a screen, also those whose kernels the screen proved identical and so carry no
codegen notes): ``name@kernel_id=code`` pairs joined by ``;`` (sorted), ``code``
the screen's :attr:`~zlbench.models.codegen_screen.KernelScreen.code_digest` (16 hex of
the rebuild's stage digests, or of its compile error; ``none`` where nothing was
rebuilt). Two commits' points then name the kernels whose code changed between them
(``zlbench changes``, :func:`zlbench.history.bisect.digest_changes`). Codegen notes
written before the screen kept code digests (a re-judged old gate dir) give the older
one hash of each kernel's class against the baseline (``kernel_id:status:first_stage``),
which can only say that the row's digest changed; "" where the gate ran no screen
(docs/history.md).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from zlbench.models.codegen_screen import KernelNote
from zlbench.models.history import DEFAULT_BRANCH, CommitRef, GateRun, RowPoint
from zlbench.models.verdict import GateVerdict, RowVerdict

DIGEST_HEX = 16
NO_CODE = "none"  # a kernel of the row that the screen did not rebuild


def row_name(r: RowVerdict) -> str:
    """The row's key in the store: its label (``main/mm bfloat16 [...]``)."""
    return r.key.label()


def op_name(r: RowVerdict) -> str:
    return f"{r.key.repo}/{r.key.op}"


def kernel_pairs(notes: list[KernelNote]) -> str:
    """``name@kernel_id=code`` of each kernel, sorted, joined by ``;`` ("" where no note
    has a code digest: a screen written before it)."""
    if not any(k.code_digest for k in notes):
        return ""
    pairs = {f"{k.name}@{k.kernel_id}": k.code_digest or NO_CODE for k in notes}
    return ";".join(f"{k}={pairs[k]}" for k in sorted(pairs))


def kernel_digest(r: RowVerdict) -> str:
    """The row's timed-kernel digest: its ``kernel_code`` (every row of a gate whose
    screen kept code digests), else the pairs of its codegen notes; one hash of the
    kernels' classes where no note has a code digest; "" without either."""
    if r.kernel_code:
        return r.kernel_code
    if not r.codegen:
        return ""
    if pairs := kernel_pairs(r.codegen):
        return pairs
    parts = sorted(f"{k.kernel_id}:{k.status.value}:{k.first_stage or ''}" for k in r.codegen)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:DIGEST_HEX]


def row_point(r: RowVerdict) -> RowPoint:
    """A judged row as the store keeps it: the A/B's paired change with its interval
    where the row was judged on the A/B, else the change against the baseline."""
    if r.ab is not None and r.ab.ratio is not None:
        change, lo, hi = r.ab.change, r.ab.change_lo, r.ab.change_hi
    else:
        change, lo, hi = r.judged_change, None, None
    return RowPoint(
        row=row_name(r),
        op=op_name(r),
        value_us=r.current_us,
        change=change,
        change_lo=lo,
        change_hi=hi,
        verdict=r.verdict.value,
        digest=kernel_digest(r),
    )


def instrument(v: GateVerdict) -> str:
    """How the rows were timed: the estimator, and the A/B's method when paired."""
    text = v.estimator or "ratio"
    if v.ab is not None:
        text += f" + A/B {v.ab.method}"
    return text


def run_key(commit: CommitRef, baseline_digest: str, rows: list[RowPoint]) -> str:
    """A run's identity when none is given: its commit, baseline and rows (the same
    gate recorded twice has the same key; two gates measure different numbers)."""
    data = [commit.sha, commit.branch, baseline_digest, *(r.model_dump_json() for r in rows)]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()


def gate_record(
    v: GateVerdict,
    commit: CommitRef | None = None,
    *,
    baseline_digest: str = "",
    key: str | None = None,
) -> tuple[GateRun, list[RowPoint]]:
    """The run and rows of verdict ``v``. ``commit``: where it sits (None: the
    compiler commit the results recorded, on the default branch, appended)."""
    if commit is None:
        sha = v.current_env.flagtree_commit
        if not sha:
            from zlbench.errors import ZlbenchError

            raise ZlbenchError(
                "the results record no FlagTree commit: give the commit (--commit SHA)"
            )
        commit = CommitRef(sha=sha, branch=DEFAULT_BRANCH)
    rows = [row_point(r) for r in v.rows]
    run = GateRun(
        run_key=key or run_key(commit, baseline_digest, rows),
        commit=commit.sha,
        branch=commit.branch,
        position=commit.position,
        base_commit=v.ab.base.commit if v.ab is not None else None,
        flaggems_commit=v.current_env.flaggems_commit,
        runner=v.current_env.hostname,
        gpu=v.current_env.gpu_model,
        baseline=v.baseline,
        baseline_digest=baseline_digest,
        instrument=instrument(v),
        verdict=v.verdict,
        generated=v.generated,
        rows=len(rows),
    )
    return run, rows


def manifest_digest(baseline_dir: str | Path) -> str:
    """sha256 of a baseline's manifest.yaml ("" when it has none: a batch dir)."""
    from zlbench.protocol.layout import MANIFEST_YAML

    path = Path(baseline_dir) / MANIFEST_YAML
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""

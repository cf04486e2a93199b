"""Models of the results store (``zlbench.history``, docs/history.md): one gate run
(:class:`GateRun`), the rows it recorded (:class:`RowPoint`), and a row's series across
commits (:class:`SeriesPoint`). Never on disk as files: the store holds them in tables.

Changes are relative, ``+0.05`` = 5 % more kernel time (slower), as in every report.

Imports only errors and models.
"""

from __future__ import annotations

from pydantic import Field

from zlbench.models.base import _Model

DEFAULT_BRANCH = "main"


class CommitRef(_Model):
    """Where a run sits in a branch's history: the FlagTree commit under test and its
    position (0, 1, 2... in commit order; docs/history.md "Commit order")."""

    sha: str
    branch: str = DEFAULT_BRANCH
    position: int | None = Field(
        None, description="given (--position), else the parent's + 1, else the branch's next"
    )
    parent: str | None = Field(None, description="the commit before it on the branch")


class GateRun(_Model):
    """One gate recorded in the store: its commit, where and against what it ran."""

    run_id: int | None = Field(None, description="the store's id (None until recorded)")
    run_key: str = Field(description="identity of the run: written once per key")
    commit: str
    branch: str = DEFAULT_BRANCH
    position: int | None = None
    base_commit: str | None = Field(None, description="the A/B's base compiler commit")
    flaggems_commit: str | None = None
    runner: str | None = Field(None, description="hostname of the runner that measured")
    gpu: str | None = None
    baseline: str = Field("", description="the baseline's label (baselines/v7)")
    baseline_digest: str = Field("", description="sha256 of the baseline's manifest")
    instrument: str = Field("", description="how the rows were timed (the estimator, A/B or not)")
    verdict: str = Field("", description="PASS | FAIL | ERROR")
    generated: str = ""
    rows: int = 0


class RowPoint(_Model):
    """One row of one gate as the store keeps it."""

    row: str = Field(description="the row's key: RowKey.label() (repo/op dtype shape)")
    op: str = Field(description="<repo>/<op>, the op name FlagGems' benchmark gives")
    value_us: float | None = Field(None, description="the measured FlagGems latency, µs")
    change: float | None = Field(
        None, description="the judged change: paired vs the base when A/B, else vs the baseline"
    )
    change_lo: float | None = None
    change_hi: float | None = None
    verdict: str
    digest: str = Field("", description="the row's timed kernels' digest (docs/history.md)")


class SeriesPoint(_Model):
    """One point of a row's series: the row at one commit."""

    commit: str
    position: int
    run_id: int
    row: str
    value_us: float | None = None
    change: float | None = None
    change_lo: float | None = None
    change_hi: float | None = None
    verdict: str
    digest: str = ""


class RowHistory(_Model):
    """A judged row's history, as the gate's report shows it: its usual noise across
    the stored commits (``gate.noise``) and the row's change divided by it."""

    points: int = Field(description="known values the noise is over")
    noise: float = Field(description="usual commit-to-commit change, relative (Q3 + 3 IQR)")
    factor: float | None = Field(None, description="the row's change / noise (+ slower)")
    first_commit: str = ""
    last_commit: str = ""

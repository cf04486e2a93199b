"""Models of ``zlbench bisect`` and ``zlbench changes`` (docs/history.md "Bisect",
"Change points"): the bisect's state (``<out>/bisect.json``, rewritten atomically after
every build, so a killed bisect resumes where it stopped), its one probe per commit
(:class:`Probe`), its answer (:class:`BisectAnswer`), and the change points found on a
branch's series (``<out>/changes.json``, :class:`ChangesReport`).

Imports only errors and models.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from zlbench.models.base import OnDisk, _Model

BISECT_JSON = "bisect.json"
CHANGES_JSON = "changes.json"

# One commit's compiler used on the row's timed kernels: "built" (every kernel has a
# result or a compile error: its digests say where it stands), "skip" (the build command
# said 125, or the compiler could not load the kernels: an unbuildable commit, as git
# bisect skips it).
ProbeStatus = Literal["built", "skip"]


class Probe(_Model):
    """The row's timed kernels rebuilt by one commit's compiler."""

    commit: str
    status: ProbeStatus
    # kernel id -> stage -> sha256 of its normalised output; a kernel that did not
    # compile has {"error": <its error line>} (a compiler that cannot build it changed it)
    digests: dict[str, dict[str, str]] = Field(default_factory=dict)
    why: str = Field("", description="why the commit was skipped")
    seconds: float = 0.0
    compiler: str = Field("", description="the compiler env the kernels were built with")
    built_compiler: bool = Field(False, description="the build command made this compiler")


class KernelStep(_Model):
    """One timed kernel whose digests differ between the step's two commits."""

    kernel_id: str
    name: str
    config: str = ""
    first_stage: str = Field(description="the first stage (ttir ... sass) that differs")
    diff_file: str = Field("", description="relative to the out dir: the stage's IR diff")
    changed_lines: int | None = None


class BisectAnswer(_Model):
    """Where the search ended: the first commit whose timed-kernel digests differ from
    GOOD's (``commit``), its parent in the range (``parent``, the last commit with
    GOOD's digests), the commits skipped in between (then the first changed commit is
    one of them or ``commit``), and the kernels that changed."""

    found: bool
    commit: str = ""
    parent: str = ""
    skipped_between: list[str] = Field(default_factory=list)
    kernels: list[KernelStep] = Field(default_factory=list)
    message: str = ""


class Confirmation(_Model):
    """Phase 2: the A/B of ``commit``'s compiler (B) against ``parent``'s (A) on the row."""

    command: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    out_dir: str = ""
    row_verdict: str = Field("", description="the row's verdict in the A/B, when it has one")
    change: float | None = None
    confirmed: bool = False
    seconds: float = 0.0


class BisectState(OnDisk):
    """``<out>/bisect.json``: what the bisect was asked and every probe made so far."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["bisect"] = "bisect"
    good: str
    bad: str
    row: str = Field(description="RowKey.label() of the row")
    baseline: str = Field(description="the baseline whose compile requests are rebuilt")
    kernels: list[str] = Field(
        default_factory=list, description="the row's timed kernels (compile request ids)"
    )
    commits: list[str] = Field(description="GOOD ... BAD, oldest first, linear")
    probes: dict[str, Probe] = Field(default_factory=dict)
    answer: BisectAnswer | None = None
    confirmation: Confirmation | None = None

    @property
    def builds(self) -> int:
        """Commits whose compiler rebuilt the row's kernels (skips not counted)."""
        return sum(p.status == "built" for p in self.probes.values())


class RowChange(_Model):
    """One change point of one row's series on the branch."""

    row: str
    index: int = Field(description="position in the series of the first point after it")
    before_commit: str = Field(description="the last commit measured before the change")
    commit: str = Field(description="the first commit measured after it")
    before_position: int
    position: int
    mean_before: float
    mean_after: float
    change: float = Field(description="mean after / mean before - 1 (+ = slower)")
    pvalue: float
    kernels: list[str] = Field(
        default_factory=list, description="timed kernels whose digests changed in the range"
    )
    digest_changed: bool = False


class ChangesReport(OnDisk):
    """``<out>/changes.json``: change points over a branch's series (Apache Otava)."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["changes"] = "changes"
    store: str
    branch: str
    since: str = ""
    detector: str = Field(description="library and parameters")
    rows_scanned: int = 0
    changes: list[RowChange] = Field(default_factory=list)

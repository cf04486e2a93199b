"""``<gate out>/gated.json``: how one ``zlbench gate`` was gated: its op set, its
baseline and the options that change its verdict (issue 50 item 2). Written by
:mod:`zlbench.workflow.gate` when it claims its out dir; read by ``zlbench report DIR``
and ``gate --results DIR`` (:mod:`zlbench.workflow.gate_record`), which re-judge the
dir as it was gated unless told otherwise.

The file comes with a downloaded artifact, so it is untrusted (docs/security.md): it
only chooses what to re-judge, every path in it is checked before use, and its lists
and strings are bounded here.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StringConstraints

from zlbench.models.base import OnDisk

GATED_JSON = "gated.json"
MAX_GATED_OPS = 100_000  # op keys of one gate (the whole inventory is ~1,000)

_Text = Annotated[str, StringConstraints(max_length=4096)]
_Sha = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class GateRecord(OnDisk):
    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["gate_record"] = "gate_record"
    # the baseline as given (a packed tree's copy as its lock names it: baselines/v7)
    # and the sha256 of its manifest.yaml (which holds the sha256 of every other file)
    baseline: _Text
    baseline_sha256: _Sha
    # --ops-file as given and its sha256 (None: the op set came from --ops, or none)
    ops_file: _Text | None = None
    ops_file_sha256: _Sha | None = None
    # the SPECs of --ops or of the ops file, as given (empty: every baseline op)
    specs: list[_Text] = Field(default_factory=list, max_length=MAX_GATED_OPS)
    # the baseline op keys they selected ("<repo>/<run_name>"; None: every baseline op)
    op_keys: list[_Text] | None = Field(default=None, max_length=MAX_GATED_OPS)
    # --thresholds as given and its sha256 (None: the baseline manifest's)
    thresholds: _Text | None = None
    thresholds_sha256: _Sha | None = None
    allow_env_mismatch: bool = False
    # what the gate measured with; the re-judge reads its evidence from the dir itself
    # (ab/, codegen/timing.json), so these only inform
    base_compiler: _Text | None = None
    time: Literal["all", "changed"] = "all"
    time_budget_s: float | None = None
    confirm: int | None = None

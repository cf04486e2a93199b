"""The accept list (``gate --accept FILE``): intended regressions a PR may land.

A PR that trades speed for something else on purpose lists the rows it slows
down, how much slower they may get and why. The gate still measures and judges
those rows; a matched row within its allowance is a PASS marked *accepted*, and
every report shows it with its reason (docs/judging.md). Nothing is ever
accepted silently: a reason is required, and an entry that matches no row is
reported too.

```yaml
schema_version: 1
accept:
  - op: softmax            # op name or run_name, as in the thresholds file
    dtype: float16         # optional: all dtypes when absent
    shape: "[1024, 4096]"  # optional: all shapes when absent (the shape text as reported)
    change: 0.08           # allowed kernel time change, + = slower: up to +8 %
    reason: "FlagTree#123: exact rounding in the reduction"
```
"""

from __future__ import annotations

import math
from typing import ClassVar

from pydantic import Field, field_validator

from zlbench.models.base import OnDisk, _Model

# An allowance past +100 % (twice the time) is no trade-off a list should hide.
MAX_ACCEPTED_CHANGE = 1.0


class AcceptEntry(_Model):
    """One accepted regression: which rows, how much slower, why."""

    op: str = Field(min_length=1, description="op name or run_name")
    dtype: str | None = None
    shape: str | None = None
    change: float = Field(description="allowed kernel time change (+ = slower), e.g. 0.08")
    reason: str = Field(description="why the regression is intended; never empty")

    @field_validator("reason")
    @classmethod
    def _reason_given(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must say why the regression is intended (empty)")
        return v.strip()

    @field_validator("change")
    @classmethod
    def _change_in_range(cls, v: float) -> float:
        if not (math.isfinite(v) and 0.0 < v <= MAX_ACCEPTED_CHANGE):
            raise ValueError(f"{v} is not in (0, {MAX_ACCEPTED_CHANGE:g}] (+ = slower)")
        return v

    def label(self) -> str:
        parts = [self.op, self.dtype or "", self.shape or ""]
        return " ".join(p for p in parts if p) + f" (up to +{self.change * 100:.1f} %)"


class AcceptList(OnDisk):
    """``--accept FILE``."""

    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    accept: list[AcceptEntry] = Field(default_factory=list)


class AcceptedNote(_Model):
    """On a row that an accept entry matches (whatever its verdict): the entry, and
    whether the entry turned a REGRESSION into a PASS."""

    entry: AcceptEntry
    applied: bool = Field(description="True: a REGRESSION within the allowance, now PASS")
    exceeded: bool = Field(False, description="True: slower than the allowance, still failing")

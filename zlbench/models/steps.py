"""``<gate out>/steps.json``: where one measuring ``zlbench gate`` spent its wall time
(docs/codegen.md, "Gate integration"). Written by :mod:`zlbench.workflow.gate` after
the reports; read by whoever compares two gate runs (docs/measurements.md).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from zlbench.models.base import OnDisk

STEPS_JSON = "steps.json"


class GateSteps(OnDisk):
    FORMAT_VERSION: ClassVar[int] = 1
    schema_version: int = FORMAT_VERSION
    kind: Literal["gate_steps"] = "gate_steps"
    # step -> wall seconds: "screen" (codegen screen), "measure" (the replay batch),
    # "confirm" (the confirmation re-measures) or "ab" (the A/B rounds), "total"
    seconds: dict[str, float] = Field(default_factory=dict)
    # kernels the screen compiled into the measure step's shared triton cache
    # (None: no screen, each benchmark process compiled its own)
    shared_cache_kernels: int | None = None

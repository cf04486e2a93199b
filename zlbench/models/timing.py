"""How a run was timed, as one model: upstream FlagGems' ``--mode``, zlbench's timing
method and that method's budgets (issue 28 item 1).

Every result records it in its environment (``Environment.timing``: ``result.json``,
``batch.json``'s environments, a baseline's ``result.json`` files); the gate compares
it with the baseline's (:mod:`zlbench.gate.env`) and the reproduce command renders it
(:mod:`zlbench.gate.verdict`). Files written before it was a model hold the string
``timing_method`` (``graph warmup_ms=100 replays=10``, or ``upstream``);
:func:`parse_timing` reads that string into the model. Imports only
:mod:`zlbench.models.base` and :mod:`zlbench.models.ranges` (the budgets' ranges).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import ConfigDict, model_validator

from zlbench.models.base import _Model
from zlbench.models.ranges import AT_LEAST_0, AT_LEAST_1

# The plugin defaults of the budgets (zlbench.protocol.options: --zl-warmup-ms,
# --zl-replays); upstream's own --warmup defaults to 1000 ms.
DEFAULT_WARMUP_MS = 100.0
DEFAULT_REPLAYS = 10


# the budgets as every model holding them checks them (Timing, models.options.Measuring),
# in the words of the CLI's check (zlbench.cli.numbers.RULES takes these ranges)
WARMUP_MS = AT_LEAST_0
REPLAYS = AT_LEAST_1
WarmupMs = Annotated[float | None, WARMUP_MS.validator("--warmup-ms")]
Replays = Annotated[int | None, REPLAYS.validator("--replays")]


class TimingMethod(str, Enum):
    """zlbench's timing method (``--zl-timing``): one member per timer the plugins
    implement (:data:`zlbench.plugins.timing.TIMERS`)."""

    # zlbench's CUDA-graph timing with explicit warmup (plugins/timing.py ``measure``)
    GRAPH = "graph"
    # upstream FlagGems' own do_bench / do_bench_cudagraph, left alone
    UPSTREAM = "upstream"

    @property
    def has_budgets(self) -> bool:
        """Whether ``warmup_ms`` and ``replays`` mean anything for this method."""
        return self in BUDGETED_METHODS


BUDGETED_METHODS = frozenset({TimingMethod.GRAPH})


def number_text(x: float) -> str:
    """``x`` as short as it reads back exactly: ``100`` for 100.0, ``0.1`` for 0.1."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


class Timing(_Model):
    """Upstream's ``--mode`` (None where unknown), zlbench's method and its budgets.

    A method without budgets (``upstream``) holds ``warmup_ms = replays = None``: the
    budgets given to the process do not change how it times, so they are not part of
    how it was timed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: str | None = None  # upstream FlagGems --mode: cudagraph | kernel
    method: TimingMethod = TimingMethod.GRAPH
    warmup_ms: WarmupMs = DEFAULT_WARMUP_MS  # eager warmup budget before the capture
    replays: Replays = DEFAULT_REPLAYS  # graph replays per measurement (median reported)

    @model_validator(mode="before")
    @classmethod
    def _budgets_of_the_method(cls, data: Any) -> Any:
        """No budgets on a method that has none; the defaults on one that has them."""
        if not isinstance(data, dict):
            return data
        try:
            method = TimingMethod(data.get("method", TimingMethod.GRAPH))
        except ValueError:
            return data  # the field's own validation names it
        if not method.has_budgets:
            return {**data, "warmup_ms": None, "replays": None}
        return {
            **data,
            "warmup_ms": DEFAULT_WARMUP_MS if data.get("warmup_ms") is None else data["warmup_ms"],
            "replays": DEFAULT_REPLAYS if data.get("replays") is None else data["replays"],
        }

    def text(self) -> str:
        """One line: ``graph warmup_ms=100 replays=10 mode=cudagraph`` (the old
        ``timing_method`` string, then the upstream mode); :func:`parse_timing` reads
        it back."""
        words = [self.method.value]
        if self.warmup_ms is not None:
            words.append(f"warmup_ms={number_text(self.warmup_ms)}")
        if self.replays is not None:
            words.append(f"replays={self.replays}")
        if self.mode is not None:
            words.append(f"mode={self.mode}")
        return " ".join(words)


_KEYS = ("warmup_ms", "replays", "mode")


def parse_timing(text: str, mode: str | None = None) -> Timing:
    """The model of a timing line (:meth:`Timing.text`, or the ``timing_method`` string
    results recorded before the model: ``graph warmup_ms=100 replays=10``,
    ``upstream``). ``mode``: upstream's ``--mode`` when the text does not name one (the
    environment's ``mode`` beside an old string). A malformed text is ValueError."""
    words = text.split()
    if not words:
        raise ValueError("empty timing method")
    try:
        method = TimingMethod(words[0])
    except ValueError:
        known = ", ".join(m.value for m in TimingMethod)
        raise ValueError(f"unknown timing method {words[0]!r} (known: {known})") from None
    fields: dict[str, Any] = {"method": method, "mode": mode}
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if not eq or key not in _KEYS:
            raise ValueError(f"timing method {text!r}: cannot read {word!r}")
        fields[key] = value
    return Timing.model_validate(fields)

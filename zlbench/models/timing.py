"""How a run was timed, as one model: upstream FlagGems' ``--mode``, zlbench's timing
method and that method's budgets (issue 28 item 1).

Every result records it in its environment (``Environment.timing``: ``result.json``,
``batch.json``'s environments, a baseline's ``result.json`` files); the gate compares
it with the baseline's (:mod:`zlbench.gate.env`) and the reproduce command renders it
(:mod:`zlbench.gate.verdict`). Files written before it was a model hold the string
``timing_method`` (``graph warmup_ms=100 replays=10``, or ``upstream``);
:func:`parse_timing` reads that string into the model.

The interleaved A/B's sampling has its home here too: :class:`PairSampling` (each
side's per-sample ``Timing``, the clock read after each sample, the adaptive pairs),
recorded in ``ab.json`` and checked against the ``Timing`` both sides' runs recorded
(:func:`sides_timing`). Imports only :mod:`zlbench.models.base` and
:mod:`zlbench.models.ranges` (the budgets' ranges).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

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
    # not a measurement: two eager calls of the benchmark's function in the GPU's shared
    # turn, no graph (plugins/timing.py ``capture_calls``): what ``baseline capture
    # --untimed`` runs, whose launch capture keeps the second call's launches and reads
    # no timing; its latencies are that call's host wall time
    CAPTURE = "capture"

    @property
    def has_budgets(self) -> bool:
        """Whether ``warmup_ms`` and ``replays`` mean anything for this method."""
        return self in BUDGETED_METHODS

    @property
    def pairs(self) -> bool:
        """Whether an interleaved A/B can take its samples in pairs (its timer calls
        :mod:`zlbench.plugins.pairing`; :class:`PairSampling`)."""
        return self in PAIRED_METHODS


BUDGETED_METHODS = frozenset({TimingMethod.GRAPH})
# Methods whose timer takes an interleaved A/B's samples in pairs: graph's ``measure``
# hands each sample (one replay of the row's graph, or one plain do_bench median where
# the graph failed) to the pairing plugin; upstream's do_bench is left alone and never
# pairs, so an A/B timed by it would have no pairs at all.
PAIRED_METHODS = frozenset({TimingMethod.GRAPH})


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


# ---------------------------------------------------------------- the paired A/B's sampling


class SampleClock(str, Enum):
    """What is read after each paired sample, in its GPU turn (``mhz`` and ``reasons``
    of the sample; a pair with a throttled sample is dropped): one member per clock
    reader of :data:`zlbench.plugins.pairing.CLOCKS`."""

    # the SM clock and the clock event reasons by NVML (pynvml; nothing without it)
    NVML = "nvml"


# The adaptive-pair settings of :class:`PairSampling`, as ``ab.json`` of version 1 held
# them at its top level.
SAMPLING_FIELDS = ("min_pairs", "max_pairs", "max_pairs_plain", "block_pairs_plain", "confidence")


class PairSampling(_Model):
    """How an interleaved A/B sampled its rows (docs/judging.md "How the pairs are
    taken"): each side's per-sample ``timing`` (both sides' processes time alike: one
    ``Timing``), the ``clock`` read after each sample, and the adaptive pairs: at least
    ``min_pairs``, at most ``max_pairs`` (``max_pairs_plain`` for a row timed by the plain
    fallback, whose intervals are over medians of ``block_pairs_plain`` pairs), intervals
    at ``confidence``.

    One sample of a row is one replay of its captured CUDA graph (the method's warmup
    budget spent before the capture; the ``replays`` budget is not used: a sample is a
    single replay), or one plain ``do_bench`` median where the graph failed. Built once
    by ``zlbench.workflow.ab.AbOptions.pair_rule`` (``timing`` None: the processes say),
    recorded in ``ab.json`` (``AbSummary.sampling``) with the ``Timing`` the sides' runs
    recorded (:func:`sides_timing`), and read back by the judge. The verdict policy
    (threshold, floor, plain threshold) is not sampling: it stays in
    ``zlbench.protocol.pairs.PairRule`` and ``AbSummary``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timing: Timing | None = None  # None: not recorded (ab.json of version 1)
    clock: SampleClock = SampleClock.NVML
    min_pairs: int = Field(5, ge=1)  # never decide on fewer pairs
    max_pairs: int = Field(16, ge=1)  # the budget of a row timed with a CUDA graph
    max_pairs_plain: int = Field(32, ge=1)  # the budget of a row timed by the plain fallback
    # a plain row's intervals are over the medians of blocks of this many pairs
    block_pairs_plain: int = Field(4, ge=1)
    confidence: float = Field(0.9, gt=0, lt=1, allow_inf_nan=False)  # of the intervals

    @model_validator(mode="after")
    def _a_method_that_pairs(self) -> PairSampling:
        if self.timing is not None and not self.timing.method.pairs:
            raise ValueError(paired_method_why(self.timing))
        return self

    def budget(self, plain: bool) -> int:
        """Pairs a row may take at most."""
        return self.max_pairs_plain if plain else self.max_pairs

    def block(self, plain: bool) -> int:
        """Pairs per block of a row's intervals (1 for a row timed with a graph)."""
        return max(1, self.block_pairs_plain) if plain else 1

    def timed(self, timing: Timing | None) -> PairSampling:
        """This sampling with the sides' recorded ``timing`` (checked: it pairs)."""
        return PairSampling.model_validate({**self.model_dump(), "timing": timing})


def paired_method_why(timing: Timing) -> str:
    """Why an A/B cannot be sampled with ``timing`` (its method does not pair)."""
    paired = ", ".join(m.value for m in TimingMethod if m.pairs)
    return (
        f"the A/B's sides timed with method {timing.method.value}, which takes no paired "
        f"samples (methods that pair: {paired})"
    )


def sides_timing(pr: Iterable[Timing | None], base: Iterable[Timing | None]) -> Timing | None:
    """The one ``Timing`` both sides' runs of an A/B recorded (None where no run
    recorded one: results of before the model). Runs that timed differently, within a
    side (its row parts, its resumed or merged parts) or between the sides, are a
    ValueError of one line naming both: an A/B compares compilers, never timings."""
    seen: dict[str, Timing] = {}
    for side, timings in (("PR", pr), ("base", base)):
        got = {t.text(): t for t in timings if t is not None}
        if len(got) > 1:
            ways = " | ".join(sorted(got))
            raise ValueError(f"the {side}'s runs of the A/B were timed differently: {ways}")
        if got:
            seen[side] = next(iter(got.values()))
    if len({t.text() for t in seen.values()}) > 1:
        raise ValueError(
            f"the A/B's sides were timed differently: the PR's runs {seen['PR'].text()}, "
            f"the base's {seen['base'].text()}: both sides of an A/B are sampled alike"
        )
    return next(iter(seen.values()), None)

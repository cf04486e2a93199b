"""The numeric ranges of options and budgets, one source for the CLI and the models
(issue 28 item 2).

A :class:`Range` says what values are allowed and words the refusal once: ``--replays
0: must be at least 1``. The CLI checks every numeric flag with it before any work
(:data:`zlbench.cli.numbers.RULES`, which takes the ranges of the option models from
here); the models (:class:`zlbench.models.Timing`, :mod:`zlbench.models.options`)
validate their fields with the same range and the same words
(:meth:`Range.validator`), so a value is refused alike from argv and from a model, and a
range is changed in one place. :func:`options_error` makes a model's refusal the one
line (exit 2) the CLI prints. Imports only :mod:`zlbench.errors`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import AfterValidator, ValidationError

from zlbench.errors import ZlbenchError


@dataclass(frozen=True)
class Range:
    """``low`` <= value (or < value when ``open_low``), <= ``high`` when given; finite always."""

    low: float
    open_low: bool = False
    note: str = ""
    high: float | None = None

    def problem(self, flag: str, value: float) -> str | None:
        """The one line refusing ``value`` of ``flag`` (``--replays 0: must be at least
        1``), or None when it is in range."""
        if not math.isfinite(value):
            return f"{flag} {value}: must be a finite number"
        note = f" ({self.note})" if self.note else ""
        if value < self.low or (self.open_low and value == self.low):
            word = "more than" if self.open_low else "at least"
            return f"{flag} {value:g}: must be {word} {self.low:g}{note}"
        if self.high is not None and value > self.high:
            return f"{flag} {value:g}: must be at most {self.high:g}{note}"
        return None

    def check(self, flag: str, value: float) -> None:
        """Refuse ``value`` out of range: :meth:`problem`'s line, a ZlbenchError (exit 2)."""
        if (line := self.problem(flag, value)) is not None:
            raise ZlbenchError(line)

    def validator(self, flag: str) -> AfterValidator:
        """A pydantic field validator refusing what :meth:`check` refuses, in the same
        words (``flag``: the option that sets the field); None and non-numbers (an
        ``"auto"``) pass to the field's own type."""

        def valid(value: Any) -> Any:
            if isinstance(value, int | float) and not isinstance(value, bool):
                if (line := self.problem(flag, value)) is not None:
                    raise ValueError(line)
            return value

        return AfterValidator(valid)


AT_LEAST_0 = Range(0)
AT_LEAST_1 = Range(1)
POSITIVE = Range(0, open_low=True)


def options_error(err: ValidationError) -> ZlbenchError:
    """A model's refusal of an option value as the CLI's one line: a range's own words
    (:meth:`Range.validator`), else ``<field>: <pydantic's message>``."""
    first = err.errors()[0]
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, ValueError):
        return ZlbenchError(str(cause))
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(options)"
    return ZlbenchError(f"{loc}: {first.get('msg')}")

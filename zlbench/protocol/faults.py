"""Which errors are real device faults and which only mean "cannot capture".

Why: a benchmark that cannot be CUDA-graph captured must fall back to plain
do_bench with a marker, but a real device fault (device-side assert, illegal
address, OOM...) must never be hidden behind a fallback: the numbers after it
mean nothing and the CUDA context may be poisoned. torch appends a generic
footer to every CUDA error ("CUDA kernel errors might be asynchronously
reported ... Compile with `TORCH_USE_CUDA_DSA` to enable device-side
assertions."), which mentions device-side assertions even for harmless capture
errors; so the footer is cut off before the text is matched.

The plugins re-raise a device fault (:func:`is_device_fault`); the runner
replaces a process whose output shows a sticky one (:data:`STICKY_FAULT_RE`).
Pure: no torch import.
"""

from __future__ import annotations

import re

# The texts of real device faults (lower case substrings of the error text), one
# table for both sides. ``sticky``: the CUDA context is unusable after it, so the
# runner replaces a process whose output shows it while an op is in flight; the
# others (out of memory, a driver shutting down...) still fail the op and are
# never hidden behind a fallback, but the process may go on.
FAULTS: tuple[tuple[str, bool], ...] = (
    ("device-side assert triggered", True),
    ("illegal memory access", True),
    ("illegal instruction was encountered", True),
    ("illegal address", False),
    ("misaligned address", True),
    ("out of memory", False),
    ("unspecified launch failure", True),
    ("uncorrectable ecc error", True),
    ("hardware stack error", False),
    ("an exception occurred on the device", False),
    ("cuda driver is shutting down", False),
    ("launch timed out and was terminated", False),
)

# Substrings (lower case) of the error text of real device faults.
FAULT_TEXTS = tuple(text for text, _ in FAULTS)
# A line of output that shows a sticky fault (the process must be replaced).
STICKY_FAULT_RE = re.compile(
    "|".join(re.escape(text) for text, sticky in FAULTS if sticky), re.IGNORECASE
)

# Lines torch (or triton) appends to every CUDA error; never evidence of a fault.
_FOOTER_PATTERNS = (
    re.compile(r"cuda kernel errors might be asynchronously reported", re.I),
    re.compile(r"for debugging consider passing cuda_launch_blocking", re.I),
    re.compile(r"compile with .?torch_use_cuda_dsa.? to enable device-side assertions", re.I),
    re.compile(r"search for .?cudaerror.*in https?://", re.I),
)


def strip_footer(text: str) -> str:
    """The error text without torch's generic CUDA-error footer lines."""
    kept = [line for line in text.splitlines() if not any(p.search(line) for p in _FOOTER_PATTERNS)]
    return "\n".join(kept)


def is_device_fault(exc_or_text: BaseException | str) -> bool:
    """True when the error is a real device fault that must be re-raised."""
    if isinstance(exc_or_text, BaseException):
        if type(exc_or_text).__name__ == "OutOfMemoryError":
            return True
        text = str(exc_or_text)
    else:
        text = exc_or_text
    body = strip_footer(text).lower()
    return any(t in body for t in FAULT_TEXTS)


def reason_text(exc: BaseException, limit: int = 120) -> str:
    """A one-line marker reason: exception class and the first line of its text."""
    body = strip_footer(str(exc)).strip()
    first = body.splitlines()[0].strip() if body else ""
    first = re.sub(r"\s+", "_", first)[:limit]
    name = type(exc).__name__
    return f"{name}:{first}" if first else name

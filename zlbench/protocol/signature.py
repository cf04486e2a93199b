"""How an error signature names a failure, for the plugins and the runner alike.

An error signature (``SystemError in triton/backends/nvidia/driver.py:328``) is
what makes two failures "the same failure" (docs/architecture.md, "Systemic
failures"). The plugins build it from the exception a test raised
(``ZLBENCH_OP_ERROR``, :mod:`.boundary`); the runner builds it from a log
(:mod:`zlbench.runner.execute.failsig`) when no such line was printed (a signal,
a process that died before the op). Both must write the same text for the same
failure on every machine, so both use :func:`location` and :func:`short_path`.
Pure.
"""

from __future__ import annotations

# pytest's own outcomes (pytest.fail/skip/xfail/exit): upstream re-raises a kernel's
# error with ``pytest.fail(str(e))``, so the cause is the exception before it.
OUTCOMES = frozenset({"Failed", "Skipped", "XFailed", "Exit"})
# Path parts after which the rest of a path names the same file on every machine.
ROOTS = ("site-packages/", "dist-packages/", "/src/", "/benchmark/")
MAX_MESSAGE = 80


def short_path(path: str) -> str:
    """The part of ``path`` that is the same on every machine:
    ``/x/site-packages/triton/backends/nvidia/driver.py`` ->
    ``triton/backends/nvidia/driver.py``."""
    path = path.replace("\\", "/")
    for root in ROOTS:
        i = path.rfind(root)
        if i >= 0:
            return path[i + len(root) :]
    parts = [p for p in path.split("/") if p]
    return "/".join(parts[-3:])


def location(exc_type: str, path: str, line: int | str) -> str:
    """``SystemError in triton/backends/nvidia/driver.py:328`` (the exception's class
    name without its module, the machine prefix of ``path`` stripped)."""
    return f"{exc_type.rsplit('.', 1)[-1]} in {short_path(path)}:{line}"


def outcome_location(exc_type: str, path: str, line: int | str, message: str) -> str:
    """A bare ``pytest.fail("...")`` with no exception behind it: its location and
    the first line of its message, so that only the same failure groups."""
    first = (message.strip().splitlines() or [""])[0].strip()[:MAX_MESSAGE]
    return location(exc_type, path, line) + (f": {first}" if first else "")

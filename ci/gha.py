"""GitHub Actions plumbing shared by the ci/*.py scripts (step outputs, summary, errors).

Mirrors ci/lib.sh: a failure is one line in the log, one error annotation and the
same line in the job summary. Outside Actions the GITHUB_* files are unset and
these helpers only print.
"""

from __future__ import annotations

import os
import sys


class CiError(Exception):
    """A failure to report with :func:`fail` (exit code 2 unless given)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def summary(*lines: str) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


def output(key: str, value: str) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    if "\n" in value:
        raise ValueError(f"step output {key} must be one line")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{key}={value}\n")
    else:
        print(f"output {key}={value}")


def output_lines(key: str, lines: list[str]) -> None:
    """A step output of several lines (an action's multiline input, e.g. actions/checkout's
    sparse-checkout), written with GitHub's ``key<<DELIMITER`` form."""
    if any("\n" in line or "\r" in line for line in lines):
        raise ValueError(f"step output {key}: one item a line")
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        print(f"output {key}=" + " ".join(lines))
        return
    delimiter = f"ZL_EOF_{os.urandom(8).hex()}"
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{key}<<{delimiter}\n" + "".join(f"{line}\n" for line in lines) + f"{delimiter}\n")


def warn(message: str) -> None:
    print(f"::warning title=zlbench::{_escape(message)}")
    print(f"warning: {message}", file=sys.stderr)


def fail(message: str, code: int = 2) -> int:
    """Report ``message`` everywhere a reader looks; return ``code`` for sys.exit."""
    print(f"::error title=zlbench::{_escape(message)}")
    print(f"error: {message}", file=sys.stderr)
    summary(f"### ❌ {message}", "")
    return code


def run_main(main) -> None:
    """Run ``main() -> int`` turning a CiError into the reported failure."""
    try:
        code = main()
    except CiError as e:
        code = fail(str(e), e.code)
    sys.exit(code)

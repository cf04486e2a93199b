"""Command line: reads argv and environment variables, calls the layers below,
writes what they return. Imported by nothing else in zlbench.

Each command lives in its own module exposing ``add_parser(subparsers)``; the
parser sets ``func(args) -> int`` (the exit code).
"""

from __future__ import annotations

import argparse
import re
import sys

from zlbench import __version__
from zlbench.cli.logsafe import safe_streams
from zlbench.cli.parser import OneLineParser
from zlbench.errors import ZlbenchError

COMMANDS = (
    "run",
    "batch",
    "inventory",
    "summarize",
    "merge",
    "gate",
    "report",
    "compare",
    "ab",
    "baseline",
    "codegen",
    "explain",
    "pack",
    "unpack",
    "history",
    "changes",
    "bisect",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; ``only``: of that command alone (``main`` parses
    one command: its module alone is imported, so ``zlbench gate --help`` loads no
    other command's layers)."""
    import importlib

    parser = OneLineParser(  # a value argparse refuses is one line, not the usage
        prog="zlbench",
        description="Performance regression gate for FlagTree (FlagGems operator benchmarks).",
    )
    parser.add_argument("--version", action="version", version=f"zlbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parser.set_defaults(out=None)  # a command that writes nothing has no --out
    for name in COMMANDS if only not in COMMANDS else (only,):
        importlib.import_module(f"zlbench.cli.{name}_cmd").add_parser(sub)
    return parser


def _term_as_interrupt(signum, frame):  # noqa: ARG001
    """SIGINT, SIGTERM: stop measuring in every thread (runner.execute.stop: the
    benchmark processes' threads never see the KeyboardInterrupt), then unwind."""
    from zlbench.runner.execute import stop

    stop.request()
    raise KeyboardInterrupt


ERROR_LINE_MAX = 300  # characters of an I/O failure's line
_ERRNO = re.compile(r"^\[Errno \d+\] ")


def _os_error(e: OSError) -> str:
    """An OSError as one short line: "<file>: <reason>" (no errno, no traceback); a
    failed tree copy (shutil.Error, one entry per file) as its first failing file,
    that file's reason and how many more failed."""
    import shutil

    if isinstance(e, shutil.Error) and e.args and isinstance(e.args[0], list) and e.args[0]:
        first, more = e.args[0][0], len(e.args[0]) - 1
        src, why = (first[0], first[-1]) if isinstance(first, tuple) and first else (first, "")
        line = f"copying {src} failed: {_ERRNO.sub('', str(why))}"
        line += f" (and {more} more file(s))" if more else ""
    else:
        where = e.filename if e.filename is not None else ""
        reason = e.strerror or str(e)
        line = f"{where}: {reason}" if where else reason
    line = re.sub(r"[\r\n\t]+", " ", str(line))
    return line if len(line) <= ERROR_LINE_MAX else line[: ERROR_LINE_MAX - 1] + "…"


def _quiet_stdout() -> None:
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file behind it (tests)
        pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv else None)
    if not argv:  # no command: list the commands (stderr, exit 2: nothing was done)
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    # A CI job cancelled or a `timeout` sends SIGTERM: unwind like Ctrl-C, so child
    # process groups are killed and temp dirs (refresh, output claims) are removed;
    # either stops every thread's benchmark processes (runner.execute.stop)
    import signal
    import threading

    from zlbench.runner.execute import stop

    stop.clear()
    restore = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            restore[sig] = signal.signal(sig, _term_as_interrupt)
    try:
        with safe_streams():  # artifact text never prints as a workflow command
            return _dispatch(args)
    finally:
        for sig, handler in restore.items():
            signal.signal(sig, handler)
        stop.clear()  # the command is over: a caller in this process may measure again


def _check_out(args: argparse.Namespace) -> None:
    """Every command that writes refuses an ``--out`` that is or lies inside a
    baseline dir: a baseline is never written to (one line, exit 2)."""
    out = args.out
    if not out:
        return
    from zlbench.gate.baselines import baseline_above

    if (found := baseline_above(out)) is not None:
        raise ZlbenchError(
            f"--out {out} is inside the baseline {found}: "
            "a baseline is never written to; choose another output dir"
        )


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command; a user error or an I/O failure is one line (exit 2)."""
    from zlbench.cli.numbers import check_numbers
    from zlbench.cli.trees import resolve_tree_args
    from zlbench.report.escape import log_escape

    try:
        check_numbers(args)  # every numeric flag, before any work
        _check_out(args)
        resolve_tree_args(args)  # a packed baseline or results dir: its unpacked copy
        return int(args.func(args) or 0)
    except ZlbenchError as e:  # one line, whatever names from input it holds
        print(f"zlbench {args.command}: error: {log_escape(e)}", file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:  # the reader went away (``| head``): as a shell tool does,
        # stop without a message; stdout to devnull, so that the exit's flush is quiet
        _quiet_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports a process its pipe stopped
    except OSError as e:  # a full disk, a read-only dir...: could not do the job
        print(f"zlbench {args.command}: error: {_os_error(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"zlbench {args.command}: interrupted", file=sys.stderr)
        _stop_measuring()
        return 130


STOP_WAIT_S = 10.0  # how long an interrupted command waits for its batches to unwind


def _stop_measuring() -> None:
    """After an interrupt: kill every benchmark process group still running, then wait
    (bounded) for the batches of other threads, which see the stop flag, to unwind and
    write their partial markers."""
    from zlbench.runner.execute import stop
    from zlbench.runner.execute.proc import stop_all

    try:
        stop_all()
        stop.wait_units(STOP_WAIT_S)
    except KeyboardInterrupt:  # a second Ctrl-C: the groups got SIGTERM already
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The one base error for user mistakes.

The CLI turns a :class:`ZlbenchError` into one line on stderr and exit 2; any
other exception is a bug and keeps its traceback.
"""


class ZlbenchError(Exception):
    """A user-facing problem: bad input, missing file, wrong environment."""

    exit_code = 2

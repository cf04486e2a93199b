"""The parser class of every command, in a module of its own that imports nothing of
zlbench: building the parser (``zlbench COMMAND --help``) loads no model."""

from __future__ import annotations

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """The parser of every command (subparsers take their parent's class): a value
    argparse itself refuses (``--time-budget ''``: ``type=float`` fails; a choice not
    among the choices; a flag missing its value) is one line, exit 2, as every check
    below is, not the command's whole usage; ``-h`` still prints it."""

    def error(self, message: str) -> NoReturn:
        line = " ".join(str(message).split())  # argparse quotes the value with repr
        self.exit(2, f"{self.prog}: error: {line} (see {self.prog} -h)\n")

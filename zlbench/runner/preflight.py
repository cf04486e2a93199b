"""What measuring needs, checked before any work is done: a FlagGems checkout per
repo and a compiler the benchmark processes can import. Each missing piece is one
ZlbenchError line naming it and the fix (exit 2), before a codegen screen, a GPU or
an output dir is touched (``zlbench gate``, ``batch``, ``run``; docs/reports.md,
"Inputs refused").

Judging stored results (``gate --results``, ``report``) needs neither and checks
neither.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import FLAGGEMS_DIR_VARS

BENCHMARK_DIR = "benchmark"  # what makes a dir a FlagGems checkout here


def flaggems_fix(repo: str = "main", option: str = "") -> str:
    """How to name the checkout of ``repo``: the command's ``option`` as typed (e.g.
    ``--flaggems-dir DIR``; "": the command has none) or the environment variable."""
    var = FLAGGEMS_DIR_VARS.get(repo, FLAGGEMS_DIR_VARS["main"])
    return f"pass {option} or set {var}" if option else f"set {var} to a FlagGems checkout"


def check_flaggems_dir(
    path: str | os.PathLike | None, repo: str = "main", fix: str | None = None
) -> Path:
    """The FlagGems checkout of ``repo`` (resolved), or one ZlbenchError line: what is
    wrong with it and ``fix`` (default: :func:`flaggems_fix` with ``--flaggems-dir``)."""
    fix = fix or flaggems_fix(repo, "--flaggems-dir DIR")
    what = "" if repo == "main" else f" for repo {repo!r}"
    if not path:
        raise ZlbenchError(f"no FlagGems checkout given{what}: {fix}")
    p = Path(path)
    if not p.is_dir():
        raise ZlbenchError(f"no FlagGems checkout{what} at {p} (no such directory): {fix}")
    if not (p / BENCHMARK_DIR).is_dir():
        raise ZlbenchError(f"no FlagGems checkout{what} at {p} ({BENCHMARK_DIR}/ missing): {fix}")
    return p.resolve()


def check_checkouts(
    dirs: Mapping[str, str | os.PathLike], repos: Iterable[str], flag: str = ""
) -> dict[str, Path]:
    """Every repo of ``repos`` has a FlagGems checkout in ``dirs`` (repo -> dir):
    ``{repo: resolved dir}``, or the first missing one as one line. ``flag``: the
    command's option naming a checkout as ``DIR`` (main) or ``REPO=DIR`` ("": none)."""
    out = {}
    for repo in sorted(set(repos)):
        option = "" if not flag else f"{flag} DIR" if repo == "main" else f"{flag} {repo}=DIR"
        out[repo] = check_flaggems_dir(dirs.get(repo), repo, flaggems_fix(repo, option))
    return out


COMPILER_FIX = (
    "install the compiler under test (the triton or FlagTree build) into the environment "
    "zlbench runs in"
)


def check_compiler(python: str | None = None, note: str = "") -> None:
    """A ``triton`` the benchmark processes can import: they run this interpreter
    (``python`` None), so its ``sys.path`` must find the package; else one line with
    the fix (``note`` appended, e.g. what works without one). Another interpreter (an
    A/B side, ``python`` given) is not checked here: the A/B probes it
    (:func:`zlbench.runner.ab.env.probe_compiler`)."""
    if python is not None:
        return
    try:
        found = importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):  # a broken parent, or a triton module without a spec
        found = False
    if not found:
        tail = f" ({note})" if note else ""
        raise ZlbenchError(
            f"no compiler to measure: `import triton` finds nothing for {sys.executable}: "
            f"{COMPILER_FIX}{tail}"
        )

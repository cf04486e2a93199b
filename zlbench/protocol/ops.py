"""An op's names, and the one grammar of ``--ops`` / ``--ops-file`` for every command.

The vocabulary (docs/design.md):

* **op**: the FlagGems op name, e.g. ``mm`` (the benchmark's ``op_name``, the
  inventory's ``op`` column);
* **selector**: ``op``, or ``op@test_file.py`` when the op is in several test files;
  it names one op's tests within a repo;
* **run name**: the selector made path-safe, ``@`` -> ``__at__``
  (``mm__at__test_mm.py``): the name of the op's run dir;
* **op key**: ``<repo>/<run_name>`` (:func:`zlbench.protocol.layout.op_key`): the id
  of a measured op everywhere (ops_status.csv, baselines, verdicts);
* **SPEC**: what a user writes after ``--ops`` or in an ops file: ``[repo:]selector``,
  or an op key ``repo/run_name``. Without a repo, a SPEC means that selector in
  every repo the command looks at. :func:`parse_spec` reads all three forms the
  same way for ``batch``, ``gate``, ``report`` and ``baseline refresh``.
"""

from __future__ import annotations

import os
from collections import Counter

from zlbench.errors import ZlbenchError
from zlbench.models import REPOS, read_text
from zlbench.protocol.layout import split_op_key

AT = "__at__"  # "@" in a run name
SPEC_GRAMMAR = "[repo:]op[@test_file.py] or repo/run_name"  # for help texts


def run_name_for(selector: str) -> str:
    """The run name of a selector: ``@`` becomes ``__at__``."""
    return selector.replace("@", AT)


def selector_for(run_name: str) -> str:
    """The selector of a run name (the inverse of :func:`run_name_for`)."""
    return run_name.replace(AT, "@")


def split_selector(selector: str) -> tuple[str, str | None]:
    """``"op@file.py"`` -> ``("op", "file.py")``; ``"op"`` -> ``("op", None)``."""
    op, sep, file = selector.strip().partition("@")
    if not op or (sep and not file):
        raise ZlbenchError(f"bad op selector {selector!r} (expected OP or OP@test_file.py)")
    return op, (file if sep else None)


def _known_repo(spec: str, repo: str) -> str:
    if repo not in REPOS:
        raise ZlbenchError(f"op spec {spec!r}: unknown repo {repo!r} (known: {', '.join(REPOS)})")
    return repo


def parse_spec(spec: str) -> tuple[str | None, str]:
    """A SPEC -> ``(repo or None, selector)``.

    ``"vllm:mm@f.py"`` -> ``("vllm", "mm@f.py")``; ``"main/mm__at__f.py"`` (an op key)
    -> ``("main", "mm@f.py")``; ``" abs "`` -> ``(None, "abs")``. An unknown repo or
    a missing op is a ZlbenchError."""
    text = spec.strip()
    repo, sep, sel = text.partition(":")
    if not sep and "/" in text:
        repo, sel = split_op_key(text)
        sel, sep = selector_for(sel), "/"
    if not sep:
        return None, text
    if not sel:
        raise ZlbenchError(f"op spec {spec!r}: no op after '{repo}{sep}'")
    return _known_repo(spec, repo), sel


def spec_matches(spec: str, key: str) -> bool:
    """Whether a SPEC names the op with key ``<repo>/<run_name>``."""
    repo, selector = parse_spec(spec)
    key_repo, run_name = split_op_key(key)
    return repo in (None, key_repo) and run_name_for(selector) == run_name


def read_ops_file(path: str | os.PathLike) -> list[str]:
    """The SPECs of an ops file: one a line, ``#`` starts a comment, blank lines ignored."""
    text = read_text(path, missing="ops file not found")
    specs = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [s for s in specs if s]


def op_name_of(key: str) -> str:
    """The FlagGems op name of an op key: ``main/bmm__at__test_bmm.py`` -> ``bmm``
    (never raises: a key without a run name gives "")."""
    return selector_for(split_op_key(key)[1]).partition("@")[0].strip()


# An op family that is one op and its in-place ``_`` and ``_out`` variants (the family of
# an op whose Benchmark class is a catch-all, or that the inventory does not name):
# ``op:abs`` (runner.catalog.tiers.op_family; the replay plan's sentinels)
VARIANTS_FAMILY = "op:"


def variants_family(op_name: str) -> str:
    """The op family of one op and its variants: ``op:<name>``."""
    return VARIANTS_FAMILY + op_name


def spec_of(key: str) -> str:
    """The SPEC naming exactly one op key, as a person writes it: its selector
    (``bmm@test_bmm.py``), with its repo when not ``main`` (``vllm:mm``)."""
    repo, run_name = split_op_key(key)
    selector = selector_for(run_name)
    return selector if repo == "main" else f"{repo}:{selector}"


def select_keys(spec: str, keys, where: str = "") -> set[str]:
    """The op keys of ``keys`` that ``spec`` names: those it matches exactly
    (:func:`spec_matches`); else, for a plain op name (no ``@file``), the one op of
    that name (``bmm`` selects ``main/bmm__at__test_bmm.py`` when it is the only bmm).
    A plain name that fits several ops is one ZlbenchError line listing them (``where``:
    what ``keys`` are, for that line); none at all: an empty set."""
    keys = list(keys)
    hits = {k for k in keys if spec_matches(spec, k)}
    if hits:
        return hits
    repo, selector = parse_spec(spec)
    if "@" in selector:
        return set()
    fits = sorted(
        k for k in keys if repo in (None, split_op_key(k)[0]) and op_name_of(k) == selector
    )
    if len(fits) > 1:
        names = ", ".join(spec_of(k) for k in fits[:10])
        more = f" and {len(fits) - 10} more" if len(fits) > 10 else ""
        raise ZlbenchError(
            f"op {spec!r} fits {len(fits)} ops{where}: {names}{more}; name one of them"
        )
    return set(fits)


def display_names(keys) -> dict[str, str]:
    """The one spelling of each op key of ``keys`` that a person reads in every report
    and types after ``--ops`` (docs/reports.md, "One name per op"): its op name
    (``bmm``) when no other op of ``keys`` has that name, else its selector
    (``bmm@test_bmm.py``) when no op of another repo has that selector, else
    ``repo:selector`` (``main:mm``, ``vllm:mm``). Each name selects its op, and only it,
    through :func:`select_keys` among ``keys``."""
    keys = list(dict.fromkeys(keys))
    names = Counter(op_name_of(k) for k in keys)
    selectors = Counter(selector_for(split_op_key(k)[1]) for k in keys)

    def name(k: str) -> str:
        repo, run_name = split_op_key(k)
        if names[op_name_of(k)] == 1:
            return op_name_of(k)
        selector = selector_for(run_name)
        return selector if selectors[selector] == 1 else f"{repo}:{selector}"

    return {k: name(k) for k in keys}

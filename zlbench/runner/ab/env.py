"""A side of an A/B: the Python environment one compiler is measured in.

The PR's build is the current environment. The base build is given as ENV, one of

* a venv dir (``ENV/bin/python`` exists): its interpreter runs the workers;
* an interpreter (an executable file, e.g. a wrapper script);
* a site dir (any other dir, e.g. ``pip install --target DIR base.whl --no-deps``):
  this interpreter runs the workers with DIR first on PYTHONPATH, so everything
  but the packages in DIR (triton) is shared with the PR's side. The workflow
  uses this form (docs/ci.md).

The workers of either side run the zlbench plugins under pytest, so a venv or
interpreter must import zlbench, pytest and torch; :func:`probe_compiler` checks
that before any GPU time is spent and says in one line what is missing.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from zlbench.errors import ZlbenchError
from zlbench.models import AbCompiler
from zlbench.runner.batch.config import BatchConfig

PROBE_TIMEOUT_S = 300.0
_TAG = "ZLBENCH_AB_PROBE "
# Run in the side's environment: import what the workers import, print the compiler.
PROBE = f"""
import json, sys
try:
    import triton
    import pytest  # noqa: F401
    from zlbench.plugins.environment import triton_distribution
except BaseException as e:
    print({_TAG!r} + json.dumps({{"error": f"{{type(e).__name__}}: {{e}}"}}))
    sys.exit(3)
dist, version, commit = triton_distribution()
path = list(getattr(triton, "__path__", []) or [None])[0]
print({_TAG!r} + json.dumps(dict(python=sys.executable, dist=dist, version=version,
                                 commit=commit, path=path)))
"""
ZLBENCH_ROOT = Path(__file__).resolve().parents[3]  # the dir holding the zlbench package


@dataclass(frozen=True)
class CompilerEnv:
    """One side's environment: ``spec`` as given, the interpreter (None: this one)
    and the dirs put first on PYTHONPATH."""

    spec: str
    python: str | None = None
    front: tuple[str, ...] = ()

    def environ(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with this side's PYTHONPATH front dirs."""
        return with_front(base, self.front)


def with_front(base: Mapping[str, str], front: Sequence[str]) -> dict[str, str]:
    """A copy of the environment ``base`` with the dirs ``front`` first on PYTHONPATH."""
    env = dict(base)
    if front:
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join([*front, *([old] if old else [])])
    return env


PR_ENV = CompilerEnv(spec="(this environment)")


def resolve_env(spec: str) -> CompilerEnv:
    """``--base-compiler ENV`` -> the side it names; one line when it names nothing."""
    path = Path(spec).expanduser()
    if path.is_dir() and (path / "bin" / "python").exists():
        return CompilerEnv(spec, python=str((path / "bin" / "python").absolute()))
    if path.is_file():
        if not os.access(path, os.X_OK):
            raise ZlbenchError(f"--base-compiler {spec}: not an executable interpreter")
        return CompilerEnv(spec, python=str(path.absolute()))
    if path.is_dir():
        return CompilerEnv(spec, front=(str(path.resolve()),))
    raise ZlbenchError(
        f"--base-compiler {spec}: not found (give a venv dir, an interpreter or a site dir)"
    )


@dataclass(frozen=True)
class Ran:
    """A script run in a side's environment: its stdout lines that carried the tag (the
    tag cut), its exit code, the last line of its stderr ("no output": none)."""

    found: list[str]
    returncode: int
    tail: str


def run_tagged(
    side: CompilerEnv,
    script: str,
    tag: str,
    timeout_s: float,
    what: str,
    base: dict[str, str] | None = None,
) -> Ran:
    """``python -c script`` in ``side``'s environment (its interpreter, its PYTHONPATH
    front dirs over ``base``, default this process's), from the zlbench root: the lines
    it printed after ``tag``. An interpreter that cannot run, or a run past
    ``timeout_s``: one line naming ``what``."""
    python = side.python or sys.executable
    try:
        proc = subprocess.run(
            [python, "-c", script],
            env=side.environ(os.environ if base is None else base),
            cwd=ZLBENCH_ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ZlbenchError(f"{what}: cannot run {python}: {e}") from None
    found = [ln[len(tag) :] for ln in proc.stdout.splitlines() if ln.startswith(tag)]
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return Ran(found, proc.returncode, tail)


def probe_compiler(side: CompilerEnv, base: dict[str, str] | None = None) -> AbCompiler:
    """What ``import triton`` gives in ``side``: distribution, version, commit, path.
    An environment that cannot import triton, pytest or zlbench is one line."""
    ran = run_tagged(side, PROBE, _TAG, PROBE_TIMEOUT_S, f"compiler env {side.spec}", base)
    found = ran.found
    if not found:
        raise ZlbenchError(
            f"compiler env {side.spec}: probe exited {ran.returncode}: {ran.tail[:300]}"
        )
    data = _probe_data(side, found[-1])
    if "error" in data:
        err = str(data["error"] or "?")
        raise ZlbenchError(
            f"compiler env {side.spec}: cannot import what the workers need: "
            f"{(err.splitlines() or ['?'])[0][:300]}"
        )
    try:
        got = AbCompiler(env=side.spec, **{k: data.get(k) for k in _PROBED})
    except ValidationError as e:
        msg = e.errors()[0].get("msg")
        raise ZlbenchError(f"compiler env {side.spec}: probe printed a bad value: {msg}") from None
    if why := outside_site_dir(side, got.path):
        raise ZlbenchError(why)
    return got


_PROBED = ("python", "dist", "version", "commit", "path")  # what the probe prints


def _probe_data(side: CompilerEnv, line: str) -> dict:
    """The probe's JSON object; anything else (a wrapper that printed other text
    after the tag, a list) is one line."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise ZlbenchError(
            f"compiler env {side.spec}: the probe's line is not a JSON object: {line[:200]!r}"
        )
    return data


def outside_site_dir(side: CompilerEnv, path: str | None) -> str:
    """Why a site dir's probe does not show that dir's triton ("" when it does): a dir
    without triton lets ``import triton`` fall through to the PR's own."""
    if not side.front:
        return ""
    if path:
        where = Path(os.path.normpath(os.path.abspath(path)))  # a link in DIR is DIR's
        if any(where.is_relative_to(d) for d in side.front):
            return ""
    return (
        f"--base-compiler {side.spec} does not provide triton: `import triton` loaded "
        f"{path or 'no package dir'}, outside it (install the base build into that dir)"
    )


def same_compiler_why(pr: AbCompiler, base: AbCompiler, *, recorded: bool = False) -> str:
    """Why the two sides are one compiler ("" when they are not, or either side's
    path is unknown): both loaded triton from one directory (the PR's own venv or
    interpreter given as the base), so the A/B compares the PR with itself and its
    verdict says nothing. A copy at another path is another compiler: the A/A gates
    (docs/judging.md) measure two copies of one build. ``recorded``: the sides of an
    artifact's ab.json (every probe records a path), where a side without a path is
    refused too: the check never skips on what the artifact left out."""
    if recorded and (missing := [n for n, c in (("PR", pr), ("base", base)) if not c.path]):
        return (
            f"the A/B records no triton path for the {' and '.join(missing)} compiler: "
            "whether its two sides are two compilers cannot be checked (re-run the A/B)"
        )
    if not pr.path or not base.path:
        return ""
    if os.path.normpath(pr.path) != os.path.normpath(base.path):
        return ""
    return (
        f"the base compiler ({base.env or '?'}) and the PR's are the same triton "
        f"({pr.path}): an A/B against itself judges nothing"
    )


def side_config(config: BatchConfig, side: CompilerEnv) -> BatchConfig:
    """``config`` measuring in ``side``: its interpreter runs the workers, its
    PYTHONPATH dirs come first (after the FlagGems checkout's src/)."""
    if side.python is None and not side.front:
        return config
    from zlbench.runner.batch.config import default_executor

    inner = config.executor or default_executor()
    executor = functools.partial(inner, python=side.python) if side.python else inner
    env = side.environ(dict(os.environ if config.env is None else config.env))
    return replace(config, executor=executor, env=env, python=side.python)


def parse_env_vars(values: list[str] | None, flag: str) -> dict[str, str]:
    """``K=V`` items (``--env-a``/``--env-b``, repeatable) -> ``{K: V}``; an item without
    ``=`` or whose name is not an identifier (``1X``, ``A-B``, empty) is one line."""
    out: dict[str, str] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier() or not name.isascii():
            raise ZlbenchError(
                f"{flag} {item!r}: expected NAME=VALUE with NAME an environment variable "
                "name (letters, digits, _; not starting with a digit)"
            )
        out[name] = value
    return out


def with_vars(config: BatchConfig, variables: dict[str, str]) -> BatchConfig:
    """``config`` whose benchmark processes also get ``variables`` (one A/B side's
    switch); ``USE_FLAGTUNE`` among them is the batch's tuning space too."""
    if not variables:
        return config
    from zlbench.runner.batch.config import FLAGTUNE_VAR

    env = {**(os.environ if config.env is None else config.env), **variables}
    flagtune = variables.get(FLAGTUNE_VAR, config.use_flagtune)
    return replace(config, env=env, use_flagtune=flagtune)

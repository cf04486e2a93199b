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
from dataclasses import dataclass, replace
from pathlib import Path

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

    def environ(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` with this side's PYTHONPATH front dirs."""
        env = dict(base)
        if self.front:
            old = env.get("PYTHONPATH")
            env["PYTHONPATH"] = os.pathsep.join([*self.front, *([old] if old else [])])
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


def probe_compiler(side: CompilerEnv, base: dict[str, str] | None = None) -> AbCompiler:
    """What ``import triton`` gives in ``side``: distribution, version, commit, path.
    An environment that cannot import triton, pytest or zlbench is one line."""
    env = side.environ(dict(os.environ if base is None else base))
    python = side.python or sys.executable
    try:
        proc = subprocess.run(
            [python, "-c", PROBE],
            env=env,
            cwd=ZLBENCH_ROOT,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ZlbenchError(f"compiler env {side.spec}: cannot run {python}: {e}") from None
    found = [ln[len(_TAG) :] for ln in proc.stdout.splitlines() if ln.startswith(_TAG)]
    if not found:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ZlbenchError(
            f"compiler env {side.spec}: probe exited {proc.returncode}: {tail[:300]}"
        )
    data = json.loads(found[-1])
    if "error" in data:
        raise ZlbenchError(
            f"compiler env {side.spec}: cannot import what the workers need: "
            f"{data['error'].splitlines()[0][:300] if data['error'] else '?'}"
        )
    return AbCompiler(env=side.spec, **data)


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

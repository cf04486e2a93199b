"""The gate's codegen step (docs/codegen.md, "Gate integration"): the screen run.

Before measuring, :func:`screen_for_gate` rebuilds every kernel the baseline
recorded with the compiler under test (``<out>/codegen/``); a baseline without
codegen records (v1) gets a note and every op is timed. Then
:func:`zlbench.workflow.codegen_plan.plan_timing` chooses the ops to time and
:func:`measure_ops` holds back those whose kernels fail to compile; a CPU job's screen
is :mod:`zlbench.workflow.codegen_artifact`'s, the screen in the verdict and the
reports :mod:`zlbench.workflow.codegen_verdict`'s (the step they share:
:mod:`zlbench.workflow.codegen_step`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection
from pathlib import Path

from zlbench.codegen.collect import has_codegen_records
from zlbench.codegen.screen import SCREEN_JSON, SCREEN_MD, BaseSide, RebuiltInput, ScreenOptions
from zlbench.codegen.shards import manifest_sha256
from zlbench.codegen.timed import TimedKernels
from zlbench.errors import ZlbenchError
from zlbench.gate.load import ResultsSet, load_results
from zlbench.models import CodegenScreen
from zlbench.models.codegen_screen import CHANGED_CLASSES
from zlbench.models.options import TIME_MODES  # declared with the option models
from zlbench.protocol.cache import cached_kernels  # noqa: F401 - re-exported (__all__)
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR
from zlbench.report.codegen import headline
from zlbench.runner.ab.env import CompilerEnv
from zlbench.workflow.codegen_artifact import ScreenArtifact, compiler_fingerprint
from zlbench.workflow.codegen_step import (
    NO_RECORDS,
    CodegenStep,
    cpu_note,
    failed_line,
    no_screen,
    summarize,
)
from zlbench.workflow.codegen_verdict import apply_screen, report_extras

__all__ = [  # the names the tests take from here
    "TIME_MODES",
    "BaseSide",
    "CodegenStep",
    "Screen",
    "apply_screen",
    "base_fingerprint",
    "base_side",
    "cached_kernels",
    "check_budget",
    "compiler_fingerprint",
    "measure_ops",
    "report_extras",
    "run_screen",
    "screen_for_gate",
    "summarize",
    "unmeasured_results",
]

Screen = Callable[[ScreenOptions, Callable[[str], None]], CodegenScreen]


def run_screen(opts: ScreenOptions, say: Callable[[str], None]) -> CodegenScreen:
    """The real screen (worker processes); the gate's default ``GateSeams.screen``."""
    from zlbench.codegen.screen import run_screen as screen

    return screen(opts, say)


def screen_for_gate(
    baseline_dir: Path,
    out: Path,
    *,
    time: str,
    jobs: int,
    pythonpath: list[str],
    screen: Screen,
    say: Callable[[str], None],
    progress: Callable[[str], None],
    cache_out: Path | None = None,
    rebuilt: tuple[Path, ...] = (),
    base: BaseSide | None = None,
    base_cache_out: Path | None = None,
    ops: Collection[str] | None = None,
) -> CodegenStep:
    """Screen the baseline's kernels into ``<out>/codegen/`` (nothing when the
    baseline has no codegen records: a note, every op timed). ``say``: what it
    found (stdout); ``progress``: the screen's progress lines (stderr);
    ``cache_out``: a triton cache dir the rebuilt kernels are also put in;
    ``rebuilt``: shard dirs of `zlbench codegen --shard K/N` jobs, classified instead
    of rebuilding (then nothing is put in ``cache_out``); ``base``: the base compiler
    (:func:`base_side`), whose rebuild each kernel is classified against;
    ``base_cache_out``: a triton cache dir that rebuild's kernels are put in (a rebuild
    the base-screen cache spared puts none); ``ops``: the op keys in scope, whose
    kernels alone are screened (None: every kernel of the baseline)."""
    if not has_codegen_records(baseline_dir):
        say(f"zlbench gate: {NO_RECORDS}")
        return no_screen(time)
    cg_dir = out / CODEGEN_SCREEN_DIR
    opts = ScreenOptions(
        baseline=baseline_dir,
        out=cg_dir,
        jobs=jobs,
        pythonpath=pythonpath,
        cache_out=cache_out,
        exec_generated=True,  # the gate loaded the baseline only as its manifest says
        rebuilt=RebuiltInput(rebuilt, manifest_sha256(baseline_dir), compiler_fingerprint())
        if rebuilt
        else None,
        base=base,
        base_cache_out=base_cache_out,
        ops=None if ops is None else frozenset(ops),
    )
    result = screen(opts, progress)
    setup = TimedKernels.of(result).setup_changed()
    apart = f", {len(setup)} of them only outside the timed region" if setup else ""
    against = decided_words(result)
    say(f"zlbench gate: codegen screen: {headline(result)}{apart}{against} "
        f"({cg_dir / SCREEN_MD})")  # fmt: skip
    for k in result.failed():
        progress(f"zlbench gate: codegen: FAILED {failed_line(k)}")
    summary = summarize(result, time, f"{CODEGEN_SCREEN_DIR}/{SCREEN_JSON}")
    if isinstance(screen, ScreenArtifact):  # taken from a CPU job: its plan is timed
        summary.note = "; ".join(n for n in (summary.note, cpu_note(screen.plan)) if n)
        return CodegenStep(summary, result, cg_dir, given=screen.plan)
    return CodegenStep(summary, result, cg_dir)


def check_budget(time: str, budget_s: float | None) -> None:
    """A ``--time-budget`` that can cut the changed ops, or one line, exit 2."""
    if budget_s is not None and not (0 < budget_s < math.inf):
        raise ZlbenchError(f"--time-budget must be a number of seconds > 0, got {budget_s}")
    if budget_s is not None and time != "changed":
        raise ZlbenchError("--time-budget cuts the changed ops: only with --time changed")


def measure_ops(step: CodegenStep, ops: set[str], say: Callable[[str], None]) -> set[str]:
    """The ops the gate measures on the GPU: ``ops`` less those whose kernels fail to
    compile (``step.held_back``: their rows are FAILED without GPU time); one line
    says how many were held back."""
    held = set(step.held_back) & set(ops)
    if held:
        rest = len(ops) - len(held)
        tail = f"{rest} op(s) measured" if rest else "nothing to measure on the GPU"
        say(f"zlbench gate: {len(held)} op(s) not timed: their kernels fail to compile; {tail}")
    return set(ops) - held


def unmeasured_results(batch_dir: Path) -> ResultsSet:
    """An empty results batch at ``batch_dir`` (written, so that ``zlbench report``
    re-judges the gate dir): every op in scope failed to compile, none was measured."""
    from zlbench.runner.batch.status import write_ops_status

    batch_dir.mkdir(parents=True, exist_ok=True)
    write_ops_status(batch_dir, [])
    return load_results(batch_dir)


def decided_words(screen: CodegenScreen) -> str:
    """`` against the base compiler X (N differ from the baseline's compiler)`` for a
    screen decided against the base compiler; "" otherwise."""
    if screen.decided_by != "base":
        return ""
    changed = sum(screen.vs_baseline_counts.get(c.value, 0) for c in CHANGED_CLASSES)
    return (
        f" against the base compiler {screen.base_compiler} ({changed} differ from the "
        "baseline's recording compiler)"
    )


FINGERPRINT_TAG = "ZLBENCH_FINGERPRINT "
FINGERPRINT_TIMEOUT_S = 300.0


def base_fingerprint(env: CompilerEnv) -> str:
    """:func:`compiler_fingerprint` as the base compiler's environment ``env`` sees it
    (its interpreter, its PYTHONPATH front dirs); the function's own source runs there,
    so the environment needs only a triton. One line when it cannot run."""
    import inspect
    import textwrap

    from zlbench.runner.ab.env import run_tagged
    from zlbench.workflow import codegen_artifact

    script = "\n".join(
        [
            "from pathlib import Path",
            textwrap.dedent(inspect.getsource(codegen_artifact.compiler_fingerprint)),
            f"print({FINGERPRINT_TAG!r} + compiler_fingerprint())",
        ]
    )
    ran = run_tagged(env, script, FINGERPRINT_TAG, FINGERPRINT_TIMEOUT_S,
                     f"--base-compiler {env.spec}")  # fmt: skip
    found = ran.found
    if ran.returncode != 0 or not found:
        raise ZlbenchError(
            f"--base-compiler {env.spec}: its compiler fingerprint could not be read "
            f"(exit {ran.returncode}): {ran.tail[:300]}"
        )
    return found[-1].strip()


def base_side(
    spec: str, cache: Path | None, say: Callable[[str], None] = lambda s: None
) -> BaseSide | None:
    """``--base-compiler ENV`` as the screen's base side: its environment
    (:func:`zlbench.runner.ab.env.resolve_env`), its build fingerprint
    (:func:`base_fingerprint`), the cache dir of its rebuild (None: not kept). A base
    that is the PR's own install (the same triton dir) or has no triton: one line, exit
    2. Another install of the PR's very build (an A/A): None, with a line to ``say``
    (the baseline's records decide, as without a base)."""
    from zlbench.runner.ab.env import resolve_env

    env = resolve_env(spec)
    fingerprint = base_fingerprint(env)
    if not fingerprint:
        raise ZlbenchError(f"--base-compiler {spec}: no triton importable there")
    if fingerprint == compiler_fingerprint():
        if (where := base_triton_dir(env)) == triton_dir():
            raise ZlbenchError(
                f"--base-compiler {spec} is the PR's own install ({where}): "
                "a screen of the PR against itself proves nothing; give the PR's "
                "merge-base build"
            )
        # another install of the same build: an A/A. No kernel can differ between the
        # two, so the baseline's records decide what is timed, as without a base.
        say(
            f"zlbench: --base-compiler {spec} is the same build as the PR's ({fingerprint}): "
            "an A/A; the screen compares with the baseline's recording compiler"
        )
        return None
    return BaseSide(spec, fingerprint, python=env.python, front=env.front, cache=cache)


def triton_dir() -> str:
    """The dir of the triton package this process would import (not importing it), as
    found, links not followed: a linked copy of an install is another install (an A/A)."""
    import importlib.util

    spec = importlib.util.find_spec("triton")
    return os.path.dirname(os.path.abspath(spec.origin)) if spec and spec.origin else ""


def base_triton_dir(env: CompilerEnv) -> str:
    """:func:`triton_dir` as the base environment ``env`` sees it (the A/B's probe of
    that side: ``triton.__path__``, as found)."""
    from zlbench.runner.ab.env import probe_compiler

    return probe_compiler(env).path or ""

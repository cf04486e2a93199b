"""``zlbench bisect GOOD BAD --row ROW``: the job (docs/history.md "Bisect").

Phase 1 (CPU). The row's timed kernels are the baseline's recorded compile requests
that count for the row (:class:`zlbench.codegen.timed.TimedKernels`, the screen's rule).
Each probe rebuilds them with one commit's compiler on the screen's worker pool
(:func:`zlbench.codegen.worker_pool.rebuild_all`, the rebuild the codegen screen runs),
in that compiler's environment: ``<compilers>/<commit>/``, a venv dir or a site dir
holding a ``triton`` package (:func:`zlbench.runner.ab.env.resolve_env`, as
``--base-compiler``). A commit with no entry there is built by ``--build-cmd`` into
``<compilers>/.<commit>.partial-<pid>``, renamed into place on exit 0; exit 125 skips
the commit (git bisect's convention), any other exit stops the bisect (exit 2). The
search itself is :mod:`zlbench.history.bisect` (pure).

State (``<out>/bisect.json``, :class:`zlbench.models.bisect.BisectState`) is rewritten
atomically after every probe, the probe's rebuilt records (``<out>/builds/<commit>/
codegen/``) written before it: a killed bisect resumes with the probes it recorded, and
a re-run over a finished one rebuilds nothing.

Phase 2 (GPU, ``--confirm``): ``zlbench ab`` run in the found commit's environment with
its parent's compiler as the base side, on the row's op and dtype, replaying the
baseline's autotune records (the interleaved A/B, adding pairs while unsure, as the
gate does). The row's own line in the A/B (its paired interval above zero) confirms the step.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.codegen import worker_pool
from zlbench.codegen.chunks import n_chunks, split
from zlbench.codegen.collect import BaselineKernels, collect
from zlbench.codegen.diff import LOAD_FAILED, changed_lines, config_text, screen_kernel, stage_diff
from zlbench.codegen.screen import ScreenOptions, compile_estimates
from zlbench.codegen.timed import TimedKernels, row_ref
from zlbench.errors import ZlbenchError
from zlbench.history import bisect as logic
from zlbench.models.base import atomic_write_text, dump_json_model, load_json_model
from zlbench.models.bisect import (
    BISECT_JSON,
    BisectAnswer,
    BisectState,
    Confirmation,
    KernelStep,
    Probe,
)
from zlbench.models.codegen import (
    CODEGEN_BLOBS,
    CODEGEN_DIR,
    CodegenIndex,
    CompileRecord,
    read_blob,
)
from zlbench.models.codegen_screen import UNNAMED_SHAPE, CodegenScreen
from zlbench.models.run import RowKey
from zlbench.protocol.layout import REPORT_MD
from zlbench.runner.ab.env import CompilerEnv, resolve_env

SKIP_EXIT = 125  # the build command's "this commit cannot be built"
BUILDS_DIR = "builds"
DIFFS_DIR = "diffs"
CONFIRM_DIR = "confirm"
REPO_ROOT = Path(__file__).resolve().parents[2]

Say = Callable[[str], None]


@dataclass
class BisectJob:
    good: str
    bad: str
    row: str
    baseline: Path
    out: Path
    commits: list[str]  # GOOD ... BAD, oldest first (linear_range)
    compilers: Path
    build_cmd: str | None = None
    jobs: int = 1
    exec_generated: bool = False  # the baseline was verified against its manifest
    pythonpath: list[str] = field(default_factory=list)  # FlagGems sources
    confirm: bool = False
    confirm_args: list[str] = field(default_factory=list)  # more `zlbench ab` flags


@dataclass
class BisectSeams:
    """What the tests replace: the build command's run and one probe's rebuild."""

    build: Callable[[str, str, Path], int] | None = None  # (cmd, commit, dest) -> exit
    rebuild: Callable[[BisectJob, BaselineKernels, list[str], CompilerEnv, Path], tuple] | None = (
        None
    )
    confirm: Callable[[list[str], dict[str, str], Path], int] | None = None


# --------------------------------------------------------------------------- commits


def git_commits(repo: Path, good: str, bad: str) -> list[str]:
    """GOOD ... BAD of the git checkout ``repo``, oldest first; one line, exit 2, when
    GOOD is not an ancestor of BAD or a merge lies between them."""

    def git(*args: str) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(
                ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
            )
        except OSError as e:
            raise ZlbenchError(f"--repo {repo}: cannot run git: {e}") from None

    full = []
    for name, c in (("GOOD", good), ("BAD", bad)):
        p = git("rev-parse", "--verify", "--quiet", f"{c}^{{commit}}")
        if p.returncode != 0:
            raise ZlbenchError(f"{name} {c} is not a commit of {repo}")
        full.append(p.stdout.strip())
    g, b = full
    if g == b:
        raise ZlbenchError(f"GOOD and BAD are the same commit ({g}): nothing to bisect")
    if git("merge-base", "--is-ancestor", g, b).returncode != 0:
        raise ZlbenchError(f"the range is not linear: GOOD {good} is not an ancestor of BAD {bad}")
    merges = git("rev-list", "--merges", f"{g}..{b}").stdout.split()
    if merges:
        raise ZlbenchError(
            f"the range is not linear: {len(merges)} merge commit(s) between GOOD and BAD "
            f"(first: {merges[-1][:12]}); bisect a linear stretch of history"
        )
    between = git("rev-list", "--reverse", "--first-parent", f"{g}..{b}").stdout.split()
    return [g, *between]


def file_commits(path: Path) -> list[str]:
    """``--commits FILE``: one commit a line, oldest first, ``#`` comments."""
    from zlbench.models import read_text

    lines = [ln.split("#", 1)[0].strip() for ln in read_text(path).splitlines()]
    out = [ln.split()[0] for ln in lines if ln]
    if not out:
        raise ZlbenchError(f"--commits {path}: no commit listed")
    return out


# --------------------------------------------------------------------------- the row


def find_row(base: BaselineKernels, row: str) -> RowKey:
    """The baseline's row whose label is ``row``; a row its records name only by op and
    dtype (uses with no shape) stands for it. Unknown: one line, exit 2."""
    keys = {r for rows in base.rows.values() for r in rows}
    for r in keys:
        if r.label() == row:
            return r
    head, _, rest = row.partition(" ")
    dtype, _, shape = rest.partition(" ")
    for r in sorted(keys, key=lambda r: r.label()):
        if r.shape == UNNAMED_SHAPE and f"{r.repo}/{r.op}" == head and r.dtype == dtype:
            return r.model_copy(update={"shape": shape})
    near = sorted(r.label() for r in keys if r.label().startswith(head + " "))
    hint = f" (rows of {head}: {', '.join(near[:3])})" if near else ""
    raise ZlbenchError(f"--row {row!r}: no such row in {base.root}'s codegen records{hint}")


def row_timed_kernels(base: BaselineKernels, key: RowKey) -> list[str]:
    """The ids of the kernels that count for the row (the screen's rule, TimedKernels)."""
    kernels = [
        screen_kernel(
            base.records[i],
            base.records[i],
            base.ops.get(i, ()),
            base.rows.get(i, ()),
            op_timed=base.op_timed.get(i),
            row_timed=base.row_timed.get(i),
        )
        for i in sorted(base.records)
    ]
    timed = TimedKernels.of(CodegenScreen(baseline_dir=str(base.root), kernels=kernels))
    ids = sorted(k.kernel_id for k in timed.row_kernels(row_ref(key)))
    if not ids:
        raise ZlbenchError(f"--row {key.label()!r}: the baseline records no kernel for it")
    return ids


# --------------------------------------------------------------------------- compilers


def compiler_env(job: BisectJob, commit: str, seams: BisectSeams, say: Say) -> CompilerEnv | str:
    """The commit's compiler env, built when missing; a str: why it is skipped."""
    entry = job.compilers / commit
    if entry.is_dir() or entry.is_file():
        return resolve_env(str(entry))
    if not job.build_cmd:
        raise ZlbenchError(
            f"no compiler for commit {commit} in {job.compilers} and no --build-cmd to build it"
        )
    job.compilers.mkdir(parents=True, exist_ok=True)
    partial = job.compilers / f".{commit}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    say(f"bisect: building the compiler of {commit}")
    started = time.monotonic()
    rc = (seams.build or _run_build)(job.build_cmd, commit, partial)
    if rc == SKIP_EXIT:
        shutil.rmtree(partial, ignore_errors=True)
        return f"the build command exited {SKIP_EXIT} (cannot be built)"
    if rc != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise ZlbenchError(f"--build-cmd for commit {commit} exited {rc} (125 skips a commit)")
    if not partial.exists():
        raise ZlbenchError(f"--build-cmd for commit {commit} exited 0 but wrote nothing to {{out}}")
    os.replace(partial, entry)
    say(f"bisect: built the compiler of {commit} in {time.monotonic() - started:.1f} s")
    return resolve_env(str(entry))


def _run_build(cmd: str, commit: str, dest: Path) -> int:
    line = cmd.replace("{commit}", shlex.quote(commit)).replace("{out}", shlex.quote(str(dest)))
    return subprocess.run(line, shell=True, check=False).returncode  # the user's own command


# --------------------------------------------------------------------------- probes


def _rebuild(
    job: BisectJob, base: BaselineKernels, ids: list[str], env: CompilerEnv, tmp: Path
) -> tuple[dict[str, CompileRecord], dict[str, Path]]:
    """The screen's rebuild of ``ids`` in ``env``."""
    opts = ScreenOptions(
        baseline=job.baseline,
        out=tmp,
        jobs=job.jobs,
        python=env.python or sys.executable,
        pythonpath=[*env.front, *job.pythonpath],
        exec_generated=job.exec_generated,
    )
    chunks = split(compile_estimates(base, ids), n_chunks(len(ids), job.jobs, 1))
    return worker_pool.rebuild_all(base, chunks, opts, tmp, None)


def probe(
    job: BisectJob,
    base: BaselineKernels,
    ids: list[str],
    commit: str,
    seams: BisectSeams,
    say: Say,
) -> Probe:
    """Rebuild the row's kernels with ``commit``'s compiler; its records kept under
    ``<out>/builds/<commit>/codegen`` (written before the state names the probe)."""
    started = time.monotonic()
    built = not (job.compilers / commit).exists()  # compiler_env builds a missing one
    env = compiler_env(job, commit, seams, say)
    if isinstance(env, str):
        return Probe(commit=commit, status="skip", why=env, built_compiler=True)
    with tempfile.TemporaryDirectory(prefix="zlbench-bisect-") as tmp:
        try:
            records, dirs = (seams.rebuild or _rebuild)(job, base, ids, env, Path(tmp))
        except ZlbenchError as e:  # the worker cannot run in this env at all
            return Probe(commit=commit, status="skip", why=str(e), compiler=env.spec)
        loaded = [i for i in ids if i in records and not _unloaded(records[i])]
        if not loaded:
            first = next((records[i].error for i in ids if i in records), "no result")
            return Probe(
                commit=commit,
                status="skip",
                why=f"its compiler could not load the kernels ({first})",
                compiler=env.spec,
            )
        _keep(job.out / BUILDS_DIR / commit, ids, records, dirs)
    digests = {i: _digests(records.get(i)) for i in ids}
    return Probe(
        commit=commit,
        status="built",
        digests=digests,
        seconds=round(time.monotonic() - started, 2),
        compiler=env.spec,
        built_compiler=built,
    )


def _unloaded(rec: CompileRecord) -> bool:
    err = rec.error or ""
    return rec.result is None and (err.startswith(LOAD_FAILED) or "crashed" in err)


def _digests(rec: CompileRecord | None) -> dict[str, str]:
    if rec is None:
        return {logic.ERROR_STAGE: "no rebuild result"}
    if rec.result is None:
        return {logic.ERROR_STAGE: (rec.error or "compile failed").splitlines()[0][:300]}
    return {s: d.sha256 for s, d in rec.result.stages.items()}


def _keep(dest: Path, ids: list[str], records: dict, dirs: dict) -> None:
    """The probe's records and their blobs, as one codegen dir, swapped in whole."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(dir=dest.parent))
    try:
        cg = staged / CODEGEN_DIR
        (cg / CODEGEN_BLOBS).mkdir(parents=True)
        kept = []
        for i in ids:
            rec = records.get(i)
            if rec is None:
                continue
            kept.append(rec)
            for d in rec.result.stages.values() if rec.result else ():
                if d.blob:
                    src = dirs[i] / d.blob
                    if src.is_file() and not (cg / d.blob).exists():
                        (cg / d.blob).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(src, cg / d.blob)
        dump_json_model(cg / "index.json", CodegenIndex(records=kept))
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(staged, dest)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


# --------------------------------------------------------------------------- the job


def load_or_start(job: BisectJob, ids: list[str]) -> BisectState:
    """The out dir's state when it is this bisect's (resume), else a new one; an out
    dir holding another bisect is refused (one line, exit 2)."""
    path = job.out / BISECT_JSON
    fresh = BisectState(
        good=job.good,
        bad=job.bad,
        row=job.row,
        baseline=str(job.baseline),
        kernels=ids,
        commits=job.commits,
    )
    if not path.is_file():
        return fresh
    old = load_json_model(path, BisectState)
    same = (old.good, old.bad, old.row, old.kernels, old.commits) == (
        fresh.good,
        fresh.bad,
        fresh.row,
        fresh.kernels,
        fresh.commits,
    )
    if not same:
        raise ZlbenchError(
            f"{path} is another bisect's ({old.good}..{old.bad}, {old.row}): "
            "give another --out, or remove it"
        )
    return old


def run_bisect(job: BisectJob, seams: BisectSeams | None = None, say: Say = print) -> BisectState:
    """Phase 1 (and 2 with ``job.confirm``); writes bisect.json, diffs/, report.md."""
    seams = seams or BisectSeams()
    base = collect(job.baseline)
    key = find_row(base, job.row)
    ids = row_timed_kernels(base, key)
    job.out.mkdir(parents=True, exist_ok=True)
    state = load_or_start(job, ids)
    if state.probes:
        say(f"bisect: resuming with {len(state.probes)} probe(s) recorded in {job.out}")
    say(f"bisect: {len(job.commits)} commit(s), {len(ids)} timed kernel(s) of {job.row}")
    while True:
        step = logic.next_step(state.commits, state.probes)
        if isinstance(step, logic.Found):
            break
        p = probe(job, base, ids, step.commit, seams, say)
        state.probes[step.commit] = p
        dump_json_model(job.out / BISECT_JSON, state)
        verdict = p.status if p.status == "skip" else logic.classify(p, state.probes[job.good])
        say(f"bisect: [{step.index}/{len(job.commits) - 1}] {step.commit}: {verdict}"
            + (f" ({p.why})" if p.why else f", {p.seconds:.1f} s"))  # fmt: skip
    state.answer = answer(job, base, state, step)
    dump_json_model(job.out / BISECT_JSON, state)
    if job.confirm and state.answer.found:
        state.confirmation = confirm(job, state, seams, say)
        dump_json_model(job.out / BISECT_JSON, state)
    atomic_write_text(job.out / REPORT_MD, logic.render_report(state))
    return state


def answer(job: BisectJob, base: BaselineKernels, state: BisectState, found) -> BisectAnswer:
    """The answer, with the changed kernels' IR diffs written to ``<out>/diffs/``."""
    if found.hi is None:
        skipped = f" ({len(found.skipped)} commit(s) skipped)" if found.skipped else ""
        return BisectAnswer(
            found=False,
            parent=found.lo,
            skipped_between=found.skipped,
            message=f"no timed kernel of the row changed between GOOD and BAD{skipped}",
        )
    before, after = state.probes[found.lo], state.probes[found.hi]
    steps = []
    for kid, stage in logic.changed_kernels(before, after):
        rec = base.records[kid]
        k = KernelStep(
            kernel_id=kid, name=rec.request.kernel.name, config=config_text(rec.request),
            first_stage=stage,
        )  # fmt: skip
        if stage != logic.ERROR_STAGE:
            diff = _diff(job.out, kid, stage, found.lo, found.hi)
            if diff is not None:
                rel = f"{DIFFS_DIR}/{kid}.diff"
                atomic_write_text(job.out / rel, diff)
                k.diff_file, k.changed_lines = rel, changed_lines(diff)
        steps.append(k)
    return BisectAnswer(
        found=True,
        commit=found.hi,
        parent=found.lo,
        skipped_between=found.skipped,
        kernels=steps,
    )


def _diff(out: Path, kid: str, stage: str, lo: str, hi: str) -> str | None:
    """The screen's stage diff of ``kid`` between two probes' kept records."""
    texts = []
    for commit in (lo, hi):
        cg = out / BUILDS_DIR / commit / CODEGEN_DIR
        path = cg / "index.json"
        if not path.is_file():
            return None
        index = load_json_model(path, CodegenIndex)
        rec = next((r for r in index.records if r.id == kid), None)
        digest = rec.result.stages.get(stage) if rec and rec.result else None
        texts.append(read_blob(cg, digest) if digest is not None and digest.blob else b"")
    return stage_diff(kid, stage, texts[0], texts[1], (lo[:12], hi[:12]))


def confirm(job: BisectJob, state: BisectState, seams: BisectSeams, say: Say) -> Confirmation:
    """Phase 2: ``zlbench ab`` in the commit's environment against its parent's."""
    answer = state.answer
    assert answer is not None
    pr = resolve_env(str(job.compilers / answer.commit))
    base_env = job.compilers / answer.parent
    repo, _, rest = job.row.partition("/")
    op, dtype = rest.split(" ")[:2]
    out = job.out / CONFIRM_DIR
    cmd = [
        pr.python or sys.executable, "-m", "zlbench", "ab",
        "--base-compiler", str(base_env),
        "--ops", f"{repo}:{op}", "--dtypes", dtype,
        "--records", str(job.baseline),
        "--out", str(out),
        *job.confirm_args,
    ]  # fmt: skip
    env = pr.environ({**os.environ, "PYTHONPATH": _with_repo(os.environ.get("PYTHONPATH"))})
    say(f"bisect: confirming on the GPU: {shlex.join(cmd)}")
    started = time.monotonic()
    rc = (seams.confirm or _run_confirm)(cmd, env, out)
    line = _row_line(out / REPORT_MD, job.row)
    judged = logic.row_step(line)
    return Confirmation(
        command=cmd,
        exit_code=rc,
        out_dir=str(out),
        row_verdict=line,
        change=judged.change if judged else None,
        confirmed=bool(judged and judged.slower),
        seconds=round(time.monotonic() - started, 1),
    )


def _with_repo(pythonpath: str | None) -> str:
    return os.pathsep.join([str(REPO_ROOT), *([pythonpath] if pythonpath else [])])


def _run_confirm(cmd: list[str], env: dict[str, str], out: Path) -> int:
    return subprocess.run(cmd, env=env, check=False).returncode


def _row_line(report: Path, row: str) -> str:
    """The A/B report's table line of the row itself (the A/B times the row's whole op
    and dtype: its other shapes are other rows), "" when not found."""
    if not report.is_file():
        return ""
    for line in report.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("|") and f"`{row}`" in line:
            return line.strip()[:300]
    return ""


def check_store(url: str, row: str, good: str, bad: str) -> None:
    """With a results store: the row must be measured at GOOD and BAD on main, and BAD
    slower than GOOD; otherwise one line, exit 2 (nothing to bisect)."""
    from zlbench.history.store import open_store

    with open_store(url, create=False) as store:
        points = store.series(row)
    if not points:
        raise ZlbenchError(f"--store {url}: no point of row {row!r} on main")
    at = {p.commit: p for p in points}
    for name, c in (("GOOD", good), ("BAD", bad)):
        if c not in at or at[c].value_us is None:
            raise ZlbenchError(f"--store {url}: row {row!r} has no measured point at {name} {c}")
    g, b = at[good].value_us, at[bad].value_us
    if b <= g:  # type: ignore[operator]
        raise ZlbenchError(
            f"GOOD is not faster than BAD in the store: {row} {g:.2f} µs at {good[:12]}, "
            f"{b:.2f} µs at {bad[:12]}: nothing to bisect"
        )

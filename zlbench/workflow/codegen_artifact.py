"""A CPU job's codegen screen (docs/codegen.md, "The screen on a CPU job"): ``gate
--screen-only`` screens and plans, stamped with what a measuring gate checks before it
takes the plan (:func:`screen_only`: the baseline's manifest sha256, the compiler's
fingerprint, :func:`compiler_fingerprint`, the op set); ``gate --screen DIR`` checks
that artifact (:func:`load_screen_artifact`) and uses it as its screen seam
(:class:`ScreenArtifact`: the screen copied, not re-run; its plan is timed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from zlbench.codegen.collect import has_codegen_records
from zlbench.codegen.screen import (
    DIFFS_DIR,
    PARTIAL_MD,
    SCREEN_JSON,
    SCREEN_MD,
    ScreenOptions,
)
from zlbench.codegen.shards import manifest_sha256
from zlbench.errors import ZlbenchError
from zlbench.gate.load import BaselineSet
from zlbench.models import (
    CodegenScreen,
    TimingPlanFile,
    check_tree_inside,
    dump_json_model,
    load_json_model,
    resolve_inside,
)
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR, INTERRUPTED
from zlbench.workflow.codegen_plan import plan_timing, proven_skips
from zlbench.workflow.codegen_step import NO_RECORDS, TIMING_JSON, CodegenStep, cpu_note


def compiler_fingerprint() -> str:
    """The compiler under test as the screen job and the measuring gate both see it,
    without importing it: ``<distribution> <version> sha256:<16 hex>`` for the
    distribution that provides ``triton``, the digest over the file hashes its RECORD
    lists (dist-info, byte code and console scripts left out: one wheel installed in
    two venvs on two machines gives one digest; a file of the package this interpreter
    imports that is not the installed one, as in a patched copy of links first on the
    path, by its own content), or over the package's files where no RECORD lists them
    (a source checkout, an editable install); "" when no ``triton`` is importable."""
    import base64
    import hashlib
    import importlib.metadata as md
    import importlib.util
    import os

    try:  # the package this interpreter imports: maybe not the one RECORD describes
        found = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        found = None
    here = None
    if found is not None and found.submodule_search_locations:
        here = os.path.dirname(os.path.abspath(next(iter(found.submodule_search_locations))))
    h, names = hashlib.sha256(), []
    for name in sorted(set(md.packages_distributions().get("triton", []))):
        dist = md.distribution(name)
        names.append(f"{dist.metadata['Name']} {dist.version}")
        # the imported package is this distribution's, or a copy of links into it
        init = os.path.join(here, "triton", "__init__.py") if here else ""
        linked = bool(init) and os.path.realpath(init) == os.path.realpath(
            dist.locate_file("triton/__init__.py")
        )
        for f in sorted(dist.files or [], key=str):
            top = f.parts[0]  # "..": a console script, whose shebang names the venv
            if f.hash is None or top == ".." or top.endswith(".dist-info"):
                continue
            if "__pycache__" in f.parts:
                continue
            digest = f"{f.hash.mode}={f.hash.value}"
            # A copy of the package first on the path (a site dir of links, one file
            # replaced): RECORD still names the installed files, so a file that is not
            # the installed one is hashed as it is (a patched compiler is another build).
            local = os.path.join(here, *f.parts) if linked and top == "triton" else None
            if local and os.path.realpath(local) != os.path.realpath(dist.locate_file(f)):
                try:
                    with open(local, "rb") as fh:  # RECORD's own form: one content, one digest
                        raw = hashlib.new(f.hash.mode, fh.read()).digest()
                    digest = f"{f.hash.mode}={base64.urlsafe_b64encode(raw).rstrip(b'=').decode()}"
                except OSError:
                    digest = "missing"
            h.update(f"{f.as_posix()},{digest}\n".encode())
    if h.digest() == hashlib.sha256().digest():  # no RECORD with hashes: the files
        spec = found
        if spec is None or not spec.submodule_search_locations:
            return ""
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if "__pycache__" not in path.parts:
                h.update(f"{path.relative_to(root).as_posix()}\n".encode())
                h.update(hashlib.sha256(path.read_bytes()).digest())
        names = names or ["triton (no distribution)"]
    return f"{', '.join(names)} sha256:{h.hexdigest()[:16]}"


@dataclass
class ScreenArtifact:
    """A screen-only gate's ``codegen/`` (``dir``), checked by :func:`load_screen_artifact`:
    used as the gate's ``screen`` seam it copies the screen into the gate's own
    ``codegen/`` instead of rebuilding anything, and its ``plan`` is what is timed."""

    dir: Path
    plan: TimingPlanFile
    screen: CodegenScreen

    def __call__(self, opts: ScreenOptions, say: Callable[[str], None]) -> CodegenScreen:
        import shutil

        opts.out.mkdir(parents=True, exist_ok=True)
        for name in (SCREEN_JSON, SCREEN_MD):
            if (self.dir / name).is_file():
                shutil.copyfile(self.dir / name, opts.out / name)
        if (self.dir / DIFFS_DIR).is_dir():  # no link out: load_screen_artifact checked
            shutil.copytree(self.dir / DIFFS_DIR, opts.out / DIFFS_DIR, dirs_exist_ok=True)
        say(f"zlbench gate: {cpu_note(self.plan)}: not re-run here")
        return self.screen


def load_screen_artifact(
    given: Path,
    baseline: BaselineSet,
    scope: set[str] | None,
    compiler: str,
    base_compiler: str = "",
) -> ScreenArtifact:
    """The screen-only gate's output ``given`` (its ``--out``, or the ``codegen/`` in it)
    for a gate of ``baseline`` over ``scope`` (None: every op) with the compiler
    ``compiler`` (:func:`compiler_fingerprint`) and the base compiler of fingerprint
    ``base_compiler`` ("": none), or one line, exit 2: not a screen-only plan, a broken
    file, another baseline (its manifest's sha256), another compiler, a screen against
    another base compiler (or against one, for a gate without: only the A/B judges what
    differs from the baseline's compiler but not from the base), another op set, a plan
    that does not cover the op set or skips an op its screen does not prove unchanged. A
    plan screened against the baseline's records times a superset of what a screen
    against the base would: taken by a gate with a base too. Read only inside ``given``;
    nothing is written."""
    where = f"--screen {given}"
    if not Path(given).is_dir():
        raise ZlbenchError(f"{where}: no such directory")
    rel = "" if (Path(given) / TIMING_JSON).is_file() else CODEGEN_SCREEN_DIR
    check_tree_inside(given, rel, where)  # its diffs/ are copied: no link out
    timing_file = resolve_inside(given, f"{rel}/{TIMING_JSON}" if rel else TIMING_JSON, where)
    if not timing_file.is_file():
        raise ZlbenchError(
            f"{where}: no {CODEGEN_SCREEN_DIR}/{TIMING_JSON}: not the --out of "
            "`zlbench gate --screen-only`"
        )
    if (timing_file.parent / INTERRUPTED).exists():
        raise ZlbenchError(
            f"{where}: its screen was interrupted ({INTERRUPTED}; what it found is in "
            f"{PARTIAL_MD}): re-run the screen job"
        )
    plan = load_json_model(timing_file, TimingPlanFile)  # broken: one line
    if not plan.screen_only:
        raise ZlbenchError(
            f"{timing_file}: not a screen-only gate's plan (a measuring gate "
            "wrote it): give the --out of `zlbench gate --screen-only`"
        )
    if plan.baseline_sha256 != manifest_sha256(baseline.path) and not capture_of_screened(
        plan, baseline
    ):
        raise ZlbenchError(
            f"{where}: screened against another baseline (manifest sha256 "
            f"{plan.baseline_sha256[:12] or 'none'}, {baseline.path}'s is "
            f"{manifest_sha256(baseline.path)[:12]}; nor is it a capture version of the "
            "screened one): re-run the screen job"
        )
    if plan.compiler != compiler:
        raise ZlbenchError(
            f"{where}: screened with another compiler ({plan.compiler or 'none'}"
            f"), this gate's is {compiler or 'none'}: re-run the screen job"
        )
    check_base(where, plan, base_compiler)
    keys = sorted(k for k in baseline.ops if scope is None or k in scope)
    if plan.scope != keys:
        raise ZlbenchError(
            f"{where}: screened for another op set ({len(plan.scope)} op(s), "
            f"this gate's has {len(keys)}): give both the same --ops/--ops-file"
        )
    parts = [set(plan.timed), set(plan.skipped), set(plan.over_budget)]
    if (
        set().union(*parts) != set(keys)
        or sum(map(len, parts)) != len(keys)
        or (sorted(plan.order) != sorted(plan.timed))
    ):
        raise ZlbenchError(
            f"{timing_file}: the plan does not split the op set into timed, "
            "skipped and over-budget ops: not a screen-only gate's own plan"
        )
    screen_file = timing_file.with_name(SCREEN_JSON)
    if not screen_file.is_file():
        if has_codegen_records(baseline.path):
            raise ZlbenchError(f"{where}: no {SCREEN_JSON} beside {TIMING_JSON}")
        screen = CodegenScreen(baseline_dir=str(baseline.path))  # v1: every op timed
    else:
        screen = load_json_model(screen_file, CodegenScreen)
        if (screen.decided_by, screen.base_compiler) != (plan.decided_by, plan.base_compiler):
            raise ZlbenchError(
                f"{where}: its {SCREEN_JSON} and {TIMING_JSON} say different comparisons "
                "decided: not a screen-only gate's own output"
            )
        listed = {k: r for k, r in baseline.ops.items() if k in plan.skipped}
        proven_skips(plan, screen, listed, timing_file)  # every skip proven again
    return ScreenArtifact(timing_file.parent, plan, screen)


def capture_of_screened(plan: TimingPlanFile, baseline: BaselineSet) -> bool:
    """Whether ``baseline`` is a capture version of the baseline ``plan`` screened
    (``zlbench baseline capture``: its launch captures apart, the same records, rows,
    codegen indexes and recorded seconds, which are all a screen and its plan read),
    re-derived from ``baseline``'s own manifest against the plan's stamp."""
    stamp = plan.baseline_records_sha256
    return bool(stamp) and stamp == baseline.manifest.records_sha256()


def check_base(where: str, plan: TimingPlanFile, base_compiler: str) -> None:
    """A plan screened against a base compiler is taken only by a gate with that base
    (the same fingerprint); else one line, exit 2."""
    if plan.decided_by != "base":
        return
    if not base_compiler:
        raise ZlbenchError(
            f"{where}: screened against the base compiler {plan.base_compiler}; this gate "
            "has no --base-compiler: give it the same one (or re-run the screen job without)"
        )
    if plan.base_compiler != base_compiler:
        raise ZlbenchError(
            f"{where}: screened against another base compiler ({plan.base_compiler}), "
            f"this gate's is {base_compiler}: re-run the screen job with this --base-compiler"
        )


def screen_only(
    step: CodegenStep,
    baseline: BaselineSet,
    scope: set[str] | None,
    ops_dir: Path,
    *,
    budget_s: float | None,
    first: Path | None,
    compiler: str,
    generated: str,
    out: Path,
) -> TimingPlanFile:
    """``gate --screen-only``: after the screen (``step``, written into ``<out>/codegen/``),
    plan the ops to time as a measuring gate would (sentinels, the PR tier, the largest
    code change first, within ``budget_s``) and write the plan, stamped with what a
    measuring gate checks before it takes it (:func:`load_screen_artifact`): the
    baseline's manifest sha256, the compiler's fingerprint, the op set."""
    timed = plan_timing(step, baseline, scope, ops_dir, budget_s, first)
    keys = sorted(k for k in baseline.ops if scope is None or k in scope)
    plan = step.plan or TimingPlanFile(  # no codegen records (v1): every op timed
        time=step.summary.time, timed={k: NO_RECORDS for k in keys}, order=keys
    )
    plan = plan.model_copy(
        update=dict(
            screen_only=True,
            baseline_sha256=manifest_sha256(baseline.path),
            baseline_records_sha256=baseline.manifest.records_sha256(),
            compiler=compiler,
            scope=keys,
            generated=generated,
        )
    )
    assert set(plan.timed) == timed
    dump_json_model(out / CODEGEN_SCREEN_DIR / TIMING_JSON, plan)
    return plan

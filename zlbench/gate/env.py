"""Environment checks: what the results were measured on vs the baseline manifest.

Checked (a difference is a mismatch: exit 2 unless ``--allow-env-mismatch``):
GPU model, FlagGems commit per repo, timing mode, how it was timed as a whole
(``models.Timing``: upstream's mode, zlbench's method and its budgets ``--warmup-ms``,
``--replays``: they change the noise; the baseline's is the one its ops' result.json
files recorded, none before it was recorded), shape-file sha256, FlagGems'
tuning space (``USE_FLAGTUNE``), benchmark processes per GPU (``--gpu-share``; a
baseline or result from before sharing existed counts as one: a shared GPU measures
small kernels ~2 % faster, docs/screening.md). A value the
baseline records but the results do not is a mismatch too (it cannot be
verified). Informational (reported, never a mismatch): the compiler (the
distribution providing ``triton``, its version, the FlagTree commit and its build
fingerprint: the thing under test), torch, driver, CUDA, GPU count, a dirty
FlagGems tree. The manifest records no build fingerprint: the baseline's is the one
its ops' result.json files recorded (None before fingerprints were recorded).

Another GPU model (:func:`gpu_difference`): with a base compiler measured beside the
PR on this GPU (the interleaved A/B: the stored timings are context only) and the same
architecture (H200 -> H100, both sm_90), accepted and named in the report's first
lines; another architecture, one not known, or no base compiler: refused in one line
that names the command recording this runner's own baseline (``BOOTSTRAP_HINT``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from zlbench.errors import ZlbenchError
from zlbench.gate.load import BaselineSet, ResultsSet, in_scope
from zlbench.models import BaselineResult, EnvFinding, Environment, RunResult, Timing
from zlbench.models.codegen import load_codegen_index
from zlbench.models.run import arch_text
from zlbench.models.verdict import GpuDifference

UNKNOWN = "(not recorded)"
SEP = ", "


def _joined(values: Iterable[object]) -> str | None:
    """The distinct values of the runs, joined; a run that did not record the value
    shows as UNKNOWN beside the others (a partial record is not a match)."""
    values = list(values)
    vals = sorted({str(v) for v in values if v not in (None, "")})
    if vals and any(v in (None, "") for v in values):
        vals.append(UNKNOWN)
    return SEP.join(vals) if vals else None


def _same_commit(a: str, b: str) -> bool:
    """``b`` may hold several runs' commits: every one must be ``a``'s commit."""

    def one(x: str, y: str) -> bool:
        x, y = x.strip().lower(), y.strip().lower()
        n = min(len(x), len(y))
        return n >= 7 and x[:n] == y[:n]

    return all(one(a, part) for part in b.split(SEP))


def _finding(field: str, base: object, cur: str | None, checked: bool, commit=False) -> EnvFinding:
    base_s = None if base is None else str(base)
    if base_s is None:
        differs = False
    elif cur is None:
        differs = True
    elif commit:
        differs = not _same_commit(base_s, cur)
    else:
        differs = base_s != cur
    return EnvFinding(
        field=field,
        baseline=base_s,
        current=cur if cur is not None else (UNKNOWN if base_s is not None else None),
        mismatch=checked and differs,
    )


def _gpu_share_finding(base: int | None, envs: list[Environment]) -> EnvFinding:
    """Processes per GPU; unrecorded (from before sharing existed) is one. With no
    measured run there is nothing to compare (not a mismatch)."""
    if not envs:
        return _finding("gpu_share", base, None, True)
    return _finding("gpu_share", base or 1, _joined(e.gpu_share or 1 for e in envs), True)


def measured_results(results: ResultsSet, scope: Iterable[str] | None) -> list[RunResult]:
    scope = None if scope is None else set(scope)
    keys = [k for k in results.ops if in_scope(k, scope)]
    return [results.ops[k].result for k in keys if results.ops[k].result is not None]


def _baseline_value(baseline: BaselineSet, name: str) -> str | None:
    """An environment field of the baseline's ops (their result.json files), joined:
    None when no op recorded it."""
    values = [getattr(r.environment, name) for r in baseline.ops.values()]
    return _joined(values) if any(v is not None for v in values) else None


def timing_of(result: RunResult | BaselineResult) -> Timing | None:
    """How ``result`` was timed; upstream's mode from the result's ``timing`` where its
    environment did not record one (a file of before the model)."""
    t = result.environment.timing
    if t is None or t.mode is not None:
        return t
    return t.model_copy(update={"mode": result.timing})


def _texts(timings: list[Timing | None]) -> str | None:
    return _joined(t.text() if t is not None else None for t in timings)


def _timing_finding(baseline: BaselineSet, runs: list[RunResult]) -> EnvFinding | None:
    """The Timing compared as a whole: other budgets, another method or mode than the
    baseline's is a mismatch, as are results that do not say. None when neither side
    recorded one; a baseline that never recorded one is not compared."""
    recorded = baseline.manifest.timing_method
    base = [recorded] if recorded is not None else [timing_of(r) for r in baseline.ops.values()]
    cur = [timing_of(r) for r in runs]
    if all(t is None for t in [*base, *cur]):
        return None
    base_s = _texts(base) if any(t is not None for t in base) else None
    cur_s = _texts(cur)
    return EnvFinding(
        field="timing_method",
        baseline=base_s,
        current=cur_s if cur_s is not None else (UNKNOWN if base_s is not None else None),
        mismatch=base_s is not None and set(base) != set(cur),
    )


def common_timing(results: Iterable[RunResult | BaselineResult]) -> Timing | None:
    """The one Timing every result that recorded one agrees on; None when none recorded
    one or they differ."""
    found = {t for t in (timing_of(r) for r in results) if t is not None}
    return next(iter(found)) if len(found) == 1 else None


def check_environment(baseline: BaselineSet, runs: list[RunResult]) -> list[EnvFinding]:
    """One finding per compared field; ``mismatch`` marks the checked differences."""
    m = baseline.manifest
    envs = [r.environment for r in runs]
    out = [
        _finding("gpu_model", m.gpu_model, _joined(e.gpu_model for e in envs), True),
        _finding("timing", m.timing, _joined(r.timing for r in runs), True),
        _finding(
            "shape_file_sha256",
            m.shape_file_sha256,
            _joined(r.shape_file_sha256 for r in runs),
            True,
        ),
        _finding("use_flagtune", m.use_flagtune, _joined(e.use_flagtune for e in envs), True),
        _gpu_share_finding(m.gpu_share, envs),
    ]
    timing = _timing_finding(baseline, runs)
    if timing is not None:  # recorded by either
        out.append(timing)
    repos = sorted(set(m.flaggems) | {r.repo for r in runs})
    for repo in repos:
        of_repo = [r.environment for r in runs if r.repo == repo]
        if not of_repo:
            continue
        base_commit = m.flaggems.get(repo, {}).get("commit")
        cur = _joined(e.flaggems_commit for e in of_repo)
        out.append(_finding(f"flaggems_commit[{repo}]", base_commit, cur, True, commit=True))
        if any(e.flaggems_dirty for e in of_repo):
            out.append(
                EnvFinding(
                    field=f"flaggems_dirty[{repo}]", baseline=None, current="dirty", mismatch=False
                )
            )
    info = [
        ("compiler_dist", m.compiler_dist, _joined(e.triton_dist for e in envs)),
        ("compiler_version", m.compiler_version, _joined(e.triton_version for e in envs)),
        ("compiler_commit", m.compiler_commit, _joined(e.flagtree_commit for e in envs)),
        (
            "compiler_build",
            _baseline_value(baseline, "compiler_build"),
            _joined(e.compiler_build for e in envs),
        ),
        ("torch", m.torch, _joined(e.torch for e in envs)),
        ("driver", m.driver, _joined(e.driver for e in envs)),
        ("cuda", m.cuda, _joined(e.cuda for e in envs)),
        ("gpu_count", m.gpu_count, _joined(e.gpu_count for e in envs)),
    ]
    out += [_finding(f, b, c, False) for f, b, c in info if b is not None or c is not None]
    return out


def mismatches(findings: list[EnvFinding]) -> list[EnvFinding]:
    return [f for f in findings if f.mismatch]


def describe_mismatch(f: EnvFinding) -> str:
    return f"{f.field}: baseline {f.baseline!r}, results {f.current!r}"


def baseline_environment(baseline: BaselineSet) -> Environment:
    m = baseline.manifest
    main = m.flaggems.get("main") or next(iter(m.flaggems.values()), {})
    return Environment(
        gpu_model=m.gpu_model,
        gpu_arch=_baseline_value(baseline, "gpu_arch"),
        gpu_count=m.gpu_count,
        driver=m.driver,
        cuda=m.cuda,
        torch=m.torch,
        triton_dist=m.compiler_dist,
        triton_version=m.compiler_version,
        flagtree_commit=m.compiler_commit,
        compiler_path=_baseline_value(baseline, "compiler_path"),
        compiler_build=_baseline_value(baseline, "compiler_build"),
        flaggems_package=main.get("package"),
        flaggems_commit=main.get("commit"),
        mode=m.timing,
        level=m.level,
        zlbench_version=m.zlbench_version,
        zlbench_commit=m.zlbench_commit,
        timing=common_timing(baseline.ops.values()),
    )


def current_environment(runs: list[RunResult]) -> Environment:
    """The results' environment; a field that differs between runs lists every value."""
    envs = [r.environment for r in runs]
    data: dict[str, object] = {}
    for name in Environment.model_fields:
        values = [getattr(e, name) for e in envs if getattr(e, name) is not None]
        if not values:
            continue
        distinct = list(dict.fromkeys(values))
        if len(distinct) == 1 or not all(isinstance(v, str) for v in distinct):
            data[name] = distinct[0]
        else:
            data[name] = ", ".join(str(v) for v in distinct)
    return Environment.model_validate(data)


# --------------------------------------------------------------------------- GPU arch

# A GPU model's name -> its architecture, for baselines and results recorded before
# ``Environment.gpu_arch`` was: the name's words (letters and digits, upper-cased),
# matched as a whole run of words, so "H20" is not "H200" nor "A10" "A100".
GPU_ARCHS: dict[str, str] = {
    "H100": "sm_90",
    "H200": "sm_90",
    "H800": "sm_90",
    "H20": "sm_90",
    "GH200": "sm_90",
    "A100": "sm_80",
    "A800": "sm_80",
    "A30": "sm_80",
    "A10": "sm_86",
    "A10G": "sm_86",
    "A40": "sm_86",
    "L4": "sm_89",
    "L40": "sm_89",
    "L40S": "sm_89",
    "RTX 4090": "sm_89",
    "B200": "sm_100",
    "GB200": "sm_100",
}


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Z0-9]+", text.upper())


def gpu_arch_of(model: str | None) -> str | None:
    """The architecture of a GPU model's name ("NVIDIA H100 80GB HBM3" -> "sm_90")
    from :data:`GPU_ARCHS`; None for a name it does not know, or one that names
    models of two architectures."""
    if not model:
        return None
    words = _words(model)
    found = set()
    for name, arch in GPU_ARCHS.items():
        key = _words(name)
        n = len(key)
        if any(words[i : i + n] == key for i in range(len(words) - n + 1)):
            found.add(arch)
    return found.pop() if len(found) == 1 else None


def _codegen_arch(baseline: BaselineSet) -> str | None:
    """The compile target of the baseline's first op with codegen records (what its
    kernels were compiled for); None when none has records, or one cannot be read."""
    for key in sorted(baseline.ops):
        try:
            index = load_codegen_index(baseline.path / key)
        except (ZlbenchError, OSError, ValueError):
            continue
        if index is not None and index.records:
            return arch_text(index.records[0].request.target.arch)
    return None


def baseline_arch(baseline: BaselineSet) -> str | None:
    """The baseline's GPU architecture: what its ops recorded (``gpu_arch``), else its
    codegen records' compile target, else its GPU model's name (:func:`gpu_arch_of`)."""
    recorded = {r.environment.gpu_arch for r in baseline.ops.values()} - {None}
    if recorded:
        return SEP.join(sorted(str(a) for a in recorded))
    return _codegen_arch(baseline) or gpu_arch_of(baseline.manifest.gpu_model)


def runner_arch(runs: list[RunResult]) -> str | None:
    """The results' GPU architecture: each run's recorded ``gpu_arch``, else its GPU
    model's name; several distinct values joined; None when one run's is not known."""
    arches = [r.environment.gpu_arch or gpu_arch_of(r.environment.gpu_model) for r in runs]
    if not arches or any(a is None for a in arches):
        return None
    return SEP.join(sorted(set(str(a) for a in arches)))


# the command that records a runner's own baseline (cli/baseline_cmd.py, docs/ci.md)
BOOTSTRAP_HINT = "zlbench baseline bootstrap --tier pr --out baselines/<runner>"
ACCEPTED_TAIL = "accepted, the A/B pairs PR and base on this GPU; stored timings are context only"


def _gpu(model: str | None, arch: str | None) -> str:
    return f"{model or UNKNOWN} ({arch or 'architecture not known'})"


def _same_arch(diff: GpuDifference) -> bool:
    a = diff.baseline_arch
    return a is not None and a == diff.runner_arch and SEP not in a


def _head(diff: GpuDifference) -> str:
    return (
        f"baseline recorded on {_gpu(diff.baseline_gpu, diff.baseline_arch)}, "
        f"this runner is {_gpu(diff.runner_gpu, diff.runner_arch)}"
    )


def _why_refused(diff: GpuDifference) -> str:
    if _same_arch(diff):
        return (
            "the same architecture, but no base compiler (--base-compiler ENV) is paired "
            "with the PR on this GPU"
        )
    if diff.baseline_arch is None or diff.runner_arch is None:
        return "an architecture not known"
    return "another architecture"


RECORD_OWN = "record this runner's own baseline: " + BOOTSTRAP_HINT


def gpu_difference(
    baseline: BaselineSet, runs: list[RunResult], findings: list[EnvFinding], paired_base: bool
) -> GpuDifference | None:
    """None unless the ``gpu_model`` finding is a mismatch. Accepted when a base
    compiler is paired with the PR on this GPU (``paired_base``) and both sides'
    architectures are known and the same; else refused with the bootstrap hint."""
    gpu = next((f for f in findings if f.field == "gpu_model" and f.mismatch), None)
    if gpu is None:
        return None
    diff = GpuDifference(
        baseline_gpu=gpu.baseline,
        baseline_arch=baseline_arch(baseline),
        runner_gpu=gpu.current,
        runner_arch=runner_arch(runs),
    )
    diff.accepted = paired_base and _same_arch(diff)
    head = _head(diff)
    if diff.accepted:
        diff.line = f"{head[0].upper()}{head[1:]}: {ACCEPTED_TAIL}"
    else:
        diff.line = f"{head}: {_why_refused(diff)}; {RECORD_OWN}"
    return diff


def accept_gpu(findings: list[EnvFinding], diff: GpuDifference | None) -> list[EnvFinding]:
    """``findings`` with the ``gpu_model`` finding informational when ``diff`` was
    accepted (not a refusal); unchanged otherwise."""
    if diff is None or not diff.accepted:
        return findings
    return [
        f.model_copy(update={"mismatch": False}) if f.field == "gpu_model" else f for f in findings
    ]


ALLOW_HINT = " (--allow-env-mismatch judges anyway)"


def env_error(bad: list[EnvFinding], diff: GpuDifference | None) -> str:
    """The one line of a gate refused for its environment: every mismatch; a GPU model
    that was not accepted leads, and the line ends with the command that records this
    runner's own baseline."""
    head = "environment differs from the baseline: "
    others = "; ".join(describe_mismatch(f) for f in bad if diff is None or f.field != "gpu_model")
    if diff is None or diff.accepted:
        return head + others + ALLOW_HINT
    gpu = f"gpu_model: {_head(diff)}: {_why_refused(diff)}"
    return f"{head}{gpu}{'; ' + others if others else ''}{ALLOW_HINT}; {RECORD_OWN}"

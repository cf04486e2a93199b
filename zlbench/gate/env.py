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
"""

from __future__ import annotations

from collections.abc import Iterable

from zlbench.gate.load import BaselineSet, ResultsSet, in_scope
from zlbench.models import BaselineResult, EnvFinding, Environment, RunResult, Timing

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

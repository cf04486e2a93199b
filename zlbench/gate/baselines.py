"""Baseline sets: build one from a record pass plus K replay passes, summarize
and verify one (pure: reads files, writes none; docs/design.md §3).

A baseline row's speedup is the median over the K replay passes (the gate
measures in replay mode, so the baseline must too); its noise is the largest
relative deviation of one pass from that median, the floor the gate's
threshold may not go under.

A baseline is judged with only when it matches its manifest (:func:`integrity_problems`:
the content hashes and the shape file's), and a gate never writes into one
(:func:`check_out_outside_baseline`); docs/ci.md "What the judge trusts".
"""

from __future__ import annotations

import hashlib
import math
import os
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate.conflicts import check_unique_rows
from zlbench.models import (
    CODEGEN_BLOBS,
    CODEGEN_DIR,
    CODEGEN_INDEX,
    MAX_NOISE,
    BaselineManifest,
    BaselineResult,
    BaselineRow,
    CodegenIndex,
    MarkerKind,
    Row,
    RunResult,
    RunStatus,
    codegen_dir,
    counts_of_kind,
    load_codegen_index,
    load_json_model,
    load_yaml_model,
    resolve_inside,
)
from zlbench.models.replay import LAUNCHES_JSON, LaunchCapture
from zlbench.models.store import PACK_SUFFIX, STORE_DIR, is_store_ref, pack_path, read_pack
from zlbench.protocol.layout import MANIFEST_YAML, OPS_STATUS, RECORDS_DIR, RESULT_JSON, TTGIR_DIR
from zlbench.report.escape import log_escape

# Files of a baseline dir covered by the manifest's content hashes; a baseline
# without codegen records or recorded durations (v1) simply has no file of the
# codegen patterns and no ops_status.csv (the first replay pass's: the gate's
# shards balance by it, docs/baselines.md).
HASHED_PATTERNS = (
    OPS_STATUS,
    "*/*/result.json",
    "*/*/autotune_records/*.json",
    f"*/*/{CODEGEN_DIR}/{CODEGEN_INDEX}",
    f"*/*/{CODEGEN_DIR}/{CODEGEN_BLOBS}/*",
    # the kernel-replay tier's capture of each row's timed launches (models.replay)
    f"*/*/{CODEGEN_DIR}/{LAUNCHES_JSON}",
    # the compact layout's content-addressed packs of stage texts (models.store)
    f"{STORE_DIR}/*{PACK_SUFFIX}",
)


def aggregate_op(record: RunResult, replays: list[RunResult]) -> BaselineResult:
    """One op's baseline result: rows of the replays, median speedup, noise.

    A row must be measured (SUCCESS, with a speedup) in every replay pass to
    enter the baseline; a row that is not is left out (and then reported as
    NEW by a gate, never silently judged against a guess); so is a row whose passes
    scatter by MAX_NOISE or more (a gate could never fail it)."""
    if not replays:
        raise ZlbenchError(f"{record.run_name}: no replay pass to build a baseline from")
    passes = [{_rkey(r): r for r in rep.rows} for rep in replays]
    rows = []
    for first in replays[0].rows:
        k = _rkey(first)
        samples = [p.get(k) for p in passes]
        if any(s is None or s.status != "SUCCESS" or not _usable(s.speedup) for s in samples):
            continue
        row = _baseline_row(first, samples)  # type: ignore[arg-type]
        if row is not None:
            rows.append(row)
    # per pass, not summed over the passes: the gate compares one run with it
    counts: dict[str, int] = {}
    for rep in replays:
        for name, n in rep.marker_counts.items():
            counts[name] = max(counts.get(name, 0), n)
    return BaselineResult(
        repo=record.repo,
        run_name=record.run_name,
        op=record.op,
        timing=record.timing,
        dtypes=replays[0].dtypes or record.dtypes,
        rows=rows,
        marker_counts=counts,
        environment=replays[0].environment,
    )


def why_no_rows(replays: list[RunResult]) -> str:
    """Why :func:`aggregate_op` kept no row of these replay passes, in words: rows not
    measured in every pass, rows measured in every pass whose passes scatter by
    MAX_NOISE or more (with their noise), or both."""
    passes = [{_rkey(r): r for r in rep.rows} for rep in replays]
    missing, noisy = 0, []
    for first in replays[0].rows if replays else []:
        samples = [p.get(_rkey(first)) for p in passes]
        if any(s is None or s.status != "SUCCESS" or not _usable(s.speedup) for s in samples):
            missing += 1
            continue
        noise = _noise([float(s.speedup) for s in samples])  # type: ignore[union-attr,arg-type]
        if not noise < MAX_NOISE:
            noisy.append(noise)
    if not noisy:
        return "no row measured in every replay pass"
    lo, hi = min(noisy), max(noisy)
    figure = f"{lo:.1%}" if lo == hi else f"{lo:.1%} to {hi:.1%}"
    said = (
        f"{len(noisy)} row(s) measured in all {len(replays)} replay passes scatter by "
        f"MAX_NOISE ({MAX_NOISE:.0%}) or more (noise {figure})"
    ).replace("%", " %")
    if missing:
        return f"no row usable: {said}; {missing} row(s) not measured in every replay pass"
    return f"every row too noisy: {said}"


def _rkey(row: Row) -> tuple[str, str, str, int]:
    return (row.op, row.dtype, row.shape, row.occurrence)


def _usable(speedup: float | None) -> bool:
    return speedup is not None and math.isfinite(speedup) and speedup > 0


def _noise(speedups: list[float]) -> float:
    """A row's noise: the largest relative deviation of one pass from the median."""
    med = statistics.median(speedups)
    return max(abs(s / med - 1.0) for s in speedups)


def _baseline_row(first: Row, samples: list[Row]) -> BaselineRow | None:
    speedups = [float(s.speedup) for s in samples]  # type: ignore[arg-type]
    med = statistics.median(speedups)
    noise = _noise(speedups)
    if not noise < MAX_NOISE:
        return None
    base_lat = statistics.median(float(s.latency_base_ms or 0.0) for s in samples)
    lat = statistics.median(float(s.latency_ms or 0.0) for s in samples)
    data = first.model_dump()
    data.update(
        speedup=med,
        latency_base_ms=base_lat or None,
        latency_ms=lat or None,
        no_cudagraph=any(s.no_cudagraph for s in samples),
        repeats=len(samples),
        speedups=speedups,
        noise=noise,
    )
    return BaselineRow.model_validate(data)


def usable(record: RunResult | None, replays: list[RunResult | None]) -> str | None:
    """Why an op cannot enter a baseline, or None when it can."""
    if record is None:
        return "record pass left no result.json"
    if record.status is not RunStatus.PASS:
        return f"record pass {record.status.value}"
    for i, rep in enumerate(replays, start=1):
        if rep is None:
            return f"replay pass {i} left no result.json"
        if rep.status is not RunStatus.PASS:
            return f"replay pass {i} {rep.status.value}"
        fallbacks = counts_of_kind(rep.marker_counts, MarkerKind.REPLAY_FALLBACK)
        if fallbacks:
            return f"replay pass {i} fell back: {fallbacks}"
    return None


# --------------------------------------------------------------------------- hashes


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def content_hashes(root: Path) -> dict[str, str]:
    """sha256 of every hashed file of a baseline dir, by path relative to it."""
    files = sorted({p for pat in HASHED_PATTERNS for p in root.glob(pat) if p.is_file()})
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in files}


# --------------------------------------------------------------------------- verify / show


@dataclass
class VerifyReport:
    problems: list[str] = field(default_factory=list)
    ops: int = 0
    rows: int = 0
    codegen_ops: int = 0  # ops with codegen records (0 for a v1 baseline)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(
    root: Path, manifest: BaselineManifest, progress: Callable[[int, int], None] | None = None
) -> VerifyReport:
    """Schema, content hashes, shape file, every op with its records and rows, and
    no file that a refresh does not write (a ``codegen --out`` aimed inside it).
    ``progress(done, total)`` is called before the first op and after each."""
    rep = VerifyReport(problems=integrity_problems(root, manifest) + stray_files(root, manifest))
    rep.problems += store_problems(root)
    total = len(manifest.ops)
    if progress is not None:
        progress(0, total)
    for key in manifest.ops:
        rep.ops += 1
        _verify_op(root, key, rep)
        if progress is not None:
            progress(rep.ops, total)
    if not manifest.ops:
        rep.problems.append("manifest.yaml: field 'ops' is empty")
    return rep


def integrity_problems(root: Path, manifest: BaselineManifest) -> list[str]:
    """How the files of baseline ``root`` differ from what its manifest recorded: a
    hashed file missing, changed, unlisted or linked out of ``root``; the shape file
    missing or changed. Empty when the baseline is as it was recorded."""
    if manifest.files:
        problems = _hash_problems(root, manifest.files)
    else:
        problems = ["manifest.yaml: records no content hashes (field 'files'); rebuild it"]
    return problems + _shape_file_problems(root, manifest)


def _hash_problems(root: Path, recorded: dict[str, str]) -> list[str]:
    problems = []
    actual = content_hashes(root)
    for rel, digest in sorted(recorded.items()):
        got = actual.get(rel)
        if got is None:
            problems.append(f"{rel}: missing (listed in manifest.yaml)")
        elif got != digest:
            problems.append(f"{rel}: content changed (sha256 {got[:12]} != {digest[:12]})")
    for rel in sorted(actual):
        if rel not in recorded:
            problems.append(f"{rel}: not listed in manifest.yaml")
        try:
            resolve_inside(root, rel, rel)
        except ZlbenchError as e:
            problems.append(str(e))
    return problems


def _shape_file_problems(root: Path, m: BaselineManifest) -> list[str]:
    if not m.shape_file:
        return []
    try:
        path = resolve_inside(root, m.shape_file, "manifest.yaml: field 'shape_file'")
    except ZlbenchError as e:
        return [str(e)]
    if not path.is_file():
        return [f"{m.shape_file}: missing (manifest.yaml field 'shape_file')"]
    if not m.shape_file_sha256:
        return ["manifest.yaml: field 'shape_file_sha256' is empty; rebuild the baseline"]
    got, want = sha256_file(path), m.shape_file_sha256
    if got != want:
        return [f"{m.shape_file}: content changed (sha256 {got[:12]} != {want[:12]})"]
    return []


def store_problems(root: Path) -> list[str]:
    """Every pack of a compact baseline's store, decoded: named by its sha256, each
    text matching its own (models.store). Empty without a store (the old layout)."""
    problems = []
    for pack in sorted((root / STORE_DIR).glob(f"*{PACK_SUFFIX}")):
        try:
            read_pack(pack)
        except ZlbenchError as e:
            problems.append(str(e))
    return problems


def check_intact(root: Path, manifest: BaselineManifest) -> None:
    """Refuse a baseline that does not match its manifest: one ZlbenchError line."""
    _refuse_if(root, integrity_problems(root, manifest))


def _refuse_if(root: Path, problems: list[str]) -> None:
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ZlbenchError(
            f"{root}: refusing a baseline that does not match its manifest: {problems[0]}"
            f"{more}; `zlbench baseline verify {root}` lists every difference"
        )


def verified_baseline(root: str | os.PathLike) -> bool:
    """For ``zlbench codegen``: True when ``root`` is a baseline (it holds a
    manifest.yaml) that passes :func:`verify`, the check of ``zlbench baseline
    verify``; False when it is no baseline (a batch dir: its records are screened, but
    no recorded source is executed); one ZlbenchError line for a baseline that fails."""
    root = Path(root)
    if not (root / MANIFEST_YAML).exists() and not (root / MANIFEST_YAML).is_symlink():
        return False
    manifest = load_yaml_model(resolve_inside(root, MANIFEST_YAML), BaselineManifest)
    _refuse_if(root, verify(root, manifest).problems)
    return True


# What a refresh writes besides the hashed files and the shape file: the manifest and
# each op's TTGIR (kept for reading, not judged).
_UNHASHED = (MANIFEST_YAML, f"*/*/{TTGIR_DIR}/**/*")


def stray_files(root: Path, manifest: BaselineManifest, limit: int = 5) -> list[str]:
    """Files in baseline ``root`` that no refresh writes (the first ``limit`` named)."""
    known = {p for pat in (*HASHED_PATTERNS, *_UNHASHED) for p in root.glob(pat)}
    if manifest.shape_file:
        known.add(root / manifest.shape_file)
    stray = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if (p.is_file() or p.is_symlink()) and p not in known
    )
    more = f" (+{len(stray) - limit} more)" if len(stray) > limit else ""
    return [
        f"{log_escape(rel)}: not part of a baseline (no refresh writes it)" for rel in stray[:limit]
    ] + ([f"{len(stray)} files that are not part of the baseline{more}"] if more else [])


def baseline_above(path: str | os.PathLike) -> Path | None:
    """The baseline dir that ``path`` is, or lies inside (symlinks followed; ``path``
    need not exist): the nearest dir holding a manifest.yaml that reads as a
    baseline manifest. None when there is none."""
    real = Path(os.path.realpath(path))
    for d in (real, *real.parents):
        if (d / MANIFEST_YAML).is_file():
            try:
                load_yaml_model(d / MANIFEST_YAML, BaselineManifest)
            except ZlbenchError:
                continue  # another project's manifest.yaml
            return d
    return None


def check_out_outside_baseline(out: str | os.PathLike, baseline_root: str | os.PathLike) -> None:
    """Refuse an output dir that is, or lies inside, the baseline dir (symlinks
    followed; ``out`` need not exist yet): a gate never writes into its baseline."""
    real_out = os.path.realpath(out)
    real_base = os.path.realpath(baseline_root)
    if os.path.commonpath([real_out, real_base]) == real_base:
        raise ZlbenchError(
            f"--out {out} is inside the baseline {baseline_root}: "
            "a baseline is never written to; choose another output dir"
        )


def _verify_op(root: Path, key: str, rep: VerifyReport) -> None:
    try:
        op_dir = resolve_inside(root, key, "manifest.yaml: field 'ops'")
        result = load_json_model(op_dir / RESULT_JSON, BaselineResult)
        check_unique_rows(op_dir / RESULT_JSON, result.rows)
    except ZlbenchError as e:
        rep.problems.append(str(e))
        return
    rep.rows += len(result.rows)
    if not result.rows:
        rep.problems.append(f"{key}: no rows")
    if not list((op_dir / RECORDS_DIR).glob("*.json")):
        rep.problems.append(f"{key}: no autotune records")
    _verify_codegen(op_dir, rep)


def _verify_codegen(op_dir: Path, rep: VerifyReport) -> None:
    """An op's codegen records, when it has any: a valid index whose blobs are all
    there (their contents are covered by the content hashes)."""
    try:
        found = codegen_blobs(op_dir)
    except ZlbenchError as e:
        rep.problems.append(str(e))
        return
    if found is not None:
        rep.codegen_ops += 1
        problem = launch_capture_problem(op_dir, found[0])
        if problem is not None:
            rep.problems.append(problem)


def launch_capture_problem(run_dir: Path, index: CodegenIndex) -> str | None:
    """What is wrong with ``run_dir``'s launch capture (``codegen/launches.json``,
    docs/replay.md): unreadable, or naming a kernel id that ``index`` does not hold;
    None when it is sound or absent."""
    path = codegen_dir(run_dir) / LAUNCHES_JSON
    if not path.is_file():
        return None
    try:
        capture = load_json_model(path, LaunchCapture)
    except ZlbenchError as e:
        return str(e)
    return unknown_kernel_problem(path, capture, index)


def unknown_kernels(capture: LaunchCapture, index: CodegenIndex) -> list[str]:
    """The kernel ids that ``capture`` names (in a launch or a row's ``replay_timed``)
    and ``index`` does not hold, sorted."""
    ids = {r.id for r in index.records}
    named = {s.kernel_id for r in capture.rows for s in r.launches if s.kernel_id}
    named |= {k for r in capture.rows for k in r.replay_timed or ()}
    return sorted(named - ids)


def unknown_kernel_problem(path: Path, capture: LaunchCapture, index: CodegenIndex) -> str | None:
    """The line naming the first kernel id that ``capture`` (read from ``path``) names
    and ``index`` does not hold (:func:`unknown_kernels`); None when it names only
    kernels of ``index``."""
    unknown = unknown_kernels(capture, index)
    if unknown:
        return f"{path}: names kernel {unknown[0]}, which its codegen index does not hold"
    return None


def codegen_blobs(run_dir: Path) -> tuple[CodegenIndex, list[str]] | None:
    """``run_dir``'s codegen index and the blob paths (relative to its codegen dir)
    it names (docs/codegen.md); None when it has no index. One ZlbenchError line for
    a corrupt index or a blob that is missing or outside the codegen dir."""
    index = load_codegen_index(run_dir)
    if index is None:
        return None
    cg_dir = codegen_dir(run_dir)
    digests = [d for r in index.records if r.result for d in r.result.stages.values() if d.blob]
    blobs = sorted({d.blob for d in digests})
    for blob in blobs:
        if is_store_ref(blob):
            if not pack_path(cg_dir, blob).is_file():
                raise ZlbenchError(f"{pack_path(cg_dir, blob)}: codegen store pack missing")
        elif not resolve_inside(cg_dir, blob, f"{cg_dir / CODEGEN_INDEX}: blob").is_file():
            raise ZlbenchError(f"{cg_dir / blob}: codegen blob missing")
    # each pack once per index (read_pack keeps it decoded for the next index)
    held = {b: read_pack(pack_path(cg_dir, b)) for b in blobs if is_store_ref(b)}
    for d in digests:
        if d.blob in held and d.sha256 not in held[d.blob]:
            raise ZlbenchError(
                f"{cg_dir / CODEGEN_INDEX}: stage text {d.sha256[:12]} not in {d.blob}"
            )
    return index, blobs


def with_compile_times(index: CodegenIndex, others: Iterable[CodegenIndex]) -> CodegenIndex:
    """``index`` with each cache-hit record's compile times taken from the same record
    (same id: same request; and the same compiler) where another pass really compiled it. A
    replay pass run with ``--precompile-jobs`` is served from the shared cache, so its
    records carry no compile times; the record pass's do. Digests are never touched."""
    timed = {
        r.id: r.result
        for other in others
        for r in other.records
        if r.result is not None and not r.result.cache_hit and r.result.times
    }
    records = []
    for rec in index.records:
        res, src = rec.result, timed.get(rec.id)
        if (
            res is not None
            and src is not None
            and src.compiler == res.compiler
            and (res.cache_hit or not res.times)
        ):
            rec = rec.model_copy(
                update={"result": res.model_copy(update={"times": src.times, "cache_hit": False})}
            )
        records.append(rec)
    return index.model_copy(update={"records": records})


@dataclass
class OpSummary:
    key: str
    rows: int
    median_speedup: float | None
    max_noise: float


def summarize(results: Iterable[tuple[str, BaselineResult]]) -> list[OpSummary]:
    out = []
    for key, res in results:
        sp = [r.speedup for r in res.rows if r.speedup]
        out.append(
            OpSummary(
                key=key,
                rows=len(res.rows),
                median_speedup=statistics.median(sp) if sp else None,
                max_noise=max((r.noise for r in res.rows), default=0.0),
            )
        )
    return out


def noise_distribution(results: Iterable[BaselineResult]) -> dict[str, float]:
    """Quantiles of per-row noise over a whole baseline (for the manifest summary)."""
    noise = sorted(r.noise for res in results for r in res.rows)
    if not noise:
        return {}

    def q(p: float) -> float:
        return noise[min(len(noise) - 1, int(p * (len(noise) - 1) + 0.5))]

    return {"rows": len(noise), "p50": q(0.5), "p90": q(0.9), "max": noise[-1]}

"""`zlbench baseline refresh`: record pass + K replay passes -> a new baseline dir.

K may be 0 (``--repeats 0``): no replay pass, the rows are the record pass's own
measurements (one sample each, noise 0), which the manifest's ``summary.numbers`` says;
for a whole-inventory record pass whose verdicts come from the same-runner A/B, not
from these numbers (docs/baselines.md "v6").

The new dir is built as ``.<name>.tmp-<pid>`` beside the target and renamed at
the very end, so an interrupted or failed refresh leaves nothing that looks
like a baseline; an existing target is never touched (baselines are immutable).

`zlbench baseline bootstrap` (the end of this module): a named tier refreshed into a
stage, verified, and only then renamed to where the gate reads it.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from zlbench import __version__
from zlbench.codegen.pinned import pinned_only
from zlbench.errors import ZlbenchError
from zlbench.gate import baselines
from zlbench.gate.env import timing_of
from zlbench.gitinfo import git_state
from zlbench.models import (
    CODEGEN_INDEX,
    AutotuneRecords,
    BaselineManifest,
    BaselineResult,
    CodegenIndex,
    RunResult,
    RunStatus,
    ThresholdDefaults,
    Timing,
    TimingMethod,
    codegen_dir,
    dump_json_model,
    dump_yaml_model,
    load_codegen_index,
    load_json_model,
    read_ops_status,
)
from zlbench.models.codegen import dump_codegen_index
from zlbench.models.replay import LAUNCHES_JSON
from zlbench.protocol.layout import (
    MANIFEST_YAML,
    OPS_STATUS,
    RECORDS_DIR,
    RESULT_JSON,
    SHAPES_YAML,
    TTGIR_DIR,
    op_key,
)
from zlbench.runner.batch.config import BatchConfig, BatchOutcome
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.batch.plan import plan_selection
from zlbench.runner.batch.run import run_batch
from zlbench.runner.batch.status import write_ops_status
from zlbench.runner.derived import stage_beside, sweep_stale_stages  # noqa: F401 (tests)

WORK = "_work"  # inside the temp dir; removed before the rename


@dataclass
class RefreshConfig:
    out: Path  # baselines/vN (must not exist)
    batch: BatchConfig  # selection, FlagGems dirs, GPUs, timing, dtypes, shape file
    repeats: int = 3  # 0: no replay pass, the record pass's rows are the numbers
    flagtree_dir: Path | None = None
    thresholds: ThresholdDefaults = field(default_factory=ThresholdDefaults)
    keep_work: Path | None = None  # move the record/replay batch dirs here instead of deleting
    # Build from the batch dirs of an earlier refresh (its --keep-work dir: record/,
    # replay-1/...) instead of measuring: re-assembles a baseline without a GPU.
    from_work: Path | None = None
    # Measure the passes in this dir and keep them there (``--work``): a refresh stopped
    # (a job's time limit, a device call's) and run again with the same dir resumes each
    # pass where it stopped (complete ops kept, a failed op stays failed), and a pass
    # already whole costs only its check. Never removed by the refresh.
    work: Path | None = None
    # An op that a replay pass never finished (absent from that pass's ops_status.csv:
    # the pass was cut by its time limit first) enters with the passes that did finish
    # it when they are at least this many; its rows say how many (``repeats``) and the
    # manifest's summary lists it under ``short``. None: every pass must hold every op.
    min_repeats: int | None = None
    # Only ops with codegen records enter (a record pass whose records were kept for some
    # ops only, docs/baselines.md "v6"); the others are listed in summary.excluded.
    require_codegen: bool = False
    zlbench_commit: str | None = None  # when this checkout has no .git (device copies, CI)
    progress: TextIO | None = None
    batch_runner: Callable[[BatchConfig], BatchOutcome] = run_batch


@dataclass
class RefreshOutcome:
    out: Path
    manifest: BaselineManifest
    excluded: dict[str, str]  # "<repo>/<run_name>" -> why it is not in the baseline


RECORD_NUMBERS = (
    "record pass: no replay pass (--repeats 0); each row is the record pass's own "
    "measurement (repeats 1, noise 0), a context number; ops_status.csv holds its "
    "record-mode seconds (autotune sweeps included)"
)
NO_CODEGEN = "no codegen records kept (--require-codegen)"

REUSED_DB = (
    "--reuse-tuning-db: a baseline is recorded from a cold tuning DB, so its configs are "
    "the ones the compiler under test tunes (FlagGems' persistent DB may hold another "
    "compiler's); record without it"
)


def refresh(cfg: RefreshConfig) -> RefreshOutcome:
    out = Path(cfg.out)
    if out.exists():
        raise ZlbenchError(f"{out} already exists: baselines are immutable, pick the next version")
    if cfg.repeats < 0:
        raise ZlbenchError(f"--repeats must be at least 0 (got {cfg.repeats})")
    if cfg.batch.reuse_tuning_db:
        raise ZlbenchError(REUSED_DB)
    if cfg.min_repeats is not None and not 1 <= cfg.min_repeats <= cfg.repeats:
        raise ZlbenchError(
            f"--min-repeats must be between 1 and --repeats {cfg.repeats} (got {cfg.min_repeats})"
        )
    tmp = stage_beside(out)  # stale stages of killed writers of this name swept
    tmp.mkdir()
    started = _dt.datetime.now(_dt.timezone.utc)
    finished = None
    asked = list(cfg.batch.dtypes) or None
    try:
        left: dict[str, str] = {}
        if cfg.from_work is not None:
            record, replays, left, recorded = _from_work(
                Path(cfg.from_work), cfg.repeats, cfg.batch
            )
            asked = recorded if recorded is not None else asked
            started, finished = _work_span(record, replays)
        elif cfg.work is not None:
            record, replays = _measure(cfg, Path(cfg.work), resume=True)
            started, finished = _work_span(record, replays)  # over every resumed call
        else:
            record, replays = _measure(cfg, tmp / WORK)
        excluded, short, results = _assemble(cfg, tmp, record, replays)
        excluded.update((k, v) for k, v in left.items() if k not in excluded)
        manifest = _manifest(cfg, tmp, results, started, finished, excluded, asked)
        if short:
            manifest.summary["short"] = short
        if not replays:
            manifest.summary["numbers"] = RECORD_NUMBERS
        if not manifest.ops:
            raise ZlbenchError(
                "no op could enter the baseline: "
                + "; ".join(f"{k}: {v}" for k, v in excluded.items())
            )
        if cfg.from_work is None and cfg.work is None:
            _finish_work(cfg, tmp / WORK)
        dump_yaml_model(tmp / MANIFEST_YAML, manifest)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return RefreshOutcome(out, manifest, excluded)


def _say(cfg: RefreshConfig, text: str) -> None:
    if cfg.progress is not None:
        print(text, file=cfg.progress, flush=True)


def run_pass(
    cfg: RefreshConfig,
    out_dir: Path,
    replay_root: Path | None,
    what: str,
    resume: bool = False,
    who: str = "refresh",
) -> BatchOutcome:
    """One pass of ``cfg.batch`` into ``out_dir``: a record pass (``replay_root`` None)
    or a replay of ``replay_root``'s records (a batch or baseline dir), as `zlbench batch
    --replay-root` runs it; ``resume``: a pass whose dir is there already is resumed
    (``--work``), its complete and failed ops kept. Also `zlbench baseline capture`'s
    replay of a baseline (``who``: the progress line's first word)."""
    again = resume and out_dir.is_dir()
    _say(cfg, f"{who}: {what} -> {out_dir}" + (" (resumed)" if again else ""))
    cfg_ = replace(cfg.batch, out_dir=out_dir, replay_root=replay_root)
    if again:
        cfg_ = replace(cfg_, resume=True, keep_failed=True)
    return cfg.batch_runner(cfg_)


def _measure(
    cfg: RefreshConfig, work: Path, resume: bool = False
) -> tuple[BatchOutcome, list[BatchOutcome]]:
    """The record pass, then ``cfg.repeats`` replay passes, in ``work``; ``resume``: a
    pass whose dir is there already is resumed (``--work``), its complete and failed ops
    kept."""

    def run(out_dir: Path, replay_root: Path | None, what: str) -> BatchOutcome:
        return run_pass(cfg, out_dir, replay_root, what, resume)

    if resume:
        work.mkdir(parents=True, exist_ok=True)
    record = run(work / "record", None, "record pass")
    if record.exit_code == 2:
        raise ZlbenchError("record pass measured nothing")
    replays = []
    for i in range(1, cfg.repeats + 1):
        replays.append(run(work / f"replay-{i}", record.out_dir, f"replay pass {i}/{cfg.repeats}"))
    return record, replays


def _from_work(
    work: Path, repeats: int, batch: BatchConfig
) -> tuple[BatchOutcome, list[BatchOutcome], dict[str, str], list[str] | None]:
    """The batches of an earlier refresh, cut to today's selection (dismiss list).

    Also returns the selected ops that cannot enter whatever the passes hold (key ->
    why: dismissed, unconditionally skipped, or never run by the record pass, as a
    record pass cut before its end leaves them) and the dtypes the record pass was
    asked for (its batch.json; [] = each op's own), which the manifest states and a
    gate measures with; None without a batch.json (then this refresh's ``--dtypes``)."""
    sel = plan_selection(batch)
    wanted = {op.key for op in sel.ops}

    def outcome(d: Path) -> BatchOutcome:
        if not (d / OPS_STATUS).is_file():
            raise ZlbenchError(f"{d}: not a batch dir of a refresh (no {OPS_STATUS})")
        statuses = [
            s for s in read_ops_status(d / OPS_STATUS) if op_key(s.repo, s.run_name) in wanted
        ]
        return BatchOutcome(out_dir=d, statuses=statuses, counts={}, summary_rows=0, exit_code=0)

    replays = [outcome(work / f"replay-{i}") for i in range(1, repeats + 1)]
    info = read_batch_info(work / "record")
    if info is not None and info.reuse_tuning_db:
        raise ZlbenchError(f"{work / 'record'}: recorded with {REUSED_DB}")
    if info is not None:
        _check_shape_file(work / "record", info.shape_file_sha256, batch.shape_file)
    record = outcome(work / "record")
    left = {o.key: f"dismissed {e.when}: {e.reason}" for o, e in sel.dismissed}
    left.update((o.key, f"unconditional skip: {o.skip}") for o in sel.skipped)
    ran = {op_key(s.repo, s.run_name) for s in record.statuses}
    left.update((k, "record pass did not run it") for k in sorted(wanted - ran))
    return record, replays, left, (list(info.dtypes) if info is not None else None)


def _check_shape_file(record: Path, recorded: str | None, shape_file: Path | None) -> None:
    """A record pass measured with another shape file than this refresh's is refused:
    the baseline would state one file and hold rows of another."""
    if not recorded or shape_file is None:
        return
    if baselines.sha256_file(Path(shape_file)) != recorded:
        raise ZlbenchError(
            f"{record}: recorded with another shape file (sha256 {recorded[:12]}) than "
            f"--shape-file {shape_file}; pass the one it was recorded with"
        )


def _load(batch_dir: Path, key: str) -> RunResult | None:
    path = batch_dir / key / RESULT_JSON
    if not path.is_file():
        return None
    try:
        return load_json_model(path, RunResult)
    except ZlbenchError:
        return None


def _assemble(
    cfg: RefreshConfig, tmp: Path, record: BatchOutcome, replays: list[BatchOutcome]
) -> tuple[dict[str, str], dict[str, str], list[BaselineResult]]:
    """Write <repo>/<run_name>/{result.json,autotune_records,ttgir,codegen} for every usable op.

    Returns the ops left out (key -> why), the ops that entered with fewer replay
    passes than asked (key -> which; ``cfg.min_repeats``) and the results written,
    in path order."""
    excluded: dict[str, str] = {}
    short: dict[str, str] = {}
    written: dict[tuple[str, str], BaselineResult] = {}
    listed = [{op_key(s.repo, s.run_name) for s in r.statuses} for r in replays]  # read once
    for st in record.statuses:
        key = op_key(st.repo, st.run_name)
        rec = _load(record.out_dir, key)
        ops_passes = _op_passes(cfg, key, replays, listed)
        if len(ops_passes) < len(replays):
            short[key] = _short_note(replays, ops_passes)
        reps = [_load(r.out_dir, key) for r in ops_passes]
        why = baselines.usable(rec, reps)
        if st.status is not RunStatus.PASS:  # its own words: TIMEOUT after S, a dismissal
            why = f"record pass {st.status.value}" + (f": {st.note}" if st.note else "")
        records_dir = record.out_dir / key / RECORDS_DIR
        if why is None and cfg.require_codegen and not _has_codegen(record.out_dir / key):
            why = NO_CODEGEN
        if why is None:
            # no replay pass (--repeats 0): the record pass's rows are the numbers
            result = baselines.aggregate_op(rec, reps or [rec])  # type: ignore[arg-type]
            if not result.rows:
                # not measured in every pass, or measured but scattered past MAX_NOISE
                why = baselines.why_no_rows(reps) if reps else "no row measured"  # type: ignore[arg-type]
        if why is not None:
            short.pop(key, None)
            excluded[key] = why
            _say(cfg, f"refresh: leaving out {key}: {why}")
            continue
        dst = tmp / key
        _copy_records(records_dir, dst / RECORDS_DIR, st.run_name)
        ttgir = (ops_passes[0] if ops_passes else record).out_dir / key / TTGIR_DIR
        if ttgir.is_dir():
            shutil.copytree(ttgir, dst / TTGIR_DIR)
        _copy_codegen(cfg, key, dst, [r.out_dir for r in [*ops_passes[:1], record]])
        dump_json_model(dst / RESULT_JSON, result)
        written[(st.repo, st.run_name)] = result
    if replays:
        _copy_durations(cfg, replays, tmp)
    else:
        _record_durations(record, set(written), tmp)
    return excluded, short, [written[k] for k in sorted(written)]


def _has_codegen(run_dir: Path) -> bool:
    """The record pass's run dir holds a codegen index (valid or not: an unusable one
    is reported where it is copied). A replay pass records no candidate the record
    pass did not, so the record pass decides."""
    return (codegen_dir(run_dir) / CODEGEN_INDEX).is_file()


def _op_passes(
    cfg: RefreshConfig, key: str, replays: list[BatchOutcome], listed: list[set[str]]
) -> list[BatchOutcome]:
    """The replay passes an op is built from: all of them, or (``cfg.min_repeats``)
    those that finished it, when at least that many did. A pass that lists the op in
    its ops_status.csv or left its result.json always counts: a failure there is
    evidence and keeps the op out (``baselines.usable``)."""
    if cfg.min_repeats is None:
        return replays
    kept = [r for r, keys in zip(replays, listed, strict=True) if _finished(r, keys, key)]
    return kept if len(kept) >= cfg.min_repeats else replays


def _finished(rep: BatchOutcome, listed: set[str], key: str) -> bool:
    """``rep`` lists ``key`` in its ops_status.csv (``listed``) or left its result.json."""
    return key in listed or (rep.out_dir / key / RESULT_JSON).is_file()


def _short_note(replays: list[BatchOutcome], kept: list[BatchOutcome]) -> str:
    ids = {id(k) for k in kept}
    missing = [str(i) for i, r in enumerate(replays, start=1) if id(r) not in ids]
    return (
        f"{len(kept)} of {len(replays)} replay passes: replay pass {', '.join(missing)} "
        "did not finish it (cut before it ended)"
    )


def _copy_durations(cfg: RefreshConfig, replays: list[BatchOutcome], tmp: Path) -> None:
    """The first replay pass's ops_status.csv: the recorded seconds per op of a
    replay (what a gate runs), by which the gate deals its shards longest first and
    ``shards: auto`` sizes them (docs/baselines.md). Checked before it is copied;
    a pass without one leaves the baseline without durations (the hash deal)."""
    src = replays[0].out_dir / OPS_STATUS if replays else None
    if src is None or not src.is_file():
        _say(cfg, "refresh: the first replay pass wrote no ops_status.csv; no durations kept")
        return
    read_ops_status(src)  # one ZlbenchError line when it is not a valid ops_status.csv
    shutil.copyfile(src, tmp / OPS_STATUS)


def _record_durations(record: BatchOutcome, kept: set[tuple[str, str]], tmp: Path) -> None:
    """Without a replay pass: the record pass's ops_status.csv rows of the ops that
    entered (record-mode seconds, autotune sweeps included: the gate's shard balance
    and budget then overestimate the tuned ops; summary.numbers says so)."""
    rows = [s for s in record.statuses if (s.repo, s.run_name) in kept]
    if rows:
        write_ops_status(tmp, rows)


def _copy_records(src: Path, dst: Path, run_name: str) -> None:
    """The op's records; an op whose record pass tuned no kernel (plain pointwise
    kernels) gets an empty record, so "recorded, nothing to pin" is explicit and
    any tuned kernel showing up in a replay is a key_missing fallback."""
    if src.is_dir() and list(src.glob("*.json")):
        shutil.copytree(src, dst)
    else:
        dst.mkdir(parents=True)
        (dst / f"{run_name}.json").write_text("{}\n", encoding="utf-8")


def _copy_codegen(cfg: RefreshConfig, key: str, dst: Path, passes: list[Path]) -> None:
    """The op's codegen records (docs/codegen.md) from the first pass that has a
    usable index: replay pass 1, whose kernels are exactly those a gate launches
    (it measures in replay mode and precompiles from these records), else the record
    pass (which also holds every autotune candidate it benchmarked). All passes ran
    the baseline's own compiler, so any of them holds the same code. Copied: the
    index and the blobs it names; an op with none (``TRITON_INTERPRET=1``, a triton
    without a compilation listener) gets no ``codegen/`` and the gate times it."""
    for batch_dir in passes:
        try:
            found = baselines.codegen_blobs(batch_dir / key)
        except ZlbenchError as e:
            _say(cfg, f"refresh: {key}: codegen records of {batch_dir.name} unusable: {e}")
            continue
        if found is None:
            continue
        index, blobs = found
        if batch_dir == passes[-1]:  # the record pass: its sweeps' losers are never replayed
            index, blobs = _pinned_only(cfg, key, index, dst)
        src, out = codegen_dir(batch_dir / key), codegen_dir(dst)
        for blob in blobs:
            (out / blob).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / blob, out / blob)
        index = baselines.with_compile_times(index, _other_indexes(passes, batch_dir, key))
        _copy_launches(cfg, key, batch_dir / key, dst, index)
        dump_codegen_index(out / CODEGEN_INDEX, index)
        return


def _copy_launches(cfg: RefreshConfig, key: str, src: Path, dst: Path, index: CodegenIndex) -> None:
    """The kernel-replay capture of the pass whose index is kept (docs/replay.md),
    when it is sound for that index; else none (the gate times those rows through
    the op path)."""
    problem = baselines.launch_capture_problem(src, index)
    if problem is not None:
        _say(cfg, f"refresh: {key}: launch capture left out: {problem}")
    elif (codegen_dir(src) / LAUNCHES_JSON).is_file():
        codegen_dir(dst).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(codegen_dir(src) / LAUNCHES_JSON, codegen_dir(dst) / LAUNCHES_JSON)


def _pinned_only(
    cfg: RefreshConfig, key: str, index: CodegenIndex, dst: Path
) -> tuple[CodegenIndex, list[str]]:
    """The record pass's ``index`` without the configs its autotune records (already
    in ``dst``) did not pin (:func:`zlbench.codegen.pinned.pinned_only`): a replay of
    this baseline launches only the pinned ones, so the screen need not rebuild the
    rest. The blobs the kept records name."""
    records: dict = {}
    for path in sorted((dst / RECORDS_DIR).glob("*.json")):
        records.update(load_json_model(path, AutotuneRecords).kernels)
    kept, dropped = pinned_only(index, records)
    if dropped:
        _say(
            cfg,
            f"refresh: {key}: {dropped} codegen record(s) of unpinned autotune configs left out",
        )
    blobs = sorted(
        {d.blob for r in kept.records if r.result for d in r.result.stages.values() if d.blob}
    )
    return kept, blobs


def _other_indexes(passes: list[Path], chosen: Path, key: str) -> list[CodegenIndex]:
    """The op's readable codegen indexes of the passes other than ``chosen``."""
    out = []
    for batch_dir in passes:
        if batch_dir == chosen:
            continue
        try:
            index = load_codegen_index(batch_dir / key)
        except ZlbenchError:
            continue
        if index is not None:
            out.append(index)
    return out


def _work_span(
    record: BatchOutcome, replays: list[BatchOutcome]
) -> tuple[_dt.datetime, _dt.datetime | None]:
    """When the reused batches ran (their batch.json), for the manifest: the record
    pass's start and the last replay pass's end, else (a pass cut by its time limit
    stamps no end) the latest end any pass stamped."""

    def stamp(d: Path, key: str) -> _dt.datetime | None:
        try:
            info = read_batch_info(d)
        except (OSError, ZlbenchError):
            return None
        raw = getattr(info, key, None) if info is not None else None
        if not raw:
            return None
        try:
            return _dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            return None

    start = stamp(record.out_dir, "created") or _dt.datetime.now(_dt.timezone.utc)
    ends = [stamp(d.out_dir, "finished") for d in [record, *replays]]  # each read once
    return start, ends[-1] or max((e for e in ends if e is not None), default=None)


def _gpu_share(cfg: RefreshConfig, results: list[BaselineResult]) -> int:
    """The ``--gpu-share`` the baseline's results were measured with (what they recorded,
    else what this refresh asked); results recorded under different shares are refused:
    a shared GPU times small kernels faster (docs/screening.md)."""
    shares = sorted({r.environment.gpu_share for r in results if r.environment.gpu_share})
    if len(shares) > 1:
        raise ZlbenchError(
            f"the baseline's passes were measured with different --gpu-share: "
            f"{', '.join(map(str, shares))}; refresh them with one"
        )
    return shares[0] if shares else cfg.batch.gpu_share


def _timing(results: list[BaselineResult]) -> Timing | None:
    """The one Timing the baseline's results were measured with; results timed
    differently (another method or budgets) are refused, as differing shares are."""
    found = {t for t in map(timing_of, results) if t is not None}
    if any(t.method is TimingMethod.CAPTURE for t in found):
        raise ZlbenchError(
            "the baseline's passes ran with --zl-timing capture (a launch capture's untimed "
            "calls, not measurements); refresh them timed"
        )
    if len(found) > 1:
        raise ZlbenchError(
            f"the baseline's passes were timed differently: "
            f"{'; '.join(sorted(t.text() for t in found))}; refresh them with one "
            "--timing-method/--warmup-ms/--replays"
        )
    return next(iter(found), None)


def _flaggems_state(repo: str, checkout: Path, results: list[BaselineResult]) -> dict:
    """The manifest's FlagGems entry of ``repo``: the commit the results' environments
    name, which is what ran (``--from-work`` may assemble elsewhere, with another
    checkout, or one unpacked from a tarball that names no commit), else the
    checkout's own; ``results_without_commit`` counts results that named none (their
    FlagGems had no .git where they ran). Results of two commits are refused: one
    baseline is one FlagGems."""
    mine = [r for r in results if r.repo == repo]
    ran = {r.environment.flaggems_commit for r in mine if r.environment.flaggems_commit}
    if len(ran) > 1:
        raise ZlbenchError(
            f"the results of {repo} ran {len(ran)} FlagGems commits "
            f"({', '.join(sorted(c[:12] for c in ran))}): a baseline is one FlagGems; "
            "record the other ops again with one checkout"
        )
    pkg = next((r.environment.flaggems_package for r in mine), None)
    if not ran:
        commit, dirty = git_state(checkout)
        return {"package": pkg, "commit": commit, "dirty": dirty}
    entry = {
        "package": pkg,
        "commit": ran.pop(),
        "dirty": any(r.environment.flaggems_dirty for r in mine),
    }
    if unnamed := sum(1 for r in mine if not r.environment.flaggems_commit):
        entry["results_without_commit"] = unnamed
    return entry


def _manifest(
    cfg: RefreshConfig,
    tmp: Path,
    results: list[BaselineResult],
    started: _dt.datetime,
    finished: _dt.datetime | None,
    excluded: dict[str, str],
    asked: list[str] | None = None,
) -> BaselineManifest:
    """The manifest of the baseline in ``tmp``; ``results``: what :func:`_assemble` wrote;
    ``asked``: the dtypes the passes were asked for ([]: each op's own; None: unknown,
    then this refresh's, else every dtype the results hold)."""
    ops = sorted(op_key(r.repo, r.run_name) for r in results)
    env = results[0].environment if results else None
    shape_file, shape_sha = _copy_shape_file(cfg, tmp)
    flaggems = {
        repo: _flaggems_state(repo, Path(d), results)
        for repo, d in sorted(cfg.batch.flaggems_dirs.items())
    }
    ft_commit, ft_dirty = git_state(cfg.flagtree_dir) if cfg.flagtree_dir else (None, None)
    zl_commit, zl_dirty = git_state(Path(__file__).resolve().parents[2])
    if cfg.zlbench_commit:
        zl_commit, zl_dirty = cfg.zlbench_commit, False
    elapsed = ((finished or _dt.datetime.now(_dt.timezone.utc)) - started).total_seconds()
    # reused passes none of which stamped an end (a record pass cut and never finished):
    # no span to state (now minus its start would be the age of the work dir)
    wall = None if cfg.from_work is not None and finished is None else round(elapsed, 1)
    return BaselineManifest(
        name=Path(cfg.out).name,
        created=started.isoformat(timespec="seconds"),
        gpu_model=env.gpu_model if env else None,
        gpu_count=len([g for g in cfg.batch.gpus if g != ""]) or (env.gpu_count if env else None),
        driver=env.driver if env else None,
        torch=env.torch if env else None,
        cuda=env.cuda if env else None,
        compiler_dist=env.triton_dist if env else None,
        compiler_version=env.triton_version if env else None,
        use_flagtune=env.use_flagtune if env else None,
        gpu_share=_gpu_share(cfg, results),
        compiler_commit=_dirty(ft_commit, ft_dirty) or (env.flagtree_commit if env else None),
        flaggems=flaggems,
        zlbench_version=__version__,
        zlbench_commit=_dirty(zl_commit, zl_dirty),
        shape_file=shape_file,
        shape_file_sha256=shape_sha,
        # What was asked for; an op that rejects it falls back to its own dtypes
        # (its result.json says which), in the gate exactly as here.
        dtypes=asked if asked is not None else sorted({d for r in results for d in r.dtypes}),
        timing=cfg.batch.timing,
        timing_method=_timing(results),
        level="core",
        ops=ops,
        repeats=cfg.repeats,
        thresholds=cfg.thresholds,
        files=baselines.content_hashes(tmp),
        summary={
            "rows": sum(len(r.rows) for r in results),
            "noise": baselines.noise_distribution(results),
            "excluded": excluded,
            "refresh_wall_s": wall,
            "host": env.hostname if env else None,
        },
    )


def _dirty(commit: str | None, dirty: bool | None) -> str | None:
    return f"{commit}-dirty" if commit and dirty else commit


def _copy_shape_file(cfg: RefreshConfig, tmp: Path) -> tuple[str | None, str | None]:
    """The shape file travels with the baseline (``shapes.yaml``): the gate measures
    with exactly the shapes the baseline was measured with."""
    if cfg.batch.shape_file is None:
        return None, None
    dst = tmp / SHAPES_YAML
    shutil.copyfile(cfg.batch.shape_file, dst)
    return SHAPES_YAML, baselines.sha256_file(dst)


def _finish_work(cfg: RefreshConfig, work: Path) -> None:
    if cfg.keep_work is not None:
        Path(cfg.keep_work).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(work), str(cfg.keep_work))
    else:
        shutil.rmtree(work, ignore_errors=True)


def commit_baseline(out: Path, manifest: BaselineManifest) -> str:
    """Create branch ``baseline/<name>`` and commit the new dir on it; returns the branch."""
    import git  # gitpython

    try:
        repo = git.Repo(out, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ZlbenchError(f"{out} is not inside a git repository (--commit)") from None
    branch = f"baseline/{manifest.name}"
    if branch in [h.name for h in repo.heads]:
        raise ZlbenchError(f"branch {branch} already exists")
    repo.git.checkout("-b", branch)
    repo.git.add(str(Path(out).resolve()))
    repo.git.commit("-q", "-m", commit_message(manifest))  # git itself, as for add
    return branch


def commit_message(m: BaselineManifest) -> str:
    noise = m.summary.get("noise", {})
    lines = [
        f"Add baseline {m.name}: {len(m.ops)} ops, {m.summary.get('rows', 0)} rows",
        "",
        f"GPU: {m.gpu_model} x{m.gpu_count}, driver {m.driver}, torch {m.torch}",
        f"Compiler: {m.compiler_dist} {m.compiler_version} "
        f"({m.compiler_commit or 'commit unknown'})",
        "FlagGems: " + ", ".join(f"{r} {v.get('commit')}" for r, v in sorted(m.flaggems.items())),
        f"Timing: {m.timing}, dtypes {','.join(m.dtypes)}, {m.repeats} replay passes",
    ]
    if noise:
        lines.append(
            f"Row noise over the passes: p50 {noise['p50']:.2%}, p90 {noise['p90']:.2%}, "
            f"max {noise['max']:.2%}"
        )
    if m.summary.get("excluded"):
        lines.append(f"Left out: {', '.join(sorted(m.summary['excluded']))}")
    for key, which in sorted(m.summary.get("short", {}).items()):
        lines.append(f"Fewer passes: {key}: {which}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- bootstrap

# `zlbench baseline bootstrap` (issue 48 item 3): a runner class's baseline from zero.
# The refresh above records a named tier into a stage beside --out, `baseline verify`'s
# checks run on the staged dir, and only a baseline that verifies is renamed to --out,
# where the gate reads it. The stage is `.<name>.bootstrap-<pid>/<name>` (the manifest
# is named after --out): a bootstrap that fails, does not verify or is stopped
# (Ctrl-C, SIGTERM: the CLI unwinds it like Ctrl-C) removes its stage; one killed
# with SIGKILL leaves it, dot-named beside --out, never at --out, and the next
# bootstrap there removes the stages of processes that are gone.

TIER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


@dataclass
class BootstrapOutcome:
    out: Path
    tier: Path  # the tier's ops file
    refreshed: RefreshOutcome  # its manifest names --out; its dir was the stage
    verified: baselines.VerifyReport


def tier_file(ops_dir: Path, name: str) -> Path:
    """``ops_dir/tiers/NAME.txt``; an unknown or malformed tier name is one line that
    lists the tiers there."""
    from zlbench.runner.catalog.tiers import TIERS_DIR

    tiers = Path(ops_dir) / TIERS_DIR
    path = tiers / f"{name}.txt"
    if not TIER_NAME.match(name) or not path.is_file():
        have = sorted(p.stem for p in tiers.glob("*.txt")) if tiers.is_dir() else []
        raise ZlbenchError(
            f"--tier {name!r}: no tier of that name in {tiers} (tiers: {', '.join(have) or 'none'})"
        )
    return path


def check_out_free(out: Path, who: str = "a bootstrap") -> None:
    """A bootstrap (``who``: or another writer of a new version, ``baseline capture``)
    writes a new dir only: --out, or a packed baseline of that name (``<out>.lock``,
    which every command reads as ``<out>``), must not exist."""
    from zlbench.models.packed import lock_path

    if out.exists() or out.is_symlink():
        raise ZlbenchError(
            f"--out {out} already exists: {who} never writes over a baseline "
            "(baselines are immutable); pick a new dir"
        )
    if lock_path(out).exists():
        raise ZlbenchError(
            f"--out {out}: {lock_path(out)} is a packed baseline of that name "
            "(every command reads it as that dir); pick a new dir"
        )


def bootstrap(
    cfg: RefreshConfig,
    tier: Path,
    *,
    refresh_fn: Callable[[RefreshConfig], RefreshOutcome] = refresh,
    verify_fn: Callable[..., baselines.VerifyReport] = baselines.verify,
) -> BootstrapOutcome:
    """Record ``cfg.batch``'s selection (the tier ``tier``, set by the caller) as the
    refresh does, verify it, and rename it to ``cfg.out``: nothing is at ``cfg.out``
    unless all three succeeded. ``refresh_fn`` / ``verify_fn``: seams for tests."""
    out = Path(cfg.out)
    check_out_free(out)
    stage = stage_beside(out, "bootstrap")  # stale stages of killed writers swept
    try:
        stage.mkdir()
        done = refresh_fn(replace(cfg, out=stage / out.name))
        _say(cfg, f"bootstrap: verifying {out.name}")
        rep = verify_fn(done.out, done.manifest)
        if not rep.ok:
            raise ZlbenchError(
                f"the recorded baseline does not verify ({len(rep.problems)} problem(s), "
                f"first: {rep.problems[0]}); nothing was written at {out}"
            )
        check_out_free(out)  # nothing appeared there meanwhile
        os.rename(done.out, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return BootstrapOutcome(out, Path(tier), replace(done, out=out), rep)

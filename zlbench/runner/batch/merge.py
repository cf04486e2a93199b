"""Shard batch dirs -> one batch dir (:func:`merge_batches`; the gate-dir merge of
``zlbench merge`` is :mod:`zlbench.workflow.merge`).

Copies every shard's run dirs, unions ops_status.csv, rebuilds summary.csv and
writes a batch.json naming the shards. Refused, with one line each: an op found
in two shards with different content, a shard holding ops but no batch.json next to
another holding ops (what it replayed, and how, cannot be checked), shards measured
differently (mode, replay root, timing, dtypes, shape file) or on different
environments (GPU model, driver, torch, compiler, FlagGems commit...).

The output is built in a temp dir next to ``out`` and renamed at the end, so an
interrupted merge leaves nothing behind (one killed with SIGKILL: a dot-named stage that
the next merge of that name removes).
"""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import (
    BatchInfo,
    Environment,
    OpStatus,
    check_tree_inside,
    read_ops_status,
)
from zlbench.protocol.layout import BATCH_JSON, RESULT_JSON, RUN_LOG, op_key
from zlbench.runner.batch.info import read_batch_info, write_batch_info
from zlbench.runner.batch.progress import count_statuses
from zlbench.runner.batch.status import (
    OPS_STATUS,
    load_run,
    summary_records,
    write_ops_status,
    write_summary,
)
from zlbench.runner.batch.systemic import not_measured, systemic_failures
from zlbench.runner.derived import stage_beside

# batch.json fields that must agree between shards.
SAME_CONFIG = (
    "mode",
    "replay_root",
    "timing",
    "level",
    "dtypes",
    "shape_file_sha256",
    "reuse_tuning_db",
)
# Environment fields that must agree (hostname, gpu_count may differ between runners).
SAME_ENV = (
    "gpu_model",
    "driver",
    "cuda",
    "torch",
    "triton_dist",
    "triton_version",
    "flagtree_commit",
    "flaggems_package",
    "flaggems_commit",
    "mode",
    "level",
)
_IGNORED_IN_STATUS = {"gpu", "seconds"}


class _Shard:
    def __init__(self, path: Path):
        self.path = Path(path)
        if not (self.path / OPS_STATUS).is_file():
            raise ZlbenchError(f"{self.path}: not a batch dir (no {OPS_STATUS})")
        self.statuses = read_ops_status(self.path / OPS_STATUS)
        for st in self.statuses:  # copied whole by _build: no link out of the shard
            if st.run_dir:
                check_tree_inside(self.path, st.run_dir, f"{self.path / OPS_STATUS}: run_dir")
        self.info = read_batch_info(self.path)


def _check_recorded(shards: list[_Shard]) -> None:
    """Every shard that holds an op must say in its batch.json what it replayed and
    how, or the settings check below would skip it: a shard without batch.json is
    refused unless nothing can disagree with it (it holds no op, e.g. an empty shard
    of ``gate --shard``, or it is the only shard, given once or more, that holds any)."""
    holding: dict[Path, _Shard] = {}
    for s in shards:
        if s.statuses:
            holding.setdefault(s.path.resolve(), s)
    bare = next((s for s in holding.values() if s.info is None), None)
    if bare is not None and len(holding) > 1:
        other = next(s for s in holding.values() if s is not bare)
        raise ZlbenchError(
            f"cannot merge {bare.path}: it has no {BATCH_JSON}, so whether it replayed the "
            f"same baseline with the same settings as {other.path} cannot be checked; "
            "merge the shard dirs as the batch or gate wrote them"
        )


def _check_config(shards: list[_Shard]) -> None:
    _check_recorded(shards)
    with_info = [s for s in shards if s.info is not None]
    for s in with_info[1:]:
        ref = with_info[0]
        for name in SAME_CONFIG:
            a, b = getattr(ref.info, name), getattr(s.info, name)
            if a != b:
                what = (
                    "shards that replayed different records"
                    if name == "replay_root"
                    else "shards measured differently"
                )
                raise ZlbenchError(
                    f"cannot merge {what}: {name} is {a!r} in {ref.path} but {b!r} in {s.path}"
                )


def _check_environments(envs: dict[str, list[tuple[Path, Environment]]]) -> None:
    for repo, seen in envs.items():
        ref_path, ref = seen[0]
        for path, env in seen[1:]:
            for name in SAME_ENV:
                a, b = getattr(ref, name), getattr(env, name)
                if a is not None and b is not None and a != b:
                    raise ZlbenchError(
                        f"cannot merge results from different environments ({repo}): "
                        f"{name} is {a!r} in {ref_path} but {b!r} in {path}"
                    )


def _same_run(a: Path, b: Path) -> bool:
    for name in (RESULT_JSON, RUN_LOG):
        fa, fb = a / name, b / name
        if fa.exists() != fb.exists():
            return False
        if fa.exists() and not filecmp.cmp(fa, fb, shallow=False):
            return False
    return True


def _status_view(st: OpStatus) -> dict:
    return {k: v for k, v in st.model_dump().items() if k not in _IGNORED_IN_STATUS}


def _collect(shards: list[_Shard]) -> dict[str, tuple[_Shard, OpStatus]]:
    """Union of the shards' ops; the same op twice must be the same content."""
    chosen: dict[str, tuple[_Shard, OpStatus]] = {}
    for sh in shards:
        for st in sh.statuses:
            key = op_key(st.repo, st.run_name)
            if key not in chosen:
                chosen[key] = (sh, st)
                continue
            other, ost = chosen[key]
            same = _status_view(ost) == _status_view(st)
            if same and st.run_dir:
                same = _same_run(other.path / ost.run_dir, sh.path / st.run_dir)
            if not same:
                raise ZlbenchError(
                    f"op {key} is in both {other.path} and {sh.path} with different "
                    "results: merge each op from one shard only"
                )
    return chosen


def merge_batches(shard_dirs: list[Path], out: Path) -> tuple[Path, list[OpStatus], int]:
    """Merge shard batch dirs into ``out`` (which must not exist yet).

    Returns (out, statuses, summary rows)."""
    out = Path(out)
    if not shard_dirs:
        raise ZlbenchError("nothing to merge: give at least one shard dir")
    if out.exists():
        raise ZlbenchError(f"{out} already exists: merge writes a new dir")
    shards = [_Shard(p) for p in shard_dirs]
    _check_config(shards)
    chosen = _collect(shards)
    tmp = stage_beside(out)  # stale stages of killed merges of this name swept
    tmp.mkdir()
    try:
        statuses, rows = _build(shards, chosen, tmp)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out, statuses, rows


def _build(
    shards: list[_Shard], chosen: dict[str, tuple[_Shard, OpStatus]], tmp: Path
) -> tuple[list[OpStatus], int]:
    envs: dict[str, list[tuple[Path, Environment]]] = {}
    records: list[dict] = []
    statuses = []
    for key in sorted(chosen):
        sh, st = chosen[key]
        statuses.append(st)
        if not st.run_dir:
            continue
        src = sh.path / st.run_dir
        if src.is_dir():
            shutil.copytree(src, tmp / st.run_dir, symlinks=True)
        result = load_run(src)
        if result is None:
            continue
        records += summary_records(st.repo, st.run_name, result.rows)
        if result.environment.model_dump(exclude_none=True):
            envs.setdefault(st.repo, []).append((src, result.environment))
    _check_environments(envs)
    write_ops_status(tmp, statuses)
    rows = write_summary(tmp, records)
    write_batch_info(tmp, _merged_info(shards, statuses, rows, envs))
    return statuses, rows


def _merged_info(shards, statuses, rows, envs) -> BatchInfo:
    base = next((s.info for s in shards if s.info is not None), None)
    info = base.model_copy(deep=True) if base else BatchInfo(created="")
    info.shard = None
    info.ops = sorted({k for s in shards if s.info for k in s.info.ops})
    info.skipped = sorted({k for s in shards if s.info for k in s.info.skipped})
    dismissed = {d.key: d for s in shards if s.info for d in s.info.dismissed}
    info.dismissed = [dismissed[k] for k in sorted(dismissed)]
    info.gpus = sorted({g for s in shards if s.info for g in s.info.gpus})
    info.counts = count_statuses(statuses)
    # failures many ops share are counted over every shard's ops, not shard by shard
    info.systemic = systemic_failures(statuses)
    info.not_measured = not_measured(statuses)
    info.rows = rows
    info.environments = {repo: seen[0][1] for repo, seen in envs.items()}
    info.merged_from = [str(s.path) for s in shards]
    return info

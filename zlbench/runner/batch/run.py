"""`run_batch(BatchConfig) -> BatchOutcome`: the Python API behind `zlbench batch`;
the gate and the baseline refresh call it without argv.

Flow: select (:mod:`zlbench.runner.catalog.select`) -> shard (:mod:`.shard`) -> deal
ops over GPUs by stable hash -> one worker thread per GPU hands its ops to ``execute_plan`` (one
pytest process for many ops, a fresh one after a crash or timeout) -> each
finished attempt goes through the retry rules (:mod:`.retry`); ops needing
another attempt run in the next pass of the same worker, their previous run dir
moved to ``<batch>/.attempts/<repo>/<run_name>/<n>/``. ``ops_status.csv`` is
rewritten atomically each time an op is final, ``<run_dir>/.complete`` marks
PASS/SKIP only, and ``--resume`` keeps complete ops and reruns the rest.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import FLAGGEMS_DIR_VARS
from zlbench.protocol.cache import READY_MARKER, SHARED_CACHE_READY_VAR
from zlbench.protocol.pairs import AB_SIDE_FACTOR
from zlbench.runner.batch.attempts import baseline_rows
from zlbench.runner.batch.config import BatchConfig, BatchOutcome
from zlbench.runner.batch.coordinator import BatchRun
from zlbench.runner.batch.costs import OpCosts
from zlbench.runner.batch.forecast import expected_line
from zlbench.runner.batch.parts import most_parts, part_counts, split_ops
from zlbench.runner.batch.plan import picked_costs, plan_selection, selection_costs, with_picks
from zlbench.runner.batch.precompile import collect_records, precompile
from zlbench.runner.batch.progress import say
from zlbench.runner.batch.shard import gpu_model
from zlbench.runner.catalog.select import OpSelection
from zlbench.runner.claim import claim_batch_dir
from zlbench.runner.execute.worker import SHARED_TRITON_CACHE, process_env
from zlbench.runner.sweep.run import SweepExecutor, SweepSpec


def run_batch(config: BatchConfig) -> BatchOutcome:
    """Select, shard, run every op (retry, dtype fallback, rescue), write
    ops_status.csv as ops finish, summary.csv and batch.json at the end.

    Raises ZlbenchError for bad input (unknown/ambiguous op, missing inventory,
    empty selection, bad shard, missing FlagGems dir)."""
    selection = plan_selection(config)
    for repo in {op.repo for op in selection.ops}:
        d = config.flaggems_dirs.get(repo)
        if d is None or not Path(d).is_dir():
            var = FLAGGEMS_DIR_VARS.get(repo, FLAGGEMS_DIR_VARS["main"])
            hint = f"{d} is not a directory" if d else f"not given (set ${var})"
            raise ZlbenchError(f"no FlagGems checkout for repo {repo!r}: {hint}")
    if config.shape_file is not None and not Path(config.shape_file).is_file():
        raise ZlbenchError(f"shape file not found: {config.shape_file}")
    if config.replay_root is not None and not Path(config.replay_root).is_dir():
        raise ZlbenchError(f"replay root not found: {config.replay_root}")
    if not config.gpus:
        raise ZlbenchError("no GPU to run on (empty GPU list)")
    if config.gpu_share < 1:
        raise ZlbenchError(f"gpu_share {config.gpu_share}: must be at least 1")
    if config.sweep_gpus and config.replay_root is None:
        config = sweep_batch_config(config)
    out_dir = claim_batch_dir(Path(config.out_dir), config.resume)
    selection = with_picks(config, selection)
    costs = picked_costs(config, selection, selection_costs(config, selection.keys()))
    costs = turn_costs(config, costs)
    _say(config, forecast_line(config, costs))
    selection, costs = split_rows(config, selection, costs)
    if config.precompile_jobs > 0 and config.replay_root is not None:
        with tempfile.TemporaryDirectory(
            prefix="zl-shared-cache-", ignore_cleanup_errors=True
        ) as cache:
            return run_while_precompiling(config, selection, out_dir, costs, Path(cache))
    return BatchRun(config, selection, out_dir, costs).run()


def turn_costs(config: BatchConfig, costs: OpCosts) -> OpCosts:
    """``costs`` for one side of an interleaved A/B (``config.pair_dir``): its process
    takes turns on the GPU with the other side's, row by row, so an op takes
    ``protocol.pairs.AB_SIDE_FACTOR`` times its recorded seconds, which one process
    measured alone. The forecast, the done lines' ETA and the time budget count that.
    Any other batch: ``costs`` as they are."""
    if config.pair_dir is None:
        return costs
    return OpCosts({k: AB_SIDE_FACTOR * v for k, v in costs.seconds.items()}, costs.recorded)


def forecast_line(config: BatchConfig, costs: OpCosts) -> str:
    """The progress header's forecast, naming whose recorded seconds it takes and, when
    they say which GPU model recorded them, this runner's (``nvidia-smi``)."""
    runner = gpu_model(config.gpus[0]) if config.durations_gpu and config.progress else None
    return expected_line(
        costs,
        len(config.gpus),
        config.per_process,
        source=config.durations_source,
        recorded_on=config.durations_gpu,
        runner_gpu=runner,
    )


def split_rows(
    config: BatchConfig, selection: OpSelection, costs: OpCosts
) -> tuple[OpSelection, OpCosts]:
    """Replay with ``split_rows="auto"`` and 2+ process slots: the ops longer than a
    slot's share, cut into row parts (:mod:`.parts`; their rows from the replay root)."""
    slots = len(config.gpus) * max(1, config.gpu_share)
    if config.split_rows != "auto" or config.replay_root is None or slots < 2:
        return selection, costs
    by_key = {op.key: op for op in selection.ops}

    def rows(key: str) -> int | None:
        op = by_key[key]
        if op.rows:  # row picks: measured as picked, never cut
            return None
        return most_parts(baseline_rows(config.replay_root, op.repo, op.run_name))

    counts = part_counts(costs.seconds, slots, rows)
    if not counts:
        return selection, costs
    ops, seconds = split_ops(selection.ops, counts, costs.seconds)
    recorded = frozenset(o.key for o in ops if o.whole_key in costs.recorded)
    cut = ", ".join(f"{k} x{n}" for k, n in sorted(counts.items()))
    _say(config, f"batch: rows in parts (longer than a slot's share): {cut}")
    return replace(selection, ops=ops), OpCosts(seconds, recorded)


def run_while_precompiling(
    config: BatchConfig, selection: OpSelection, out_dir: Path, costs, cache: Path
) -> BatchOutcome:
    """The batch's processes start (interpreter, imports, collection: ~20 s on the H200)
    while the precompile fills ``cache``; each waits for its end (the marker file of
    :mod:`zlbench.protocol.cache`, written done or failed) before its first op. The
    records are read here first (a broken codegen index is exit 2, as before); when the
    batch ends or fails before the precompile, its workers are stopped."""
    plan = precompile_plan(config, selection)
    batch = BatchRun(with_ready_marker(sharing_cache(config, cache)), selection, out_dir, costs)
    stop = threading.Event()
    thread = threading.Thread(
        target=warm_shared_cache, args=(config, plan, cache, stop), name="precompile", daemon=True
    )
    thread.start()
    try:
        return batch.run()
    finally:  # done, failed or interrupted: no process needs the cache any more
        stop.set()
        thread.join()


def with_ready_marker(config: BatchConfig) -> BatchConfig:
    """``config`` whose processes wait for the precompile's end marker in its shared cache."""
    ready = Path(config.env[SHARED_TRITON_CACHE]) / READY_MARKER
    return replace(config, env={**config.env, SHARED_CACHE_READY_VAR: str(ready)})


def precompile_plan(config: BatchConfig, selection: OpSelection) -> list[tuple[str, list, list]]:
    """Per repo of the selection: (repo, its recorded compile requests, ops without any)."""
    plan = []
    for repo in sorted({op.repo for op in selection.ops}):
        keys = list(dict.fromkeys(o.whole_key for o in selection.ops if o.repo == repo))
        plan.append((repo, *collect_records(Path(config.replay_root), keys)))
    return plan


def _verified_root(config: BatchConfig) -> bool:
    """Whether the replay root is a verified baseline: only then does precompile
    execute its generated kernels' recorded source (docs/security.md)."""
    from zlbench.gate.baselines import verified_baseline

    try:
        return verified_baseline(Path(config.replay_root))
    except ZlbenchError:
        return False


def warm_shared_cache(
    config: BatchConfig, plan: list[tuple[str, list, list]], cache: Path, stop=None
) -> None:
    """Precompile ``plan`` into ``cache`` (one pass per repo, its FlagGems on the path),
    then write the end marker, done or failed (a failure only costs the processes their
    own compiling, so it is one progress line, never an exception of the batch)."""
    base = dict(config.env if config.env is not None else os.environ)
    try:
        trusted = _verified_root(config)
        for repo, records, missing in plan:
            with tempfile.TemporaryDirectory(prefix="zl-precompile-env-") as tmp:
                env = process_env(base, flaggems_dir=config.flaggems_dirs[repo], tmp_dir=tmp)
                jobs, python = config.precompile_jobs, config.python
                outcome = precompile(
                    records, cache, jobs, env, python, stop=stop, exec_generated=trusted
                )
            outcome.ops_without_records = missing
            _say(config, f"{repo}: {outcome.line()}")
            for error in outcome.worker_errors:
                _say(config, f"{repo}: {error}")
    except Exception as e:  # noqa: BLE001 - the batch is correct without it
        _say(config, f"precompile failed, each process compiles: {e}")
    finally:
        with contextlib.suppress(OSError):  # the cache dir may be gone (batch failed)
            (cache / READY_MARKER).write_text("done\n", encoding="utf-8")


def sharing_cache(config: BatchConfig, cache: Path) -> BatchConfig:
    """``config`` whose benchmark processes share the triton cache dir ``cache``
    (``ZLBENCH_SHARED_TRITON_CACHE``), already filled: no precompile pass."""
    base = dict(config.env if config.env is not None else os.environ)
    return replace(config, env={**base, SHARED_TRITON_CACHE: str(cache)}, precompile_jobs=0)


def _say(config: BatchConfig, line: str) -> None:
    say(config.progress, line)


def sweep_batch_config(config):
    """A record-mode :class:`zlbench.runner.batch.BatchConfig` that sweeps: one worker
    (on the first sweep GPU) whose executor sweeps each op over ``config.sweep_gpus``."""
    spec = SweepSpec(
        list(config.sweep_gpus), say=functools.partial(say, config.progress), name_ops=True
    )
    executor = SweepExecutor(spec, inner=config.executor)
    return replace(config, gpus=[spec.gpus[0]], executor=executor)

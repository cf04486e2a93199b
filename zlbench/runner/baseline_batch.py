"""How a baseline's ops are replayed: the batch a gate measures, and the replay batch of
``zlbench baseline capture``, written once.

Every autotune choice is pinned to the baseline's records (``replay_root``), and the
batch measures what the baseline measured: its dtypes, its shape file, its timing mode
(``kernel`` or ``cudagraph``) and its USE_FLAGTUNE (the tuning space); its recorded op
seconds (``ops_status.csv``) size the batch's budget and its forecast, which names the
GPU model that recorded them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from zlbench.gate.load import BaselineSet, baseline_shape_file
from zlbench.models import BaselineManifest, Measuring, Scheduling, Selection
from zlbench.protocol.layout import OPS_STATUS, split_op_key
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.costs import load_durations
from zlbench.runner.batch.forecast import same_gpu
from zlbench.runner.batch.shard import default_gpus


def baseline_durations(baseline_dir: Path, per_dtype: bool = True) -> dict[str, float]:
    """The recorded seconds per op of the baseline's ops_status.csv (per dtype, or as
    recorded: a GPU budget's unit), when it ships one (they size the batch's time budget
    and the gate's --time-budget); else none."""
    path = Path(baseline_dir) / OPS_STATUS
    return load_durations(path, per_dtype) if path.is_file() else {}


def durations_gpu(manifest: BaselineManifest) -> str | None:
    """The GPU model the baseline's recorded seconds come from, as the forecasts name it
    (``runner.batch.forecast.where_recorded``): the manifest's, unless ``baseline
    capture`` replaced some by its replay pass's on another model
    (``summary.captures``: ``durations`` ops, ``durations_gpu``): that model when it
    replaced every op's, else both (``NVIDIA H200, 22 op(s) replayed on NVIDIA H100``)."""
    cap = manifest.summary.get("captures")
    cap = cap if isinstance(cap, dict) else {}
    n, gpu = cap.get("durations"), cap.get("durations_gpu")
    own = manifest.gpu_model
    if not isinstance(n, int) or n <= 0 or not isinstance(gpu, str) or not gpu:
        return own
    if own and same_gpu(gpu, own):
        return own
    if n >= len(manifest.ops) or not own:
        return gpu
    return f"{own}, {n} op(s) replayed on {gpu}"


def baseline_replay_config(
    baseline: BaselineSet,
    ops: Collection[str],
    out_dir: Path,
    *,
    ops_dir: Path,
    flaggems_dirs: Mapping[str, Path],
    cuda_visible_devices: str | None,
    measuring: Measuring | None = None,
    scheduling: Scheduling | None = None,
    **extra: Any,
) -> BatchConfig:
    """The batch that replays ``ops`` (op keys) of ``baseline`` into ``out_dir`` as the
    module docstring says; ``measuring`` / ``scheduling``: the caller's options (the
    timing mode and the GPUs are the baseline's and the environment's); ``extra``: more
    :meth:`BatchConfig.from_options` fields (progress, argv, shard, ...)."""
    m = baseline.manifest
    selection = Selection(
        all_ops=True,
        repos=tuple(sorted({split_op_key(k)[0] for k in ops})),
        ops_dir=ops_dir,
        dtypes=tuple(m.dtypes),
        shape_file=baseline_shape_file(baseline),
    )
    mode = "kernel" if m.timing == "kernel" else "cudagraph"  # as the baseline was timed
    measuring = (measuring or Measuring()).model_copy(update={"mode": mode})
    gpus = tuple(default_gpus(cuda_visible_devices))
    scheduling = (scheduling or Scheduling()).model_copy(update={"gpus": gpus})
    return BatchConfig.from_options(
        selection,
        measuring,
        scheduling,
        out_dir=out_dir,
        flaggems_dirs={k: Path(v) for k, v in flaggems_dirs.items()},
        restrict_to=set(ops),
        replay_root=baseline.path,
        durations=baseline_durations(baseline.path),
        durations_source="the baseline's",  # the forecast names them and their GPU model
        durations_gpu=durations_gpu(m),
        use_flagtune=m.use_flagtune,  # the tuning space the baseline was measured in
        **extra,
    )

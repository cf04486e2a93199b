"""A real batch over the FlagGems-shaped suite (tests/benchpkg): real plugins, real
pytest processes, TRITON_INTERPRET=1, the fewest iterations that still measure."""

from __future__ import annotations

import io
import os
from pathlib import Path

from zlbench.runner.batch.config import BatchConfig

BENCHPKG = Path(__file__).resolve().parents[1] / "benchpkg"
FAST = ["--iter", "1", "--zl-replays", "2", "--zl-warmup-ms", "1"]


def interpret_config(
    tmp_path: Path, fg: Path, ops: list[str], progress: io.StringIO, **kw
) -> BatchConfig:
    """Batch ``ops`` of checkout ``fg`` (inventory under ``tmp_path/ops``) on the CPU."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("GEMS_VENDOR", None)
    return BatchConfig(
        out_dir=tmp_path / "out",
        flaggems_dirs={"main": fg},
        ops_dir=tmp_path / "ops",
        ops=ops,
        timing="kernel",
        env=env,
        progress=progress,
        extra_pytest_args=FAST,
        **kw,
    )

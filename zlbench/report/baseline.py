"""``zlbench baseline show DIR``: a baseline's manifest and a per-op summary, as text."""

from __future__ import annotations

from collections.abc import Iterable

from zlbench.gate.baselines import OpSummary
from zlbench.models import BaselineManifest


def render_show(m: BaselineManifest, ops: Iterable[OpSummary]) -> str:
    """The manifest (environment, timing, shapes, noise) then one line per op."""
    fg = ", ".join(f"{r}={v.get('commit')}" for r, v in sorted(m.flaggems.items()))
    noise = m.summary.get("noise") or {}
    lines = [
        f"baseline {m.name} (created {m.created})",
        f"  GPU        {m.gpu_model} x{m.gpu_count}, driver {m.driver}",
        f"  torch      {m.torch} (CUDA {m.cuda})",
        f"  compiler   {m.compiler_dist} {m.compiler_version} {m.compiler_commit or ''}".rstrip(),
        f"  FlagGems   {fg}",
        f"  zlbench    {m.zlbench_version} {m.zlbench_commit or ''}".rstrip(),
        f"  timing     {m.timing}, level {m.level}, dtypes {','.join(m.dtypes)}",
        f"  shapes     {m.shape_file} sha256 {str(m.shape_file_sha256)[:12]}",
        f"  repeats    {m.repeats}; default threshold {m.thresholds.default:.1%}",
    ]
    if noise:
        lines.append(
            f"  row noise  p50 {noise['p50']:.2%}  p90 {noise['p90']:.2%}  max {noise['max']:.2%}"
            f" over {noise['rows']} rows"
        )
    short = m.summary.get("short") or {}  # ops built from fewer passes (refresh --min-repeats)
    lines += [f"  fewer passes {key}: {why}" for key, why in sorted(short.items())]
    lines += ["", f"{'op':40} {'rows':>5} {'median speedup':>15} {'max noise':>10}"]
    for o in ops:
        sp = f"{o.median_speedup:.3f}" if o.median_speedup is not None else "-"
        lines.append(f"{o.key:40} {o.rows:>5} {sp:>15} {o.max_noise:>10.2%}")
    return "\n".join(lines)

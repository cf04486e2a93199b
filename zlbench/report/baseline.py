"""``zlbench baseline show DIR``: a baseline's manifest and a per-op summary, as text."""

from __future__ import annotations

from collections.abc import Iterable

from zlbench.gate.baselines import OpSummary
from zlbench.models import BaselineManifest

NOISIEST = 5  # ops named in the summary, noisiest first


def render_show(m: BaselineManifest, ops: Iterable[OpSummary], table: bool = True) -> str:
    """The manifest (environment, timing, shapes, noise) then one line per op
    (``table``) or a summary of the ops (their count, rows, the noisiest). Noise is
    shown only where the baseline measured it: a baseline of ``repeats`` 0 (no replay
    pass) says "not measured", never 0.00 %."""
    ops = list(ops)
    measured = m.repeats > 0
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
    if not measured:
        lines.append("  row noise  not measured (repeats 0: no replay pass)")
    elif noise:
        lines.append(
            f"  row noise  p50 {noise['p50']:.2%}  p90 {noise['p90']:.2%}  max {noise['max']:.2%}"
            f" over {noise['rows']} rows"
        )
    short = m.summary.get("short") or {}  # ops built from fewer passes (refresh --min-repeats)
    lines += [f"  fewer passes {key}: {why}" for key, why in sorted(short.items())]
    if cap := m.summary.get("captures"):  # launch captures added (baseline capture)
        lines.append(
            f"  captures   {cap.get('ops')} ops ({cap.get('rows')} rows) from "
            f"{cap.get('from')}, a replay of {cap.get('replayed')}"
            + (
                f"; its seconds for {cap['durations']} op(s) (on {cap.get('durations_gpu')})"
                if cap.get("durations")
                else ""
            )
            + (
                f"; the recorded seconds kept ({_kept_why(kept)})"
                if (kept := cap.get("durations_kept"))
                else ""
            )
        )
    if not table:
        return "\n".join(lines + _summary(ops, measured))
    lines += ["", f"{'op':40} {'rows':>5} {'median speedup':>15} {'max noise':>10}"]
    for o in ops:
        sp = f"{o.median_speedup:.3f}" if o.median_speedup is not None else "-"
        nz = f"{o.max_noise:>10.2%}" if measured else f"{'-':>10}"
        lines.append(f"{o.key:40} {o.rows:>5} {sp:>15} {nz}")
    return "\n".join(lines)


def _summary(ops: list[OpSummary], measured: bool) -> list[str]:
    """The ops in a few lines: how many, their rows, the noisiest (when measured)."""
    lines = ["", f"  ops        {len(ops):,} ({sum(o.rows for o in ops):,} rows)"]
    noisy = sorted((o for o in ops if o.max_noise > 0), key=lambda o: -o.max_noise)
    if measured and noisy:
        named = ", ".join(f"{o.key} {o.max_noise:.2%}" for o in noisy[:NOISIEST])
        lines.append(f"  noisiest   {named}")
    lines.append("  (one line per op: --table)")
    return lines


def _kept_why(reason: str) -> str:
    """``summary.captures.durations_kept`` in a few words (its whole line: the capture
    command's output)."""
    return "a shared GPU" if "shared its GPU" in reason else "other timing budgets"

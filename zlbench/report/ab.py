"""Markdown sections of the A/B against the base compiler and of the accept list
(pure: strings from a verdict; every artifact string escaped).

* :func:`render_ab_section`: both compilers' identities, the mode, rounds, paired
  threshold and wall time per side, then every row measured A/B: its verdict,
  its change against the base (median of the paired rounds) and against the
  stored baseline, each round's ratio, and "inherited" where the stored baseline
  is stale;
* :func:`render_accept_section`: every accept entry with its reason, the rows it
  matched and what it did to them, and the entries that matched nothing.

Both return "" when the verdict has nothing for them; the full report and the PR
comment show them whenever they are not empty (an accepted row is never silent).
"""

from __future__ import annotations

from zlbench.models import AbCompiler, GateVerdict, RowVerdict
from zlbench.report.escape import md_code, md_text


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f} %"


def _compiler_row(side: str, c: AbCompiler) -> str:
    cells = [side, md_code(c.env), md_code(c.dist or "?"), md_code(c.version or "?")]
    cells += [md_code(c.commit or "unknown"), md_code(c.path or "?")]
    return "| " + " | ".join(cells) + " |"


def _ab_row(r: RowVerdict) -> str:
    ab = r.ab
    assert ab is not None
    rounds = ", ".join(f"{x:.3f}" for x in ab.round_ratios) or "none"
    note = "inherited: the base is as slow (the baseline is stale here)" if ab.inherited else ""
    cells = [
        md_code(r.key.label()),
        r.verdict.value,
        f"{_pct(ab.change)} ({ab.rounds} rounds)",
        _pct(r.judged_change),
        rounds,
        md_text(note),
    ]
    return "| " + " | ".join(cells) + " |"


def render_ab_section(v: GateVerdict) -> str:
    if v.ab is None:
        return ""
    ab = v.ab
    secs = ", ".join(f"{side} {s:.0f} s" for side, s in ab.seconds.items())
    lines = [
        "## A/B against the base compiler",
        "",
        f"Mode **{ab.mode}** ({len(ab.ops)} ops measured both ways), {ab.rounds} rounds "
        f"alternating {' '.join(ab.order[:4])}{' …' if len(ab.order) > 4 else ''}; "
        f"paired threshold {ab.threshold * 100:.1f} % (median of per-round "
        f"base / PR FlagGems latency); wall time {secs or 'n/a'}.",
        "",
        "| side | environment | distribution | version | commit | triton from |",
        "|---|---|---|---|---|---|",
        _compiler_row("PR", ab.pr),
        _compiler_row("base", ab.base),
        "",
        f"| row | verdict | vs the base (+ = slower) | vs {md_text(v.baseline)} | "
        "per-round base/PR | note |",
        "|---|---|---|---|---|---|",
    ]
    lines += [_ab_row(r) for r in v.rows if r.ab is not None]
    return "\n".join(lines) + "\n"


def render_accept_section(v: GateVerdict) -> str:
    if not v.accept:
        return ""
    src = f" from {md_code(v.accept_source)}" if v.accept_source else ""
    lines = [
        "## Accepted regressions",
        "",
        f"{len(v.accept)} accept entr{'y' if len(v.accept) == 1 else 'ies'}{src}. "
        "A matched row within its allowance passes; every matched row is listed.",
        "",
        "| row | verdict | judged change | allowed | accepted? | reason |",
        "|---|---|---|---|---|---|",
    ]
    for r in v.rows:
        if r.accepted is None:
            continue
        e = r.accepted.entry
        change = r.ab.change if r.ab is not None and r.ab.change is not None else r.judged_change
        did = (
            "yes" if r.accepted.applied else ("no: beyond" if r.accepted.exceeded else "not needed")
        )
        cells = [md_code(r.key.label()), r.verdict.value, _pct(change), _pct(e.change), did]
        lines.append("| " + " | ".join(cells + [md_text(e.reason)]) + " |")
    for e in v.accept_unmatched:
        lines.append(
            f"| {md_code(e.label())} | matched no row | | {_pct(e.change)} | | "
            f"{md_text(e.reason)} |"
        )
    return "\n".join(lines) + "\n"

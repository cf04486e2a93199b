"""Change points on a branch's series (docs/history.md "Change points"): Apache Otava's
E-Divisive means (Hunter's split and merge, MongoDB's detector, ``pip install
'zlbench[history]'``) over each row's measured latency, commit by commit, and, for each
change, the commit range it lies in and the timed kernels whose digests changed there.

Pure apart from the import of Otava (a one-line error, exit 2, when it is missing):
no files. The renderers return strings (``report.md``, ``summary.md``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zlbench.errors import ZlbenchError
from zlbench.history.bisect import digest_changes
from zlbench.models.bisect import ChangesReport, RowChange
from zlbench.models.history import SeriesPoint

MISSING = "zlbench changes needs Apache Otava (apache-otava): pip install 'zlbench[history]'"
MIN_POINTS = 4  # fewer points than this: no change can be significant


@dataclass(frozen=True)
class Detector:
    """Otava's parameters (its defaults but the window, sized for nightly series)."""

    window: int = 30
    max_pvalue: float = 0.001
    min_magnitude: float = 0.02

    def label(self) -> str:
        import importlib.metadata as md

        try:
            version = md.version("apache-otava")
        except md.PackageNotFoundError:
            version = "?"
        return (
            f"apache-otava {version} compute_change_points(window_len={self.window}, "
            f"max_pvalue={self.max_pvalue}, min_magnitude={self.min_magnitude})"
        )


def otava():
    """Otava's ``compute_change_points``; one line, exit 2, when not installed."""
    try:
        from otava.analysis import compute_change_points
    except ImportError:
        raise ZlbenchError(MISSING) from None
    return compute_change_points


def series_points(points: Iterable[SeriesPoint]) -> list[SeriesPoint]:
    """One point per commit (the last run of a commit), those with a value, in order."""
    by_commit: dict[str, SeriesPoint] = {}
    for p in points:
        if p.value_us is not None:
            by_commit[p.commit] = p  # by position, then run id: the last run wins
    return sorted(by_commit.values(), key=lambda p: (p.position, p.run_id))


def row_changes(row: str, points: list[SeriesPoint], det: Detector) -> list[RowChange]:
    """The change points of one row's series."""
    pts = series_points(points)
    if len(pts) < MIN_POINTS:
        return []
    values = [float(p.value_us) for p in pts]  # type: ignore[arg-type]
    found, _ = otava()(
        values, window_len=det.window, max_pvalue=det.max_pvalue, min_magnitude=det.min_magnitude
    )
    out = []
    for cp in found:
        i = cp.index
        if not 0 < i < len(pts):
            continue
        before, after = pts[i - 1], pts[i]
        kernels = digest_changes(before.digest, after.digest)
        m1, m2 = float(cp.stats.mean_before()), float(cp.stats.mean_after())
        out.append(
            RowChange(
                row=row,
                index=i,
                before_commit=before.commit,
                commit=after.commit,
                before_position=before.position,
                position=after.position,
                mean_before=round(m1, 6),
                mean_after=round(m2, 6),
                change=round(m2 / m1 - 1.0, 6) if m1 else 0.0,
                pvalue=float(cp.stats.pvalue),
                kernels=kernels,
                digest_changed=bool(kernels),
            )
        )
    return out


def since_filter(points: list[SeriesPoint], since: str) -> list[SeriesPoint]:
    """The points from commit ``since`` (a sha or prefix, or a position) on; the whole
    series when ``since`` is ""; one line, exit 2, when no point is at that commit."""
    if not since:
        return points
    if since.isdigit():
        return [p for p in points if p.position >= int(since)]
    hits = [p.position for p in points if p.commit == since or p.commit.startswith(since)]
    if not hits:
        raise ZlbenchError(f"--since {since}: no point of this row at that commit")
    return [p for p in points if p.position >= min(hits)]


def _grouped(changes: list[RowChange]) -> list[tuple[tuple[str, str], list[RowChange]]]:
    """Changes grouped by commit range, the ranges in commit order."""
    groups: dict[tuple[str, str], list[RowChange]] = {}
    order: dict[tuple[str, str], int] = {}
    for c in changes:
        key = (c.before_commit, c.commit)
        groups.setdefault(key, []).append(c)
        order[key] = c.position
    return [(k, groups[k]) for k in sorted(groups, key=lambda k: order[k])]


def _range(c: RowChange) -> str:
    n = c.position - c.before_position
    inside = "" if n == 1 else f" ({n} commits)"
    return f"`{c.before_commit[:12]}`..`{c.commit[:12]}`{inside}"


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


def render_report(rep: ChangesReport) -> str:
    """``report.md``: every change point, by commit range, with its rows and kernels."""
    lines = [
        f"# Change points on {rep.branch}",
        "",
        f"Store `{rep.store}`; {rep.rows_scanned} row(s) scanned"
        + (f" from {rep.since}" if rep.since else "")
        + f"; detector: {rep.detector}.",
        "",
    ]
    if not rep.changes:
        lines.append("No change point.")
        return "\n".join(lines) + "\n"
    for (_, _), group in _grouped(rep.changes):
        first = group[0]
        slower = sum(c.change > 0 for c in group)
        lines += [
            f"## {_range(first)}: {len(group)} row(s), {slower} slower",
            "",
            "| row | before µs | after µs | change | p-value | kernels whose digest changed |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for c in sorted(group, key=lambda c: -abs(c.change)):
            kernels = ", ".join(f"`{k}`" for k in c.kernels) or "none (same digests)"
            lines.append(
                f"| `{c.row}` | {c.mean_before:.2f} | {c.mean_after:.2f} | {_pct(c.change)} "
                f"| {c.pvalue:.2g} | {kernels} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def render_summary(rep: ChangesReport, limit: int = 10) -> str:
    """``summary.md``: a PR-comment-style summary, one bullet per commit range."""
    if not rep.changes:
        return (
            f"**zlbench changes** ({rep.branch}): no change point in {rep.rows_scanned} row(s).\n"
        )
    groups = _grouped(rep.changes)
    lines = [
        f"**zlbench changes** ({rep.branch}): {len(rep.changes)} change point(s) in "
        f"{len(groups)} commit range(s), {rep.rows_scanned} row(s) scanned.",
        "",
    ]
    for (_, _), group in groups[:limit]:
        worst = max(group, key=lambda c: abs(c.change))
        kernels = sorted({k for c in group for k in c.kernels})
        named = ", ".join(f"`{k}`" for k in kernels[:5]) + (" ..." if len(kernels) > 5 else "")
        said = f"kernels changed: {named}" if kernels else "no timed-kernel digest changed"
        lines.append(
            f"- {_range(worst)}: {len(group)} row(s), worst `{worst.row}` "
            f"{_pct(worst.change)}; {said}"
        )
    if len(groups) > limit:
        lines.append(f"- ... and {len(groups) - limit} more range(s): see report.md")
    return "\n".join(lines) + "\n"

"""Report sections of the A/B against the base compiler and of the accept list
(pure: :class:`~zlbench.report.blocks.Block` s from a verdict; every artifact
string escaped).

* :func:`ab_block`: both compilers' identities, the mode, rounds, paired
  threshold and floor and wall time per side, then every row measured A/B: its
  verdict, its change against the base (median of the paired rounds, relative and
  in µs) and against the stored baseline, each round's ratio, and "inherited"
  where the stored baseline is stale or "within the floor" where the floor passed it;
* :func:`ab_line`: the same A/B's mode, rule and compilers in one plain line
  (report.html);
* :func:`accept_block`: every row an accept entry matched, with the entry's
  allowance and reason and what it did, then the entries that matched no row;
* :func:`render_ab_run`: the report of ``zlbench ab`` (two sides that differ in the
  compiler, in environment variables or both; its caliber named first).

Each is None when the verdict has nothing for it. ``zlbench.report.sections.blocks``
lists them right after the regressions, so the full report and the PR comment show
them whenever they exist (an accepted row is never silent).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from zlbench.gate.numbers import counted
from zlbench.gate.paired import interval_text, us_text
from zlbench.models import AbCompiler, AbSummary, GateVerdict, PairedRow, RowKey, RowVerdict
from zlbench.protocol.pairs import PairRule
from zlbench.report.blocks import Block, table
from zlbench.report.compare import RecordsCheck, caliber_lines, winners_table
from zlbench.report.escape import log_line, md_code, md_text
from zlbench.report.facts import op_names, pct, plain_mark, row_label

AB_HEADER = [
    "row",
    "verdict",
    "vs the base (+ = slower)",
    "vs the stored baseline",
    "per-round base/PR (interleaved: SM clock PR / base)",
    "note",
]
ACCEPT_HEADER = ["row", "verdict", "judged change", "allowed", "accepted?", "reason"]


def _compiler(c: AbCompiler) -> str:
    parts = [md_code(c.dist or "?"), md_code(c.version or "?")]
    parts.append(f"commit {md_code(c.commit or 'unknown')}")
    return " ".join(parts) + f" from {md_code(c.path or '?')} (env {md_code(c.env)})"


def _identity(c: AbCompiler) -> tuple:
    return (c.dist, c.version, c.commit, os.path.normpath(c.path) if c.path else None)


def two_compilers(ab: AbSummary) -> bool:
    """Did the two sides run different compilers? (No: an A/B of environment variables
    on one compiler, whose sides are then "both sides", never "both compilers".)"""
    return _identity(ab.base) != _identity(ab.pr)


def _measured(ab: AbSummary, mode: str) -> str:
    """``Mode full: 34 ops measured both ways in 1 round``, or for an interleaved A/B
    ``Mode changed, caliber pinned: 20 ops measured by both compilers at once, paired
    row by row`` ("both sides" when the sides ran one compiler)."""
    if ab.method == "interleaved":
        return (
            f"Mode {mode}, caliber {ab.caliber}: {counted(len(ab.ops), 'op')} measured by "
            f"both {'compilers' if two_compilers(ab) else 'sides'} at once, "
            f"paired row by row ({ab.min_pairs}–{ab.max_pairs} pairs a row; a row timed "
            f"without CUDA graphs up to {ab.max_pairs_plain}, judged on medians of blocks of "
            f"{ab.block_pairs_plain or PairRule().block_pairs_plain} pairs)"
        )
    return (
        f"Mode {mode}: {counted(len(ab.ops), 'op')} measured both ways in "
        f"{counted(ab.rounds, 'round')}"
    )


def judged_by(v: GateVerdict, code: Callable[[str], str] = lambda s: md_code(s, 80)) -> str:
    """The header's line on what decided: the same-runner interleaved A/B, the rounds
    of an older A/B, or the stored baseline alone (measured on another host and day).
    ``code`` formats an identifier (markdown: a code span; HTML: the text, escaped by
    the template)."""
    ab = v.ab
    if ab is None and v.base_compiler:
        return _no_ab(v, code)
    if ab is None:
        return (
            f"Judged against the stored baseline {code(v.baseline)} alone (no base "
            "compiler: its numbers come from another host and day; "
            f"{code('--base-compiler')} judges on this runner instead)."
        )
    if ab.method == "interleaved":
        conf = f"{(ab.confidence or 0.9) * 100:g} %"
        return (
            f"Judged on this runner: an interleaved A/B against the base compiler "
            f"({counted(len(ab.ops), 'op')}, the two compilers paired row by row, {conf} "
            "intervals); the stored baseline's numbers are context."
        )
    return "Judged on an A/B against the base compiler in rounds; the stored baseline is context."


def _no_ab(v: GateVerdict, code: Callable[[str], str]) -> str:
    """:func:`judged_by` of a gate given a base compiler that A/B-measured nothing:
    why, and what decided instead."""
    base = f"Nothing was measured on the A/B against the base compiler {code(v.base_compiler)}"
    if any(r.current_speedup is not None for r in v.rows):  # timed, but no A/B here
        return (
            f"{base}: this gate dir holds no A/B; judged against the stored baseline "
            f"{code(v.baseline)} alone (its numbers come from another host and day)."
        )
    if any(o.verdict.value == "FAILED" for o in v.ops):
        return (
            f"{base}: every op to time failed to compile, so nothing was timed; the "
            f"compile failures decide (the stored baseline {code(v.baseline)} judged no row)."
        )
    return (
        f"{base}: nothing changed that needed timing (the codegen screen proved the "
        f"kernels unchanged); the stored baseline {code(v.baseline)} judged no row."
    )


INCONCLUSIVE_HEADER = [
    "row",
    "vs the base (+ = slower) [interval]",
    "limit",
    "vs the stored baseline",
]


def _pair_limit(r: RowVerdict, v: GateVerdict) -> str:
    """The paired threshold and floor the row was judged at (a row timed without CUDA
    graphs has a threshold of its own), else the A/B's."""
    t = r.ab.threshold if r.ab is not None and r.ab.threshold is not None else None
    if t is None and v.ab is not None:
        t = v.ab.threshold
    floor = r.ab.floor_us if r.ab is not None and r.ab.floor_us is not None else None
    if floor is None and v.ab is not None:
        floor = v.ab.floor_us
    if t is None:
        return "n/a"
    return pct(t) + (f" and {floor:g} µs" if floor is not None else "")


def inconclusive_block(v: GateVerdict) -> Block | None:
    """Rows whose interleaved A/B still straddles the rule after its budget: first in
    the report, each with its interval and the limit it was judged at; they do not
    fail the gate."""
    rows = [r for r in v.rows if r.verdict.value == "INCONCLUSIVE" and r.ab is not None]
    if not rows:
        return None
    names = op_names(v)
    intro = (
        f"{counted(len(rows), 'row')} could not be decided within the pair budget: the "
        "interval of the % change or of the µs difference still straddles the row's limit, "
        "and neither lies within it. They do not fail the gate; many of them mean this "
        "runner is too noisy for those rows."
    )
    body = [
        [
            md_code(row_label(r.key, names)) + plain_mark(r),
            interval_text(r.ab),
            _pair_limit(r, v),
            pct(r.judged_change),
        ]
        for r in rows
    ]
    return Block("Inconclusive rows", intro, INCONCLUSIVE_HEADER, "lrrr", body, decides=True)


def unmeasured_block(v: GateVerdict) -> Block | None:
    """Rows INCONCLUSIVE without a pair: neither compiler measured them on this runner
    (:func:`zlbench.gate.decide.failed_on_base`), each with both failures. Beside the
    inconclusive rows: they do not fail the gate, and nothing judged them."""
    rows = [r for r in v.rows if r.verdict.value == "INCONCLUSIVE" and r.ab is None]
    if not rows:
        return None
    names = op_names(v)
    intro = (
        f"{counted(len(rows), 'row')} failed under the PR's compiler and under the base "
        "compiler alike, which the base did not measure either: this runner measures them "
        "under neither, so nothing here says whether the PR slowed them. They do not fail "
        "the gate; a runner with more memory, or the op's own fix, would judge them."
    )
    body = [[md_code(row_label(r.key, names)), md_text(r.reason)] for r in rows]
    return Block("Not measured under either compiler", intro, ["row", "why"], "ll", body,
                 decides=True)  # fmt: skip


def paired_rule(ab: AbSummary) -> str:
    """The paired rule: ``paired threshold 3.0 % and 0.30 µs: …`` (without a floor:
    the relative threshold alone, as A/Bs recorded before the floor were judged)."""
    t = f"paired threshold {ab.threshold * 100:.1f} %"
    if ab.method == "interleaved":
        conf = f"{(ab.confidence or 0.9) * 100:g} %"
        return (
            f"{t} and {ab.floor_us:g} µs: a row is a REGRESSION when the {conf} intervals of "
            "its median PR / base − 1 and PR − base µs both lie beyond them, PASS when "
            "either lies within, else more pairs, then INCONCLUSIVE"
        )
    if not ab.floor_us:
        return f"{t} (no µs floor) on the median of the per-round base / PR FlagGems latency"
    return (
        f"{t} and {ab.floor_us:g} µs: a row is a REGRESSION when slower than the base "
        "beyond both, on the medians of the per-round base / PR FlagGems latency and "
        "PR − base µs"
    )


def _plain_rule(v: GateVerdict) -> str:
    """The threshold of the rows judged on block medians (timed without CUDA graphs),
    when it is not the A/B's: ``; a row timed without CUDA graphs: +25 %``."""
    own = sorted(
        {
            r.ab.threshold
            for r in v.rows
            if r.ab is not None and r.ab.blocks is not None and r.ab.threshold is not None
        }
        - {v.ab.threshold if v.ab is not None else None}
    )
    if not own:
        return ""
    return "; a row timed without CUDA graphs: " + " or ".join(pct(t) for t in own)


def _note(r: RowVerdict) -> str:
    ab = r.ab
    assert ab is not None
    notes = ["inherited: the base is as slow (the baseline is stale here)"] if ab.inherited else []
    if ab.within_floor:
        notes.append(f"within the {ab.floor_us:g} µs floor")
    if ab.decision is not None and ab.decision != r.verdict.value:  # e.g. a sentinel's drift
        why = r.reason.split(": ", 1)[0][:120]
        notes.append(why if ab.decision in why else f"the pairs: {ab.decision}; {why}")
    return "; ".join(notes)


def _ab_row(r: RowVerdict, names: Mapping[str, str]) -> list[str]:
    ab = r.ab
    assert ab is not None
    if ab.decision is not None:  # interleaved pairs
        clocks = (
            f"SM {ab.pr_mhz:.0f} / {ab.base_mhz:.0f} MHz"
            if ab.pr_mhz is not None and ab.base_mhz is not None
            else ""
        )
        return [
            md_code(row_label(r.key, names)) + plain_mark(r),
            r.verdict.value,
            interval_text(ab) if ab.rounds else "no pair",
            pct(r.judged_change),
            clocks or "n/a",
            md_text(_note(r)),
        ]
    us = f"{us_text(ab.delta_us)}, " if ab.delta_us is not None else ""
    return [
        md_code(row_label(r.key, names)) + plain_mark(r),
        r.verdict.value,
        f"{pct(ab.change)} ({us}{counted(ab.rounds, 'round')})",
        pct(r.judged_change),
        ", ".join(f"{x:.3f}" for x in ab.round_ratios) or "none",
        md_text(_note(r)),
    ]


def ab_block(v: GateVerdict) -> Block | None:
    if v.ab is None:
        return None
    ab = v.ab
    secs = ", ".join(f"{md_text(side)} {s:.0f} s" for side, s in ab.seconds.items()) or "n/a"
    order = ""  # interleaved: both at once, in balanced AB/BA blocks; no order to name
    if ab.method != "interleaved" and ab.order:
        named = " ".join(md_text(s) for s in ab.order[:4]) + (" …" if len(ab.order) > 4 else "")
        order = f" (measured in the order {named})"
    intro = "\n".join(
        [
            f"{_measured(ab, f'**{ab.mode}**')}{order}; {paired_rule(ab)}{_plain_rule(v)}; "
            f"wall time {secs}" + (f" ({md_text(ab.note)})." if ab.note else "."),
            "",
            f"- PR: {_compiler(ab.pr)}",
            f"- base: {_compiler(ab.base)}",
        ]
    )
    names = op_names(v)
    rows = [_ab_row(r, names) for r in v.rows if r.ab is not None]
    return Block("A/B against the base compiler", intro, AB_HEADER, "llrrll", rows)


def ab_line(v: GateVerdict) -> str:
    """The A/B in one plain line (report.html; "" without one): mode, rounds, the
    paired rule and both compilers."""
    ab = v.ab
    if ab is None:
        return ""
    return (
        f"{_measured(ab, ab.mode)}; {paired_rule(ab)}. "
        f"PR: {ab.pr.label()}; base: {ab.base.label()}."
    )


def _accept_row(r: RowVerdict, names: Mapping[str, str]) -> list[str]:
    assert r.accepted is not None
    e = r.accepted.entry
    change = r.ab.change if r.ab is not None and r.ab.change is not None else r.judged_change
    did = "yes" if r.accepted.applied else ("no: beyond" if r.accepted.exceeded else "not needed")
    return [
        md_code(row_label(r.key, names)) + plain_mark(r),
        r.verdict.value,
        pct(change),
        pct(e.change),
        did,
        md_text(e.reason),
    ]


def accept_block(v: GateVerdict) -> Block | None:
    if not v.accept:
        return None
    n = len(v.accept)
    src = f" from {md_code(v.accept_source)}" if v.accept_source else ""
    intro = (
        f"{n} accept entr{'y' if n == 1 else 'ies'}{src}. A matched REGRESSION within its "
        "allowance passes; every matched row is listed, whatever its verdict."
    )
    names = op_names(v)
    rows = [_accept_row(r, names) for r in v.rows if r.accepted is not None]
    rows += [
        [md_code(e.label()), "matched no row", "", pct(e.change), "", md_text(e.reason)]
        for e in v.accept_unmatched
    ]
    return Block("Accepted regressions", intro, ACCEPT_HEADER, "llrrll", rows)


def render_ab_section(v: GateVerdict) -> str:
    b = ab_block(v)
    return b.render(None) if b else ""


def render_accept_section(v: GateVerdict) -> str:
    b = accept_block(v)
    return b.render(None) if b else ""


# --------------------------------------------------------------------------- zlbench ab

CALIBER_WORDS = {
    "pinned": "both sides replayed the same autotune records (A's): the code's change alone",
    "own-best": "each side tuned fresh into its own records and replayed its own winners: "
    "what a user gets, tuner drift included",
}


@dataclass
class AbRunCaliber:
    """One caliber of a ``zlbench ab``: its summary (``ab.json``), each row's pairs
    judged, the check of the records the two replays ran with, and the ops a side
    did not pass (``side op: STATUS``)."""

    summary: AbSummary
    rows: dict[RowKey, PairedRow]
    records: RecordsCheck
    failed: list[str] = field(default_factory=list)

    def count(self, decision: str) -> int:
        return sum(1 for p in self.rows.values() if p.decision == decision)


@dataclass
class AbRun:
    """A ``zlbench ab``: the caliber asked for and, when both were measured, the
    pinned one beside it."""

    primary: AbRunCaliber
    pinned: AbRunCaliber | None = None

    @property
    def exit_code(self) -> int:
        """1 when a row of the caliber asked for is a REGRESSION or a side failed an
        op, 2 when no row was paired, else 0."""
        p = self.primary
        if not any(r.rounds for r in p.rows.values()):
            return 2
        return 1 if p.count("REGRESSION") or p.failed else 0


def _side_line(name: str, side: str, ab: AbSummary) -> str:
    env = ab.env_vars.get(side) or {}
    vars_ = " ".join(md_code(f"{k}={v}", 120, table=False) for k, v in sorted(env.items()))
    rec = ab.records.get(side)
    c = ab.pr if side == "pr" else ab.base
    return f"- {name}: {_compiler(c)}; env {vars_ or 'as this one'}" + (
        f"; records {md_code(rec, 200, table=False)}" if rec else ""
    )


def _vs_a(p: PairedRow | None) -> str:
    if p is None:
        return "not measured"
    if not p.rounds:
        return "no pair"
    return f"{p.decision}: " + interval_text(p).replace("vs the base", "vs A")


def render_ab_run(run: AbRun) -> str:
    """``<out>/report.md`` of ``zlbench ab``: the caliber first (named, with what it
    means and whether B's records were A's), the verdict, both sides (compiler,
    variables, records), the rule, each row B vs A (and the pinned caliber's number
    when it was measured too), the winners that differ, the ops a side failed."""
    p, ab = run.primary, run.primary.summary
    n = len(p.rows)
    verdict = "FAIL" if run.exit_code == 1 else ("ERROR" if run.exit_code == 2 else "PASS")
    lines = [
        f"# zlbench ab: B vs A, caliber {ab.caliber}",
        "",
        f'caliber {ab.caliber}: {CALIBER_WORDS[ab.caliber]} (docs/judging.md "Calibers")'
        + (" — an A/A on purpose: both sides alike" if ab.aa else ""),
        f"verdict: {verdict}: {p.count('REGRESSION')} REGRESSION, "
        f"{p.count('INCONCLUSIVE')} INCONCLUSIVE, {p.count('IMPROVEMENT')} IMPROVEMENT of "
        f"{counted(n, 'row')} (+ = B slower)"
        + (f"; {len(p.failed)} op(s) failed on a side" if p.failed else ""),
        *caliber_lines(p.records),
    ]
    if run.pinned is not None:
        q = run.pinned
        lines.append(
            f"pinned caliber (B replaying A's records): {q.count('REGRESSION')} REGRESSION, "
            f"{q.count('INCONCLUSIVE')} INCONCLUSIVE of {counted(len(q.rows), 'row')}"
        )
    lines += [
        "",
        _side_line("A (reference, the base side)", "base", ab),
        _side_line("B (judged, the PR side)", "pr", ab),
        "",
        f"{_measured(ab, 'full')}; {paired_rule(ab)}.",
        "",
    ]
    header = ["row", f"B vs A, {ab.caliber} [interval]"]
    if run.pinned is not None:
        header.append("B vs A, pinned [interval]")
    body = []
    for key, row in p.rows.items():
        cells = [md_code(key.label()), md_text(_vs_a(row), 300)]
        if run.pinned is not None:
            cells.append(md_text(_vs_a(run.pinned.rows.get(key)), 300))
        body.append(cells)
    lines.append(table(header, "l" * len(header), body))
    diffs = p.records.diffs
    if diffs:
        lines += ["", f"## Winners that differ (A vs B): {len(diffs)}", "", winners_table(diffs)]
    if p.failed:
        lines += ["", "## Ops a side did not pass", ""]
        lines += [f"- {md_text(f, 200)}" for f in p.failed]
    return log_line("\n".join(lines)) + "\n"

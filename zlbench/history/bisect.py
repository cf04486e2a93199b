"""The pure logic of ``zlbench bisect`` (docs/history.md "Bisect"): the commit range,
the binary search over it, and what changed between two probes. No files, no
processes: the job (:mod:`zlbench.workflow.bisect`) builds, records and renders.

The search. The commits are GOOD = c0, c1 ... c(n-1) = BAD, oldest first. A probe
rebuilds the row's timed kernels with one commit's compiler; a commit is *old* when
every kernel's digests equal GOOD's, *new* otherwise, *skipped* when its compiler could
not be built (exit 125) or could not load the kernels. GOOD is probed first (it is the
reference). The answer lies among n outcomes: c1 ... c(n-1), or "no kernel changed
in the range"; so the search keeps ``lo`` (the last commit known old, GOOD at first)
and ``hi`` (the first known new, n: past BAD, at first) and probes the middle of the
untested commits between them. Four probes tell 16 outcomes apart: a range of 16
commits takes GOOD + 4 = log2(16) + 1 builds, BAD included in the outcomes and
checked when the search ends on it. A skipped middle is replaced by the nearest
untested commit (git bisect's choice); when only skipped commits are left between
``lo`` and ``hi``, the answer is "one of those or ``hi``".

Every step is a function of the probes recorded so far (:func:`next_step`), so a
resumed bisect picks up exactly where it stopped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from zlbench.errors import ZlbenchError
from zlbench.models.bisect import Probe
from zlbench.models.codegen import STAGES

OLD, NEW, SKIP = "old", "new", "skip"
ERROR_STAGE = "error"  # a kernel that did not compile: {"error": <its error line>}


@dataclass(frozen=True)
class Step:
    """Probe ``commit`` (index ``index``) next."""

    index: int
    commit: str


@dataclass(frozen=True)
class Found:
    """The search's end: ``hi`` is the first commit found new and ``lo`` the last found
    old (``hi`` None: no commit of the range differs from GOOD); ``skipped``: commits
    between them whose compilers could not be built."""

    lo: str
    hi: str | None
    skipped: list[str] = field(default_factory=list)


def linear_range(order: list[str], good: str, bad: str) -> list[str]:
    """GOOD ... BAD of ``order`` (oldest first, every commit once): one line, exit 2,
    when GOOD == BAD, either is unknown, or GOOD is not before BAD."""
    if good == bad:
        raise ZlbenchError(f"GOOD and BAD are the same commit ({good}): nothing to bisect")
    pos = {c: i for i, c in enumerate(order)}
    if len(pos) != len(order):
        dup = next(c for c in order if order.count(c) > 1)
        raise ZlbenchError(f"commit {dup} is listed twice: not a linear history")
    for name, c in (("GOOD", good), ("BAD", bad)):
        if c not in pos:
            raise ZlbenchError(f"{name} {c} is not in the commit list")
    if pos[good] > pos[bad]:
        raise ZlbenchError(
            f"the range is not linear: GOOD {good} is not an ancestor of BAD {bad} "
            "(it comes after it)"
        )
    return order[pos[good] : pos[bad] + 1]


def resolve_commit(order: list[str], name: str, what: str) -> str:
    """A commit named in full or by a unique prefix (of 4+ characters) of one in ``order``."""
    if name in order:
        return name
    hits = [c for c in order if len(name) >= 4 and c.startswith(name)]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise ZlbenchError(f"{what} {name} is ambiguous: {', '.join(hits[:3])} ...")
    raise ZlbenchError(f"{what} {name} is not in the commit range's history")


def classify(probe: Probe | None, reference: Probe | None) -> str | None:
    """OLD / NEW / SKIP of a probe against GOOD's; None when not probed yet."""
    if probe is None:
        return None
    if probe.status == "skip":
        return SKIP
    if reference is None:
        raise ValueError("GOOD is not probed")
    return OLD if probe.digests == reference.digests else NEW


def next_step(commits: list[str], probes: Mapping[str, Probe]) -> Step | Found:
    """The next commit to probe, or the answer, from the probes made so far."""
    good = commits[0]
    ref = probes.get(good)
    if ref is None:
        return Step(0, good)
    if ref.status == "skip":
        raise ZlbenchError(f"GOOD {good} could not be built ({ref.why}): nothing to compare with")
    states = [classify(probes.get(c), ref) for c in commits]
    hi = next((i for i, s in enumerate(states) if s == NEW), len(commits))
    lo = max(i for i in range(hi) if states[i] == OLD)  # GOOD (0) is old
    inner = [i for i in range(lo + 1, hi) if states[i] is None]
    if inner:
        mid = (lo + hi) // 2
        pick = min(inner, key=lambda i: (abs(i - mid), i))
        return Step(pick, commits[pick])
    skipped = [commits[i] for i in range(lo + 1, hi) if states[i] == SKIP]
    return Found(commits[lo], commits[hi] if hi < len(commits) else None, skipped)


def changed_kernels(before: Probe, after: Probe) -> list[tuple[str, str]]:
    """(kernel id, first differing stage) of each kernel whose digests differ, in id
    order; ``"error"`` when one side did not compile it."""
    out = []
    for kid in sorted(set(before.digests) | set(after.digests)):
        a, b = before.digests.get(kid, {}), after.digests.get(kid, {})
        if a == b:
            continue
        if ERROR_STAGE in a or ERROR_STAGE in b:
            out.append((kid, ERROR_STAGE))
            continue
        stage = next((s for s in STAGES if a.get(s) != b.get(s)), None)
        out.append((kid, stage or ERROR_STAGE))
    return out


def kernel_digests(digest: str) -> dict[str, str]:
    """A store point's timed-kernel digest as kernel -> digest: a JSON object,
    ``kernel_id:status:stage`` lines (the parts zlbench.history.record hashes), or
    ``name=sha`` pairs joined by ``;`` or ``,``; any other text (the store's hash of
    those parts) is one digest of the whole row (``{"": digest}``); "" is none."""
    text = (digest or "").strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return {"": text}
        if isinstance(data, dict):
            return {str(k): json.dumps(v, sort_keys=True) for k, v in data.items()}
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1 or (lines and lines[0].count(":") >= 2):  # kernel_id:status:stage
        return {ln.split(":", 1)[0]: ln.split(":", 1)[1] for ln in lines if ":" in ln}
    parts = [p for p in text.replace(",", ";").split(";") if p.strip()]
    if parts and all("=" in p for p in parts):
        return dict(tuple(s.strip() for s in p.split("=", 1)) for p in parts)  # type: ignore[misc]
    return {"": text}


def digest_changes(before: str, after: str) -> list[str]:
    """The kernels whose digest differs between two store points' digests (sorted);
    ``["(row digest)"]`` when the digests are whole-row ones and differ."""
    a, b = kernel_digests(before), kernel_digests(after)
    if not a or not b:
        return []  # a point without digests says nothing
    names = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return ["(row digest)" if n == "" else n for n in names]


def render_report(state) -> str:
    """``<out>/report.md`` of a :class:`~zlbench.models.bisect.BisectState`."""
    a = state.answer
    lines = [f"# zlbench bisect: {state.row}", ""]
    lines.append(
        f"Range `{state.good[:12]}`..`{state.bad[:12]}`: {len(state.commits)} commits; "
        f"{state.builds} built, {sum(p.status == 'skip' for p in state.probes.values())} "
        f"skipped; {len(state.kernels)} timed kernel(s) of the row rebuilt by each."
    )
    lines.append("")
    if a is None:
        lines.append("Not finished: run the same command again to resume.")
    elif not a.found:
        lines.append(f"**No step found**: {a.message}.")
    else:
        maybe = (
            " (or one of the skipped commits before it: "
            + ", ".join(c[:12] for c in a.skipped_between)
            + ")"
            if a.skipped_between
            else ""
        )
        lines.append(
            f"**First commit that changed the row's timed kernels: `{a.commit}`**{maybe}; "
            f"its parent `{a.parent}` builds them as GOOD does."
        )
        lines += ["", "| kernel | config | first differing stage | IR diff |", "|---|---|---|---|"]
        for k in a.kernels:
            diff = f"[{k.diff_file}]({k.diff_file})" if k.diff_file else "-"
            if k.changed_lines is not None:
                diff += f" ({k.changed_lines} lines)"
            lines.append(
                f"| `{k.name}` [{k.kernel_id}] | `{k.config}` | {k.first_stage} | {diff} |"
            )
    c = state.confirmation
    if c is not None:
        lines += ["", "## Phase 2: A/B on the GPU", ""]
        moved = f" (the row {c.change:+.1f} %)" if c.change is not None else ""
        said = (
            "confirmed: the row slower than at its parent"
            if c.confirmed
            else "NOT confirmed: the row's interval does not lie above zero"
        ) + moved
        lines.append(f"`zlbench ab` of the commit against its parent exited {c.exit_code}: {said} "
                     f"({c.seconds:.0f} s, {c.out_dir}).")  # fmt: skip
        if c.row_verdict:
            lines += ["", c.row_verdict]
    lines += [
        "",
        "## Probes",
        "",
        "| # | commit | result | seconds | note |",
        "|---|---|---|---:|---|",
    ]
    ref = state.probes.get(state.good)
    for i, commit in enumerate(state.commits):
        p = state.probes.get(commit)
        if p is None:
            continue
        what = SKIP if p.status == "skip" else classify(p, ref)
        lines.append(
            f"| {i} | `{commit[:12]}` | {what} | {p.seconds:.1f} | {p.why or p.compiler} |"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class RowStep:
    """The bisected row's paired change in the phase-2 A/B (+ = the commit slower)."""

    verdict: str  # the A/B's verdict of the row: REGRESSION, PASS, ...
    change: float  # %
    low: float  # % (the interval)
    high: float

    @property
    def slower(self) -> bool:
        """The step is confirmed: the row's interval lies above zero (a REGRESSION, or a
        real slowdown under the gate's threshold)."""
        return self.verdict == "REGRESSION" or self.low > 0


_STEP = re.compile(
    r"\b(?P<verdict>[A-Z]+): (?P<change>[+-]?\d+(?:\.\d+)?) % \\?\["
    r"(?P<low>[+-]?\d+(?:\.\d+)?), (?P<high>[+-]?\d+(?:\.\d+)?)\\?\]"
)


def row_step(line: str) -> RowStep | None:
    """The row's verdict and paired change from its line of the A/B's report
    (``| `row` | REGRESSION: +13.3 % \\[+13.2, +13.4\\] ...``); None when the line has
    none (the row not measured: not confirmed)."""
    m = _STEP.search(line)
    if m is None:
        return None
    return RowStep(m["verdict"], float(m["change"]), float(m["low"]), float(m["high"]))

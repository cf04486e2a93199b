"""Merge the shards' A/B (``<shard gate dir>/ab/``) into a merged gate dir, so the
judge (``gate --results MERGED``) reads every shard's rounds as one A/B.

Round ``i`` of side ``s`` is the merge of the shards' ``ab/<i>/<s>/`` batch dirs
(each shard measured its own suspects); ``ab.json`` is the first shard's with
the op lists joined and the wall times added. Shards that measured with
different modes, methods, paired rules, samplings, claims (an A/A) or compilers cannot be
one A/B (``_identity``), nor can a shard whose two sides are one compiler: one line naming
what differs (exit 2).
"""

from __future__ import annotations

from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import SIDES, AbSummary, PairsFile, dump_json_model, resolve_inside
from zlbench.runner.ab.env import same_compiler_why
from zlbench.runner.ab.interleave import PAIRS_JSON, load_pairs
from zlbench.runner.ab.rounds import AB_DIR, AB_FILE, load_summary, write_summary
from zlbench.runner.batch.merge import merge_batches


# Every ab.json field that changes a verdict, so every shard of one A/B must agree on it
# (docs/security.md "zlbench merge"): how it measured (mode, method, caliber, the PR side
# as the screen, sampling: the sides' Timing and the adaptive pairs, env_vars, records),
# the rule that judges it (threshold, floor_us, threshold_plain), what it claims to be (aa,
# an A/A on purpose) and both compilers. Per shard and joined instead: ops, seconds,
# rounds (the most); the first shard's order and note are kept (they judge nothing). Each
# shard's own sides are checked to be two compilers (same_compiler_why) before this.
def _identity(s: AbSummary) -> dict[str, object]:
    """What every shard of one A/B shares (the comment above)."""
    return {
        "mode": s.mode,
        "method": s.method,
        "caliber": s.caliber,
        "PR side": s.pr_is_screen,
        "threshold": s.threshold,
        "floor": s.floor_us,
        "plain threshold": s.threshold_plain,
        "sampling": s.sampling.model_dump() if s.sampling is not None else None,
        "A/A": s.aa,
        "environment variables": s.env_vars,
        "records": s.records,
        "PR compiler": (s.pr.dist, s.pr.version, s.pr.commit),
        "base compiler": (s.base.dist, s.base.version, s.base.commit),
    }


def merge_summaries(found: list[tuple[Path, AbSummary]]) -> AbSummary:
    for d, s in found:
        if why := same_compiler_why(s.pr, s.base, recorded=True):
            raise ZlbenchError(f"{d / AB_DIR / AB_FILE}: {why}")
    first_dir, first = found[0]
    for d, s in found[1:]:
        a, b = _identity(s), _identity(first)
        if differ := [k for k in a if a[k] != b[k]]:
            raise ZlbenchError(
                f"{d / AB_DIR} and {first_dir / AB_DIR} are A/Bs of different "
                f"{', '.join(differ)}: merge shards of one gate run only"
            )
    seconds = {side: sum(s.seconds.get(side, 0.0) for _, s in found) for side in SIDES}
    ops = sorted({k for _, s in found for k in s.ops})
    rounds = max(s.rounds for _, s in found)
    return first.model_copy(update={"ops": ops, "seconds": seconds, "rounds": rounds})


def merge_ab(gate_dirs: list[Path], out: Path) -> bool:
    """Write ``<out>/ab/`` from the shards' ``ab/`` dirs; False when none has one."""
    found, rounds = [], {}
    for g in gate_dirs:
        got = load_summary(Path(g))
        if got is None:
            continue
        found.append((Path(g), got[0]))
        for i, (pr, base) in enumerate(got[1], start=1):
            rounds.setdefault(i, []).append((pr, base))
    if not found:
        return False
    summary = merge_summaries(found)  # refuses mixed shards before writing anything
    merge_pairs([g for g, _ in found], out / AB_DIR)
    for i, pairs in sorted(rounds.items()):
        merge_batches([p for p, _ in pairs], out / AB_DIR / str(i) / "pr")
        merge_batches([b for _, b in pairs], out / AB_DIR / str(i) / "base")
    write_summary(out / AB_DIR, summary)
    return True


def merge_pairs(gate_dirs: list[Path], out_ab: Path) -> None:
    """``<out>/ab/pairs.json``: every shard's interleaved rows (each shard paired its own
    ops, so a row comes from one shard); nothing when no shard has one. A row in two
    shards is refused: one line."""
    files = [(g, p) for g in gate_dirs if (p := load_pairs(resolve_inside(g, AB_DIR))) is not None]
    if not files:
        return
    rows, seen = [], {}
    for g, f in files:
        for r in f.rows:
            if r.key in seen:
                raise ZlbenchError(
                    f"{r.key.label()} was paired by two shards ({seen[r.key]}, {g}): "
                    "merge shards of one gate run only"
                )
            seen[r.key] = g
            rows.append(r)
    out_ab.mkdir(parents=True, exist_ok=True)
    dump_json_model(out_ab / PAIRS_JSON, PairsFile(rows=rows))

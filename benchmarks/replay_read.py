"""Reading gates run with `zlbench gate --replay` on a GPU (issue 51, docs/replay.md "The
next GPU session"): the numbers docs/measurements.md records for the replay tier.

    python benchmarks/replay_read.py aa GATE_DIR...   # A/A: |change| by instrument
    python benchmarks/replay_read.py agree GATE_DIR [--baseline B]  # rows both instruments timed
    python benchmarks/replay_read.py cost GATE_DIR... # where the step's seconds went
    python benchmarks/replay_read.py opsfile GATE_DIR [--sample N] [--tier F]
    python benchmarks/replay_read.py compare REPLAY_GATE OP_GATE  # one change, both instruments
    python benchmarks/replay_read.py rows GATE_DIR... # the replay step alone, no verdict needed
    python benchmarks/replay_read.py opside BATCH_DIR BASELINE  # op path: replayed vs recorded

``opside``: per op of a batch that replayed a baseline's records (one side, as a
gate's op path times each side), its seconds against the seconds the baseline
recorded (the cost model's op path charges the recorded ones), status and ratio, and
the sums over the ops that ended PASS: how far a record pass's seconds (autotuning
included) overstate a replay-mode op path.

``aa``: every judged A/B row of A/A gates, apart by the instrument that timed it
(``kernel-replay`` or the op path): the paired |change| median, p90 and max over rows
whose base is >= 5 µs (the issue's comparison: the op path's p90 was 1.26 %) and over
all, the pairs per row and the verdicts (an A/A's REGRESSION is a false alarm). Each
gate names the L2 policy its replay ran under (``gate --replay-l2``); gates of two
policies are refused in one line (exit 1): an A/A is read per policy.

``agree``: the rows of one gate that the replay timed *and* the op path timed (the
gate's sentinels and the family sentinels stay on the op path, so their rows have both):
each row's change by each instrument, the verdict the op path gave and the one the
replay's pairs give under the same rule (:func:`zlbench.gate.paired.judge_paired`, the
row's own threshold), every disagreement listed; then the replay's REGRESSION rows
whose op the op path did not time. The replay's evidence is re-derived from its
samples (:func:`zlbench.workflow.ab.load_replay`), as the gate does.

``cost``: per gate the replay step's seconds (builds, workers), the rows it replayed
and the mean seconds a replayed row cost (the cost model's ``ROW_SETUP_S`` plus its
timed calls), where a row's seconds went (``ReplayedRow.phases``: load, materialize,
time, outputs; the slowest rows), the forecast line the gate announced, the gate's
wall time (``steps.json``), and per replayed row the kernel time the replay saw
against the op-level time the baseline recorded (how much of an op's time its kernels
are).

``opsfile``: the ops of the rows a replay gate judged REGRESSION by replay, then every
other replayed op in turn until ``--sample`` more are named, one a line: the ``--ops-file``
of the same change's gate without ``--replay`` (the op path's REGRESSION set for those
ops). ``compare``: per row that both gates judged (the first by replay, the second on the
op path), both changes and verdicts, every disagreement listed.

``rows``: what a gate's replay step left (``replay/replay.json`` and
``replay/pairs.json``), for a gate cut before its verdict (each of the H100's was, in
its op path): the rows that fell back and why, then per replayed row its pairs, both
sides' fastest sample, the change with its interval and the pair rule's decision
(:func:`zlbench.protocol.pairs.decide` on the statistic the judge derives,
:func:`zlbench.gate.replay.replay_stats`), the decisions counted, and |change| as
``aa`` gives it. ``cost`` also reads a gate without a verdict (less the kernel against
op time).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zlbench.cli.settings import Settings  # noqa: E402
from zlbench.cli.trees import resolve_one  # noqa: E402
from zlbench.errors import ZlbenchError  # noqa: E402
from zlbench.gate.load import BaselineSet, load_baseline  # noqa: E402
from zlbench.gate.paired import judge_paired, stats_of  # noqa: E402
from zlbench.gate.replay import replay_stats  # noqa: E402
from zlbench.models import GateVerdict, RowVerdict, Verdict, load_json_model  # noqa: E402
from zlbench.models.ab import PairsFile  # noqa: E402
from zlbench.models.batch import read_ops_status  # noqa: E402
from zlbench.models.replay import REPLAY_DIR, REPLAY_JSON, REPLAY_PAIRS, ReplayRun  # noqa: E402
from zlbench.protocol.layout import OPS_STATUS, op_key  # noqa: E402
from zlbench.protocol.pairs import PairRule, decide  # noqa: E402
from zlbench.workflow.ab import load_replay  # noqa: E402

REPLAY = "kernel-replay"


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def quantiles(xs: list[float]) -> str:
    if not xs:
        return "n 0"
    return (f"n {len(xs)} median {statistics.median(xs):.4f} p90 {_pct(xs, 0.9):.4f} "
            f"max {max(xs):.4f}")  # fmt: skip


def instrument(r: RowVerdict) -> str:
    return REPLAY if r.ab is not None and r.ab.instrument == REPLAY else "op"


def l2_policy(gate: Path) -> str:
    """The L2 policy a gate's replay timed its rows under (``gate --replay-l2``); "-"
    for a gate without a replay."""
    path = gate / REPLAY_DIR / REPLAY_JSON
    return load_json_model(path, ReplayRun).l2 if path.is_file() else "-"


def aa(gates: list[Path]) -> None:
    rows: dict[str, list[RowVerdict]] = {REPLAY: [], "op": []}
    policies = {g: l2_policy(g) for g in gates}
    mixed = sorted(set(policies.values()) - {"-"})
    if len(mixed) > 1:
        sys.exit(
            f"replay_read: the gates' replays ran under other --replay-l2 policies "
            f"({', '.join(mixed)}): read each policy's apart"
        )
    for g in gates:
        v = load_json_model(g / "verdict.json", GateVerdict)
        print(f"{g}: {v.summary} (--replay-l2 {policies[g]})")
        for r in v.rows:
            if r.ab is not None and r.ab.change is not None:
                rows[instrument(r)].append(r)
    for name, got in rows.items():
        big = [abs(r.ab.change) for r in got if r.ab.base_us and min(r.ab.base_us) >= 5.0]
        verdicts: dict[str, int] = {}
        for r in got:
            verdicts[r.verdict.value] = verdicts.get(r.verdict.value, 0) + 1
        print(f"{name}: |change| base >= 5 us: {quantiles(big)}")
        print(f"{name}: |change| all:          {quantiles([abs(r.ab.change) for r in got])}")
        print(f"{name}: pairs per row: {quantiles([float(r.ab.rounds) for r in got])}; "
              f"verdicts {verdicts}")  # fmt: skip


def agree(gate: Path, baseline: BaselineSet | None = None) -> None:
    """``baseline``: the gate's, whose captures re-derive the rows its replay lists as
    timing no Triton kernel (the judge's rule; without it such rows are refused)."""
    v = load_json_model(gate / "verdict.json", GateVerdict)
    ev = load_replay(v, gate, baseline=baseline)
    if ev is None:
        raise SystemExit(f"{gate}: no replay/replay.json")
    rule = PairRule()
    by_key = {r.key: r for r in v.rows}
    both, alone = [], []
    for key, p in ev.rows.items():
        r = by_key.get(key)
        if r is None:
            continue
        if r.ab is not None and r.ab.instrument != REPLAY and r.ab.change is not None:
            both.append((r, p))
        elif r.ab is not None and r.ab.instrument == REPLAY:
            alone.append(r)
    print(f"{gate}: {v.summary}")
    print(f"rows timed by both instruments: {len(both)}")
    differ = 0
    for r, p in sorted(both, key=lambda x: x[0].key.label()):
        t = r.ab.threshold or 0.03
        start = r.model_copy(update={"verdict": Verdict.PASS, "reason": ""})
        by_replay = judge_paired(start, p, t, "base", True, rule.floor_us, rule).verdict
        mark = "" if by_replay is r.verdict else "  <- differ"
        differ += bool(mark)
        print(f"  {r.key.label():70} op {r.ab.change:+.4f} {r.verdict.value:12} "
              f"replay {p.change if p.change is not None else float('nan'):+.4f} "
              f"{by_replay.value}{mark}")  # fmt: skip
    print(f"disagreements: {differ} of {len(both)}")
    reg = [r for r in alone if r.verdict is Verdict.REGRESSION]
    print(f"rows judged by replay alone: {len(alone)}, REGRESSION {len(reg)}")
    for r in reg:
        print(f"  {r.key.label():70} replay {r.ab.change:+.4f}")


def cost(gates: list[Path]) -> None:
    for g in gates:
        run = load_json_model(g / REPLAY_DIR / REPLAY_JSON, ReplayRun)
        n = sum(1 for r in run.rows if r.instrument == REPLAY)
        steps = g / "steps.json"
        total = json.loads(steps.read_text()).get("seconds", {}) if steps.is_file() else {}
        per = run.worker_seconds / n if n else float("nan")
        print(f"{g}: step {run.seconds:.1f} s = builds {run.build_seconds:.1f} s + workers "
              f"{run.worker_seconds:.1f} s over {n} replayed rows ({per:.3f} s a row); "
              f"steps {total}")  # fmt: skip
        if total:  # what the forecasts after the screen are held to
            after = total.get("replay", 0.0) + total.get("measure", 0.0)
            print(f"  after the screen: {after:.1f} s (the replay and measure steps), "
                  f"after the builds: {after - run.build_seconds:.1f} s")  # fmt: skip
        sides = {s: g / d / OPS_STATUS for s, d in (("base", "ab/1/base"), ("pr", "results"))}
        if total.get("measure") and all(f.is_file() for f in sides.values()):
            # the A/B's sides: their op seconds (AB_SIDE_FACTOR times the ops' alone) and
            # the measure step's start (its wall less the slower side's op seconds)
            secs = {s: [st.seconds for st in read_ops_status(f)] for s, f in sides.items()}
            slow = max(sum(v) for v in secs.values())
            print(f"  A/B: {len(secs['pr'])} op(s), op seconds "
                  + ", ".join(f"{s} {sum(v):.1f} s" for s, v in secs.items())
                  + f"; the measure step {total['measure']:.1f} s, its start "
                  f"{total['measure'] - slow:.1f} s")  # fmt: skip
        log = g.parent / f"{g.name}.log"
        if log.is_file():
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                if any(w in line for w in ("expected about", "changed rows replayed")):
                    print(f"  {line[:300]}")
        for err in sorted((g / REPLAY_DIR / "worker").glob("part*/stderr.log")):
            for line in err.read_text(encoding="utf-8", errors="replace").splitlines():
                if "warmed up in" in line or "launcher(s) ready" in line:  # the worker's
                    print(f"  {err.parent.name}: {line[:200]}")
        timed = [r for r in run.rows if r.instrument == REPLAY and r.phases]
        if timed:
            names = ("load", "materialize", "time", "outputs")
            means = {k: statistics.mean(r.phases.get(k, 0.0) for r in timed) for k in names}
            reps = Counter(r.reps for r in timed if r.reps)
            print(f"  calls a sample: {dict(sorted(reps.items())) or 'not said'}")
            print(f"  a row's phases, mean over {len(timed)}: "
                  + ", ".join(f"{k} {v:.3f} s" for k, v in means.items()))  # fmt: skip
            for r in sorted(timed, key=lambda r: -sum(r.phases.values()))[:5]:
                print(f"    {r.key.label():60} {sum(r.phases.values()):.3f} s {r.phases} "
                      f"reps {r.reps or '?'}")  # fmt: skip
        if not (g / "verdict.json").is_file():
            print("  no verdict.json: the replayed kernel time against the op time not read")
            continue
        v = load_json_model(g / "verdict.json", GateVerdict)
        seen = [
            min(r.ab.base_us) / r.baseline_us
            for r in v.rows
            if instrument(r) == REPLAY and r.ab.base_us and r.baseline_us
        ]
        print(f"  replayed kernel time / recorded op time: {quantiles(seen)}")


def rows(gates: list[Path]) -> None:
    rule = PairRule()
    for g in gates:
        run = load_json_model(g / REPLAY_DIR / REPLAY_JSON, ReplayRun)
        stats = replay_stats(load_json_model(g / REPLAY_DIR / REPLAY_PAIRS, PairsFile), rule)
        print(f"{g}: {run.coverage()}; step {run.seconds:.1f} s (builds "
              f"{run.build_seconds:.1f} s, workers {run.worker_seconds:.1f} s)")  # fmt: skip
        for r in run.rows:
            if r.instrument != REPLAY:
                print(f"  fell back  {r.key.label()[:70]:70} {r.why}")
        decided: dict[str, int] = {}
        for key, p in sorted(stats.items(), key=lambda kv: kv[0].label()):
            d = decide(stats_of(p), rule)
            name = str(d) if d is not None else "undecided"
            decided[name] = decided.get(name, 0) + 1
            print(f"  {key.label()[:70]:70} pairs {p.rounds:2d} base {min(p.base_us):9.2f} us "
                  f"pr {min(p.pr_us):9.2f} us {p.change:+.4f} [{p.change_lo:+.4f}, "
                  f"{p.change_hi:+.4f}] {name}")  # fmt: skip
        big = [abs(p.change) for p in stats.values() if min(p.base_us) >= 5.0]
        print(f"  decisions {decided}")
        print(f"  |change| base >= 5 us: {quantiles(big)}")
        print(f"  |change| all:          {quantiles([abs(p.change) for p in stats.values()])}")


def _by_replay(v: GateVerdict) -> list[RowVerdict]:
    return [r for r in v.rows if instrument(r) == REPLAY and r.ab.change is not None]


def opsfile(gate: Path, sample: int, tier: Path) -> None:
    v = load_json_model(gate / "verdict.json", GateVerdict)
    replayed = _by_replay(v)
    regressed = sorted({r.key.op for r in replayed if r.verdict is Verdict.REGRESSION})
    rest = sorted({r.key.op for r in replayed} - set(regressed))
    step = max(1, len(rest) // sample) if sample else 0
    chosen = set(regressed + (rest[::step][:sample] if step else []))
    for line in tier.read_text(encoding="utf-8").splitlines():  # the tier's own specs
        spec = line.split("#", 1)[0].strip()
        if spec and spec.split("@", 1)[0] in chosen:
            print(spec)


def compare(replayed: Path, op_path: Path) -> None:
    a = {r.key: r for r in _by_replay(load_json_model(replayed / "verdict.json", GateVerdict))}
    b = load_json_model(op_path / "verdict.json", GateVerdict)
    both = [
        (a[r.key], r)
        for r in b.rows
        if r.key in a and r.ab is not None and r.ab.change is not None and instrument(r) == "op"
    ]
    differ = 0
    for x, y in sorted(both, key=lambda p: p[0].key.label()):
        mark = "" if x.verdict is y.verdict else "  <- differ"
        differ += bool(mark)
        print(f"  {x.key.label():70} replay {x.ab.change:+.4f} {x.verdict.value:12} "
              f"op {y.ab.change:+.4f} {y.verdict.value}{mark}")  # fmt: skip
    print(f"rows judged by both: {len(both)}, disagreements: {differ}")


def opside(batch: Path, baseline: Path) -> None:
    rec = {op_key(st.repo, st.run_name): st for st in read_ops_status(baseline / OPS_STATUS)}
    got = read_ops_status(batch / OPS_STATUS)
    both = [0.0, 0.0]
    print(f"{'op':56s} {'recorded':>9s} {'replayed':>9s} {'ratio':>6s}  status")
    for st in sorted(got, key=lambda s: -s.seconds):
        key = op_key(st.repo, st.run_name)
        r = rec[key].seconds if key in rec else float("nan")
        print(f"{key:56s} {r:9.1f} {st.seconds:9.1f} {st.seconds / r:6.2f}  {st.status.value}")
        if st.status == "PASS" and key in rec:
            both[0] += r
            both[1] += st.seconds
    n = sum(1 for st in got if st.status == "PASS")
    print(f"{n} of {len(got)} ops PASS: recorded {both[0]:.1f} s, replayed {both[1]:.1f} s "
          f"(ratio {both[1] / max(both[0], 1e-9):.2f})")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """The command's exit code: 0, or 2 with one line for a gate dir it cannot read (a
    gate cut before its verdict, a file of another format, a missing dir)."""
    try:
        run(argv)
    except ZlbenchError as e:
        print(f"replay_read: {e}", file=sys.stderr)
        return 2
    return 0


def run(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("aa").add_argument("gates", type=Path, nargs="+")
    g = sub.add_parser("agree")
    g.add_argument("gate", type=Path)
    g.add_argument("--baseline", type=Path, help="the gate's baseline (a replay that proves rows)")
    sub.add_parser("cost").add_argument("gates", type=Path, nargs="+")
    o = sub.add_parser("opsfile")
    o.add_argument("gate", type=Path)
    o.add_argument("--sample", type=int, default=6)
    o.add_argument("--tier", type=Path, default=REPO / "ops/tiers/pr.txt")
    sub.add_parser("rows").add_argument("gates", type=Path, nargs="+")
    s = sub.add_parser("opside")
    s.add_argument("batch", type=Path)
    s.add_argument("baseline", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("replayed", type=Path)
    c.add_argument("op_path", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "aa":
        aa(a.gates)
    elif a.cmd == "agree":
        agree(
            a.gate,
            load_baseline(resolve_one(a.baseline, Settings.from_env())) if a.baseline else None,
        )
    elif a.cmd == "cost":
        cost(a.gates)
    elif a.cmd == "rows":
        rows(a.gates)
    elif a.cmd == "opside":
        opside(a.batch, resolve_one(a.baseline, Settings.from_env()))
    elif a.cmd == "opsfile":
        opsfile(a.gate, a.sample, a.tier)
    else:
        compare(a.replayed, a.op_path)


if __name__ == "__main__":
    sys.exit(main())

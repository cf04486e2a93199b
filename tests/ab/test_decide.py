"""The one judge (zlbench.gate.decide): every piece of evidence, the rules in one order,
one restatement. Synthetic verdicts from the real judge (zlsynth dirs)."""

from __future__ import annotations

import pytest

import zlbench.gate.decide as decide_mod
from tests.support.zlsynth import ENV, brow, crow, run_result, write_baseline, write_results
from zlbench.gate import verdict as judging
from zlbench.gate.decide import Evidence, PairedEvidence, ScreenEvidence, decide
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.models import AbCompiler, AbSummary, AcceptEntry, CodegenSummary, Verdict
from zlbench.models.ab import PairedRow
from zlbench.protocol.pairs import PairRule

S = "[4096]"


@pytest.fixture
def screen(tmp_path):
    """x 10 % slower than the stored baseline (REGRESSION), sentinel s 10 % slower too,
    y unchanged; z not measured (MISSING)."""
    base = {
        "x": [brow("x", S, 1.0)],
        "s": [brow("s", S, 1.0)],
        "y": [brow("y", S, 1.0)],
        "z": [brow("z", S, 1.0)],
    }
    b = load_baseline(write_baseline(tmp_path / "bl", base))
    cur = {op: [crow(op, S, 1.0 / lat, lat=lat, torch_lat=1.0)] for op, lat in
           {"x": 1.10, "s": 1.10, "y": 1.0}.items()}  # fmt: skip
    r = load_results(
        write_results(tmp_path / "res", [run_result(o, rs, env=ENV) for o, rs in cur.items()])
    )
    th = load_thresholds(None, b.manifest.thresholds)
    v = judging.run_gate(b, r, th, judging.GateOptions())
    assert {x.key.run_name: x.verdict for x in v.rows} == {
        "x": Verdict.REGRESSION, "s": Verdict.REGRESSION, "y": Verdict.PASS, "z": Verdict.MISSING
    }  # fmt: skip
    return v


def key(v, op):
    return next(r.key for r in v.rows if r.key.run_name == op)


def paired(v, **changes) -> PairedEvidence:
    """An interleaved A/B of the named ops, each PR slower than its base by ``change``."""
    rows = {}
    for op, c in changes.items():
        lo, hi = c - 0.01, c + 0.01
        rows[key(v, op)] = PairedRow(
            rounds=5, ratio=1 / (1 + c), change=c, change_lo=lo, change_hi=hi,
            delta_us=c * 1000, delta_lo_us=lo * 1000, delta_hi_us=hi * 1000, decision="",
        )  # fmt: skip
    s = AbSummary(mode="changed", rounds=1, threshold=0.03, floor_us=0.2, method="interleaved")
    s.pr, s.base, s.ops = (
        AbCompiler(env="pr"),
        AbCompiler(env="/b"),
        sorted(f"main/{o}" for o in changes),
    )
    return PairedEvidence(summary=s, rows=rows, rule=PairRule())


def test_every_rule_in_one_order_then_one_restatement(screen, monkeypatch):
    calls = []
    real = decide_mod.restate
    monkeypatch.setattr(decide_mod, "restate", lambda *a, **k: calls.append(1) or real(*a, **k))
    ev = Evidence(
        # the A/B says x is as slow as its base (inherited) and s +10 % beyond both intervals
        paired=paired(screen, x=0.0, s=0.10),
        screen=ScreenEvidence(
            summary=CodegenSummary(screened=True),
            held_back={"main/z": "not timed: z_kernel fails to compile: RuntimeError: boom"},
            compile_lead="1 kernel(s) the baseline compiled fail to compile: boom",
            identical_sentinels={"main/s"},
        ),
    )
    out = decide(screen, ev)
    assert calls == [1]  # the ops, counts and summary restated once
    by = {r.key.run_name: r for r in out.rows}
    assert by["x"].verdict is Verdict.PASS and by["x"].ab.inherited  # 1. the A/B
    assert by["z"].verdict is Verdict.FAILED and "z_kernel" in by["z"].reason  # 3.
    # 4. the sentinel's A/B REGRESSION is drift: it never fails on its own
    assert by["s"].verdict is Verdict.PASS and by["s"].ab.decision == "REGRESSION"
    assert out.drift and out.drift[0].startswith("s bfloat16 ")  # the op as reports spell it
    assert out.verdict == "FAIL" and out.exit_code == 1
    assert out.summary.startswith("FAIL: 1 kernel(s) the baseline compiled fail to compile")
    assert out.ab is ev.paired.summary and out.codegen.screened
    ops = {o.run_name: o.verdict for o in out.ops}
    assert ops == {"x": Verdict.PASS, "s": Verdict.PASS, "y": Verdict.PASS, "z": Verdict.FAILED}


def test_the_accept_list_comes_after_the_a_b(screen):
    entry = AcceptEntry(op="x", change=0.2, reason="intended")
    out = decide(screen, Evidence(paired=paired(screen, x=0.10, s=0.0), accept=[entry]))
    x = next(r for r in out.rows if r.key.run_name == "x")
    # judged on the A/B first (+10 % vs the base), then accepted up to +20 %
    assert x.ab.decision == "REGRESSION" and x.verdict is Verdict.PASS and x.accepted.applied
    assert x.reason.startswith("+10.0 % accepted up to +20.0 %")
    assert out.accept == [entry] and out.verdict == "FAIL"  # z is still missing


def test_no_evidence_leaves_the_verdict_as_it_is(screen):
    assert decide(screen, Evidence()) is screen


def test_an_error_stays_an_error_but_a_compiler_that_built_nothing_fails(screen):
    err = screen.model_copy(update={"verdict": "ERROR", "exit_code": 2, "summary": "ERROR: env"})
    ev = Evidence(
        paired=paired(screen, x=0.10), screen=ScreenEvidence(identical_sentinels={"main/s"})
    )
    out = decide(err, ev)
    assert out.exit_code == 2 and out.ab is None and not out.drift
    # every op held back and nothing measured: the PR's compiler failed, not the environment
    unmeasured = err.model_copy(
        update={"rows": [r.model_copy(update={"current_speedup": None, "verdict": Verdict.MISSING})
                         for r in err.rows]}
    )  # fmt: skip
    held = {f"main/{o}": "not timed: fails to compile" for o in "xsyz"}
    lead = "4 kernel(s) the baseline compiled fail to compile"
    out = decide(unmeasured, Evidence(screen=ScreenEvidence(held_back=held, compile_lead=lead)))
    assert out.verdict == "FAIL" and out.exit_code == 1 and out.summary.startswith(f"FAIL: {lead}")
    assert all(r.verdict is Verdict.FAILED for r in out.rows)


def test_a_drift_line_says_the_verdict_once():
    from zlbench.gate.decide import sentinels
    from zlbench.models import RowKey, RowVerdict

    k = RowKey(repo="main", run_name="sum", op="sum", dtype="bfloat16", shape="[8]")
    moved = [
        RowVerdict(key=k, verdict=Verdict.INCONCLUSIVE, reason="inconclusive: +6.6 % [+5.8, +7.9]"),
        RowVerdict(key=k.model_copy(update={"shape": "[16]"}), verdict=Verdict.REGRESSION,
                   reason="slower than the base: +9 %"),
    ]  # fmt: skip
    rows, drift = sentinels(moved, {"main/sum"})
    assert drift == [
        "sum bfloat16 [8]: inconclusive: +6.6 % [+5.8, +7.9]",
        "sum bfloat16 [16]: regression, slower than the base: +9 %",
    ]
    assert all(r.verdict is Verdict.PASS for r in rows)


def test_a_drift_line_spells_its_op_as_every_report_does(screen):
    """Issue 50 item 3: the drift line names its row by the op's one spelling
    (protocol.ops.display_names over every op the verdict names), never ``main/s``; where
    another repo has an op of that name too, the spelling that tells them apart."""
    from zlbench.models import OpVerdict
    from zlbench.report.facts import op_names
    from zlbench.report.markdown import render_markdown

    ev = Evidence(
        paired=paired(screen, s=0.10),
        screen=ScreenEvidence(
            summary=CodegenSummary(screened=True), identical_sentinels={"main/s"}
        ),
    )
    out = decide(screen, ev)
    assert out.drift and out.drift[0].startswith(f"{op_names(out)['main/s']} bfloat16 [4096]: ")
    assert out.drift[0].startswith("s bfloat16") and "main/s" not in "".join(out.drift)
    assert "not failing): s bfloat16 \\[4096\\]: regression" in render_markdown(out)
    # a second repo's op of the same name: the drift line says which one moved
    other = OpVerdict(repo="vllm", run_name="s", op="s", verdict=Verdict.MISSING)
    both = screen.model_copy(update={"ops": [*screen.ops, other]})
    assert decide(both, ev).drift[0].startswith("main:s bfloat16 [4096]: ")

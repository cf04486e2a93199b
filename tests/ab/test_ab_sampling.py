"""How an interleaved A/B sampled its rows, as a model (issue 28 item 1's home for the
paired A/B): ``models.timing.PairSampling`` (the sides' per-sample ``Timing``, the clock
read after each sample, the adaptive pairs) recorded in ``ab.json`` (``AbSummary``
version 2), read back from version 1 files, and checked: sides (or shards) sampled
differently are refused in one line, exit 2; the judge reads its rule from the record."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError
from test_interleaved_judge import judge

from tests.support.interleaved import RULE, gate_dir, pairs_of
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.models import (
    AbCompiler,
    AbSummary,
    Timing,
    TimingMethod,
    dump_json_model,
    load_json_model,
)
from zlbench.models.timing import SAMPLING_FIELDS, PairSampling, SampleClock, sides_timing
from zlbench.protocol.pairs import PairRule
from zlbench.runner.ab.merge import merge_summaries
from zlbench.workflow.ab import AbOptions, summary_rule

REPO = Path(__file__).resolve().parents[2]
SLOWER = {"big": pairs_of([110.0, 110.5, 109.5, 110.2, 109.8], 100.0)}  # a REGRESSION


def timings_of(method: TimingMethod) -> list[Timing]:
    """A few Timings of ``method``: its defaults, odd budgets, another mode."""
    return [
        Timing(method=method, mode="cudagraph"),
        Timing(method=method, mode="kernel", warmup_ms=0.1, replays=3),
        Timing(method=method, warmup_ms=1234.5, replays=1),
    ]


def summary(**kw) -> AbSummary:
    sides = {"pr": AbCompiler(path="/pr/triton"), "base": AbCompiler(path="/b/triton")}
    return AbSummary(mode="full", rounds=1, threshold=0.03, method="interleaved", **sides, **kw)


# --------------------------------------------------------------------------- the model


@pytest.mark.parametrize("method", list(TimingMethod))
def test_the_sampling_of_every_method_round_trips_or_is_refused_if_it_cannot_pair(method, tmp_path):
    for timing in timings_of(method):
        if not method.pairs:
            with pytest.raises(ValidationError, match="takes no paired samples"):
                PairSampling(timing=timing)
            continue
        sampling = PairSampling(timing=timing, max_pairs=24)
        dump_json_model(tmp_path / "ab.json", summary(sampling=sampling))
        back = load_json_model(tmp_path / "ab.json", AbSummary)
        assert back.sampling == sampling and back.schema_version == AbSummary.FORMAT_VERSION
        assert back.max_pairs == 24 and back.sampling.timing == timing
        assert PairRule.from_json(PairRule(sampling=sampling).to_json()).sampling == sampling


@pytest.mark.parametrize("method", list(TimingMethod))
def test_sides_timed_alike_give_their_timing_and_any_difference_is_one_line(method):
    for timing in timings_of(method):
        assert sides_timing([timing, None, timing], [timing]) == timing
        assert sides_timing([None], [timing]) == timing  # a side without any: not compared
        other_mode = timing.model_copy(
            update={"mode": "kernel" if timing.mode != "kernel" else None}
        )
        others = [other_mode]
        if method.has_budgets:
            others.append(timing.model_copy(update={"warmup_ms": 25.0}))
            others.append(timing.model_copy(update={"replays": 5}))
        others += [Timing(method=m) for m in TimingMethod if m is not method]
        for other in others:
            with pytest.raises(ValueError, match="sides were timed differently") as e:
                sides_timing([timing], [other])
            assert "\n" not in str(e.value) and timing.text() in str(e.value)
            with pytest.raises(ValueError, match="the base's runs of the A/B were timed"):
                sides_timing([timing], [timing, other])
    assert sides_timing([], [None]) is None


def test_the_default_sampling_is_the_rules_and_the_max_pairs_flag_sets_it():
    assert PairRule().sampling == PairSampling() and PairSampling().clock is SampleClock.NVML
    rule = AbOptions(max_pairs=20).pair_rule()
    assert (rule.max_pairs, rule.max_pairs_plain, rule.min_pairs) == (20, 32, 5)
    assert rule.sampling == PairSampling(max_pairs=20)
    assert AbOptions(max_pairs=40).pair_rule().sampling.max_pairs_plain == 40


# --------------------------------------------------------------------------- version 1


V1 = {
    "schema_version": 1,
    "mode": "changed",
    "rounds": 1,
    "threshold": 0.03,
    "floor_us": 0.2,
    "method": "interleaved",
    "pr_is_screen": True,
    "min_pairs": 5,
    "max_pairs": 16,
    "max_pairs_plain": 32,
    "confidence": 0.9,
}


def v1_rule(data: dict) -> PairRule:
    """The rule version 1's judge read: the flat fields given, the defaults for the rest."""
    given = {k: data[k] for k in SAMPLING_FIELDS if data.get(k) is not None}
    rule = PairRule(threshold=data["threshold"], floor_us=data.get("floor_us", 0.0))
    if data.get("threshold_plain") is not None:
        rule = replace(rule, threshold_plain=data["threshold_plain"])
    return rule.with_sampling(**given)


@pytest.mark.parametrize(
    "fields",
    [{}, {"block_pairs_plain": 2, "threshold_plain": 0.3}, {"max_pairs": 24, "confidence": 0.95}],
)
def test_a_version_1_ab_json_is_upgraded_with_its_flat_rule_as_the_sampling(tmp_path, fields):
    data = V1 | fields
    (tmp_path / "ab.json").write_text(json.dumps(data))
    s = load_json_model(tmp_path / "ab.json", AbSummary)
    assert s.schema_version == 2 and s.sampling is not None and s.sampling.timing is None
    assert summary_rule(s) == v1_rule(data)
    assert "min_pairs" not in s.model_dump() and s.model_dump()["sampling"]["min_pairs"] == 5


def test_a_version_1_rounds_ab_json_has_no_sampling(tmp_path):
    data = {k: v for k, v in V1.items() if k not in SAMPLING_FIELDS} | {"method": "rounds"}
    (tmp_path / "ab.json").write_text(json.dumps(data))
    s = load_json_model(tmp_path / "ab.json", AbSummary)
    assert s.sampling is None and s.min_pairs is None and summary_rule(s) == PairRule(0.03, 0.2)


def test_every_shipped_ab_json_judges_by_the_rule_its_version_1_fields_said():
    files = sorted(REPO.glob("examples/*/ab/ab.json"))
    if not files:
        pytest.skip("examples/ is moved aside")
    for f in files:
        data = json.loads(f.read_text())
        s = load_json_model(f, AbSummary)
        assert summary_rule(s) == v1_rule(data), f
        assert s.sampling is not None and s.sampling.timing is None, f


# --------------------------------------------------------------------------- checked


def set_timing(batch_dir: Path, timing: Timing | None) -> None:
    """Every ``result.json`` under ``batch_dir`` recording ``timing``."""
    for f in batch_dir.rglob("result.json"):
        data = json.loads(f.read_text())
        data["environment"]["timing"] = None if timing is None else timing.model_dump(mode="json")
        f.write_text(json.dumps(data))


def set_sampling(gate: Path, sampling: PairSampling) -> None:
    f = gate / "ab" / "ab.json"
    s = load_json_model(f, AbSummary)
    dump_json_model(f, s.model_copy(update={"sampling": sampling}))


GRAPH = Timing(mode="cudagraph")


def refused(tmp_path, bl, g, capsys) -> str:
    """The one line a judge of gate dir ``g`` that exits 2 says."""
    out = tmp_path / "out"
    rc = main(["gate", "--baseline", str(bl), "--results", str(g), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    return err


def test_sides_timed_alike_and_as_recorded_judge_as_before(tmp_path):
    bl, g = gate_dir(tmp_path, SLOWER)
    rc0, v0, _ = judge(tmp_path, bl, g)
    set_timing(g / "results", GRAPH)
    set_timing(g / "ab" / "1" / "base", GRAPH)
    set_sampling(g, RULE.sampling.timed(GRAPH))
    rc, v, _ = judge(tmp_path, bl, g)
    assert rc == rc0 == 1
    assert [(r.verdict, r.reason) for r in v.rows] == [(r.verdict, r.reason) for r in v0.rows]
    assert v.ab.sampling.timing == GRAPH


@pytest.mark.parametrize(
    ("pr", "base", "said"),
    [
        (GRAPH, Timing(mode="cudagraph", warmup_ms=25), "sides were timed differently"),
        (GRAPH, Timing(mode="cudagraph", replays=5), "sides were timed differently"),
        (GRAPH, Timing(mode="kernel"), "sides were timed differently"),
        (Timing(method="upstream"), Timing(method="upstream"), "takes no paired samples"),
    ],
)
def test_an_ab_whose_sides_were_sampled_differently_is_refused_in_one_line(
    tmp_path, capsys, pr, base, said
):
    bl, g = gate_dir(tmp_path, SLOWER)
    set_timing(g / "results", pr)
    set_timing(g / "ab" / "1" / "base", base)
    assert said in refused(tmp_path, bl, g, capsys)


def test_a_side_whose_runs_were_timed_two_ways_is_refused(tmp_path, capsys):
    bl, g = gate_dir(tmp_path, SLOWER | {"small": pairs_of([50.0] * 5, 50.0)})
    set_timing(g / "results", GRAPH)
    base = g / "ab" / "1" / "base"
    set_timing(base, GRAPH)
    one_run = next(p.parent for p in base.rglob("result.json"))
    set_timing(one_run, GRAPH.model_copy(update={"warmup_ms": 25.0}))
    assert "the base's runs of the A/B were timed differently" in refused(tmp_path, bl, g, capsys)


def test_sides_timed_otherwise_than_the_recorded_sampling_are_refused(tmp_path, capsys):
    bl, g = gate_dir(tmp_path, SLOWER)
    set_timing(g / "results", GRAPH)
    set_timing(g / "ab" / "1" / "base", GRAPH)
    set_sampling(g, RULE.sampling.timed(GRAPH.model_copy(update={"replays": 3})))
    err = refused(tmp_path, bl, g, capsys)
    assert "records sampling with graph warmup_ms=100 replays=3" in err


def test_the_judge_reads_the_adaptive_pairs_from_the_record(tmp_path, capsys):
    """20 pairs +10 %: past the default graph budget (16) a row its sides' runs timed
    plain (its base's ``no_cudagraph``) reads as plain (block medians, judged at 25 %: PASS); one
    they timed with a graph never does (issue 49). With a recorded budget of 24 it is a
    graph row and a REGRESSION. A min_pairs other than the default (no flag sets it) is
    refused."""
    slower = {"big": pairs_of([110.0, 110.4, 109.6, 110.2, 109.8] * 4, 100.0)}
    bl, g = gate_dir(tmp_path, slower)
    r = judge(tmp_path, bl, g)[1].rows[0]
    assert not r.ab.plain and r.ab.decision == "REGRESSION"  # its runs timed a graph
    for f in (g / "ab").rglob("result.json"):  # the base side's run timed it plain
        data = json.loads(f.read_text())
        data["rows"] = [{**row, "no_cudagraph": True} for row in data["rows"]]
        f.write_text(json.dumps(data))
    r = judge(tmp_path, bl, g)[1].rows[0]
    assert r.ab.plain and r.ab.decision == "PASS"
    set_sampling(g, RULE.sampling.model_copy(update={"max_pairs": 24, "max_pairs_plain": 48}))
    rc, v, _ = judge(tmp_path, bl, g)
    assert rc == 1 and not v.rows[0].ab.plain and v.rows[0].ab.decision == "REGRESSION"
    assert v.ab.sampling.max_pairs == 24 and v.ab.max_pairs == 24
    set_sampling(g, RULE.sampling.model_copy(update={"min_pairs": 8}))
    assert "min_pairs 8 (default 5): no flag sets it" in refused(tmp_path, bl, g, capsys)


def test_shards_sampled_differently_are_not_merged():
    a = summary(sampling=PairSampling(timing=GRAPH))
    b = summary(sampling=PairSampling(timing=GRAPH.model_copy(update={"warmup_ms": 25.0})))
    assert merge_summaries([(Path("g1"), a), (Path("g2"), a)]).sampling == a.sampling
    with pytest.raises(ZlbenchError, match="A/Bs of different sampling"):
        merge_summaries([(Path("g1"), a), (Path("g2"), b)])
    with pytest.raises(ZlbenchError, match="sampling"):
        merge_summaries(
            [(Path("g1"), a), (Path("g2"), summary(sampling=PairSampling(max_pairs=8)))]
        )

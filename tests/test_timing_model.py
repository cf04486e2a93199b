"""``models.Timing`` (issue 28 item 1): how a run was timed as one model, recorded in
every result's environment (result.json, batch.json's environments, a baseline's
result.json files); files of before the model hold the string ``timing_method``,
which still loads, parsed into the model."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from zlbench.models import (
    BatchInfo,
    Environment,
    RunResult,
    Timing,
    TimingMethod,
    load_json_model,
    parse_timing,
)
from zlbench.models.timing import DEFAULT_REPLAYS, DEFAULT_WARMUP_MS, number_text

OLD_RESULT = {
    "schema_version": 1,
    "kind": "run",
    "repo": "main",
    "run_name": "add",
    "op": "add",
    "status": "PASS",
    "mode": "replay",
    "timing": "kernel",
    "environment": {"gpu_model": "NVIDIA H200", "mode": "kernel"},
}


def timings_of(method: TimingMethod) -> list[Timing]:
    """A few Timings of ``method``: its defaults, odd budgets, no mode."""
    return [
        Timing(method=method, mode="cudagraph"),
        Timing(method=method, mode="kernel", warmup_ms=0.1, replays=3),
        Timing(method=method, warmup_ms=1234.5678901, replays=1),
    ]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("graph warmup_ms=100 replays=10", Timing(method="graph", warmup_ms=100, replays=10)),
        ("graph warmup_ms=25 replays=5", Timing(warmup_ms=25, replays=5)),
        ("graph warmup_ms=1 replays=2", Timing(warmup_ms=1, replays=2)),
        ("upstream", Timing(method="upstream")),
    ],
)
def test_the_old_timing_method_strings_parse(text, want):
    assert parse_timing(text) == want
    assert parse_timing(text, "kernel") == want.model_copy(update={"mode": "kernel"})


@pytest.mark.parametrize("method", list(TimingMethod))
def test_every_method_reads_back_from_its_text_and_its_json(method):
    for t in timings_of(method):
        assert parse_timing(t.text()) == t
        assert Timing.model_validate_json(t.model_dump_json()) == t
        assert t.text().split()[0] == method.value


@pytest.mark.parametrize("method", list(TimingMethod))
def test_budgets_belong_to_the_methods_that_have_them(method):
    t = Timing(method=method, warmup_ms=7, replays=3)
    if method.has_budgets:
        assert (t.warmup_ms, t.replays) == (7, 3)
        assert Timing(method=method) == Timing(
            method=method, warmup_ms=DEFAULT_WARMUP_MS, replays=DEFAULT_REPLAYS
        )
    else:  # budgets given to a process that does not use them are not how it timed
        assert (t.warmup_ms, t.replays) == (None, None)
        assert t == Timing(method=method)


@pytest.mark.parametrize(
    "text",
    ["", "plain", "graph warmup_ms", "graph warmup=100", "graph replays=0", "graph warmup_ms=-1"],
)
def test_a_malformed_text_is_refused(text):
    with pytest.raises(ValueError):
        parse_timing(text)


def test_the_model_refuses_an_unknown_method_and_is_hashable():
    with pytest.raises(ValidationError):
        Timing(method="plain")
    assert len({Timing(), Timing(warmup_ms=100.0), Timing(replays=3)}) == 2


@pytest.mark.parametrize("x", [0.0, 1.0, 100.0, 0.1, 25.5, 1e-7, 1234.5678901, 1 / 3])
def test_numbers_read_back_exactly(x):
    assert float(number_text(x)) == x
    assert number_text(100.0) == "100"


def test_an_old_results_timing_method_string_loads_into_the_model(tmp_path):
    old = json.loads(json.dumps(OLD_RESULT))
    old["environment"]["timing_method"] = "graph warmup_ms=25 replays=5"
    path = tmp_path / "result.json"
    path.write_text(json.dumps(old))
    res = load_json_model(path, RunResult)
    assert res.environment.timing == Timing(mode="kernel", warmup_ms=25, replays=5)
    # written back as the model, read back the same
    again = RunResult.model_validate_json(res.model_dump_json())
    assert again.environment.timing == res.environment.timing
    assert "timing_method" not in json.loads(res.model_dump_json())["environment"]


@pytest.mark.parametrize("value", [None, "absent"])
def test_a_result_without_one_loads_with_none(tmp_path, value):
    old = json.loads(json.dumps(OLD_RESULT))
    if value is None:
        old["environment"]["timing_method"] = None
    path = tmp_path / "result.json"
    path.write_text(json.dumps(old))
    assert load_json_model(path, RunResult).environment.timing is None


def test_an_old_string_that_does_not_parse_is_refused():
    with pytest.raises(ValidationError):
        Environment.model_validate({"timing_method": "graph warmup_ms=fast"})


def test_the_batch_info_records_it_in_its_environments():
    env = Environment(timing=Timing(mode="cudagraph", warmup_ms=25, replays=5))
    info = BatchInfo(created="2026-01-01T00:00:00Z", environments={"main": env})
    back = BatchInfo.model_validate_json(info.model_dump_json())
    assert back.environments["main"].timing == env.timing
    old = json.loads(info.model_dump_json())
    old["environments"]["main"].pop("timing")
    old["environments"]["main"]["timing_method"] = "upstream"
    old["environments"]["main"]["mode"] = "kernel"
    loaded = BatchInfo.model_validate(old).environments["main"].timing
    assert loaded == Timing(mode="kernel", method="upstream")

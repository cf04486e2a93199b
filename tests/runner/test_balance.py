"""Cost-balanced shards and GPUs: LPT against a brute-force optimum, the hash deal when
nothing is recorded, estimates for ops without a duration, forecasts and shard counts."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models import OpStatus, RunStatus
from zlbench.runner.batch.balance import gpu_bins, imbalance, loads, lpt_bins, shard_keys
from zlbench.runner.batch.costs import (
    DEFAULT_OP_SECONDS,
    PROCESS_START_S,
    estimate_costs,
    load_durations,
    shard_wall,
)
from zlbench.runner.batch.forecast import forecast, render_forecast, suggest_shards
from zlbench.runner.batch.shard import assign_gpus, shard
from zlbench.runner.batch.status import write_ops_status

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "h200-gate-v1"


def brute_force_makespan(costs: dict[str, float], n: int) -> float:
    """The optimum: the smallest longest bin over every assignment of ops to n bins."""
    keys = list(costs)
    best = float("inf")
    for assign in itertools.product(range(n), repeat=len(keys)):
        per_bin = [0.0] * n
        for key, b in zip(keys, assign, strict=True):
            per_bin[b] += costs[key]
        best = min(best, max(per_bin))
    return best


def random_costs(rng: random.Random, count: int) -> dict[str, float]:
    return {f"main/op_{i}": round(rng.lognormvariate(0, 1.2), 3) for i in range(count)}


@pytest.mark.parametrize("seed", range(40))
def test_lpt_is_within_grahams_bound_of_the_brute_force_optimum(seed):
    rng = random.Random(seed)
    n = rng.choice([2, 3])
    costs = random_costs(rng, rng.randint(n + 1, 8))
    opt = brute_force_makespan(costs, n)
    got = max(loads(lpt_bins(costs, n, "shard:"), costs))
    assert opt <= got + 1e-9
    assert got <= (4 / 3 - 1 / (3 * n)) * opt + 1e-9


def test_lpt_reaches_the_optimum_where_hash_dealing_does_not():
    costs = {"main/big": 10.0, "main/a": 5.0, "main/b": 5.0, "main/c": 1.0, "main/d": 1.0}
    assert max(loads(lpt_bins(costs, 2, "shard:"), costs)) == brute_force_makespan(costs, 2) == 11
    hashed = [shard(costs, k, 2) for k in (1, 2)]
    assert max(loads(hashed, costs)) > 11


def test_lpt_is_close_to_the_optimum_on_small_random_cases():
    rng = random.Random(7)
    ratios = []
    for _ in range(30):
        costs = random_costs(rng, 6)
        got = max(loads(lpt_bins(costs, 2, "shard:"), costs))
        ratios.append(got / brute_force_makespan(costs, 2))
    assert sum(abs(r - 1) < 1e-9 for r in ratios) >= 20  # optimal in most cases
    assert sum(ratios) / len(ratios) < 1.02  # and 2 % above it on average


OPS = [f"main/op_{i}" for i in range(53)] + [f"vllm/v_{i}" for i in range(11)]


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_equal_costs_give_exactly_the_hash_deal(n):
    uniform = dict.fromkeys(OPS, 2.5)
    assert [shard_keys(uniform, k, n) for k in range(1, n + 1)] == [
        shard(OPS, k, n) for k in range(1, n + 1)
    ]
    gpus = [str(i) for i in range(n)]
    assert gpu_bins(uniform, gpus) == assign_gpus(OPS, gpus)


def test_balanced_deal_is_independent_of_input_order_and_covers_every_op_once():
    costs = random_costs(random.Random(3), 40)
    costs["main/op_1"] = costs["main/op_2"]  # a tie, broken by the stable hash
    rev = dict(reversed(list(costs.items())))
    bins = [shard_keys(costs, k, 5) for k in range(1, 6)]
    assert bins == [shard_keys(rev, k, 5) for k in range(1, 6)]
    assert sorted(k for b in bins for k in b) == sorted(costs)


def test_bad_shard_and_gpu_lists_are_refused():
    with pytest.raises(ZlbenchError, match="between 1 and N"):
        shard_keys({"main/a": 1.0}, 3, 2)
    with pytest.raises(ZlbenchError, match="empty GPU list"):
        gpu_bins({"main/a": 1.0}, [])
    with pytest.raises(ZlbenchError, match="duplicates"):
        gpu_bins({"main/a": 1.0}, ["0", "0"])


def test_imbalance_is_longest_bin_over_ideal():
    costs = {"main/a": 3.0, "main/b": 1.0}
    assert imbalance([["main/a"], ["main/b"]], costs) == 1.5
    assert imbalance([["main/a", "main/b"], []], costs) == 2.0
    assert imbalance([[], []], {}) == 0.0


# --------------------------------------------------------------- recorded durations


def _status(run_name: str, seconds: float, status=RunStatus.PASS) -> OpStatus:
    return OpStatus(repo="main", op=run_name, run_name=run_name, status=status, seconds=seconds)


def test_durations_are_per_dtype_measured():
    per_dtype, raw = load_durations(EXAMPLE), load_durations(EXAMPLE, per_dtype=False)
    assert per_dtype["main/embedding"] == raw["main/embedding"] / 2  # float32,bfloat16
    assert per_dtype["main/topk"] == raw["main/topk"]


def test_estimates_scale_with_the_dtypes_an_op_will_run():
    costs = estimate_costs(["main/a", "main/b"], {"main/a": 2.0}, {}, dtypes=3)
    assert costs.seconds == {"main/a": 6.0, "main/b": 6.0}


def test_durations_come_from_ops_status_and_skip_rows_are_left_out(tmp_path):
    write_ops_status(
        tmp_path, [_status("abs", 1.5), _status("mm", 9.0), _status("x", 0.0, RunStatus.SKIP)]
    )
    assert load_durations(tmp_path) == {"main/abs": 1.5, "main/mm": 9.0}
    assert load_durations(tmp_path / "ops_status.csv") == {"main/abs": 1.5, "main/mm": 9.0}
    with pytest.raises(ZlbenchError, match="no recorded durations"):
        load_durations(tmp_path / "nope")


def test_the_shipped_example_durations_load():
    durations = load_durations(EXAMPLE)
    assert len(durations) == 35 and durations["main/topk"] > 30


def test_missing_ops_are_estimated_by_family_then_overall_median():
    recorded = {"main/abs": 1.0, "main/exp": 3.0, "main/mm": 10.0, "main/bmm": 20.0}
    families = {"main/abs": "Unary", "main/exp": "Unary", "main/neg": "Unary"}
    families |= {"main/mm": "Blas", "main/bmm": "Blas", "main/addmm": "Blas"}
    costs = estimate_costs(["main/abs", "main/neg", "main/addmm", "main/odd"], recorded, families)
    assert costs.seconds == {"main/abs": 1.0, "main/neg": 2.0, "main/addmm": 15.0, "main/odd": 6.5}
    assert costs.recorded == {"main/abs"}
    assert costs.estimated() == ["main/addmm", "main/neg", "main/odd"]


def test_without_any_duration_every_op_costs_the_default():
    costs = estimate_costs(["main/a", "main/b"], {}, {})
    assert costs.seconds == {"main/a": DEFAULT_OP_SECONDS, "main/b": DEFAULT_OP_SECONDS}


def test_shard_wall_is_the_busiest_gpu_plus_its_process_starts():
    costs = {"main/a": 10.0, "main/b": 1.0, "main/c": 1.0}
    assert shard_wall([["main/a"], ["main/b", "main/c"]], costs) == 10 + PROCESS_START_S
    assert shard_wall([["main/b", "main/c"]], costs, per_process=1) == 2 + 2 * PROCESS_START_S
    assert shard_wall([[], []], costs) == 0.0
    assert shard_wall([["main/a"]], costs, start_s=35.0) == costs["main/a"] + 35.0


# --------------------------------------------------------------- forecast, shard count


def _costs(seconds: dict[str, float]):
    return estimate_costs(seconds, seconds, {})


def test_forecast_covers_every_op_and_counts_estimates():
    costs = estimate_costs(["main/a", "main/b", "main/c"], {"main/a": 30.0, "main/b": 2.0}, {})
    rows = forecast(costs, 2)
    assert sum(f.ops for f in rows) == 3 and sum(f.estimated for f in rows) == 1
    assert rows[0].wall_s == 30 + PROCESS_START_S  # the long op alone in shard 1
    text = render_forecast(rows, "x.csv")
    assert "durations: x.csv" in text and "slowest/mean" in text


def test_suggested_shard_count_is_the_fewest_that_fit():
    costs = _costs(random_costs(random.Random(11), 60))
    target = 60.0
    n = suggest_shards(costs, target)
    assert max(f.wall_s for f in forecast(costs, n)) <= target
    assert max(f.wall_s for f in forecast(costs, n - 1)) > target


def test_more_gpus_per_shard_need_fewer_shards():
    costs = _costs(random_costs(random.Random(12), 80))
    assert suggest_shards(costs, 60, gpus=4) < suggest_shards(costs, 60, gpus=1)


def test_a_target_no_shard_count_can_meet_is_refused():
    costs = _costs({"main/long": 500.0, "main/short": 1.0})
    with pytest.raises(ZlbenchError, match="no shard count up to 2 fits 100 s"):
        suggest_shards(costs, 100)
    with pytest.raises(ZlbenchError, match="must be positive"):
        suggest_shards(costs, 0)


def test_shipped_example_lpt_reaches_the_lower_bound_and_hash_does_not():
    """The figures of docs/measurements.md (computed from recorded durations)."""
    costs = load_durations(EXAMPLE, per_dtype=False)
    total, longest = sum(costs.values()), max(costs.values())
    for n in (2, 3, 4):
        bound = max(longest, total / n) / (total / n)
        hashed = imbalance([shard(costs, k, n) for k in range(1, n + 1)], costs)
        balanced = imbalance(lpt_bins(costs, n, "shard:"), costs)
        assert balanced == pytest.approx(bound, abs=0.005)  # LPT: within 0.5 % of it
        assert hashed > balanced + 0.3
    assert round(imbalance([shard(costs, k, 2) for k in (1, 2)], costs), 2) == 1.35

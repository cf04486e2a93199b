"""A gate dir of an interleaved A/B (``ab/pairs.json`` beside a screen and a base batch),
for the A/B and untrusted tiers."""

from __future__ import annotations

from tests.support.zlsynth import brow, crow, run_result, write_baseline, write_results
from zlbench.models import (
    AbCompiler,
    AbSummary,
    PairedSamples,
    PairSample,
    PairsFile,
    dump_json_model,
)
from zlbench.protocol.pairs import PairRule
from zlbench.runner.ab.rounds import AB_DIR, write_summary

S = "[1024]"
RULE = PairRule()  # the defaults: 3 %, 0.2 µs, 5-16 pairs, 90 %


def batch(root, lat_us: dict[str, float], torch_us: dict[str, float] | None = None):
    torch_us = torch_us or lat_us
    runs = [
        run_result(
            op, [crow(op, S, torch_us[op] / us, lat=us / 1000, torch_lat=torch_us[op] / 1000)]
        )
        for op, us in lat_us.items()
    ]
    return write_results(root, runs)


def gate_dir(tmp_path, pairs: dict[str, list[tuple[float, float]]], screen: float = 1.0):
    """A gate dir of an interleaved A/B: op -> its (PR µs, base µs) pairs. The stored
    baseline has every op at its first base µs; the screen (the PR side) at ``screen``
    times that."""
    base_us = {op: p[0][1] for op, p in pairs.items()}
    bl = write_baseline(
        tmp_path / "bl", {op: [brow(op, S, 1.0, lat=b / 1000)] for op, b in base_us.items()}
    )
    gate = tmp_path / "gate"
    batch(gate / "results", {op: b * screen for op, b in base_us.items()}, base_us)
    batch(gate / AB_DIR / "1" / "base", base_us)
    rows = []
    for op, values in pairs.items():
        key = crow(op, S, 1.0).key("main", op)
        samples = []
        for i, (pr, base) in enumerate(values):
            first = [PairSample(side="pr", ms=pr / 1000), PairSample(side="base", ms=base / 1000)]
            samples += first if i % 2 == 0 else first[::-1]
        rows.append(PairedSamples(key=key, samples=samples))
    dump_json_model(gate / AB_DIR / "pairs.json", PairsFile(rows=rows))
    write_summary(
        gate / AB_DIR,
        AbSummary(
            mode="changed",
            rounds=1,
            order=["pr", "base"],
            threshold=RULE.threshold,
            floor_us=RULE.floor_us,
            ops=[f"main/{op}" for op in pairs],
            pr=AbCompiler(env="(this environment)", path="/pr/triton"),
            base=AbCompiler(env="/envs/base", path="/envs/base/triton"),
            method="interleaved",
            pr_is_screen=True,
            sampling=RULE.sampling,
        ),
    )
    return bl, gate


def pairs_of(pr: list[float], base: float) -> list[tuple[float, float]]:
    return [(p, base) for p in pr]

"""Screening tiers in ``ops/tiers/``, built from the inventory (docs/screening.md).

* **pr**: the gate's core set (``ops/gate_core.txt``) widened by one op of each op
  family it lacks (:data:`PR_WIDENING`), at bfloat16; its replay screen must fit
  :data:`PR_BUDGET_S` on one H200 (checked by the tests against the per-op times
  measured on the H200, ``ops/durations_h200_pr_bf16.csv``). A second dtype would
  double it: float16 and float32 are the nightly tier's.
* **nightly**: the PR tier's ops and one op of every other op family of the
  inventory, each op's own dtypes (FlagGems float benchmarks offer bfloat16,
  float16 and float32), core shapes.
* **full**: every op of the inventory (``--all``), each op's own dtypes.
* **moe-dsv4**: the MXFP4 fused Marlin MoE alone, at the DeepSeek-V4-Flash trace
  shapes (``ops/shapes_fused_marlin_moe_dsv4_flash.yaml``), on a runner with vllm.

An op family is the Benchmark class an op's test builds (``UnaryPointwiseBenchmark``,
``NormBenchmark``...), except for the catch-all classes (``GenericBenchmark*``,
``Benchmark``, unknown) where it is the op itself with its in-place ``_`` and
``_out`` variants folded in (``abs_`` and ``abs_out`` are ``abs``).

The tier files are rendered by :func:`render_tier` and compared with the shipped
files by the tests; ``ZLBENCH_UPDATE_TIERS=1 pytest tests/runner/test_tiers.py``
rewrites them after an inventory or rule change (review the diff).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from zlbench.protocol.ops import variants_family
from zlbench.runner.catalog.inventory import InventoryRow
from zlbench.runner.catalog.resolve import all_selectors, split_selector

TIERS_DIR = "tiers"
PR_BUDGET_S = 300.0  # one H200, replay, one GPU worker: the PR gate's time budget
_CATCH_ALL = re.compile(r"^(GenericBenchmark\w*|Benchmark)?$")
_VARIANT = re.compile(r"(_out|_)$")


@dataclass(frozen=True)
class Tier:
    name: str
    file: str  # under ops/tiers/; "" = the whole inventory (--all)
    dtypes: tuple[str, ...]  # () = each op's own dtypes
    shape_file: str  # under ops/
    purpose: str


TIERS = {
    "pr": Tier(
        "pr",
        "pr.txt",
        ("bfloat16",),
        "shapes_single.yaml",
        f"every PR: the gate core widened by op family, within {PR_BUDGET_S:.0f} s on one H200",
    ),
    "nightly": Tier(
        "nightly",
        "nightly.txt",
        (),
        "shapes_single.yaml",
        "the PR tier plus one op of every other op family, each op's own dtypes",
    ),
    "full": Tier("full", "", (), "shapes_single.yaml", "the whole inventory (--all)"),
    "moe-dsv4": Tier(
        "moe-dsv4",
        "moe_dsv4.txt",
        (),
        "shapes_fused_marlin_moe_dsv4_flash.yaml",
        "the MXFP4 fused Marlin MoE at the DeepSeek-V4-Flash trace shapes the old tool was"
        " built around (16 token counts); needs vllm on the runner: its test and its"
        " weights' repacking call vllm, and it SKIPs without",
    ),
}

# The moe-dsv4 tier: the one op its shape file is for (docs/ops.md).
MOE_DSV4_BODY: tuple[tuple[str, str], ...] = (
    ("fused_marlin_moe@test_fused_marlin_moe_w4a16_mxfp4.py", "MoE (MXFP4 Marlin)"),
)

# Op families the gate core lacks, one op each (SPEC, why): the PR tier's widening.
# Ops that need vLLM as their reference (most MoE benchmarks) are left to nightly:
# without vLLM on the runner they SKIP.
PR_WIDENING: tuple[tuple[str, str], ...] = (
    ("scaled_dot_product_attention", "attention"),
    ("flash_attention_forward", "attention (flash)"),
    ("moe_sum", "MoE reduction"),
    ("per_token_group_quant_fp8", "quantization"),
    ("apply_rotary_pos_emb", "rotary embedding"),
    ("fused_add_rms_norm", "fused norm"),
    ("silu_and_mul", "gated activation"),
    ("cummax", "scan"),
    ("sort", "sort"),
    ("argsort", "sort"),
    ("avg_pool2d", "pooling"),
    ("upsample_bilinear2d", "upsample"),
    ("conv2d", "convolution"),
    ("cross_entropy_loss", "loss"),
    ("logsumexp", "reduction (logsumexp)"),
    ("vector_norm", "norm reduction"),
    ("isin", "search"),
    ("nonzero", "index generation"),
    ("repeat_interleave_self_int", "copy pattern"),
    ("randn", "random"),
)


def op_family(row: InventoryRow) -> str:
    """The op family of one inventory row (see the module docstring)."""
    if not _CATCH_ALL.match(row.bench_class):
        return row.bench_class
    return variants_family(_VARIANT.sub("", row.op))


def selector_rows(rows: Iterable[InventoryRow]) -> dict[str, list[InventoryRow]]:
    """SPEC (``op`` or ``op@file``, as ``--ops`` takes it) -> its inventory rows."""
    rows = list(rows)
    out: dict[str, list[InventoryRow]] = {}
    for spec in all_selectors(rows):
        op, file = split_selector(spec)
        out[spec] = [r for r in rows if r.op == op and (file is None or r.file_name == file)]
    return out


def families(rows: Iterable[InventoryRow]) -> dict[str, list[str]]:
    """Op family -> its SPECs (sorted). A SPEC whose tests build several classes is in each."""
    out: dict[str, set[str]] = {}
    for spec, mine in selector_rows(rows).items():
        for row in mine:
            out.setdefault(op_family(row), set()).add(spec)
    return {fam: sorted(specs) for fam, specs in sorted(out.items())}


def representative(specs: list[str], avoid: set[str]) -> str:
    """The op that stands for a family: the plainest name not in ``avoid`` (dismissed ops)."""
    return min(specs, key=lambda s: (s in avoid, len(s), s))


def nightly_specs(
    rows: Iterable[InventoryRow], include: Iterable[str] = (), avoid: Iterable[str] = ()
) -> list[tuple[str, str]]:
    """(SPEC, family): every SPEC of ``include`` (the PR tier), then one op of each
    family none of them covers; no SPEC twice; sorted by family, then SPEC."""
    fams = families(rows)
    family_of = {spec: fam for fam, specs in fams.items() for spec in specs}
    chosen = {spec: family_of.get(spec, "not in the inventory") for spec in include}
    covered = set(chosen.values())
    for fam, specs in fams.items():
        if fam not in covered:
            chosen.setdefault(representative(specs, set(avoid)), fam)
    return sorted(chosen.items(), key=lambda sf: (sf[1], sf[0]))


def pr_body(core_specs: Iterable[str]) -> list[tuple[str, str]]:
    """The PR tier: the gate core, then :data:`PR_WIDENING` (minus ops already in the core)."""
    core = list(dict.fromkeys(core_specs))
    return [(s, "gate core") for s in core] + [(s, w) for s, w in PR_WIDENING if s not in core]


def render_tier(tier: Tier, body: list[tuple[str, str]], note: str = "") -> str:
    """An ops file: a header saying how to run the tier, then ``SPEC  # comment`` lines."""
    dtypes = f" --dtypes {' '.join(tier.dtypes)}" if tier.dtypes else ""
    head = [
        f"# Tier {tier.name!r}: {tier.purpose}.",
        "# Generated by zlbench.runner.catalog.tiers from ops/inventory_main.csv",
        "# (ZLBENCH_UPDATE_TIERS=1 pytest tests/runner/test_tiers.py); docs/screening.md.",
        f"# Run: zlbench batch --ops-file ops/tiers/{tier.file}{dtypes}",
        f"#      --shape-file ops/{tier.shape_file}",
    ]
    head += [f"# {line}" for line in note.splitlines()]
    width = max((len(s) for s, _ in body), default=0)
    lines = [f"{spec:<{width}}  # {why}" if why else spec for spec, why in body]
    return "\n".join(head + [""] + lines) + "\n"

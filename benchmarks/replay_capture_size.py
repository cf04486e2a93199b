"""What the kernel-replay capture (``codegen/launches.json``, issue 51) adds to a packed
baseline, per row: raw JSON and xz-compressed (goal: <= 0.5 kB per row).

    python benchmarks/replay_capture_size.py [--baseline baselines/v5]   # or v7 (packed)

No GPU: the capture a record pass would write is built from the baseline itself. For
every row, every kernel its codegen index says ran in its timed region
(``KernelUse.timed``) is one launch: each pointer of the kernel's signature a tensor
of the row's (first) shape in the pointer's dtype, statistics drawn from random
values of that dtype (integer pointers of at most EXACT_INT_MAX elements exact),
integer scalars the row's element count, float scalars 1.0, constexprs the recorded
values, a 1-D grid. A kernel function is one launch however many of its compiles the
row timed: a record pass times every config of an autotuned kernel in the row's first
call (v7's diff: 13-21 kernels a row), a capture keeps the last timed call's launches,
one config each (replay mode: the pinned one), and ``replay_timed`` names them as
``baseline capture`` does from its replay-mode run. A row without a timed kernel is
listed without launches, and the capture says what a capture writes now (every row
listed, every launch hooked, the timed uses made while no row was named counted as
``unnamed_calls``) where the index marks every use timed or not. The argument
descriptions, statistics and file text are the capture's own
(``zlbench.plugins.replay_capture``). Printed: rows, launches, bytes per row raw, xz per
op file (the worst case) and xz of all files in one stream (what ``zlbench pack``'s
``tar.xz`` archive does).
"""

from __future__ import annotations

import argparse
import lzma
import math
import re
from pathlib import Path

import torch

from zlbench.cli.settings import Settings
from zlbench.cli.trees import resolve_one
from zlbench.models import BaselineResult, CodegenIndex, load_json_model
from zlbench.models.replay import (
    EXACT_INT_MAX,
    LaunchCapture,
    LaunchSpec,
    RowLaunches,
    capture_rows_at,
)
from zlbench.plugins import replay_capture as rc

DTYPES = {
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
    "fp64": torch.float64,
    "i64": torch.int64,
    "i32": torch.int32,
    "i16": torch.int16,
    "i8": torch.int8,
    "u8": torch.uint8,
    "i1": torch.bool,
}
SAMPLE = 4096  # values the statistics are drawn from
MODEL_GPU = "(the modelled runner)"  # a modelled capture's GPU: the runner it is gated on


def row_shape(text: str) -> list[int]:
    m = re.search(r"Size\(\[([0-9, ]*)\]\)", text) or re.search(r"\[([0-9, ]+)\]", text)
    dims = [int(x) for x in m.group(1).split(",") if x.strip()] if m else []
    return dims if 0 < len(dims) <= 8 else [1024]  # not a tensor's shape: a stand-in


def tensor_arg(name: str, dtype: torch.dtype, shape: list[int], buffer: int, gen) -> object:
    n = math.prod(shape)
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    spec = rc.ArgSpec(
        name=name,
        kind="tensor",
        dtype=str(dtype).removeprefix("torch."),
        shape=shape,
        strides=strides,
        storage=n,
        buffer=buffer,
    )
    integer = not dtype.is_floating_point
    if integer and n <= EXACT_INT_MAX:
        vals = torch.randint(0, max(n, 2), (n,), generator=gen).to(dtype)
        spec.data, spec.digest = rc.exact_values(vals)
    elif integer:
        spec.stats = rc.tensor_stats(torch.randint(0, 1 << 16, (SAMPLE,), generator=gen).to(dtype))
    else:
        spec.stats = rc.tensor_stats(torch.randn(SAMPLE, generator=gen).to(dtype))
    return spec


def launch(rec, shape: list[int], gen) -> LaunchSpec:
    consts = {tuple(c.path): c.value for c in rec.request.constexprs}
    args, buffers = [], 0
    for i, (name, ty) in enumerate(rec.request.signature.items()):
        if ty.startswith("*"):
            args.append(tensor_arg(name, DTYPES.get(ty[1:], torch.float32), shape, buffers, gen))
            buffers += 1
        elif ty == "constexpr":
            v = consts.get((i,))
            args.append(rc.describe_arg(name, v if isinstance(v, int | float | bool) else 0, {}))
        elif ty.startswith("fp"):
            args.append(rc.describe_arg(name, 1.0, {}))
        else:
            args.append(rc.describe_arg(name, math.prod(shape), {}))
    grid = [max(1, -(-math.prod(shape) // 1024)), 1, 1]
    return LaunchSpec(kernel_id=rec.id, kernel=rec.request.kernel.name, grid=grid, args=args)


def op_capture(op_dir: Path, gen) -> LaunchCapture:
    result = load_json_model(op_dir / "result.json", BaselineResult)
    index = load_json_model(op_dir / "codegen" / "index.json", CodegenIndex)
    by_row: dict[tuple, list] = {}
    for r in index.records:
        for key in dict.fromkeys((u.dtype, u.shape) for u in r.used_by if u.timed):
            by_row.setdefault(key, []).append(r)
    uses = [u for r in index.records for u in r.used_by]
    # numbered as the recorder numbers them (consecutive rows of one dtype and shape are
    # one capture row): what the plan matches a baseline row's own on
    at = capture_rows_at([r.key(result.repo, result.run_name) for r in result.rows])
    rows, seen = [], set()
    for row in result.rows:
        occ = at[row.key(result.repo, result.run_name)].occurrence
        if (row.dtype, row.shape, occ) in seen:
            continue
        seen.add((row.dtype, row.shape, occ))
        once: dict[str, object] = {}  # one launch per kernel function (below)
        for r in by_row.get((row.dtype, row.shape), []):
            once.setdefault(r.request.kernel.name, r)
        timed = list(once.values())
        launches = [launch(r, row_shape(row.shape), gen) for r in timed[: rc.MAX_LAUNCHES_PER_ROW]]
        rows.append(
            RowLaunches(
                run_name=result.run_name,
                op=result.op,
                dtype=row.dtype,
                shape=row.shape,
                occurrence=occ,
                launches=launches,
                # what ``baseline capture`` adds from the replay-mode run's own index
                # (codegen.attribute.with_replay_timed): the kernels it timed
                replay_timed=[launch.kernel_id for launch in launches],
            )
        )
    # what a capture now writes (zlbench.plugins.replay_capture): every row it saw timed,
    # the timed uses while no row was named, and every launch hooked (no C extension);
    # where the records do not say whether a use was timed, the capture is not modelled
    # as listing every row (a row without a timed kernel then proves nothing)
    known = all(u.timed is not None for u in uses)
    unnamed = sum(1 for u in uses if u.timed and (u.dtype is None or u.shape is None))
    return LaunchCapture(
        rows=rows,
        lists_every_row=known,
        unnamed_calls=unnamed,
        every_launch_hooked=known,
        gpu_model=MODEL_GPU,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, default=Path("baselines/v5"))
    args = ap.parse_args()
    torch.set_num_threads(1)  # tiny tensors: threads only contend (7.8 ms -> 0.18 ms a stats)
    gen = torch.Generator().manual_seed(0)
    root = resolve_one(args.baseline, Settings.from_env())  # a packed one: its cached copy
    texts, rows, launches = [], 0, 0
    for op_dir in sorted(p.parent.parent for p in root.glob("*/*/codegen/index.json")):
        capture = op_capture(op_dir, gen)
        rows += len(capture.rows)
        launches += sum(len(r.launches) for r in capture.rows)
        texts.append(rc.launches_text(capture).encode())
    raw = sum(len(t) for t in texts)
    per_file = sum(len(lzma.compress(t, preset=9)) for t in texts)
    solid = len(lzma.compress(b"".join(texts), preset=9))
    print(f"baseline {args.baseline}: {len(texts)} ops, {rows} rows, {launches} launches")
    print(f"raw JSON        {raw:>9} B  {raw / rows:7.0f} B/row")
    print(f"xz per op file  {per_file:>9} B  {per_file / rows:7.0f} B/row")
    print(f"xz one stream   {solid:>9} B  {solid / rows:7.0f} B/row  (zlbench pack's tar.xz)")


if __name__ == "__main__":
    main()

"""What the op path costs at the rows a replay gate picks (issue 51, docs/replay.md): a
replay-mode batch of a baseline's ops, each measured at the listed rows only, as the
gate's op path measures a family sentinel (its one row) or an op replayed in part.

    python benchmarks/oppath_rows.py ROWS_FILE BASELINE_DIR -- [zlbench batch flags]

``ROWS_FILE``: one row a line, ``op_key<TAB>dtype<TAB>shape<TAB>occurrence<TAB>model_s``
(``replay_forecast.py --list-sentinel-rows`` writes it; ``#`` lines are comments):
the rows of each op are turned into the batch's row picks
(``runner.batch.parts.row_picks``, as ``workflow.gate.op_path_picks``) against the
baseline's rows. The flags after ``--`` are ``zlbench batch``'s (``--out``,
``--shape-file``, ``--op-timeout``, ...); ``--replay-root BASELINE_DIR`` and the ops
are added here. Then each op's seconds (the batch's ``ops_status.csv``, PASS ops) are
printed beside the model's (``model_s``, one side) and the totals: the model's op-path
seconds of a family sentinel are its row's share of the op's recorded seconds.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zlbench.cli import build_parser  # noqa: E402
from zlbench.cli.options import config_from_args  # noqa: E402
from zlbench.cli.settings import Settings  # noqa: E402
from zlbench.gate.load import load_baseline  # noqa: E402
from zlbench.protocol.ops import spec_of  # noqa: E402
from zlbench.runner.batch.parts import row_picks  # noqa: E402
from zlbench.runner.batch.run import run_batch  # noqa: E402
from zlbench.runner.capture_baseline import replay_seconds  # noqa: E402


def read_rows(path: Path) -> dict[str, list[tuple[str, str, int, float]]]:
    """Op key -> its listed rows (dtype, shape, occurrence, model seconds)."""
    out: dict[str, list[tuple[str, str, int, float]]] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 5:
            sys.exit(f"{path}:{n}: want op_key, dtype, shape, occurrence, model_s (tabs)")
        key, dtype, shape, occ, model = parts
        out.setdefault(key, []).append((dtype, shape, int(occ), float(model)))
    return out


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) < 2 or (len(argv) > 2 and argv[2] != "--"):
        sys.exit(__doc__.split("\n\n")[1])
    rows_file, root, batch_flags = Path(argv[0]), Path(argv[1]), argv[3:]
    wanted = read_rows(rows_file)
    baseline = load_baseline(root)
    picks = {}
    for key, rows in wanted.items():
        res = baseline.ops.get(key)
        if res is None:
            sys.exit(f"{rows_file}: {key} is not an op of {root}")
        want = {(d, s, o) for d, s, o, _ in rows}
        got = row_picks(res.rows, lambda r, w=want: (r.dtype, r.shape, r.occurrence) in w)
        if len(got) != len(want):
            sys.exit(f"{rows_file}: {key}: {len(want)} row(s) listed, {len(got)} in {root}")
        picks[key] = got
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("".join(spec_of(k) + "\n" for k in sorted(picks)))
    try:
        args = build_parser("batch").parse_args(
            ["batch", "--replay-root", str(root), "--ops-file", f.name, *batch_flags]
        )
        config = replace(config_from_args(args, Settings.from_env()), row_picks=picks)
        outcome = run_batch(config)
    finally:
        Path(f.name).unlink()
    measured = replay_seconds(outcome.out_dir)
    model_sum = got_sum = 0.0
    print(f"{'op':48s} {'rows':>4s} {'model s':>8s} {'measured s':>10s}")
    for key in sorted(picks):
        model = sum(m for *_, m in wanted[key])
        got = measured.get(key)
        print(f"{key:48s} {len(picks[key]):4d} {model:8.1f} "
              f"{'-' if got is None else f'{got:.1f}':>10s}")  # fmt: skip
        if got is not None:
            model_sum, got_sum = model_sum + model, got_sum + got
    print(f"{len(measured)} of {len(picks)} op(s) PASS: model {model_sum:.0f} s, measured "
          f"{got_sum:.0f} s (one side)")  # fmt: skip
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())

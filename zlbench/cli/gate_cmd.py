"""`zlbench gate`: replay a baseline's op set, judge it, write the reports.

Three layers (STYLE.md): argv -> :func:`_run` builds plain values -> the pure
judge (``zlbench.gate``) and renderers (``zlbench.report``); this module writes
what they return. Measuring goes through :func:`measure_batch` /
:func:`make_remeasure`, small adapters over ``zlbench.runner.batch.run.run_batch``
that tests replace with fakes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.errors import ZlbenchError
from zlbench.gate.confirm import Remeasure
from zlbench.gate.load import (
    CONFIRM_DIR,
    RESULTS_DIR,
    BaselineSet,
    ResultsSet,
    load_baseline,
    load_results,
)
from zlbench.gate.plan import baseline_scope, read_ops_file
from zlbench.gate.thresholds import load_thresholds
from zlbench.gate.verdict import SUMMARY_SEP, GateOptions, run_gate
from zlbench.models import GateVerdict, Row, RowKey, ThresholdsFile, atomic_write_text
from zlbench.report.junit import render_junit
from zlbench.report.markdown import render_markdown


def add_parser(sub) -> None:
    p = sub.add_parser(
        "gate",
        help="replay a baseline's ops, judge them, write junit.xml, report.md, verdict.json",
    )
    p.add_argument("--baseline", required=True, metavar="DIR", help="baseline dir (baselines/vN)")
    sel = p.add_mutually_exclusive_group()
    sel.add_argument("--ops", nargs="+", metavar="SPEC", help="judge only these baseline ops")
    sel.add_argument("--ops-file", metavar="F", help="file of op specs, one a line")
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="measure shard K of N (1-based) and confirm its flagged ops; the verdict comes "
        "from `zlbench merge` of the shards' --out dirs + `gate --results`",
    )
    p.add_argument("--results", metavar="DIR", help="judge this results dir; measure nothing")
    p.add_argument("--thresholds", metavar="Y", help="thresholds yaml (default: the manifest's)")
    p.add_argument("--allow-env-mismatch", action="store_true", help="judge despite a mismatch")
    p.add_argument(
        "--confirm", type=int, metavar="N", help="re-measures of a flagged op (default: manifest)"
    )
    p.add_argument(
        "--ops-dir",
        default=None,
        metavar="D",
        help="inventories and dismiss list (default: ./ops, else this zlbench checkout's ops/)",
    )
    p.add_argument("--out", default="zlbench-gate", metavar="DIR", help="output dir")
    p.set_defaults(func=_run)


# --------------------------------------------------------------------------- measuring


@dataclass
class MeasureRequest:
    """What the gate asks the batch runner to measure (replay of ``baseline``)."""

    baseline: BaselineSet
    ops: set[str]  # op keys "<repo>/<run_name>"
    out_dir: Path
    shard: tuple[int, int] | None
    ops_dir: Path
    settings: Settings


def _shape_file(baseline: BaselineSet) -> Path | None:
    name = baseline.manifest.shape_file
    if not name:
        return None
    for cand in (Path(name), baseline.path / name, baseline.path / Path(name).name):
        if cand.is_file():
            return cand
    raise ZlbenchError(f"{baseline.path / 'manifest.yaml'}: field 'shape_file': {name} not found")


def measure_batch(req: MeasureRequest) -> tuple[Path, int]:
    """Replay ``req.ops`` against the baseline's records: (batch dir, batch exit code)."""
    from zlbench.runner.batch.config import BatchConfig
    from zlbench.runner.batch.run import run_batch
    from zlbench.runner.batch.shard import default_gpus

    s, m = req.settings, req.baseline.manifest
    config = BatchConfig(
        out_dir=req.out_dir,
        flaggems_dirs={k: Path(v) for k, v in s.flaggems_dirs.items()},
        ops_dir=req.ops_dir,
        all_ops=True,
        repos=sorted({k.split("/", 1)[0] for k in req.ops}),
        restrict_to=set(req.ops),
        gpus=default_gpus(s.cuda_visible_devices),
        shard=req.shard,
        replay_root=req.baseline.path,
        timing="kernel" if m.timing == "kernel" else "cudagraph",
        dtypes=list(m.dtypes),
        shape_file=_shape_file(req.baseline),
        progress=sys.stderr,
        argv=list(sys.argv),
    )
    outcome = run_batch(config)
    return outcome.out_dir, outcome.exit_code


def make_remeasure(req: MeasureRequest, confirm_root: Path) -> Remeasure:
    """The confirm step's re-measure: ``times`` replay batches of the flagged ops,
    into ``<out>/confirm/<i>/`` (kept, so ``zlbench report`` re-judges the same)."""

    def remeasure(ops: list[str], times: int) -> list[Mapping[RowKey, Row]]:
        passes = []
        for i in range(1, times + 1):
            sub = MeasureRequest(
                req.baseline, set(ops), confirm_root / str(i), None, req.ops_dir, req.settings
            )
            batch_dir, _ = measure_batch(sub)
            passes.append(load_results(batch_dir).sample_rows())
        return passes

    return remeasure


# --------------------------------------------------------------------------- judging


def now_utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_reports(verdict: GateVerdict, out: Path, settings: Settings) -> None:
    """junit.xml, report.md, verdict.json into ``out`` (each atomically); report.md is
    also appended to GITHUB_STEP_SUMMARY when that is set."""
    markdown = render_markdown(verdict)
    atomic_write_text(out / "junit.xml", render_junit(verdict))
    atomic_write_text(out / "report.md", markdown)
    atomic_write_text(out / "verdict.json", verdict.model_dump_json(indent=2) + "\n")
    if settings.github_step_summary:
        try:
            with open(settings.github_step_summary, "a", encoding="utf-8") as f:
                f.write(markdown + "\n")
        except OSError as e:
            print(f"zlbench: cannot append to GITHUB_STEP_SUMMARY: {e}", file=sys.stderr)


def dismissed_ops(ops_dir: Path, keys: Iterable[str]) -> dict[str, str]:
    """``<repo>/<run_name>`` -> reason, for the ops that the dismiss list names."""
    from zlbench.runner.catalog.dismiss import find_dismissal, load_dismiss
    from zlbench.runner.catalog.select import DISMISS_FILE

    entries = load_dismiss(Path(ops_dir) / DISMISS_FILE)
    out = {}
    for key in keys:
        repo, run_name = key.split("/", 1)
        entry = find_dismissal(entries, repo, run_name.replace("__at__", "@"))
        if entry is not None:
            out[key] = f"{entry.reason} ({entry.date})"
    return out


def judge_and_write(
    baseline: BaselineSet,
    results: ResultsSet,
    th: ThresholdsFile,
    opts: GateOptions,
    out: Path,
    settings: Settings,
    ops_dir: Path,
    remeasure: Remeasure | None = None,
    command: str = "gate",
) -> int:
    """Judge ``results`` against ``baseline`` (the ops that ``ops_dir``'s dismiss list
    names are dismissed), write the reports into ``out``; the verdict's exit code."""
    opts.dismissed = dismissed_ops(ops_dir, {*baseline.ops, *results.ops})
    verdict = run_gate(baseline, results, th, opts, remeasure)
    write_reports(verdict, out, settings)
    print(verdict.summary)
    print(f"reports: {out / 'report.md'}, {out / 'junit.xml'}, {out / 'verdict.json'}")
    if verdict.exit_code == 2:
        why = verdict.summary.split(SUMMARY_SEP)[0].removeprefix("ERROR: ")
        print(f"zlbench {command}: error: {why}", file=sys.stderr)
    return verdict.exit_code


def common_inputs(args) -> tuple[BaselineSet, ThresholdsFile, set[str] | None]:
    baseline = load_baseline(args.baseline)
    th = load_thresholds(args.thresholds, baseline.manifest.thresholds)
    specs = args.ops or (read_ops_file(args.ops_file) if args.ops_file else None)
    scope, unmatched = baseline_scope(baseline, specs)
    if unmatched:
        print(f"zlbench: not in the baseline, ignored: {', '.join(unmatched)}", file=sys.stderr)
    return baseline, th, scope


def _ops_dir(args) -> Path:
    from zlbench.cli.batch_cmd import default_ops_dir

    return Path(args.ops_dir) if args.ops_dir else default_ops_dir()


def gate_options(args, scope: set[str] | None) -> GateOptions:
    """The judge's options from the flags that ``gate`` and ``report`` share."""
    return GateOptions(
        scope=scope,
        allow_env_mismatch=args.allow_env_mismatch,
        baseline_label=args.baseline,
        generated=now_utc(),
    )


def _run(args) -> int:
    settings = Settings.from_env()
    baseline, th, scope = common_inputs(args)
    out = Path(args.out)
    opts = gate_options(args, scope)
    ops_dir = _ops_dir(args)
    if args.results:
        if args.shard or args.confirm:
            raise ZlbenchError("--shard and --confirm measure on a GPU: not with --results")
        opts.results_label = args.results
        results = load_results(args.results)
        return judge_and_write(baseline, results, th, opts, out, settings, ops_dir)
    from zlbench.runner.batch.shard import parse_shard
    from zlbench.runner.claim import claim_batch_dir

    shard = parse_shard(args.shard) if args.shard else None
    claimed = claim_batch_dir(out, resume=False)  # never mix two gate runs in one dir
    if claimed != out:
        print(f"zlbench gate: {out} is in use; writing to {claimed}", file=sys.stderr)
    out = claimed
    req = MeasureRequest(
        baseline, scope or set(baseline.ops), out / RESULTS_DIR, shard, ops_dir, settings
    )
    opts.confirm_times = th.confirm_repeats if args.confirm is None else args.confirm
    if shard is not None:
        return run_shard(args, baseline, th, opts, req, settings)
    batch_dir, code = measure_batch(req)
    opts.results_label = str(batch_dir)
    results = load_results(batch_dir)
    remeasure = make_remeasure(req, out / CONFIRM_DIR)
    return judge_and_write(baseline, results, th, opts, out, settings, ops_dir, remeasure)


# --------------------------------------------------------------------------- one shard


def shard_scope(batch_dir: Path, results: ResultsSet, scope: set[str] | None) -> set[str]:
    """The ops of a shard's batch: its ops_status.csv rows and batch.json's ops
    (dismissed and skipped included), within ``scope`` when one is given."""
    from zlbench.runner.batch.info import read_batch_info

    keys = set(results.ops)
    info = read_batch_info(batch_dir)
    if info is not None:
        keys |= {*info.ops, *info.skipped, *(d.key for d in info.dismissed)}
    return keys & scope if scope is not None else keys


def run_shard(args, baseline, th, opts: GateOptions, req: MeasureRequest, settings) -> int:
    """``gate --shard K/N``: measure the shard, judge its slice only to find flagged
    ops, re-measure those into ``<out>/confirm/<i>/`` (as the unsharded gate does)
    and write the slice's reports. The verdict belongs to the judge that merges the
    shards' gate dirs (``zlbench merge``) and runs ``gate --results``: exit 0 once
    measured, 2 when nothing was measured. A shard with no op to run (more shards
    than runnable ops) exits 0 with a note and an empty ``results/``."""
    from zlbench.runner.batch.plan import EmptyShardError
    from zlbench.runner.batch.status import write_ops_status

    out, label = req.out_dir.parent, f"{req.shard[0]}/{req.shard[1]}"
    try:
        batch_dir, code = measure_batch(req)
    except EmptyShardError as e:
        write_ops_status(req.out_dir, [])  # a valid, empty batch dir for `zlbench merge`
        print(f"shard {label}: nothing to measure, exit 0 ({e})")
        return 0
    results = load_results(batch_dir)
    opts.scope = shard_scope(batch_dir, results, opts.scope)
    opts.results_label = str(batch_dir)
    remeasure = make_remeasure(req, out / CONFIRM_DIR)
    judge_and_write(
        baseline,
        results,
        th,
        opts,
        out,
        settings,
        req.ops_dir,
        remeasure,
        command=f"gate --shard {label}",
    )
    print(f"shard {label}: the verdict above covers this shard only (the judge gives the verdict):")
    print("zlbench merge SHARD_GATE_DIRS... --out MERGED, then")
    print(f"zlbench gate --baseline {args.baseline} --results MERGED")
    return 2 if code == 2 else 0

"""Synthetic baseline and results dirs for the gate and report tiers (built with the models)."""

from __future__ import annotations

from pathlib import Path

from zlbench.cli import main
from zlbench.gate.baselines import content_hashes
from zlbench.gate.load import load_baseline, load_results
from zlbench.gate.thresholds import load_thresholds
from zlbench.models import (
    OP_STATUS_FIELDS,
    BaselineManifest,
    BaselineResult,
    BaselineRow,
    BatchInfo,
    Environment,
    Marker,
    OpStatus,
    Row,
    RunResult,
    RunStatus,
    ThresholdDefaults,
    atomic_write_text,
    count_markers,
    dump_json_model,
    dump_yaml_model,
)

GPU = "NVIDIA H200"
FG_COMMIT = "ed2508bcb5a0c0ffee0000000000000000000000"
SHAPES_SHA = "ab" * 32
CREATED = "2026-01-01T00:00:00Z"
ENV = Environment(
    gpu_model=GPU,
    gpu_count=1,
    driver="580.159",
    torch="2.11.0+cu130",
    triton_dist="flagtree",
    triton_version="3.6.0",
    flagtree_commit="1234567890abcdef",
    flaggems_package="flag_gems",
    flaggems_commit=FG_COMMIT,
    mode="cudagraph",
    level="core",
)


def brow(op, shape, speedup, *, dtype="bfloat16", noise=0.0, occ=0, lat=1.0, no_cg=False):
    """A baseline row; FlagGems latency ``lat`` ms, torch latency speedup * lat."""
    return BaselineRow(
        op=op,
        dtype=dtype,
        shape=shape,
        occurrence=occ,
        latency_base_ms=speedup * lat,
        latency_ms=lat,
        speedup=speedup,
        repeats=3,
        speedups=[speedup] * 3,
        noise=noise,
        no_cudagraph=no_cg,
    )


def crow(op, shape, speedup, *, dtype="bfloat16", occ=0, lat=1.0, torch_lat=None, **kw):
    """A current row; torch latency defaults to speedup * lat."""
    if speedup is None:
        base = lat = None
    else:
        base = speedup * lat if torch_lat is None else torch_lat
    return Row(
        op=op,
        dtype=dtype,
        shape=shape,
        occurrence=occ,
        latency_base_ms=base,
        latency_ms=lat,
        speedup=None if speedup is None else base / lat,
        **kw,
    )


def write_baseline(root: Path, ops: dict[str, list[BaselineRow]], *, repo="main", **manifest):
    """``ops``: run_name -> rows (op name = run_name unless the rows say otherwise)."""
    root.mkdir(parents=True, exist_ok=True)
    keys = []
    for run_name, rows in ops.items():
        res = BaselineResult(
            repo=repo,
            run_name=run_name,
            op=run_name,
            timing="cudagraph",
            dtypes=["bfloat16"],
            rows=rows,
            environment=ENV,
        )
        dump_json_model(root / repo / run_name / "result.json", res)
        keys.append(f"{repo}/{run_name}")
    data = dict(
        name="vtest",
        created="2026-01-01T00:00:00Z",
        gpu_model=GPU,
        gpu_count=1,
        driver="580.159",
        torch="2.11.0+cu130",
        compiler_dist="flagtree",
        compiler_version="3.6.0",
        compiler_commit="fedcba9876543210",
        flaggems={repo: {"package": "flag_gems", "commit": FG_COMMIT, "dirty": False}},
        shape_file_sha256=SHAPES_SHA,
        dtypes=["bfloat16"],
        timing="cudagraph",
        ops=keys,
        repeats=3,
        # the synthetic rows are built from speedups: judge them with the plain ratio
        thresholds=ThresholdDefaults(estimator="ratio"),
    )
    data.update(manifest)
    # what `baseline refresh` records: the gate refuses a baseline without its hashes
    data.setdefault("files", content_hashes(root))
    dump_yaml_model(root / "manifest.yaml", BaselineManifest(**data))
    return root


def run_result(run_name, rows, *, repo="main", status=RunStatus.PASS, markers=(), env=ENV, **kw):
    markers = list(markers)
    return RunResult(
        repo=repo,
        run_name=run_name,
        op=run_name,
        status=status,
        mode="replay",
        timing=kw.pop("timing", "cudagraph"),
        dtypes=["bfloat16"],
        rows=rows,
        markers=markers,
        marker_counts=count_markers(markers),
        environment=env,
        shape_file_sha256=kw.pop("shape_file_sha256", SHAPES_SHA),
        **kw,
    )


def write_results(
    root: Path, results: list[RunResult], statuses: list[OpStatus] = (), log=None, info=True
):
    """A batch dir: run dirs for ``results``, an ops_status.csv for ``statuses``
    plus every result without an explicit status and (``info``) a batch.json."""
    root.mkdir(parents=True, exist_ok=True)
    given = {(s.repo, s.run_name) for s in statuses}
    all_st = list(statuses)
    for res in results:
        d = root / res.repo / res.run_name
        dump_json_model(d / "result.json", res)
        if log is not None:
            atomic_write_text(d / "run.log", log)
        if (res.repo, res.run_name) not in given:
            all_st.append(
                OpStatus(
                    repo=res.repo,
                    op=res.op,
                    run_name=res.run_name,
                    status=res.status,
                    rows=len(res.rows),
                    run_dir=f"{res.repo}/{res.run_name}",
                )
            )
    write_status(root, *all_st)
    if info:  # as the runner writes it: zlbench merge refuses a shard without one
        keys = sorted({f"{s.repo}/{s.run_name}" for s in all_st})
        dump_json_model(root / "batch.json", BatchInfo(created=CREATED, mode="replay", ops=keys))
    return root


def write_status(batch: Path, *statuses: OpStatus) -> None:
    """An ops_status.csv written as given: no sorting, no check (a test's own bad records)."""
    lines = [",".join(OP_STATUS_FIELDS)]
    for s in statuses:
        rec = s.model_dump(mode="json")
        lines.append(",".join("" if rec[f] is None else str(rec[f]) for f in OP_STATUS_FIELDS))
    atomic_write_text(batch / "ops_status.csv", "\n".join(lines) + "\n")


def gate(tmp_path: Path, bl: Path, results: Path, *extra: str) -> tuple[int, Path]:
    """``zlbench gate`` into ``tmp_path/out``: its exit code and out dir."""
    out = tmp_path / "out"
    rc = main(["gate", "--baseline", str(bl), "--results", str(results), "--out", str(out), *extra])
    return rc, out


def one_error_line(capsys) -> str:
    """The one stderr line of a refused command (no traceback)."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def replay_marker(dtype=None, shape=None, kernel="k", reason="key_missing"):
    return Marker(
        kind="AUTOTUNE_REPLAY_FALLBACK",
        reason=reason,
        kernel=kernel,
        dtype=dtype,
        shape_detail=shape,
    )


def nocg_marker(dtype=None, shape=None):
    return Marker(
        kind="BENCHMARK_DIRECT_NO_CUDAGRAPH",
        reason="capture failed",
        phase="capture",
        dtype=dtype,
        shape_detail=shape,
    )


def load_judge_inputs(tmp_path: Path, base_ops, results, **manifest):
    """Baseline, results and thresholds loaded from synthetic dirs, judged with the
    torch-normalized estimator."""
    b = load_baseline(write_baseline(tmp_path / "bl", base_ops, **manifest))
    r = load_results(write_results(tmp_path / "res", results))
    th = load_thresholds(None, b.manifest.thresholds)
    th.estimator = "torch_normalized"
    return b, r, th


def env_findings(tmp_path: Path, field: str, base, current):
    """The environment findings of one row's run against a one-row baseline whose
    manifest records ``field`` = ``base`` while the run's environment says ``current``."""
    from zlbench.gate.env import check_environment
    from zlbench.gate.load import load_baseline

    baseline = load_baseline(write_baseline(tmp_path / "bl", {"x": [brow("x", "[1]", 1.0)]}))
    setattr(baseline.manifest, field, base)
    env = ENV.model_copy(update={field: current})
    return check_environment(baseline, [run_result("x", [crow("x", "[1]", 1.0)], env=env)])

"""File and dir names of the on-disk contract (docs/design.md, docs/architecture.md).

A run dir (one op measured once)::

    <run_dir>/plan.json            the one-entry plan (`zlbench run`; a worker's is in a temp dir)
             result.json           models.RunResult, written by the plugins at the op's end
             run.log               the op's share of the process output (ANSI stripped)
             shapes.yaml           the shape file in effect (when one was given)
             autotune_records/     one JSON per (op, kernel): the autotune decisions
             ttgir/                the TTGIR of each tuned kernel
             sweep/                a multi-GPU sweep: shard-<k>/, shard-<k>.json, shard-<k>.log
                                   of its children and trust.json (how far they agreed)
             .complete             PASS/SKIP only: a resumed batch keeps this op

A batch dir holds ``<repo>/<run_name>/`` run dirs (:func:`op_dir`) and
ops_status.csv, summary.csv, batch.json, .attempts/. A gate dir holds the
measured batch in results/, the confirm passes in confirm/<i>/ and the reports.
A baseline dir holds manifest.yaml, shapes.yaml and one dir per op.
"""

from __future__ import annotations

from pathlib import Path

# ------------------------------------------------------------------ one run dir
PLAN_JSON = "plan.json"
RESULT_JSON = "result.json"
RUN_LOG = "run.log"
SHAPES_YAML = "shapes.yaml"
RECORDS_DIR = "autotune_records"
TTGIR_DIR = "ttgir"
SWEEP_DIR = "sweep"
TRUST_JSON = "trust.json"  # in SWEEP_DIR
COMPLETE = ".complete"
# In a batch dir whose last run was interrupted (SIGINT, SIGTERM): its ops_status.csv
# lists only the ops decided before the stop ("interrupted: partial"); a later
# --resume, or a run that ends, removes it; the judge refuses such a dir.
INTERRUPTED = "INTERRUPTED"

# ------------------------------------------------------------------ a batch dir
OPS_STATUS = "ops_status.csv"
SUMMARY_CSV = "summary.csv"
BATCH_JSON = "batch.json"
ATTEMPTS_DIR = ".attempts"
GPU_TURNS_CSV = "gpu_turns.csv"  # --gpu-share N: every timed turn (protocol.turn)

# ------------------------------------------------------------------ a gate dir
RESULTS_DIR = "results"  # the measured batch
CONFIRM_DIR = "confirm"  # the confirmation passes, confirm/<i>/
JUNIT_XML = "junit.xml"
REPORT_MD = "report.md"
VERDICT_JSON = "verdict.json"
COMMENT_MD = "comment.md"  # report.md cut to fit a PR comment (ci/pr_comment.py posts it)
REPORT_HTML = "report.html"  # self-contained HTML report
CODEGEN_SCREEN_DIR = "codegen"  # the codegen screen: codegen.json, codegen.md, diffs/, timing.json

# ------------------------------------------------------------------ a baseline dir
MANIFEST_YAML = "manifest.yaml"


def op_key(repo: str, run_name: str) -> str:
    """An op's key, ``<repo>/<run_name>``: the id of a measured op everywhere
    (ops_status.csv, batch.json, verdicts) and its run dir's path in a batch."""
    return f"{repo}/{run_name}"


def split_op_key(key: str) -> tuple[str, str]:
    """``<repo>/<run_name>`` -> ``(repo, run_name)``."""
    repo, _, run_name = key.partition("/")
    return repo, run_name


def op_dir(root: str | Path, repo: str, run_name: str) -> Path:
    """The run dir of an op in a batch or baseline dir: ``<root>/<repo>/<run_name>``."""
    return Path(root) / repo / run_name


def records_dir(run_dir: str | Path) -> Path:
    """Where a run dir keeps its autotune records."""
    return Path(run_dir) / RECORDS_DIR

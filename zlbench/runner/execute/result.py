"""One run dir's result as a batch, a sweep or ``zlbench run`` reads it: its
result.json, else a result rebuilt from its run.log (old dirs), else None."""

from __future__ import annotations

from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import RunResult, load_json_model
from zlbench.protocol.layout import RESULT_JSON, RUN_LOG


def load_run(run_dir: Path) -> RunResult | None:
    """result.json of a run dir; else a RunResult rebuilt from run.log; else None."""
    run_dir = Path(run_dir)
    result = run_dir / RESULT_JSON
    if result.is_file():
        try:
            return load_json_model(result, RunResult)
        except ZlbenchError:
            pass  # truncated or foreign: fall back to the log
    log = run_dir / RUN_LOG
    if log.is_file():
        return _result_from_log(run_dir, log)
    return None


def _result_from_log(run_dir: Path, log: Path) -> RunResult | None:
    from zlbench import parse  # lazy: only old dirs without result.json need it

    text = log.read_text(encoding="utf-8", errors="replace")
    rows = parse.parse_rows(text)
    return RunResult(
        repo=run_dir.parent.name,
        run_name=run_dir.name,
        op=run_dir.name.replace("__at__", "@"),
        status="PASS" if rows else "FAIL",
        mode="record",
        timing="cudagraph",
        rows=rows,
    )


__all__ = ["load_run"]

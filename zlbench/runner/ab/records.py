"""Which autotune records each op of a results dir ran with (read from its files).

A record run used its own winners (``<run_dir>/autotune_records/``), a replay run the
records dir its ``result.json`` names (``replay_from``), a baseline op the records it
ships. ``zlbench compare`` and ``zlbench ab`` compare two sides' records with
:func:`zlbench.report.compare.check_records` to say which caliber a comparison is
(docs/judging.md "Calibers").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate.load import load_baseline, load_results
from zlbench.models import AutotuneRecords, load_json_model
from zlbench.protocol.layout import (
    MANIFEST_YAML,
    RESULT_JSON,
    RESULTS_DIR,
    op_dir,
    op_key,
    records_dir,
)

Records = dict[str, dict[str, dict]]  # kernel id -> tuning key -> config


@dataclass
class OpRecords:
    """The records one op ran with: ``mode`` record, replay or baseline; ``source`` the
    records dir (normalized path); ``records`` its content (None: unreadable here, e.g.
    a path of another machine); ``use_flagtune`` the tuning space its run recorded."""

    mode: str
    source: str
    records: Records | None
    use_flagtune: str | None = None


def read_records_dir(d: str | os.PathLike) -> Records | None:
    """Every ``*.json`` of a records dir merged (one per op, as the plugins write them);
    None when the dir or a file cannot be read."""
    path = Path(d)
    if not path.is_dir():
        return None
    out: Records = {}
    try:
        for f in sorted(path.glob("*.json")):
            # any version, through the versioned loader: the bare mapping of the files
            # written before records were versioned is version 0 (docs/autotune.md)
            kernels = load_json_model(f, AutotuneRecords).kernels
            for kernel, keys in kernels.items():
                out.setdefault(str(kernel), {}).update(keys)
    except (OSError, ValueError, RecursionError, ZlbenchError):
        return None
    return out


def _source(run_dir: Path, mode: str, replay_from: str | None) -> OpRecords:
    d = Path(replay_from) if mode == "replay" and replay_from else records_dir(run_dir)
    return OpRecords(mode, os.path.normpath(os.path.abspath(d)), read_records_dir(d))


def op_records(path: str | os.PathLike) -> dict[str, OpRecords]:
    """``repo/run_name`` -> the records the op ran with, for a run, batch, gate output
    or baseline dir (the loaders' own checks apply: a broken dir is one line)."""
    root = Path(path)
    if (root / MANIFEST_YAML).is_file():
        b = load_baseline(root)
        out = {}
        for key, res in b.ops.items():
            rec = _source(op_dir(root, res.repo, res.run_name), "baseline", None)
            rec.use_flagtune = res.environment.use_flagtune or b.manifest.use_flagtune
            out[key] = rec
        return out
    results = load_results(root)
    batch = root / RESULTS_DIR if (root / RESULTS_DIR).is_dir() else root
    out = {}
    for run in results.ops.values():
        if run.result is None:
            continue
        res = run.result
        where = root if (root / RESULT_JSON).is_file() else op_dir(batch, res.repo, res.run_name)
        rec = _source(where, res.mode, res.replay_from)
        rec.use_flagtune = res.environment.use_flagtune
        out[op_key(res.repo, res.run_name)] = rec
    return out


__all__ = ["OpRecords", "Records", "op_records", "read_records_dir"]

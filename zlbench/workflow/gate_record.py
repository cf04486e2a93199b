"""How a gate dir was gated (``<out>/gated.json``, :class:`zlbench.models.GateRecord`)
and re-judging it that way (issue 50 item 2).

``zlbench gate`` writes the record when it claims its out dir (:func:`record_of`,
:func:`write_record`); ``zlbench report DIR`` and ``gate --results DIR`` re-judge DIR as
it was gated (:func:`as_gated`): its op set, its baseline, its ``--thresholds`` and
``--allow-env-mismatch``, unless the command line gives them (an explicit ``--ops``,
``--ops-file``, ``--baseline``, ``--thresholds`` wins). One line says what was taken from
the record. A dir without the record is judged as the command line says, as before.

The record comes with a downloaded artifact: untrusted (docs/security.md). It only
chooses what to re-judge: the baseline and thresholds it names must be relative paths
below the working dir, outside the results dir, with the sha256 recorded (else one
line, exit 2: give them on the command line); the op set is the recorded list of op
keys (the ops file only names it, when it is here unchanged).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePosixPath

from zlbench.errors import ZlbenchError
from zlbench.gate.load import report_label
from zlbench.models import GATED_JSON, GateRecord, Selection, dump_json_model, load_json_model
from zlbench.models.base import read_regular
from zlbench.protocol.layout import MANIFEST_YAML
from zlbench.workflow.gate_job import GateJob

Resolve = Callable[[str], Path]  # a tree as given -> the dir holding it (packed: the copy)


def sha256_of(path: str | os.PathLike) -> str:
    """The sha256 of a regular file's bytes (a missing or odd file: one line)."""
    try:
        return hashlib.sha256(read_regular(Path(path))).hexdigest()
    except OSError as e:
        raise ZlbenchError(f"{path}: {e.strerror or e}") from None


def record_of(job: GateJob, baseline_dir: Path, specs: list[str], scope: set[str] | None):
    """The record of a gate: ``job`` as given, its baseline (loaded from
    ``baseline_dir``), the SPECs it read (``--ops`` or the ops file's) and the op keys
    they selected (``scope``; None: every baseline op)."""
    sel = job.selection
    ops_file = None if sel.ops or sel.ops_file is None else Path(sel.ops_file)
    return GateRecord(
        baseline=report_label(job.baseline),
        baseline_sha256=sha256_of(Path(baseline_dir) / MANIFEST_YAML),
        ops_file=ops_file.as_posix() if ops_file else None,
        ops_file_sha256=sha256_of(ops_file) if ops_file else None,
        specs=list(specs),
        op_keys=sorted(scope) if scope is not None else None,
        thresholds=Path(job.thresholds).as_posix() if job.thresholds else None,
        thresholds_sha256=sha256_of(job.thresholds) if job.thresholds else None,
        allow_env_mismatch=job.allow_env_mismatch,
        base_compiler=str(job.ab.base_compiler) if job.ab.base_compiler else None,
        time="changed" if job.time == "changed" else "all",
        time_budget_s=job.time_budget_s,
        confirm=job.confirm,
    )


def write_record(out: Path, record: GateRecord) -> None:
    """``<out>/gated.json``, atomically."""
    dump_json_model(Path(out) / GATED_JSON, record)


def load_record(results: str | os.PathLike) -> GateRecord | None:
    """The record of a results dir, None when it has none (a batch dir, an old gate
    dir); a bad one is one line (exit 2)."""
    path = Path(results) / GATED_JSON
    if not path.exists() and not path.is_symlink():
        return None
    return load_json_model(path, GateRecord)


def _here(text: str, results: Path) -> Path | None:
    """``text`` as a path the record may name: relative, no ``..``, below the working
    dir and outside the results dir; else None."""
    if not text or "\0" in text:
        return None
    pure = PurePosixPath(text)
    if pure.is_absolute() or ".." in pure.parts or text.startswith("~"):
        return None
    path, cwd = Path(text), Path.cwd().resolve()
    try:
        full = (cwd / path).resolve()
    except (OSError, RuntimeError):
        return None
    if not full.is_relative_to(cwd) or full.is_relative_to(results.resolve()):
        return None
    return path


def _refuse(results: Path, what: str, flag: str, text: str, why: str) -> ZlbenchError:
    return ZlbenchError(
        f"{report_label(results)} was gated with {what} {text!r}, which {why}: give {flag} "
        "on the command line"
    )


def _recorded_baseline(rec: GateRecord, results: Path, resolve: Resolve) -> Path:
    """The recorded baseline, checked: a path below the working dir (packed allowed)
    whose manifest has the recorded sha256."""
    path = _here(rec.baseline, results)
    if path is None:
        raise _refuse(
            results, "the baseline", "--baseline", rec.baseline, "is not a path below this dir"
        )
    try:
        found = resolve(rec.baseline)
    except ZlbenchError:
        found = path
    manifest = Path(found) / MANIFEST_YAML
    if not manifest.is_file():
        raise _refuse(results, "the baseline", "--baseline", rec.baseline, "is not here")
    if sha256_of(manifest) != rec.baseline_sha256:
        raise _refuse(results, "the baseline", "--baseline", rec.baseline, "differs here")
    return Path(found)


def _recorded_thresholds(rec: GateRecord, results: Path) -> Path | None:
    if rec.thresholds is None:
        return None
    path = _here(rec.thresholds, results)
    if path is None or not path.is_file():
        raise _refuse(results, "--thresholds", "--thresholds", rec.thresholds, "is not here")
    if sha256_of(path) != rec.thresholds_sha256:
        raise _refuse(results, "--thresholds", "--thresholds", rec.thresholds, "differs here")
    return path


def _ops_words(rec: GateRecord, results: Path) -> str:
    """How the line names the recorded op set: the ops file when it is here unchanged,
    else the recorded list."""
    n = len(rec.op_keys or ())
    if rec.ops_file is None:
        return f"--ops ({n} ops)"
    path = _here(rec.ops_file, results)
    same = (
        path is not None
        and path.is_file()
        and rec.ops_file_sha256 is not None
        and sha256_of(path) == rec.ops_file_sha256
    )
    if same:
        return f"{rec.ops_file} ({n} ops)"
    return f"the {n} ops recorded from {rec.ops_file} (not here or changed since)"


def as_gated(
    job: GateJob, resolve: Resolve, say: Callable[[str], None], command: str = "report"
) -> GateJob:
    """``job`` (judging ``job.results``) with what the results dir's record says for
    every choice the command line left out: the op set (``--ops``/``--ops-file``), the
    baseline, ``--thresholds`` and ``--allow-env-mismatch``; one line says what was
    taken (``re-judged as gated: ops/gate_core.txt (34 ops), baselines/v5``). Without a
    record the job is returned as given (``--baseline`` then required)."""
    results = Path(job.results) if job.results is not None else None
    rec = load_record(results) if results is not None else None
    if rec is None:
        if job.baseline is None:
            raise ZlbenchError(
                "--baseline DIR is required"
                + (f": {report_label(results)} does not record how it was gated" if results else "")
            )
        return job
    sel, taken, told = job.selection, [], []
    if sel.ops or sel.ops_file is not None:
        told.append("--ops-file" if sel.ops_file is not None else "--ops")
    elif rec.op_keys is not None:
        sel = Selection(ops=tuple(rec.op_keys), ops_dir=sel.ops_dir)
        taken.append(_ops_words(rec, results))
    else:
        taken.append("every baseline op")
    baseline = job.baseline
    if baseline is None:
        baseline = _recorded_baseline(rec, results, resolve)
        taken.append(rec.baseline)
    else:
        told.append("--baseline")
    thresholds = job.thresholds
    if thresholds is None and rec.thresholds is not None:
        thresholds = _recorded_thresholds(rec, results)
        taken.append(f"--thresholds {rec.thresholds}")
    elif thresholds is not None:
        told.append("--thresholds")
    allow = job.allow_env_mismatch or rec.allow_env_mismatch
    if rec.allow_env_mismatch and not job.allow_env_mismatch:
        taken.append("--allow-env-mismatch")
    if taken:
        line = f"zlbench {command}: re-judged as gated: {', '.join(taken)}"
        say(line + (f" ({', '.join(told)} as given)" if told else ""))
    else:
        gated = f"{_ops_words(rec, results)}, {rec.baseline}"
        say(f"zlbench {command}: {', '.join(told)} as given "
            f"(not as {report_label(results)} was gated: {gated})")  # fmt: skip
    return replace(
        job,
        baseline=baseline,
        selection=sel,
        thresholds=thresholds,
        thresholds_label=job.thresholds_label or (rec.thresholds or ""),
        allow_env_mismatch=allow,
    )


def carry_record(gate_dirs: list[Path], into: Path) -> None:
    """``zlbench merge``: the shards' record into the merged dir when every shard holds
    the same one (shards of one gate); else none (the merged dir is then judged as the
    command line says)."""
    records = [load_record(g) for g in gate_dirs]
    if records and all(r is not None and r == records[0] for r in records):
        write_record(into, records[0])

"""Opt-in multi-GPU autotune sweep, orchestrated (docs/design.md §5.16).

``zlbench run --sweep-gpus 0,1,2`` (and ``batch`` / ``baseline refresh`` in
their record pass) records one op like this:

1. the op is dealt over the GPUs (:mod:`zlbench.runner.sweep.deal`): its configs
   (child ``k`` of ``n`` tunes ``configs[k::n]``, every shape), its shapes (child
   ``k`` runs row part ``k+1`` of ``n`` with every config: each shape's winners are
   picked on one GPU) or both, by a small cost model;
   one child pytest process per GPU of the deal, all at once, each with
   ``CUDA_VISIBLE_DEVICES`` set to its GPU, its own temp ``TRITON_CACHE_DIR``
   and FlagGems tuning DB (:func:`zlbench.runner.execute.worker.process_env`), run
   dir ``<run_dir>/sweep/shard-k/`` and ``--zl-sweep-shard k/N
   --zl-sweep-out <run_dir>/sweep/shard-k.json``; output in
   ``sweep/shard-k.log``; children killed on interrupt
   (:mod:`zlbench.runner.sweep.children`);
2. the shard outputs are merged (:func:`zlbench.plugins.sweep.merge_shards`,
   per key the fastest shard winner) over the union of the children's own
   records (single-config kernels, which are never timed) into
   ``<run_dir>/autotune_records/<op>.json``; ``sweep/trust.json`` and the
   ``ZLBENCH_SWEEP keys= differing= close=`` line give the trust figure;
3. the measurement is one process on one GPU (the first listed) replaying the
   merged record. Its ``result.json`` is then marked ``mode=record`` with
   ``replay_from`` cleared: the run dir is the op's record (fresh configs), its
   rows were measured with exactly those configs pinned. ``run.log`` ends with
   the ZLBENCH_SWEEP line, the OpStatus note names the sweep, and
   ``sweep/trust.json`` says how it was measured.

A child that fails (signal, error, no usable result) costs the sweep, not the
op: the op is recorded serially, one process on the first GPU as without
``--sweep-gpus``, and the note says so (the child's log stays in ``sweep/``). A
child that timed out decides the op (TIMEOUT; its log becomes ``run.log``): a
serial sweep would only take longer. ``--sweep-gpus`` ids are CUDA_VISIBLE_DEVICES values,
like ``batch --gpus``; an inherited CUDA_VISIBLE_DEVICES is respected (every
listed id must be in it).

Import exception: the runner imports :mod:`zlbench.plugins.sweep` (the shard
merge and the trust figure), which imports neither torch, triton nor pytest.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import (
    AutotuneRecords,
    MarkerKind,
    OpStatus,
    PlanEntry,
    RunStatus,
    SweepChild,
    SweepTrust,
    WorkerPlan,
    atomic_write_text,
    dump_json_model,
    load_json_model,
    records_file_name,
    records_json,
)
from zlbench.plugins import sweep as sweep_mod
from zlbench.protocol import options
from zlbench.protocol.boundary import runner_line
from zlbench.protocol.layout import (
    PLAN_JSON,
    RESULT_JSON,
    RUN_LOG,
    SWEEP_DIR,
    TRUST_JSON,
    records_dir,
)
from zlbench.runner.execute.proc import Sink
from zlbench.runner.execute.result import load_run
from zlbench.runner.execute.worker import build_pytest_argv, execute_plan, process_env
from zlbench.runner.sweep.children import Child, run_group
from zlbench.runner.sweep.deal import Deal, choose_deal, op_shapes

Say = Callable[[str], None]


def check_sweep_gpus(gpus: Sequence[str], inherited: str | None) -> list[str]:
    """The sweep's GPU ids, checked: no duplicates, each inside an inherited
    CUDA_VISIBLE_DEVICES (when one is set)."""
    gpus = [g.strip() for g in gpus if g.strip()]
    if not gpus:
        raise ZlbenchError("--sweep-gpus: empty GPU list (expected e.g. 0,1)")
    if len(set(gpus)) != len(gpus):
        raise ZlbenchError(f"--sweep-gpus {','.join(gpus)}: duplicate GPU")
    if inherited is not None and inherited.strip():
        visible = [d.strip() for d in inherited.split(",") if d.strip()]
        outside = [g for g in gpus if g not in visible]
        if outside:
            raise ZlbenchError(
                f"--sweep-gpus {','.join(gpus)}: {','.join(outside)} not in the inherited "
                f"CUDA_VISIBLE_DEVICES={inherited}"
            )
    return gpus


@dataclass
class SweepSpec:
    """How to sweep: the GPUs (the first one measures) and the trust threshold."""

    gpus: list[str]
    close_rel: float = 0.02
    grace_s: float = 5.0
    say: Say | None = None  # receives the ZLBENCH_SWEEP line of each op
    name_ops: bool = False  # prefix that line with <repo>/<run_name> (batch progress)
    # what the GPUs deal (zlbench.runner.sweep.deal): auto (the cost model), configs, shapes
    deal: str = "auto"
    configs: int | None = None  # configs of the op's largest kernel, when known

    def __post_init__(self) -> None:
        if not self.gpus:
            raise ZlbenchError("--sweep-gpus: empty GPU list (expected e.g. 0,1)")


@dataclass
class _Op:
    """One op being swept: its paths and the context to run in."""

    entry: PlanEntry
    template: WorkerPlan
    flaggems_dir: Path
    env: dict[str, str]
    python: str | None
    extra: Sequence[str]

    @property
    def run_dir(self) -> Path:
        return Path(self.entry.run_dir)

    @property
    def sweep_dir(self) -> Path:
        return self.run_dir / SWEEP_DIR


def _child(op: _Op, k: int, deal: Deal, gpu: str, tmp: Path) -> Child:
    """Child ``k`` of ``deal``: its shape part as the entry's row part (when shapes are
    dealt), its config shard as ``--zl-sweep-shard`` (``0/1``: every config)."""
    run_dir = op.sweep_dir / f"shard-{k}"
    run_dir.mkdir(parents=True, exist_ok=True)
    part, shard = deal.of(k)
    update: dict = {"run_dir": str(run_dir), "mode": "record", "replay_records": None}
    if deal.shapes > 1:
        update["part"] = [part + 1, deal.shapes]
    entry = op.entry.model_copy(update=update)
    plan = op.template.model_copy(update={"entries": [entry]})
    dump_json_model(run_dir / PLAN_JSON, plan)
    n = deal.children
    extra = list(op.extra) + options.arg("sweep-shard", f"{shard}/{deal.configs}")
    extra += options.arg("sweep-out", op.sweep_dir / f"shard-{k}.json")
    argv = build_pytest_argv(run_dir / PLAN_JSON, plan, python=op.python, extra=extra)
    base = dict(op.env)
    base["CUDA_VISIBLE_DEVICES"] = gpu
    env = process_env(base, flaggems_dir=op.flaggems_dir, tmp_dir=tmp / f"shard-{k}")
    return Child(k, n, gpu, argv, env, log=op.sweep_dir / f"shard-{k}.log")


def child_status(child: Child, run_dir: Path) -> tuple[RunStatus, str]:
    """How one sweep child ended: (status, why when not PASS/SKIP)."""
    where = f"sweep child {child.shard}/{child.nshards} (GPU {child.gpu})"
    if child.timed_out:
        return RunStatus.TIMEOUT, f"{where} timed out"
    result = load_run(run_dir)
    if result is not None and result.status is not RunStatus.PASS:
        return result.status, f"{where}: {result.status.value} {result.error or ''}".rstrip()
    if child.rc is not None and child.rc < 0:
        return RunStatus.CRASH, f"{where} killed by signal {-child.rc}"
    if result is None or child.rc not in (0, None):
        return RunStatus.ERROR, f"{where}: exit code {child.rc}, no usable result.json"
    return result.status, ""


def _read_json(path: Path) -> dict:
    """A JSON object file; {} when absent (a child that timed no multi-config kernel)."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ZlbenchError(f"sweep output {path} is unreadable: {e}") from None
    return data if isinstance(data, dict) else {}


def merge_children(
    records: Sequence[dict],
    shards: Sequence[dict],
    close_rel: float = 0.02,
    parts: Sequence[int] | None = None,
) -> tuple[dict, sweep_mod.SweepStats]:
    """The children's own records (first seen wins), overlaid with the merged shard
    winners. ``parts``: each child's shape part (None: one part, configs dealt only).
    Within a part a key's winner is the fastest of its config shards; a key that
    several shape parts tuned keeps the lowest part's winner: timings of different
    shape parts (different GPUs) are never compared. The trust figure counts over
    every child (a key two parts tuned to different winners is ``differing``)."""
    merged: dict[str, dict[str, dict]] = {}
    for rec in records:
        for kernel, keys in rec.items():
            for key, config in keys.items():
                merged.setdefault(kernel, {}).setdefault(key, config)
    _, stats = sweep_mod.merge_shards(shards, close_rel)
    parts = list(parts) if parts is not None else [0] * len(shards)
    picked: dict[str, dict[str, dict]] = {}
    for p in sorted(set(parts)):
        mine = [sh for sh, q in zip(shards, parts, strict=True) if q == p]
        winners, _ = sweep_mod.merge_shards(mine, close_rel)
        for kernel, keys in winners.items():
            for key, config in keys.items():
                picked.setdefault(kernel, {}).setdefault(key, config)
    for kernel, keys in picked.items():
        merged.setdefault(kernel, {}).update(keys)
    return merged, stats


def _merge(
    op: _Op, children: Sequence[Child], close_rel: float, deal: Deal
) -> sweep_mod.SweepStats:
    name = records_file_name(op.entry.op)
    records = []
    for c in children:
        rec_dir = records_dir(op.sweep_dir / f"shard-{c.shard}")
        path = rec_dir / name
        if not path.is_file():  # the plugin's name differs: take the only file there
            found = sorted(rec_dir.glob("*.json")) if rec_dir.is_dir() else []
            path = found[0] if len(found) == 1 else path
        records.append(load_json_model(path, AutotuneRecords).kernels if path.is_file() else {})
    shards = [_read_json(op.sweep_dir / f"shard-{c.shard}.json") for c in children]
    parts = [deal.of(c.shard)[0] for c in children]
    merged, stats = merge_children(records, shards, close_rel, parts)
    atomic_write_text(records_dir(op.run_dir) / name, records_json(merged))
    return stats


def _trust(op: _Op, children: Sequence[Child], stats, spec: SweepSpec, measured: dict) -> None:
    trust = SweepTrust(
        repo=op.entry.repo,
        run_name=op.entry.run_name,
        gpus=[c.gpu for c in children],  # the GPUs the deal used (fewer when shapes are few)
        keys=stats.keys,
        differing=stats.differing,
        close=stats.close,
        close_rel=spec.close_rel,
        children=[
            SweepChild(
                shard=f"{c.shard}/{c.nshards}",
                gpu=c.gpu,
                rc=c.rc,
                seconds=c.seconds,
                sweep_out=f"{SWEEP_DIR}/shard-{c.shard}.json",
                log=f"{SWEEP_DIR}/shard-{c.shard}.log",
            )
            for c in children
        ],
        measured=measured,
    )
    dump_json_model(op.sweep_dir / TRUST_JSON, trust)


def _status(op: _Op, status: RunStatus, note: str, seconds: float, gpu: str) -> OpStatus:
    """The op's OpStatus after a failed sweep (nothing measured)."""
    return OpStatus(
        repo=op.entry.repo,
        op=op.entry.op,
        run_name=op.entry.run_name,
        status=status,
        rc=None if status is RunStatus.TIMEOUT else (2 if status is RunStatus.ERROR else 1),
        attempts=1,
        dtype_used=",".join(op.entry.dtypes),
        rows=0,
        seconds=round(seconds, 3),
        gpu=gpu,
        run_dir=str(op.run_dir),
        note=note,
    )


def _fail(op: _Op, children: Sequence[Child], bad: list[tuple[Child, RunStatus, str]]) -> OpStatus:
    """A child failed: its status decides the op, its log becomes run.log."""
    child, status, note = bad[0]
    if child.log.is_file():
        shutil.copyfile(child.log, op.run_dir / RUN_LOG)
    with open(op.run_dir / RUN_LOG, "a", encoding="utf-8") as log:
        log.write(runner_line(f"run_name={op.entry.run_name} status={status.value} {note}") + "\n")
    seconds = max(c.seconds for c in children)
    note = f"{note}; see {SWEEP_DIR}/shard-{child.shard}.log"
    return _status(op, status, note, seconds, ",".join(c.gpu for c in children))


def _mark_record(run_dir: Path, line: str) -> int:
    """result.json of the measurement: mode=record; run.log ends with the sweep line.

    Returns the number of replay fallback markers of the measurement."""
    path = run_dir / RESULT_JSON
    result = load_run(run_dir) if path.is_file() else None
    fallbacks = 0
    if result is not None:
        dump_json_model(path, result.model_copy(update={"mode": "record", "replay_from": None}))
        fallbacks = sum(m.kind is MarkerKind.REPLAY_FALLBACK for m in result.markers)
    with open(run_dir / RUN_LOG, "a", encoding="utf-8") as log:
        log.write(line + "\n")
    return fallbacks


def _ignore(*_: object) -> None:
    pass


def op_deal(entry: PlanEntry, spec: SweepSpec) -> Deal:
    """How ``entry`` is dealt over ``spec.gpus`` (:func:`zlbench.runner.sweep.deal.choose_deal`
    on the shapes of its shape file); an entry that is itself a row part deals configs."""
    shapes = op_shapes(entry) if entry.part is None else None
    return choose_deal(len(spec.gpus), shapes, spec.configs, spec.deal)


def sweep_op(op: _Op, spec: SweepSpec, *, executor, sink: Sink | None, timeout_s) -> OpStatus:
    """Sweep one op over ``spec.gpus``, merge, measure on ``spec.gpus[0]``."""
    if op.sweep_dir.exists():
        shutil.rmtree(op.sweep_dir)
    op.sweep_dir.mkdir(parents=True)
    tmp = Path(tempfile.mkdtemp(prefix="zlbench-sweep-"))
    deal = op_deal(op.entry, spec)
    gpus = spec.gpus[: deal.children]
    n = len(gpus)
    try:
        children = [_child(op, k, deal, gpu, tmp) for k, gpu in enumerate(gpus)]
        run_group(
            children, cwd=op.flaggems_dir, sink=sink, timeout_s=timeout_s, grace_s=spec.grace_s
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    checked = [(c, *child_status(c, op.sweep_dir / f"shard-{c.shard}")) for c in children]
    bad = [t for t in checked if t[1] not in (RunStatus.PASS, RunStatus.SKIP)]
    if bad and bad[0][1] is not RunStatus.TIMEOUT:
        return _serial(
            op, spec.gpus[0], children, bad, executor=executor, sink=sink, timeout_s=timeout_s
        )
    if bad:
        return _fail(op, children, bad)
    stats = _merge(op, children, spec.close_rel, deal)
    line = stats.line()
    if spec.say is not None:
        spec.say(f"{op.entry.repo}/{op.entry.run_name} {line}" if spec.name_ops else line)
    status = _measure(op, spec.gpus[0], executor=executor, sink=sink, timeout_s=timeout_s)
    measured = {
        "how": "single-process replay of the merged record",
        "gpu": spec.gpus[0],
        "status": status.status.value,
        "replay_fallbacks": _mark_record(op.run_dir, line),
        "deal": {"shapes": deal.shapes, "configs": deal.configs},  # how the sweep was dealt
    }
    _trust(op, children, stats, spec, measured)
    how = f", {deal.words()}" if deal.shapes > 1 else ""
    note = f"configs from a {n}-GPU sweep ({','.join(gpus)}{how}): {line.split(' ', 1)[1]}"
    if status.note:
        note = f"{status.note}; {note}"
    seconds = round(status.seconds + max(c.seconds for c in children), 3)
    return status.model_copy(update={"note": note, "seconds": seconds})


def _serial(
    op: _Op,
    gpu: str,
    children: Sequence[Child],
    bad: list[tuple[Child, RunStatus, str]],
    *,
    executor,
    sink: Sink | None,
    timeout_s,
) -> OpStatus:
    """A sweep child failed (not by timeout): the op is recorded as without a sweep,
    its whole autotune sweep in one process on ``gpu`` (the seed's fallback: a child
    can fail for its GPU's sake, and the op is not lost for it). The child's log
    stays in ``sweep/``; the note names it and the fallback."""
    child, _, why = bad[0]
    env = dict(op.env)
    env["CUDA_VISIBLE_DEVICES"] = gpu
    (status,) = executor(
        op.template.model_copy(update={"entries": [op.entry]}),
        flaggems_dir=op.flaggems_dir,
        per_process=1,
        op_timeout_s=timeout_s,
        env=env,
        sink=sink,
        on_op_done=_ignore,
        **({"python": op.python} if op.python else {}),
        **({"extra_pytest_args": list(op.extra)} if op.extra else {}),
    )
    note = (
        f"{why} (see {SWEEP_DIR}/shard-{child.shard}.log): fell back to a serial sweep on GPU {gpu}"
    )
    if status.note:
        note = f"{note}; {status.note}"
    seconds = round(status.seconds + max(c.seconds for c in children), 3)
    return status.model_copy(update={"note": note, "seconds": seconds})


def _measure(op: _Op, gpu: str, *, executor, sink: Sink | None, timeout_s) -> OpStatus:
    """One process on ``gpu`` replays the merged record into the op's run dir."""
    entry = op.entry.model_copy(
        update={"mode": "replay", "replay_records": str(records_dir(op.run_dir))}
    )
    env = dict(op.env)
    env["CUDA_VISIBLE_DEVICES"] = gpu
    (status,) = executor(
        op.template.model_copy(update={"entries": [entry]}),
        flaggems_dir=op.flaggems_dir,
        per_process=1,
        op_timeout_s=timeout_s,
        env=env,
        sink=sink,
        on_op_done=_ignore,  # the caller hears of the op once, after the sweep note
        **({"python": op.python} if op.python else {}),
        **({"extra_pytest_args": list(op.extra)} if op.extra else {}),
    )
    return status


class SweepExecutor:
    """``execute_plan``-compatible: record entries are swept one after the other
    (the sweep uses every listed GPU), replay entries go to ``inner`` unchanged."""

    def __init__(self, spec: SweepSpec, inner=None):
        self.spec = spec
        self.inner = inner or execute_plan

    def __call__(
        self,
        plan: WorkerPlan,
        *,
        flaggems_dir: str | os.PathLike,
        per_process: int | None = None,
        op_timeout_s: float | None = None,
        env: dict[str, str] | None = None,
        sink: Sink | None = None,
        on_op_done=None,
        python: str | None = None,
        extra_pytest_args: Sequence[str] = (),
        **_: object,
    ) -> list[OpStatus]:
        out = []
        base = dict(os.environ if env is None else env)
        for entry in plan.entries:
            if entry.mode == "replay":
                (status,) = self.inner(
                    plan.model_copy(update={"entries": [entry]}),
                    flaggems_dir=flaggems_dir,
                    per_process=per_process,
                    op_timeout_s=op_timeout_s,
                    env=env,
                    sink=sink,
                    **({"python": python} if python else {}),
                    **({"extra_pytest_args": list(extra_pytest_args)} if extra_pytest_args else {}),
                )
            else:
                entry_dir = Path(entry.run_dir)
                entry_dir.mkdir(parents=True, exist_ok=True)
                op = _Op(entry, plan, Path(flaggems_dir), base, python, tuple(extra_pytest_args))
                status = sweep_op(
                    op, self.spec, executor=self.inner, sink=sink, timeout_s=op_timeout_s
                )
            if on_op_done is not None:
                on_op_done(entry, status, load_run(Path(entry.run_dir)))
            out.append(status)
        return out

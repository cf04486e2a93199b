"""An op's rows over several processes: row parts (docs/screening.md, "Row parts").

Why: a screen's wall time is at least its longest op, and an op's rows run one after
another in one process. On gate_core, ``topk`` (14 rows) is 41 s of the 107 s of op
time; with four processes timing in turns on one H200 it alone is the critical path
(docs/measurements.md, seventh session). So in replay mode, where the baseline says
how many rows each op has, an op longer than its share of a slot's time is cut
into ``n`` parts: part ``k`` (1-based) measures the rows whose index within their
(benchmark op, dtype) is ``k - 1`` modulo ``n``. Every part still draws every input in
the same order (the filter drops measured rows, not input draws), so row ``j`` sees the
data it sees unsplit.

Parts run as ops of their own (``<run_name>~<k>of<n>``, run dirs under
``<batch>/.parts/<repo>/``: retries, timeouts and ``--resume`` apply to each); when
the batch ends they are merged into the op's own run dir and one ops_status.csv row,
so judging, reports and baselines never see them.
"""

from __future__ import annotations

import math
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import (
    CODEGEN_INDEX,
    AutotuneRecords,
    CodegenIndex,
    OpStatus,
    RunResult,
    RunStatus,
    assign_occurrences,
    atomic_write_text,
    codegen_dir,
    count_markers,
    dump_json_model,
    load_codegen_index,
    load_json_model,
    records_json,
)
from zlbench.models.codegen import dump_codegen_index
from zlbench.models.replay import LAUNCHES_JSON, LaunchCapture, merge_captures
from zlbench.protocol.layout import (
    COMPLETE,
    PLAN_JSON,
    RECORDS_DIR,
    RESULT_JSON,
    RUN_LOG,
    TTGIR_DIR,
    op_key,
)
from zlbench.protocol.rowpart import keeps_row
from zlbench.runner.catalog.select import SelectedOp
from zlbench.runner.execute.worker import NOT_MEASURED

PARTS_DIR = ".parts"  # <batch>/.parts/<repo>/<run_name>~<k>of<n>/
# <batch>/.parts/ops_status.csv: the rows of the parts merged (ops_status.csv holds their
# op's), read by --resume for the parts it keeps
PART_MARK = "~"
# An op is cut when it is longer than this fraction of one slot's fair share of the
# batch (total expected seconds / slots), into parts no longer than that. 1: only an op
# that alone outlasts a slot's share; each part pays the op's fixed costs again (its own
# compiles and SASS dumps: topk's 4 parts took 72 s of op time against 44 s whole on
# the H200, docs/measurements.md eighth session), so half a share cut too eagerly.
SHARE_FRACTION = 1.0
# Worst first: the merged op's status is its worst part's.
_WORST = [RunStatus.ERROR, RunStatus.CRASH, RunStatus.TIMEOUT, RunStatus.FAIL, RunStatus.PASS]


def part_run_name(run_name: str, k: int, n: int) -> str:
    return f"{run_name}{PART_MARK}{k}of{n}"


def part_counts(
    costs: Mapping[str, float], slots: int, rows: Callable[[str], int | None]
) -> dict[str, int]:
    """How many parts each op is cut into (ops not cut are left out).

    ``costs``: every op's expected seconds; ``slots``: processes measuring at once;
    ``rows(key)``: the most parts an op may have (:func:`most_parts`; None or < 2:
    never cut), asked only of the ops long enough to cut (it reads their baseline). An
    op longer than ``SHARE_FRACTION`` of the fair share gets ``ceil(cost / that)``
    parts, at most one per slot and ``rows(key)``. One slot: nothing is cut."""
    if slots < 2 or not costs:
        return {}
    limit = SHARE_FRACTION * sum(costs.values()) / slots
    out = {}
    for key, cost in costs.items():
        if limit <= 0 or cost <= limit:
            continue
        n_rows = rows(key) or 0
        if n_rows < 2:
            continue
        n = min(math.ceil(cost / limit), slots, n_rows)
        if n >= 2:
            out[key] = n
    return out


def row_group(row) -> tuple[str, str]:
    """What a row's index counts within: its benchmark op (``bench.op_name``: an op's
    tests may measure several) and its dtype; a result.json dict or a ``Row``."""
    if isinstance(row, dict):
        return str(row.get("op")), str(row.get("dtype"))
    return str(getattr(row, "op", "")), str(getattr(row, "dtype", ""))


def most_parts(rows: list | None) -> int | None:
    """The most parts an op with the baseline ``rows`` (result.json dicts) may be cut
    into: its fewest rows of one (benchmark op, dtype), so that every part measures
    every dtype (a benchmark that measures no row of a dtype fails printing its empty
    table)."""
    if not rows:
        return None
    return min(Counter(map(row_group, rows)).values())


def indexed(rows: Sequence) -> Iterator[tuple[tuple[str, str], int, object]]:
    """``(group, index, row)`` of each row: its :func:`row_group` and its 0-based index
    within that group, in row order (the index a row part keeps or drops it by)."""
    seen: Counter = Counter()
    for row in rows:
        group = row_group(row)
        yield group, seen[group], row
        seen[group] += 1


def split_ops(
    ops: Sequence[SelectedOp], counts: Mapping[str, int], costs: Mapping[str, float]
) -> tuple[list[SelectedOp], dict[str, float]]:
    """``ops`` with each op of ``counts`` replaced by its parts, and the costs of the
    new list (a part: its op's cost / n)."""
    out: list[SelectedOp] = []
    seconds = dict(costs)
    for op in ops:
        n = counts.get(op.key, 1)
        if n < 2:
            out.append(op)
            continue
        cost = seconds.pop(op.key, 1.0)
        for k in range(1, n + 1):
            name = part_run_name(op.run_name, k, n)
            part = replace(op, run_name=name, part=(k, n), whole=op.run_name)
            out.append(part)
            seconds[part.key] = cost / n
    return out, seconds


def whole_op(op: SelectedOp) -> SelectedOp:
    """The op a row part belongs to (``op`` itself when it is not a part)."""
    return replace(op, run_name=op.whole_run_name, part=None, whole="")


def part_rows(rows: list | None, part: Sequence[int]) -> list | None:
    """The rows of a baseline's ``rows`` (result.json dicts) that ``part`` measures:
    by their index within their (benchmark op, dtype), as the plugins count."""
    if rows is None:
        return None
    return [row for _, i, row in indexed(rows) if keeps_row(i, part)]


def row_picks(rows: Sequence, wanted: Callable[[object], bool]) -> tuple[tuple[str, str, int], ...]:
    """The picks (benchmark op, dtype, index within them) of the ``rows`` (an op's
    baseline rows, in order: result.json dicts or ``Row``-likes) that ``wanted`` says to
    measure; an index counts as the plugins count it (:func:`indexed`)."""
    return tuple((*group, i) for group, i, row in indexed(rows) if wanted(row))


def picked_rows(rows: list | None, picks: Sequence[Sequence]) -> list | None:
    """The rows of ``rows`` (an op's baseline rows, in order) that ``picks`` names."""
    if rows is None:
        return None
    want = {tuple(p) for p in picks}
    return [row for group, i, row in indexed(rows) if (*group, i) in want]


def spread_parts(
    dealt: dict[str, list[SelectedOp]], costs: Mapping[str, float]
) -> dict[str, list[SelectedOp]]:
    """``dealt`` (slot -> ops, from the longest-first deal) with no two parts of one op
    in one slot: a part that shares its slot with an earlier part of its op moves to
    the least-loaded slot holding none (two parts in one slot run one after the other,
    each paying the op's compiles: nothing gained). Parts stay where no such slot is."""
    out = {slot: list(ops) for slot, ops in dealt.items()}
    load = {slot: sum(costs.get(o.key, 1.0) for o in ops) for slot, ops in out.items()}
    for slot in list(out):
        for op in list(out[slot]):
            if not op.part:
                continue
            mine = [o for o in out[slot] if _same_op(o, op)]
            if mine[0] is op:
                continue
            free = [s for s in out if not any(_same_op(o, op) for o in out[s])]
            if not free:
                continue
            to = min(free, key=lambda s: (load[s], list(out).index(s)))
            cost = costs.get(op.key, 1.0)
            out[slot].remove(op)
            # costliest first, as the deal ordered each slot
            at = next((i for i, o in enumerate(out[to]) if costs.get(o.key, 1.0) < cost), None)
            out[to].insert(len(out[to]) if at is None else at, op)
            load[slot] -= cost
            load[to] += cost
    return out


def surplus_rows(measured: Sequence, base: list | None) -> str:
    """The (benchmark op, dtype) groups of which the parts measured more rows than the
    baseline holds, as ``"op/dtype 6 > 3"`` ("" when none or no baseline): every part
    measured them all (a benchmark the row filter does not reach). Fewer rows, or a
    group the baseline lacks (other dtypes asked), are not this."""
    if base is None:
        return ""
    want, have = Counter(map(row_group, base)), Counter(map(row_group, measured))
    over = [(g, n) for g, n in want.items() if have[g] > n]
    return ", ".join(f"{op}/{dtype} {have[(op, dtype)]} > {n}" for (op, dtype), n in over)


def _same_op(a: SelectedOp, b: SelectedOp) -> bool:
    """Both are row parts of one op (repo and run_name)."""
    return bool(a.part) and a.whole_key == b.whole_key


def part_dir(out: Path, repo: str, run_name: str) -> Path:
    return Path(out) / PARTS_DIR / repo / run_name


# --------------------------------------------------------------------------- merging


def worst_status(statuses: Sequence[RunStatus]) -> RunStatus:
    for s in _WORST:
        if s in statuses:
            return s
    return RunStatus.SKIP


def merge_results(results: Sequence[tuple[tuple[int, int], RunResult]], run_name: str) -> RunResult:
    """One result of an op from its parts' (``((k, n), result)``): the rows of each
    (benchmark op, dtype) back in their unsplit order, the groups in the order the parts
    met them (the unsplit order unless a group recurs across tests), markers and times
    summed, the worst status."""
    keyed = [
        (group, (k - 1) + j * n, k, row)
        for (k, n), res in results
        for group, j, row in indexed(res.rows)
    ]
    # groups in the order the parts met them (part 1 first: it has every group's row 0)
    order = {g: i for i, g in enumerate(dict.fromkeys(g for g, _, _, _ in keyed))}
    keyed.sort(key=lambda t: (order[t[0]], t[1], t[2]))
    dtypes = list(dict.fromkeys(d for _, r in results for d in r.dtypes))
    first = results[0][1]
    markers = [m for _, r in results for m in r.markers]
    started = [r.started for _, r in results if r.started]
    return first.model_copy(
        update={
            "run_name": run_name,
            "status": worst_status([r.status for _, r in results]),
            "dtypes": dtypes,
            "rows": assign_occurrences([r for _, _, _, r in keyed]),
            "markers": markers,
            "marker_counts": count_markers(markers),
            "failing_shape": next((r.failing_shape for _, r in results if r.failing_shape), None),
            "error": "; ".join(f"part {k}/{n}: {r.error}" for (k, n), r in results if r.error)
            or None,
            "started": min(started) if started else None,
            "duration_s": _sum(r.duration_s for _, r in results),
            "bench_s": _sum(r.bench_s for _, r in results),
        }
    )


def merge_statuses(parts: Sequence[tuple[SelectedOp, OpStatus]], whole: SelectedOp) -> OpStatus:
    """The op's ops_status.csv row from its parts' rows."""
    statuses = [s for _, s in parts]
    worst = worst_status([s.status for s in statuses])
    notes = [f"part {p.part[0]}/{p.part[1]}: {s.note}" for p, s in parts if s.note and p.part]
    n = len(parts)
    return OpStatus(
        repo=whole.repo,
        op=whole.op,
        run_name=whole.run_name,
        status=worst,
        rc=next((s.rc for s in statuses if s.status is worst), None),
        attempts=max(s.attempts for s in statuses),
        dtype_used=",".join(dict.fromkeys(_dtypes(statuses))),
        rows=sum(s.rows for s in statuses),
        seconds=round(sum(s.seconds for s in statuses), 3),
        gpu=",".join(dict.fromkeys(s.gpu for s in statuses if s.gpu)),
        run_dir=op_key(whole.repo, whole.run_name),
        note="; ".join(_not_measured(statuses) + [f"rows measured in {n} parts"] + notes),
        op_file=statuses[0].op_file,
        success_rows=sum(s.success_rows for s in statuses),
        replay_fallbacks=sum(s.replay_fallbacks for s in statuses),
        no_cudagraph=sum(s.no_cudagraph for s in statuses),
        signature=next((s.signature for s in statuses if s.signature), ""),
    )


def merge_part_dirs(run_dirs: Sequence[Path], result: RunResult | None, dest: Path) -> None:
    """Write the op's run dir ``dest`` from its parts' dirs: result.json (``result``),
    run.log (the parts' logs one after another), the union of the other files (ttgir
    indexes concatenated, autotune records, codegen indexes and launch captures
    merged). Built beside ``dest`` and renamed into place, so ``dest`` is whole or
    absent; ``.complete`` is the caller's."""
    # built under .parts/ (never beside the op dirs, where */*/result.json globs look)
    scratch = run_dirs[0].parent if run_dirs else dest.parent
    tmp = scratch / f".merging-{dest.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        _merge_into(run_dirs, result, tmp, dest.name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(dest)


def _merge_into(
    run_dirs: Sequence[Path], result: RunResult | None, tmp: Path, run_name: str
) -> None:
    logs = []
    for i, src in enumerate(run_dirs, 1):
        if not src.is_dir():
            continue
        log = src / RUN_LOG
        if log.is_file():
            logs.append(f"=== zlbench: part {i} of {len(run_dirs)} ({src.name})\n")
            logs.append(log.read_text(encoding="utf-8", errors="replace"))
        _merge_tree(src, tmp, run_name)
    _merge_launches([d for d in run_dirs if d.is_dir()], tmp, run_name)
    (tmp / RUN_LOG).write_text("".join(logs), encoding="utf-8")
    if result is not None:
        dump_json_model(tmp / RESULT_JSON, result)


_SKIP = {RUN_LOG, RESULT_JSON, COMPLETE, PLAN_JSON}  # plan.json: a part's own


def _merge_tree(src: Path, dest: Path, run_name: str) -> None:
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if path.is_dir() or str(rel) in _SKIP:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.parts[0] == RECORDS_DIR and rel.suffix == ".json":
            _merge_records(path, target)
        elif rel.parts[0] == TTGIR_DIR and rel.name == "index.tsv" and target.exists():
            lines = path.read_text(encoding="utf-8").splitlines(True)[1:]
            with target.open("a", encoding="utf-8") as f:
                f.writelines(lines)
        elif rel.parts == (codegen_dir(Path()).name, CODEGEN_INDEX):
            _merge_codegen(src, dest, run_name)
        elif rel.parts == (codegen_dir(Path()).name, LAUNCHES_JSON):
            continue  # every part's at once: _merge_launches
        elif not target.exists():
            shutil.copy2(path, target)


def _merge_records(src: Path, dest: Path) -> None:
    """Autotune records (any version; written in the current one): the union of their
    ``{kernel: {key: config}}`` (first part wins)."""
    new = load_json_model(src, AutotuneRecords).kernels
    old = load_json_model(dest, AutotuneRecords).kernels if dest.exists() else {}
    for kernel, keys in new.items():
        for key, cfg in keys.items():
            old.setdefault(kernel, {}).setdefault(key, cfg)
    atomic_write_text(dest, records_json(old))


def _merge_codegen(src_run: Path, dest_run: Path, run_name: str) -> None:
    """Codegen indexes: the union of their records by id (first part's record wins),
    each record's uses (``used_by``) those of every part, named after the op
    (``run_name``) instead of the part: the codegen screen matches them to the op's
    rows (codegen.select.row_ref)."""
    new = load_codegen_index(src_run)
    if new is None:
        return
    first = load_codegen_index(dest_run)
    old = first or CodegenIndex(compiler=new.compiler, unrecorded=0)
    # kernels a part could not record: every part's count, unknown if one did not count
    old.unrecorded = (
        None if None in (old.unrecorded, new.unrecorded) else (old.unrecorded + new.unrecorded)
    )
    by_id = {r.id: r for r in old.records}
    for rec in new.records:
        uses = [
            u.model_copy(update={"run_name": run_name}) if u.run_name == src_run.name else u
            for u in rec.used_by
        ]
        have = by_id.setdefault(rec.id, rec.model_copy(update={"used_by": []}))
        have.used_by += [u for u in uses if u not in have.used_by]
    old.records = sorted(by_id.values(), key=lambda r: r.id)
    dump_codegen_index(codegen_dir(dest_run) / CODEGEN_INDEX, old)


def _merge_launches(run_dirs: Sequence[Path], dest_run: Path, run_name: str) -> None:
    """Launch captures (``codegen/launches.json``): every part's merged into the op's
    (``merge_captures``). A part without one adds no rows (a row not listed is never
    replayed nor proven: the gate times it through its op path). A part's that cannot
    be read leaves the op without one, as an unreadable capture of the whole op would:
    what that part's says is not known, and no capture is always safe (the gate times
    the op through its op path)."""
    parts = []
    for src in run_dirs:
        path = codegen_dir(src) / LAUNCHES_JSON
        if not path.is_file():
            continue
        try:
            parts.append((src.name, load_json_model(path, LaunchCapture)))
        except ZlbenchError:
            return
    if parts:
        # the recorder's compact text (a baseline's size); imported here, as the
        # plugin module imports pytest
        from zlbench.plugins.replay_capture import write_launches

        write_launches(codegen_dir(dest_run), merge_captures(parts, run_name))


def _not_measured(statuses: Sequence[OpStatus]) -> list[str]:
    """``[NOT_MEASURED]`` when a part was not measured (a note starting so is how the
    batch lists the ops it did not measure, runner.batch.systemic)."""
    return [NOT_MEASURED] if any(s.note.startswith(NOT_MEASURED) for s in statuses) else []


def _dtypes(statuses: Sequence[OpStatus]) -> list[str]:
    return [d for s in statuses for d in s.dtype_used.split(",") if d]


def _sum(values) -> float | None:
    vals = [v for v in values if v is not None]
    return round(sum(vals), 3) if vals else None

"""The full-inventory record pass's records, carried between device calls and kept in
git until the next baseline is assembled from them (docs/baselines.md, "v6").

    python benchmarks/full_records.py records FULL OUT.tgz       (on the device)
    python benchmarks/full_records.py merge DIR RECORDS.tgz [RECORDS.tgz ...]
    python benchmarks/full_records.py pack DIR OUT.tar.xz
    python benchmarks/full_records.py unpack ARCHIVE.tar.xz [...] DIR
    python benchmarks/full_records.py unrecorded FULL PACKS_DIR
    python benchmarks/full_records.py gaps PACKS_DIR
    python benchmarks/full_records.py sent FULL                  (on the device)
    python benchmarks/full_records.py retry FULL RUN_NAME [...]  (on the device)
    python benchmarks/full_records.py timeouts FULL
    python benchmarks/full_records.py status FULL [--tier OPS_FILE]
    python benchmarks/full_records.py dismiss FULL --date D [--dismiss F] [--retried]

``records`` (the ``benchmarks/gpu_full_screen.sh records`` stage) writes, per device
call, a ``records.tgz`` of the ops complete in the record pass's dir FULL that still
have their records (a restored op has not: they came back with an earlier call):
``<repo>/<run_name>/autotune_records/`` and ``codegen/index.json`` with only the TTIR
and TTGIR texts (``codegen/blobs/<sha>.gz``; every other stage keeps its digest, blob
``""``, as ``zlbench baseline compact`` keeps them). ``merge`` unpacks them into DIR
(a later call's op replaces an earlier one's) and says how many of the merged ops
ran kernels without a record (:func:`unrecorded_counts`).

``pack`` writes DIR as one xz archive (preset 9) with each text stored decompressed as
``codegen/blobs/<sha>`` beside the gzip'd names it replaces: xz then sees every text,
and every record's repeated kernel source, together in its 64 MiB window, as the
compact layout's store packs do (141 ops' 102 MB of plain files packed to 1.7 MB on
2026-12-01, against 69 MB as gzip'd files). ``unpack`` restores the device's layout:
each text gzip'd again under its own name, and checked against its sha256.

``unrecorded`` (the ``gpu_full_screen.sh unrecorded`` stage, on the device) takes the
``.complete`` marker from every PASS op of the record pass's dir FULL whose records no
``PACKS_DIR/*.tar.xz`` holds: ``--resume`` then records it again, after the ops not
started yet (it has a ``run.log``). The ops made final before the records stage existed
kept no records, and the next baseline needs them. An op whose packed records show the
recorder's gap before 2026-12-01's fix (:func:`recording_gap`) is recorded again too;
its new records, in a later pack (packs are read in name order), replace them.

``gaps PACKS_DIR`` lists the packed ops with such a gap, one line each.

``sent FULL`` (run by the ``gpu_full_screen.sh pack`` stage) keeps in
``FULL/records_sent.txt``, which travels in full.tgz, every op whose records a call
sent back. ``unrecorded`` refuses to run while one of them is in no pack: the records
of the call before were not merged and packed yet, and it would unmark (and the pass
record again) the ops just recorded.

``retry FULL RUN_NAME ...`` (the ``gpu_full_screen.sh retry`` stage) takes FAIL, TIMEOUT
or CRASH ops out of ``ops_status.csv``, so that ``--resume --keep-failed`` runs them
again (:func:`retry`).

``timeouts FULL`` (FULL: a dir or a call's full.tgz) says, per TIMEOUT op, what its
run.log's tail shows it was doing when the limit came (:func:`timeout_kind`): still
in an op-end hook (``op-end``: the hook's slow line names it), silent since a test's
pass mark (``after-pass``: a later test of the op that had not
printed yet, or the op's end), still timing rows (``rows``; a longer ``OP_TIMEOUT``
would likely finish either), falling back from CUDA-graph capture at every shape
(``capture``), or silent after its start (``silent``); and the ``retry`` stage that
would run the ``op-end``, ``after-pass`` and ``rows`` ones again.

``dismiss FULL --date YYYY-MM-DD`` says what the pass means for the dismiss list
(``ops/dismiss.txt``, or ``--dismiss F``; :func:`dismiss_proposal`): on stdout, the
entries to add for its FAIL, CRASH and TIMEOUT ops, each with what the pass saw as the
reason; as ``#`` lines, the TIMEOUTs to retry first (until ``--retried``) and the
entries whose op PASSed (a ``RECHECK=1`` run), to drop. It writes nothing.

``status FULL [--tier OPS_FILE]`` says where the pass stands (:func:`pass_status`): the
final ops by status, the rows of the PASS ops, how many of the batch's selected ops are
left to run, and which ops of a tier (e.g. ``ops/tiers/pr.txt``) are not final yet.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import hashlib
import io
import json
import lzma
import re
import shutil
import sys
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path

BLOBS = "blobs"


class BadPack(SystemExit):
    """A records pack (or records.tgz, full.tgz) that cannot be read whole: truncated,
    corrupt, or holding what no pack holds. ``main`` prints its one line, exit 2."""


# what reading a truncated or corrupt archive raises, wherever in it the damage is
_UNREADABLE = (
    tarfile.TarError,
    lzma.LZMAError,
    EOFError,
    zlib.error,
    gzip.BadGzipFile,
    UnicodeDecodeError,
    json.JSONDecodeError,
)


@contextlib.contextmanager
def _archive(path: Path, mode: str = "r") -> Iterator[tarfile.TarFile]:
    """``tarfile.open(path, mode)`` for reading; a truncated or corrupt archive, found
    at its opening or anywhere later in the ``with`` body, is one :class:`BadPack`."""
    try:
        with tarfile.open(path, mode) as tar:
            yield tar
    except _UNREADABLE as e:
        why = (str(e).splitlines() or [type(e).__name__])[0][:200]
        raise BadPack(f"{path}: not a readable archive (truncated or corrupt?): {why}") from None


def _check_all(archives: list[Path], mode: str) -> None:
    """Read every archive whole before anything is written: a bad one is refused
    (:class:`BadPack`) with the dest untouched."""
    for archive in archives:
        with _archive(archive, mode) as tar:
            for m in _checked(tar, archive):
                tar.extractfile(m).read()


def records(full: Path, dest: Path) -> tuple[int, int]:
    """``dest``: the records of every op complete in ``full`` that has them, its codegen
    index with the TTIR/TTGIR texts only (the other stages digest-only, as ``zlbench
    baseline compact`` keeps them). Returns (ops, texts)."""
    from zlbench.models import CodegenIndex, load_json_model
    from zlbench.models.base import model_json
    from zlbench.models.codegen import CODEGEN_DIR, CODEGEN_INDEX
    from zlbench.protocol.layout import RECORDS_DIR
    from zlbench.runner.compact import KEPT_STAGES, digest_only

    ops = texts = 0
    with tarfile.open(dest, "w:gz") as tar:
        for run in sorted(p.parent for p in full.glob("*/*/.complete")):
            rel = run.relative_to(full)
            cg, recs = run / CODEGEN_DIR, run / RECORDS_DIR
            if not has_records(run):
                continue
            ops += 1
            if recs.is_dir():
                tar.add(recs, arcname=str(rel / RECORDS_DIR))
            if not (cg / CODEGEN_INDEX).is_file():
                continue
            index = load_json_model(cg / CODEGEN_INDEX, CodegenIndex)
            for rec in index.records:
                stages = rec.result.stages if rec.result else {}
                for stage, d in list(stages.items()):
                    if stage in KEPT_STAGES and d.blob and (cg / d.blob).is_file():
                        tar.add(cg / d.blob, arcname=str(rel / CODEGEN_DIR / d.blob))
                        texts += 1
                    else:
                        stages[stage] = digest_only(d)
            _add(tar, str(rel / CODEGEN_DIR / CODEGEN_INDEX), (model_json(index) + "\n").encode())
    return ops, texts


def has_records(run: Path) -> bool:
    """Whether an op's run dir still holds its records (what ``records`` sends back):
    a codegen index or autotune records; a restored op's came back with an earlier call."""
    from zlbench.models.codegen import CODEGEN_DIR, CODEGEN_INDEX
    from zlbench.protocol.layout import RECORDS_DIR

    return (run / CODEGEN_DIR / CODEGEN_INDEX).is_file() or (run / RECORDS_DIR).is_dir()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def merge(dest: Path, archives: list[Path]) -> list[str]:
    """Unpack each device call's records.tgz into ``dest``, op by op: an op in a later
    archive replaces the earlier one whole. Returns the op dirs written."""
    written: list[str] = []
    _check_all(archives, "r:gz")
    for archive in archives:
        with _archive(archive, "r:gz") as tar:
            members = _checked(tar, archive)
            ops = sorted({_op_of(m.name) for m in members if _op_of(m.name)})
            for op in ops:
                shutil.rmtree(dest / op, ignore_errors=True)
            tar.extractall(dest, members=members, filter="data")
            written += ops
    return sorted(set(written))


def unrecorded_counts(root: Path, ops: list[str]) -> dict[str, int | None]:
    """Per op of ``ops`` (``<repo>/<run_name>`` under ``root``), the kernels its record
    pass ran without a record (``CodegenIndex.unrecorded``; None: an index of a recorder
    before 2026-12-02, which did not count them). Printed by ``merge`` after each call:
    an op with some is timed on every PR (docs/codegen.md), and many such ops mean a
    launch the recorder misses everywhere."""
    out: dict[str, int | None] = {}
    for op in ops:
        index = root / op / "codegen" / "index.json"
        if index.is_file():
            out[op] = json.loads(index.read_text()).get("unrecorded")
    return out


def pack(src: Path, out: Path) -> tuple[int, int]:
    """``src`` as one tar.xz, the gzip'd texts stored decompressed. Written under a
    temp name and renamed. Returns (ops, texts)."""
    tmp = out.with_name(out.name + ".tmp")
    ops: set[str] = set()
    texts = 0
    with tarfile.open(tmp, "w:xz", preset=9) as tar:
        for path in sorted(p for p in src.rglob("*") if p.is_file()):
            rel = path.relative_to(src).as_posix()
            ops.add(_op_of(rel))
            data = path.read_bytes()
            if path.parent.name == BLOBS and path.suffix == ".gz":
                rel, data = rel[: -len(".gz")], gzip.decompress(data)
                texts += 1
            _add(tar, rel, data)
    tmp.replace(out)
    return len(ops - {""}), texts


def unpack(archives: list[Path], dest: Path) -> tuple[int, int]:
    """The packed archives into ``dest`` (later ones replace earlier ops), each text
    gzip'd again as ``<sha>.gz`` once its sha256 matches its name. Returns (ops,
    texts)."""
    ops: set[str] = set()
    texts = 0
    _check_all(archives, "r:xz")
    for archive in archives:
        with _archive(archive, "r:xz") as tar:
            members = _checked(tar, archive)
            for op in sorted({_op_of(m.name) for m in members} - {""}):
                shutil.rmtree(dest / op, ignore_errors=True)
                ops.add(op)
            for m in members:
                data = tar.extractfile(m).read()
                target = dest / m.name
                if Path(m.name).parent.name == BLOBS:
                    sha = Path(m.name).name
                    if hashlib.sha256(data).hexdigest() != sha:
                        raise BadPack(f"{archive}: {m.name}: text does not match its sha256")
                    target, data = target.with_name(sha + ".gz"), gzip.compress(data, 9, mtime=0)
                    texts += 1
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
    return len(ops), texts


def recording_gap(index: dict) -> str | None:
    """Why an op's codegen index (its JSON) is to be recorded again, or None: the gap of
    the recorder before 2026-12-01's fix (docs/codegen.md, "Modules imported twice"),
    seen in what it recorded. A kernel of a plain module kept as a generated one (its
    module's last name is its file's stem: ``flag_gems.ops.softmax``, ``softmax.py``),
    or a FlagGems ``pointwise_dynamic`` kernel (module ``_gen_module_*``, file
    ``pointwise_dynamic_*.py``) without the globals of its scalar function's module,
    which its rebuild needs (``NameError``); FlagGems' other generators (scatter, index)
    inject none."""
    for rec in index.get("records", []):
        k = rec.get("request", {}).get("kernel", {})
        module, path = k.get("module") or "", k.get("path") or ""
        if module.startswith("_gen_module_") and Path(path).name.startswith("pointwise_dynamic_"):
            if not k.get("generated_globals"):
                return f"{k.get('qualname')}: a pointwise kernel without its globals"
        elif k.get("generated_source") is not None and "." in module:
            if module.rsplit(".", 1)[1] == Path(path).stem:
                return f"{module}:{k.get('qualname')}: a plain module's kernel kept as generated"
    return None


def packed_ops(packs: list[Path]) -> dict[str, str | None]:
    """The ``<repo>/<run_name>`` op dirs the packs hold records of, each with its
    :func:`recording_gap` (of the last pack holding it) or None."""
    ops: dict[str, str | None] = {}
    for pack in packs:
        with _archive(pack, "r:xz") as tar:
            members = _checked(tar, pack)
            for op in {_op_of(m.name) for m in members} - {""}:
                ops[op] = None
            for m in members:
                if Path(m.name).name == "index.json" and Path(m.name).parent.name == "codegen":
                    ops[_op_of(m.name)] = recording_gap(json.loads(tar.extractfile(m).read()))
    return ops


SENT = "records_sent.txt"


def note_sent(full: Path) -> list[str]:
    """Add to ``full/records_sent.txt`` every op complete in ``full`` whose records are
    here (what the ``records`` stage sends back), keeping the ops listed before (a
    restored op's records came back with an earlier call). Returns the whole list. The
    ``pack`` stage runs it, so the list travels in full.tgz."""
    path = full / SENT
    sent = set(path.read_text().split()) if path.is_file() else set()
    for run in (p.parent for p in full.glob("*/*/.complete")):
        if has_records(run):
            sent.add(run.relative_to(full).as_posix())
    path.write_text("".join(f"{op}\n" for op in sorted(sent)))
    return sorted(sent)


def forget_unrecorded(full: Path, packs: list[Path]) -> list[str]:
    """Unmark every PASS op complete in ``full`` that no pack holds records of, or only
    records with a :func:`recording_gap` (its ``.complete`` removed, the rest kept).
    Returns those ops. Refused (SystemExit, nothing unmarked) while an op whose records
    an earlier call sent back (``records_sent.txt``) is in no pack: that call's
    records.tgz was not merged and packed yet, and unmarking would record it again."""
    packed = packed_ops(packs)
    sent = (full / SENT).read_text().split() if (full / SENT).is_file() else []
    lost = [op for op in sent if op not in packed and (full / op / ".complete").is_file()]
    if lost:
        raise SystemExit(
            f"unrecorded: {len(lost)} op(s) whose records an earlier call sent back are in"
            f" no pack (e.g. {lost[0]}): merge and pack that call's records.tgz first"
            " (benchmarks/full_records.py merge, pack)"
        )
    kept = {op for op, gap in packed.items() if gap is None}
    again = []
    for done in sorted(full.glob("*/*/.complete")):
        op = done.parent.relative_to(full).as_posix()
        if done.read_text().strip() == "PASS" and op not in kept:
            done.unlink()
            again.append(op)
    return again


RETRIED = ("FAIL", "TIMEOUT", "CRASH")


def retry(full: Path, run_names: list[str]) -> list[str]:
    """Let ``--resume --keep-failed`` run these ops of ``full`` again: each one's row,
    which must be FAIL, TIMEOUT or CRASH, leaves ``full/ops_status.csv`` (the statuses
    --keep-failed keeps); its run dir (run.log) stays, so it runs after the ops not
    started yet. E.g. the mm-family ops that timed out before their flagtune sweep was
    compiled ahead. Refused whole (SystemExit, the file unchanged) for a name that is
    not there or has another status. Returns the run names taken out."""
    path = full / "ops_status.csv"
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames or [], list(reader)
    status = {r["run_name"]: r["status"] for r in rows}
    for name in run_names:
        if status.get(name) not in RETRIED:
            raise SystemExit(
                f"retry: {name}: {status.get(name, 'not in ops_status.csv')}, not one of"
                f" {', '.join(RETRIED)}"
            )
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(r for r in rows if r["run_name"] not in run_names)
    tmp.replace(path)
    return sorted(set(run_names))


TIMEOUT_KINDS = ("op-end", "after-pass", "rows", "capture", "silent")
RETRY_KINDS = ("op-end", "after-pass", "rows")  # what a longer OP_TIMEOUT may finish
_PASS_MARKS = re.compile(r"^[.sxX]+$")  # pytest's progress after the last table


def timeout_kind(log_tail: str) -> tuple[str, int, int, str]:
    """(kind, rows, capture fallbacks, last line) of a TIMEOUT op's run.log tail:
    ``op-end`` when an op-end hook or a test's teardown said it was still running (its
    line is the last line given), ``after-pass`` when its last line is pytest's pass
    mark (nothing printed since a test passed: a later test of the op, or its end),
    else ``rows`` / ``capture`` / ``silent``; the rows it printed (``SUCCESS`` table
    lines) and the capture fallback markers it wrote (the marker grammar of
    docs/design.md), counted in the tail only (a lower bound)."""
    from zlbench.models.run import MarkerKind
    from zlbench.protocol.boundary import RUNNER, SLOW_HOOK

    lines = [ln.strip() for ln in log_tail.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(RUNNER + " ")]
    rows = sum(1 for ln in lines if ln.startswith("SUCCESS"))
    fallbacks = sum(1 for ln in lines if MarkerKind.NO_CUDAGRAPH.value in ln)
    last = lines[-1] if lines else ""
    slow = [ln for ln in lines if ln.startswith(SLOW_HOOK)]
    if slow:
        kind, last = "op-end", slow[-1]  # which op-end hook it was in (since 2026-12-02)
    elif _PASS_MARKS.match(last):
        kind = "after-pass"  # silent since a test's pass mark: a later test of the op, or its end
    else:
        kind = "rows" if rows else "capture" if fallbacks else "silent"
    return kind, rows, fallbacks, last[:120]


def _with_pass(full: Path, fn):
    """``fn(read)`` over a record-pass dir or the full.tgz a call packed, ``read(name)``
    giving a file's text ("" when it is not there)."""
    if full.is_file():
        with _archive(full) as tar:
            files = {m.name: m for m in _checked(tar, full)}
            read = lambda name: (  # noqa: E731
                tar.extractfile(files[name]).read().decode(errors="replace")
                if name in files else ""
            )  # fmt: skip
            return fn(read)
    return fn(lambda n: (full / n).read_text(errors="replace") if (full / n).is_file() else "")


def _statuses(read, cmd: str) -> list[dict]:
    rows = list(csv.DictReader(io.StringIO(read("ops_status.csv"))))
    if not rows:
        raise SystemExit(f"{cmd}: no ops_status.csv with rows")
    return rows


def timeouts(full: Path) -> list[tuple[str, str, int, int, str]]:
    """(run_name, kind, rows, fallbacks, last line) of every TIMEOUT op of ``full``
    (a record-pass dir or the full.tgz a call packed), in run-name order."""

    def found(read) -> list[tuple[str, str, int, int, str]]:
        out = []
        for r in sorted(_statuses(read, "timeouts"), key=lambda r: r["run_name"]):
            if r["status"] == "TIMEOUT":
                tail = read(f"{r['repo']}/{r['run_name']}/run.log")
                out.append((r["run_name"], *timeout_kind(tail)))
        return out

    return _with_pass(full, found)


_KIND_SAYS = {
    "op-end": "an op-end hook or teardown still running",
    "after-pass": "silent after its last pass mark",
    "rows": "still timing rows",
    "capture": "CUDA-graph capture failing at every shape it reached",
    "silent": "nothing printed after its test started",
}


def dismiss_proposal(
    full: Path, entries: list, date: str, retried: bool = False
) -> tuple[list[str], list[str], list[str]]:
    """What the pass says about the dismiss list (``entries``: its parsed entries):
    the lines to add (each FAIL, CRASH or TIMEOUT op no entry dismisses, as ``repo:op
    # DATE reason``, the reason what the pass saw), the TIMEOUT ops a longer
    ``OP_TIMEOUT`` may still finish (``RETRY_KINDS``; lines to add once ``retried``),
    and the entries whose op PASSed in the pass (``RECHECK=1``: the H20's limit does
    not hold on this GPU), to drop. Nothing is written: a curated list is edited by
    hand, from this."""
    from zlbench.runner.catalog.dismiss import find_dismissal

    def propose(read) -> tuple[list[str], list[str], list[str]]:
        info = json.loads(read("batch.json") or "{}")
        where = f"H200 record pass, --gpu-share {info.get('gpu_share', '?')}"
        add, wait, drop = [], [], []
        for r in sorted(_statuses(read, "dismiss"), key=lambda r: (r["repo"], r["op"])):
            entry = find_dismissal(entries, r["repo"], r["op"])
            if r["status"] == "PASS":
                if entry is not None:
                    drop.append(
                        f"{r['repo']}:{r['op']} (line {entry.line}): PASS in the {where},"
                        f" {r.get('rows') or 0} rows"
                    )
                continue
            if r["status"] not in RETRIED or entry is not None:
                continue
            if r["status"] == "TIMEOUT":
                kind, rows, fallbacks, last = timeout_kind(
                    read(f"{r['repo']}/{r['run_name']}/run.log")
                )
                seen = f"{rows} rows, {fallbacks} capture fallbacks in its log tail"
                why = f"{r.get('note') or 'TIMEOUT'}: {_KIND_SAYS[kind]} ({seen}"
                why += f"; last line {last!r})" if kind in ("op-end", "capture") else ")"
                if kind in RETRY_KINDS and not retried:
                    wait.append(f"{r['repo']}:{r['op']}: {why}")
                    continue
            else:
                sig = f"; {r['signature']}" if r.get("signature") else ""
                why = f"{r['status']}: {r.get('note') or 'no note'}{sig}"
            add.append(
                f"{r['repo']}:{r['op']}  # {date} {why} ({where};"
                " examples/h200-full-screen)".replace("\n", " ")
            )
        return add, wait, drop

    return _with_pass(full, propose)


def pass_status(full: Path, tier: list[str] | None = None) -> dict:
    """Where the record pass stands: final ops by status, rows of the PASS ops, the
    batch's selected ops not final yet, and (``tier``: op selectors) the tier's ops
    not final yet, in the tier's order."""
    from zlbench.protocol.layout import split_op_key
    from zlbench.protocol.ops import run_name_for as run_name

    def status(read) -> dict:
        rows = _statuses(read, "status")
        final = {r["run_name"]: r for r in rows}
        info = json.loads(read("batch.json") or "{}")
        selected = [split_op_key(k)[1] for k in info.get("ops", [])]
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        return {
            "final": len(rows),
            "counts": counts,
            "rows": sum(int(r.get("rows") or 0) for r in rows if r["status"] == "PASS"),
            "selected": len(selected),
            "left": [s for s in selected if run_name(s) not in final],
            # final ops the batch does not select: dismissed and unconditional skips
            "outside": len(set(final) - {run_name(s) for s in selected}) if selected else 0,
            "tier_left": [s for s in (tier or []) if run_name(s) not in final],
        }

    return _with_pass(full, status)


def _ops_file(path: Path) -> list[str]:
    """The op selectors of an ops file (one a line, ``#`` comments)."""
    from zlbench.protocol.ops import read_ops_file

    if not path.is_file():
        raise SystemExit(f"status: --tier {path}: no such file")
    return read_ops_file(path)


def _op_of(name: str) -> str:
    """``<repo>/<run_name>`` of a member's path, or "" for a file above the op dirs."""
    parts = Path(name).parts
    return "/".join(parts[:2]) if len(parts) > 2 else ""


def _checked(tar: tarfile.TarFile, archive: Path) -> list[tarfile.TarInfo]:
    """The archive's files; refused whole when one is not a plain file or dir inside."""
    members = []
    for m in tar.getmembers():
        p = Path(m.name)
        if p.is_absolute() or ".." in p.parts or not (m.isfile() or m.isdir()):
            raise BadPack(f"{archive}: {m.name}: not a plain file inside the archive")
        if m.isfile():
            members.append(m)
    return members


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BadPack as e:
        print(f"full_records.py: {e}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("records")
    rec.add_argument("full", type=Path)
    rec.add_argument("out", type=Path)
    m = sub.add_parser("merge")
    m.add_argument("dir", type=Path)
    m.add_argument("archives", type=Path, nargs="+")
    p = sub.add_parser("pack")
    p.add_argument("dir", type=Path)
    p.add_argument("out", type=Path)
    u = sub.add_parser("unpack")
    u.add_argument("paths", type=Path, nargs="+", help="ARCHIVE.tar.xz ... DIR")
    r = sub.add_parser("unrecorded")
    r.add_argument("full", type=Path)
    r.add_argument("packs", type=Path)
    t = sub.add_parser("retry")
    t.add_argument("full", type=Path)
    t.add_argument("run_names", nargs="+")
    n = sub.add_parser("sent")
    n.add_argument("full", type=Path)
    g = sub.add_parser("gaps")
    g.add_argument("packs", type=Path)
    o = sub.add_parser("timeouts")
    o.add_argument("full", type=Path)
    d = sub.add_parser("dismiss")
    d.add_argument("full", type=Path)
    d.add_argument("--dismiss", type=Path, default=Path("ops/dismiss.txt"))
    d.add_argument("--date", required=True, help="YYYY-MM-DD: the runs' date")
    d.add_argument(
        "--retried", action="store_true", help="the retry with a longer OP_TIMEOUT has run"
    )
    st = sub.add_parser("status")
    st.add_argument("full", type=Path)
    st.add_argument("--tier", type=Path, help="an ops file: its ops not final yet")
    a = ap.parse_args(argv)
    if a.cmd == "status":
        tier = _ops_file(a.tier) if a.tier else None
        got = pass_status(a.full, tier)
        by = ", ".join(f"{n} {k}" for k, n in sorted(got["counts"].items(), key=lambda x: -x[1]))
        print(
            f"status: {got['final']} op(s) final ({by}; {got['outside']} not selected: "
            f"dismissed or unconditional skips), {got['rows']} rows of PASS ops; "
            f"{len(got['left'])} of the batch's {got['selected']} selected op(s) to run"
        )
        if tier is not None:
            left = got["tier_left"]
            print(f"status: {a.tier}: {len(tier) - len(left)} of {len(tier)} final"
                  + (f", to run: {' '.join(left)}" if left else ""))  # fmt: skip
        return 0
    if a.cmd == "dismiss":
        import datetime as dt

        from zlbench.errors import ZlbenchError
        from zlbench.runner.catalog.dismiss import load_dismiss

        try:
            dt.date.fromisoformat(a.date)
            entries = load_dismiss(a.dismiss, warn=lambda _: None)
        except (ValueError, ZlbenchError) as e:
            raise SystemExit(f"dismiss: {e}") from None
        add, wait, drop = dismiss_proposal(a.full, entries, a.date, a.retried)
        for line in add:
            print(line)
        for line in wait:
            print(f"# retry first (a longer OP_TIMEOUT may finish it): {line}")
        for line in drop:
            print(f"# drop: {line}")
        print(
            f"dismiss: {len(add)} to add, {len(wait)} to retry first, {len(drop)} to drop"
            f" ({a.dismiss}: {len(entries)} entries)",
            file=sys.stderr,
        )
        return 0
    if a.cmd == "timeouts":
        found = timeouts(a.full)
        for name, kind, n_rows, n_fb, last in found:
            print(f"{name}: {kind} (rows {n_rows}, capture fallbacks {n_fb}): {last}")
        counts = ", ".join(f"{sum(1 for t in found if t[1] == k)} {k}" for k in TIMEOUT_KINDS)
        print(f"timeouts: {len(found)} ({counts})")
        again = [t[0] for t in found if t[1] in RETRY_KINDS]
        if again:
            print(f'retry with a longer OP_TIMEOUT: retry "{" ".join(again)}"')
        return 0
    if a.cmd == "records":
        ops, texts = records(a.full, a.out)
        print(f"{a.out} {a.out.stat().st_size} bytes, {ops} ops, {texts} texts")
        return 0
    if a.cmd == "unrecorded":
        packs = sorted(a.packs.glob("*.tar.xz"))
        again = forget_unrecorded(a.full, packs)
        print(f"unrecorded: {len(again)} PASS op(s) to record again ({len(packs)} pack(s))")
        return 0
    if a.cmd == "retry":
        print(f"retry: {len(retry(a.full, a.run_names))} op(s) to run again")
        return 0
    if a.cmd == "sent":
        print(f"{a.full / SENT}: {len(note_sent(a.full))} op(s) whose records were sent back")
        return 0
    if a.cmd == "gaps":
        ops = packed_ops(sorted(a.packs.glob("*.tar.xz")))
        gaps = {op: gap for op, gap in sorted(ops.items()) if gap}
        for op, gap in gaps.items():
            print(f"{op}: {gap}")
        print(f"gaps: {len(gaps)} of {len(ops)} packed op(s) to record again")
        return 0
    if a.cmd == "merge":
        merged = merge(a.dir, a.archives)
        print(f"{len(merged)} op(s) merged into {a.dir}")
        counts = unrecorded_counts(a.dir, merged)
        some = {op: n for op, n in counts.items() if n}
        shown = ", ".join(f"{op} {n}" for op, n in sorted(some.items())[:5])
        print(
            f"unrecorded kernels: {len(some)} op(s) ran some ({shown or '-'}), "
            f"{sum(1 for n in counts.values() if n == 0)} none, "
            f"{sum(1 for n in counts.values() if n is None)} not counted (older recorder)"
        )
    elif a.cmd == "pack":
        ops, texts = pack(a.dir, a.out)
        print(f"{a.out}: {ops} op(s), {texts} text(s), {a.out.stat().st_size} bytes")
    else:
        if len(a.paths) < 2:
            ap.error("unpack: ARCHIVE.tar.xz ... DIR")
        ops, texts = unpack(a.paths[:-1], a.paths[-1])
        print(f"{a.paths[-1]}: {ops} op(s), {texts} text(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

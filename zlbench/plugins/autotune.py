"""Autotune record & replay (docs/design.md §5.1-7).

Why: a FlagTree change must be measured with the same kernel variants as its
baseline, or a speedup change may just be a different autotune winner. In
record mode every tuned kernel's chosen config is written per op to
``<run_dir>/autotune_records/<op>.json``; in replay mode those configs are
pinned before the tuner looks at its cache, so no sweep runs.

Rules kept from the old scripts (each has a test):

1. record reads back ``tuner.cache[key]`` after ``run()`` (a warm sqlite DB adds
   no key, so a diff of cache keys would record nothing);
2. replay injects unconditionally (never "only if the key is not cached");
3. single-config kernels never consult a cache: record ``configs[0]``, pin nothing;
4. a chosen config with a ``pre_hook`` is not recorded for a plain Autotuner (the
   hook cannot be serialized or re-attached); LibTuner re-attaches hooks by
   kwargs match, so its configs are kept. On replay, a plain Autotuner key that
   is missing and whose fresh winner has a pre_hook is therefore not a fallback;
5. replay fallbacks print a marker (once per op, kernel and key):
   ``AUTOTUNE_REPLAY_FALLBACK reason=key_missing kernel=<id>`` (the tuner then
   tunes normally), ``reason=compile_<Exc>`` (the bad config was evicted and the
   tuner re-tuned), ``reason=compile_<Exc>_no_evict`` (the tuner's cache, e.g.
   FlagGems' sqlite ConfigCache, has no ``__delitem__``) or ``reason=pin_ignored``
   (a config was pinned but the tuner benchmarked configs during that call, or
   ran another config: it read its cache around the injection),
   ``reason=pre_hook_dropped`` (a plain Autotuner's winner has a pre_hook, which
   its record could not keep (rule 4): the replay tuned it live), and, once at
   the end of an op with no other marker, ``reason=tuned_live kernel=<ids>`` when
   configs were benchmarked anyway (``bench_calls > 0``, e.g. a tuner no patch
   reached). Every one of them fails the op or row in the gate: an unpinned
   measurement compares autotune winners, not compilers;
6. LibTuner is patched after collection, for whichever of ``flag_gems`` /
   ``flaggems_vllm`` the tests imported (re-checked when each op starts);
7. records are written as soon as they change, at op end and at exit, so a
   crashed process keeps what it recorded.

Record file: ``{kernel_id: {serialized_key: config}}``. ``kernel_id`` is
``<module>:<qualname>`` of the Python function under the tuner (``#2``... for a
second tuner over the same function). ``serialized_key`` is the tuner's own
cache key as compact JSON array text (``[1024,"torch.bfloat16"]``: ints and
floats as JSON numbers, strings such as dtypes as strings, anything else as
``str()``). ``config`` is ``{"kwargs": {...}, "num_warps": .., "num_ctas": ..,
"num_stages": .., ["maxnreg": ..]}``.

Every op ends with one summary line, ``ZLBENCH_AUTOTUNE run_name=<n> mode=<m>
kernels=<k> keys=<k> pinned=<calls> tuned=<calls> bench_calls=<configs>
entries_reset=<n>``; ``bench_calls=0`` in a replay means no sweep ran, and
``entries_reset`` counts the FlagGems LibEntry launch caches an earlier op of the
process had filled, emptied when this op began (``_tuners.forget_launch_caches``).
"""

from __future__ import annotations

import atexit
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from zlbench.errors import ZlbenchError
from zlbench.models import (
    AutotuneRecords,
    Marker,
    MarkerKind,
    PlanEntry,
    atomic_write_text,
    records_file_name,
    records_json,
    validate,
)
from zlbench.plugins import state
from zlbench.plugins import sweep as sweep_mod
from zlbench.protocol import options
from zlbench.protocol.layout import records_dir

Records = dict[str, dict[str, dict]]


# --------------------------------------------------------------------------- pure helpers


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def serialize_key(key: tuple) -> str:
    """The record file's key text: compact JSON of the key's elements."""
    return json.dumps([_plain(v) for v in key], separators=(",", ":"))


def records_file(directory: str | Path, op: str) -> Path:
    return Path(directory) / records_file_name(op)


def records_path(entry: PlanEntry) -> Path:
    return records_file(records_dir(entry.run_dir), entry.op)


def load_replay(entry: PlanEntry) -> tuple[Records, str | None]:
    """The records to pin for ``entry`` and a problem description (or None)."""
    if not entry.replay_records:
        return {}, "plan entry has no replay_records dir"
    directory = Path(entry.replay_records)
    path = records_file(directory, entry.op)
    if not path.is_file():
        found = sorted(directory.glob("*.json")) if directory.is_dir() else []
        if len(found) != 1:
            return {}, f"no records file {path}"
        path = found[0]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        return {}, f"cannot read {path}: {e}"
    if not isinstance(data, dict):
        return {}, f"{path}: not a records object"
    try:  # any version: a record without one (version 0) is the bare mapping
        return validate(path, AutotuneRecords, data).kernels, None
    except ZlbenchError as e:  # one line naming the file and the field
        return {}, str(e)


def keeps_record(libtuner: bool, config: Any) -> bool:
    """docs/design.md §5.4: a pre_hook config is recorded for LibTuner only."""
    return libtuner or getattr(config, "pre_hook", None) is None


def summary_line(book: OpBook) -> str:
    kernels = {k for k, _ in book.seen}
    return (
        f"ZLBENCH_AUTOTUNE run_name={book.entry.run_name} mode={book.entry.mode} "
        f"kernels={len(kernels)} keys={len(book.seen)} pinned={book.pinned} "
        f"tuned={book.tuned} bench_calls={book.bench_calls} entries_reset={book.entries_reset}"
    )


# --------------------------------------------------------------------------- per-op state


@dataclass
class OpBook:
    """What record/replay knows about one plan entry."""

    entry: PlanEntry
    records: Records = field(default_factory=dict)  # recorded (record) / seen (replay)
    replay: Records = field(default_factory=dict)
    pinned_cache: dict[tuple[str, str], Any] = field(default_factory=dict)
    reported: set[tuple[str, str]] = field(default_factory=set)  # fallbacks already marked
    seen: set[tuple[str, str]] = field(default_factory=set)  # (kernel, key) of tuned launches
    sweep: dict[str, dict[str, dict]] = field(default_factory=dict)
    pinned: int = 0
    tuned: int = 0
    bench_calls: int = 0
    bench_at_start: int = 0
    entries_reset: int = 0  # LibEntry launch caches emptied when the op began
    benched_at_start: dict[str, int] = field(default_factory=dict)
    aot_at_start: Any = None  # aot.AotStats when the op began (record mode)
    dirty: bool = False


def _emit(reason: str, kernel: str) -> None:
    state.emit_marker(Marker(kind=MarkerKind.REPLAY_FALLBACK, reason=reason, kernel=kernel))


def swept_kernels(book: OpBook, now: dict[str, int]) -> str:
    """Ids of the kernels that benchmarked configs since the op began."""
    ids = [k for k, n in now.items() if n > book.benched_at_start.get(k, 0)]
    return ",".join(sorted(ids)) or "?"


def _emit_op_level(op: state.OpState, reason: str, kernel: str) -> None:
    """A marker of the whole op (names no row, so the gate fails every row of it)."""
    marker = Marker(kind=MarkerKind.REPLAY_FALLBACK, reason=reason, kernel=kernel)
    op.markers.append(marker)
    print(marker.line(), flush=True)


class AutotuneHandler:
    """The record/replay policy behind the adapter in ``_tuners``."""

    def __init__(
        self,
        shard: tuple[int, int] | None = None,
        sweep_out: str | None = None,
        aot_jobs: int = 0,
    ):
        self.books: dict[str, OpBook] = {}
        self.shard = shard
        self.aot = aot_jobs  # threads compiling a record sweep's configs ahead (0: off)
        self.sweep_out = Path(sweep_out) if sweep_out else None
        self.skeys: dict[tuple, str] = {}

    # ---- op lifecycle

    def book(self) -> OpBook | None:
        op = state.current_op()
        if op is None:
            return None
        book = self.books.get(op.entry.run_name)
        if book is None or book.entry is not op.entry:
            book = self.books[op.entry.run_name] = self._open(op.entry)
        return book

    def _open(self, entry: PlanEntry) -> OpBook:
        from zlbench.plugins import _tuners

        book = OpBook(
            entry=entry,
            bench_at_start=_tuners.bench_calls(),
            benched_at_start=_tuners.benched_kernels(),
        )
        if entry.mode == "record" and self.aot > 0:
            from zlbench.plugins import aot

            book.aot_at_start = aot.STATS.copy()
        if entry.mode == "replay":
            book.replay, problem = load_replay(entry)
            if problem:
                print(f"ZLBENCH_AUTOTUNE_WARNING {problem}", flush=True)
        return book

    def on_start(self, op: state.OpState) -> None:
        from zlbench.plugins import _tuners

        _tuners.patch_packages(_tuners.imported_packages())
        book = self.books[op.entry.run_name] = self._open(op.entry)
        # what an earlier op launched must not decide this op's configs (docs/design.md
        # item 20): its launches go through the tuner, to be pinned or recorded
        book.entries_reset = _tuners.forget_launch_caches()

    def on_end(self, op: state.OpState) -> None:
        from zlbench.plugins import _tuners

        book = self.books.get(op.entry.run_name)
        if book is None:
            return
        book.bench_calls = _tuners.bench_calls() - book.bench_at_start
        if book.entry.mode == "replay" and book.bench_calls > 0 and not book.reported:
            _emit_op_level(op, "tuned_live", swept_kernels(book, _tuners.benched_kernels()))
        if book.entry.mode == "record" and not records_path(book.entry).exists():
            # An op that tuned nothing still gets its (empty) record: "recorded,
            # nothing to pin", so it can be replayed and any tuned kernel that
            # shows up in the replay is a key_missing fallback.
            book.dirty = True
        self.flush(book)
        print(summary_line(book), flush=True)
        if book.aot_at_start is not None:
            from zlbench.plugins import aot

            done = aot.STATS.since(book.aot_at_start)
            if done.sweeps:
                print(done.line(book.entry.run_name), flush=True)

    def flush(self, book: OpBook) -> None:
        if book.entry.mode == "record" and book.dirty:
            atomic_write_text(records_path(book.entry), records_json(book.records))
        if self.sweep_out is not None and book.sweep:
            atomic_write_text(self.sweep_out, json.dumps(book.sweep, indent=1, sort_keys=True))
        book.dirty = False

    def flush_all(self) -> None:
        for book in list(self.books.values()):
            try:
                self.flush(book)
            except OSError as e:  # at exit: report, never raise
                print(f"ZLBENCH_AUTOTUNE_WARNING cannot write records: {e}", file=sys.stderr)

    # ---- adapter callbacks

    def _skey(self, key: tuple) -> str:
        try:
            text = self.skeys.get(key)
        except TypeError:  # unhashable element
            return serialize_key(key)
        if text is None:
            text = self.skeys[key] = serialize_key(key)
        return text

    def pin(self, call) -> Any | None:
        book = self.book()
        if book is None or book.entry.mode != "replay":
            return None
        skey = self._skey(call.key)
        cached = book.pinned_cache.get((call.kernel, skey))
        if cached is None:
            data = book.replay.get(call.kernel, {}).get(skey)
            if data is None:
                return None
            from zlbench.plugins import _tuners

            cached = book.pinned_cache[(call.kernel, skey)] = _tuners.config_from_dict(data)
        book.pinned += 1
        return cached

    def aot_jobs(self, call) -> int:
        """Threads to compile this unpinned run's sweep ahead: record mode only (a
        replay pins its configs; docs/autotune.md "Fast record pass")."""
        if self.aot <= 0:
            return 0
        book = self.book()
        return self.aot if book is not None and book.entry.mode == "record" else 0

    def configs_for(self, call) -> list | None:
        if self.shard is None or call.single:
            return None
        return sweep_mod.shard_configs(call.tuner.configs, *self.shard)

    def pin_failed(self, call, exc: BaseException, evicted: bool) -> None:
        book = self.book()
        skey = self._skey(call.key)
        reason = f"compile_{type(exc).__name__}" + ("" if evicted else "_no_evict")
        if book is not None:
            book.replay.get(call.kernel, {}).pop(skey, None)
            book.pinned_cache.pop((call.kernel, skey), None)
            book.pinned -= 1
            book.reported.add((call.kernel, skey))
        _emit(reason, call.kernel)

    def after(self, call) -> None:
        book = self.book()
        if book is None:
            return
        if call.timings:
            book.tuned += 1
        book.seen.add((call.kernel, self._skey(call.key)))
        if book.entry.mode == "replay":
            self._after_replay(book, call)
        else:
            self._after_record(book, call)

    def _after_replay(self, book: OpBook, call) -> None:
        if call.pin_ignored:
            book.pinned -= 1  # pin() counted it; the tuner did not use it
        elif call.single or call.pinned:
            return
        skey = self._skey(call.key)
        if (call.kernel, skey) in book.reported:
            return
        book.reported.add((call.kernel, skey))
        if call.pin_ignored:
            _emit("pin_ignored", call.kernel)
        elif keeps_record(call.libtuner, call.config):
            _emit("key_missing", call.kernel)
        else:  # record mode dropped it (docs/design.md §5.4): this replay tuned it live
            _emit("pre_hook_dropped", call.kernel)

    def _after_record(self, book: OpBook, call) -> None:
        from zlbench.plugins import _tuners

        skey = self._skey(call.key)
        known = book.records.get(call.kernel, {}).get(skey)
        if known is not None and not call.timings:
            return
        config = call.read_back()
        if config is None or not keeps_record(call.libtuner, config):
            return
        data = _tuners.config_to_dict(config)
        if self.shard is not None and call.timings is not None:
            ms = _tuners.first_timing(call.timings.get(call.config))
            book.sweep.setdefault(call.kernel, {})[skey] = {"config": data, "ms": ms}
            book.dirty = True
        if data != known:
            book.records.setdefault(call.kernel, {})[skey] = data
            book.dirty = True
        if book.dirty:
            self.flush(book)  # docs/design.md §5.7: a crash keeps what was recorded


# --------------------------------------------------------------------------- pytest hooks

HANDLER_KEY = pytest.StashKey[AutotuneHandler]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-autotune")
    options.add_options(group.addoption, table=options.SWEEP_OPTIONS)


def pytest_configure(config: pytest.Config) -> None:
    spec = options.get(config, "sweep-shard")
    shard = sweep_mod.parse_sweep_shard(spec) if spec else None
    from zlbench.plugins.aot import parse_jobs

    try:
        aot_jobs = parse_jobs(options.get(config, "aot-compile"))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    handler = AutotuneHandler(
        shard=shard, sweep_out=options.get(config, "sweep-out"), aot_jobs=aot_jobs
    )
    config.stash[HANDLER_KEY] = handler
    state.subscribe(on_start=handler.on_start, on_end=handler.on_end)
    atexit.register(handler.flush_all)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """docs/design.md §5.6: the test modules are imported now; patch what they imported."""
    handler = session.config.stash.get(HANDLER_KEY, None)
    if handler is None or state.active() is None:
        return  # not a zlbench run: leave triton alone
    from zlbench.plugins import _tuners

    _tuners.install(handler)
    classes = _tuners.patch_packages(_tuners.imported_packages())
    print(f"\nZLBENCH_AUTOTUNE_PATCHED {' '.join(classes) or '-'}", flush=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    handler = config.stash.get(HANDLER_KEY, None)
    if handler is None:
        return
    handler.flush_all()
    state.unsubscribe(on_start=handler.on_start, on_end=handler.on_end)
    atexit.unregister(handler.flush_all)
    if "zlbench.plugins._tuners" in sys.modules:
        sys.modules["zlbench.plugins._tuners"].uninstall()

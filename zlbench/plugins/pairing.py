"""One side of the interleaved paired A/B, inside a benchmark process.

With ``$ZLBENCH_PAIR_DIR`` set (the gate's A/B: ``zlbench.runner.ab.interleave``),
two long-lived benchmark processes, the PR's compiler and the base's, run the same
ops in the same order on one GPU. At each row, once its CUDA graph is captured, a
process does not time alone: it meets the other side in the row's dir under
``$ZLBENCH_PAIR_DIR`` and the two take samples slot by slot in the balanced order
of :func:`zlbench.protocol.pairs.slot_side`, each sample in the GPU's exclusive turn
(:mod:`zlbench.protocol.turn`), until :func:`zlbench.protocol.pairs.should_stop`
says so; both read the same sample files, so both stop at the same pair.

The row's dir ``<pair dir>/<digest>/`` holds ``key.json`` (the row: repo, run name,
op, dtype, shape, occurrence), ``ready.<side>`` (that side's graph is captured),
``s<slot>.json`` (one sample: side, per-call ms, SM clock MHz, NVML throttle
reasons) and ``alone.<side>`` (that side gave up waiting and timed alone). The gate
packs them into ``ab/pairs.json`` after the A/B.

A side that does not come (it crashed, it is stuck compiling) costs the other at
most ``wait_s`` for the row, then both time alone and the row has no pairs; after
one such wait the next rows wait ``short_wait_s`` only until a pair succeeds again.
Once a side's whole batch has ended (``<pair dir>/done.<side>``, written by the
runner), the other waits for it no more.

How a row is sampled is :class:`zlbench.models.timing.PairSampling`, the rule's
``sampling`` (from ``$ZLBENCH_PAIR_RULE``): one sample is what the timer hands to
:meth:`Pairing.measure` (graph: one replay of the row's graph, or one plain do_bench
median), the clock read after it is :data:`CLOCKS`' reader of ``sampling.clock``, and
the adaptive pairs (``min_pairs``, ``max_pairs``, ...) are its stopping rule's.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zlbench.models.timing import SampleClock
from zlbench.plugins import state
from zlbench.protocol.pairs import (
    DONE_PREFIX,
    PAIR_DIR_VAR,
    PAIR_RULE_VAR,
    PAIR_SIDE_VAR,
    PairRule,
    complete_pairs,
    other,
    read_samples,
    row_stats,
    samples_plain,
    should_stop,
    slot_side,
)
from zlbench.protocol.turn import GpuTurn, process_turn

KEY_JSON = "key.json"
POLL_S = 0.0005  # between looks at the other side's files
MAX_POLL_S = 0.005


class Clock:
    """SM clock (MHz) and NVML clock event reasons of this process's GPU; nothing
    (None, None) where NVML (``pynvml``) is not importable or does not answer."""

    def __init__(self) -> None:
        self.nvml: Any = None
        self.handle: Any = None
        try:
            import pynvml  # nvidia-ml-py: on GPU runners, never an install requirement

            pynvml.nvmlInit()
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
            index = int(visible) if visible.isdigit() else 0
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.nvml = pynvml
        except Exception:  # noqa: BLE001 - no clock readings, samples are still taken
            self.nvml = None

    def read(self) -> tuple[int | None, int | None]:
        if self.nvml is None:
            return None, None
        try:
            mhz = self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
            get = (
                getattr(self.nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                or self.nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            )
            return int(mhz), int(get(self.handle))
        except Exception:  # noqa: BLE001
            return None, None


# The clock reader of each SampleClock (models.timing.PairSampling.clock): read after each
# sample, in its GPU turn; read(): (SM clock MHz, clock event reasons), None where unknown.
CLOCKS: dict[SampleClock, Callable[[], Any]] = {SampleClock.NVML: Clock}


@dataclass
class Pairing:
    """This process's side of the A/B (``side``), meeting the other in ``root``."""

    root: Path
    side: str
    rule: PairRule
    wait_s: float = 300.0  # for the other side to reach a row
    short_wait_s: float = 10.0  # after a row the other side never reached
    sample_wait_s: float = 120.0  # for the other side's next sample
    turn: GpuTurn | None = None
    clock: Any = None
    seen: dict[tuple, int] = field(default_factory=dict)  # row -> gems measurements so far
    lagging: bool = False  # the other side missed a row: wait briefly until it is back

    # ---- the row

    def row_key(self) -> dict[str, Any] | None:
        """The row in flight as ``RowKey`` fields (occurrence: this process's count of
        FlagGems measurements of the same row so far), None outside an op."""
        op = state.current_op()
        if op is None or op.dtype is None or op.shape is None:
            return None
        bench_op = str(getattr(op.live_bench, "op_name", "") or op.entry.op)
        ident = (op.entry.repo, op.entry.run_name, bench_op, op.dtype, op.shape)
        n = self.seen.get(ident, 0)
        self.seen[ident] = n + 1
        fields = ("repo", "run_name", "op", "dtype", "shape")
        return dict(zip(fields, ident, strict=True)) | {"occurrence": n}

    def measure(self, sample: Callable[[], float], plain: bool) -> list[float] | None:
        """This side's per-call ms of each of its samples of the row in flight, taken
        in turns with the other side; None when there is no other side to pair with
        (the caller then times alone, as without an A/B)."""
        key = self.row_key()
        if key is None:
            return None
        text = json.dumps(key, sort_keys=True)
        d = self.root / hashlib.sha256(text.encode()).hexdigest()[:24]
        d.mkdir(parents=True, exist_ok=True)
        _write_once(d / KEY_JSON, text)
        _write_once(d / f"ready.{self.side}", "")
        if not self._wait_for(
            d, f"ready.{other(self.side)}", self.short_wait_s if self.lagging else self.wait_s
        ):
            self.lagging = True
            return None
        if (d / f"alone.{other(self.side)}").exists():  # it came, and gave up already
            return None
        self.lagging = False
        return self._pairs(d, text, sample, plain) or None

    def _pairs(self, d: Path, key: str, sample: Callable[[], float], plain: bool) -> list[float]:
        turn = self.turn or process_turn()
        clock = self.clock or CLOCKS[self.rule.sampling.clock]()
        self.clock = clock
        mine: list[float] = []
        slot = 0
        while True:
            if slot_side(key, slot) == self.side:
                if slot and not self._wait_for(d, f"s{slot - 1}.json", self.sample_wait_s):
                    break
                with turn.hold():
                    ms = sample()
                    mhz, reasons = clock.read()
                mine.append(ms)
                data = {"side": self.side, "ms": ms, "mhz": mhz, "reasons": reasons}
                if plain:
                    data["plain"] = True
                _write_once(d / f"s{slot}.json", json.dumps(data))
            elif slot % 2 == 1 and not self._wait_for(d, f"s{slot}.json", self.sample_wait_s):
                break
            taken = (slot + 1) // 2
            if slot % 2 == 1 and _stop(d, self.rule, taken):
                break
            slot += 1
        return mine

    def _wait_for(self, d: Path, name: str, limit_s: float) -> bool:
        """Until ``d/name`` exists (True), or the other side gave up on the row or
        ``limit_s`` passed (False, and this side says it gives up too)."""
        target, gone = d / name, d / f"alone.{other(self.side)}"
        finished = self.root / f"{DONE_PREFIX}{other(self.side)}"  # its whole batch is over
        t0, pause = time.monotonic(), POLL_S
        while not target.exists():
            if gone.exists() or finished.exists() or time.monotonic() - t0 > limit_s:
                _write_once(d / f"alone.{self.side}", "")
                return target.exists()
            time.sleep(pause)
            pause = min(MAX_POLL_S, pause * 2)
        return True


def _stop(d: Path, rule: PairRule, taken: int) -> bool:
    """Whether both sides stop the row of ``d`` after ``taken`` pairs: read from the
    samples both have seen, so they agree (a row is plain when a sample of it is)."""
    samples = read_samples(d)
    plain = samples_plain(samples)
    return should_stop(read_stats(d, rule, samples), rule, plain, taken)


def read_stats(d: Path, rule: PairRule, samples: list | None = None):
    samples = read_samples(d) if samples is None else samples
    pr, base, _ = complete_pairs(samples)
    return row_stats(pr, base, rule, samples_plain(samples))


def _write_once(path: Path, text: str) -> None:
    """``path`` with ``text``, atomically (the other side never reads half a file)."""
    if path.exists():
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


_PAIRING: list[Pairing | None] = []


def active() -> Pairing | None:
    """This process's side of an A/B, from ``$ZLBENCH_PAIR_DIR`` (read once); None
    without one."""
    if not _PAIRING:
        root, side = os.environ.get(PAIR_DIR_VAR), os.environ.get(PAIR_SIDE_VAR, "")
        rule = PairRule.from_json(os.environ.get(PAIR_RULE_VAR) or "{}")
        _PAIRING.append(
            Pairing(Path(root), side, rule) if root and side in ("pr", "base") else None
        )
    return _PAIRING[0]


def reset() -> None:
    """Forget the side read from the environment (tests)."""
    _PAIRING.clear()


__all__ = ["CLOCKS", "Clock", "Pairing", "active", "read_stats", "reset"]

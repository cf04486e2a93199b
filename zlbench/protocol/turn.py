"""One GPU shared by several benchmark processes: only one of them times at a time.

``zlbench batch --gpu-share N`` runs N pytest processes per GPU (docs/screening.md,
"Sharing a GPU"). What a process does outside timing (start-up and imports,
collection, the benchmark's own Python, first calls that load kernels, op-end
records) then overlaps with another process's timing; the timing itself must not
overlap, or each process would measure the other's kernels too. So every
process of a shared GPU takes that GPU's **turn** around each timed region: an
exclusive ``flock`` on a file the runner names in ``$ZLBENCH_GPU_TURN`` (one file
per GPU). Unset: no turn is taken (one process per GPU, as without sharing).

* GPU work that is not timed (a first call's launch, drawing inputs) takes the turn
  **shared** (:meth:`GpuTurn.share`, ``LOCK_SH``): any number of processes at once,
  never while one times. A process that wants to time goes through a turnstile
  (``<lock>.gate``) that stops new sharers, so timing is not starved; compiling is
  CPU work and gives the shared turn up (:meth:`GpuTurn.released`). The turn keeps
  other processes' GPU work out of a timing, not their CPU work: a row timed by the
  plain fallback (host syncs) still measured up to 43 % slower shared on the H200,
  which is why the gate re-measures with the baseline's share (docs/measurements.md,
  ninth session).
* Re-entrant within a process: only the outermost :meth:`GpuTurn.hold` locks and
  unlocks (an autotune sweep inside a measurement does not deadlock, nor release
  the outer turn early).
* The kernel drops a flock when its process dies, so a crashed, killed or timed-out
  op never blocks the other processes of its GPU.
* The seconds spent waiting, exclusive or shared, are counted
  (:attr:`GpuTurn.waited_s`), so a time breakdown can tell waiting from working.
* Each exclusive turn taken is one line of the CSV named by ``$ZLBENCH_GPU_TURN_LOG`` (the
  batch's ``gpu_turns.csv``): ``gpu,pid,start,end,wait_s,kind,op`` (epoch seconds;
  kind ``timed``; op the run name in flight, :attr:`GpuTurn.label`), one ``O_APPEND``
  write per line, so the processes never interleave within a line. So is each
  **shared** hold of :data:`SHARED_LOG_S` or longer (kind ``shared``, wait 0): while
  one lasts no other process can time, so a long one may leave the GPU idle (the
  H200's log of 2026-12-02 has stretches of up to ~2 minutes without a timing, when it
  could not yet say who held the turn). The runner
  sums the log per GPU (:mod:`zlbench.runner.batch.turns`): how much of the wall some
  process was timing, that no two turns of one GPU overlapped, and the longest shared
  hold. Logs written before the two last columns existed are read as timed turns.

Stdlib only (``fcntl``): imported by the plugins, named by the runner.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

GPU_TURN_VAR = "ZLBENCH_GPU_TURN"
GPU_TURN_LOG_VAR = "ZLBENCH_GPU_TURN_LOG"
# benchmark processes per GPU of the batch (1 when unset): recorded in each result's
# environment and the baseline manifest, and checked by the gate (a shared GPU
# measures small kernels faster, docs/screening.md "Sharing a GPU")
GPU_SHARE_VAR = "ZLBENCH_GPU_SHARE"
TURN_LOG_HEADER = "gpu,pid,start,end,wait_s,kind,op"
OLD_TURN_LOG_HEADER = "gpu,pid,start,end,wait_s"  # logs before 2026-12-02: timed turns only
SHARED_LOG_S = 1.0  # a shared hold this long or longer is logged
TIMED, SHARED = "timed", "shared"  # the log's kinds of line: a timing, a long shared hold


class GpuTurn:
    """The turn of one GPU, on the lock file ``path`` (None: a no-op turn)."""

    def __init__(self, path: str | None, log: str | None = None, gpu: str = "") -> None:
        self.path = path or None
        self.log, self.gpu = log or None, gpu
        self.depth = 0
        self.waited_s = 0.0
        self.taken = 0  # outermost holds so far
        self._fd: int | None = None
        self.shared_depth = 0  # nesting of share() (0: not sharing)
        self._sh_fd: int | None = None  # the shared lock's descriptor while it is held
        self._sh_since = 0.0  # when the shared lock held now was taken
        self.label = ""  # the op in flight (its run name), named in the log's lines

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        if self.path is None or self.depth:
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1
            return
        import fcntl

        # flock: this process's own shared lock (another descriptor) would block it
        resume_shared = self.sharing
        if resume_shared:
            self._unlock_shared()
        asked = time.time()
        try:
            fd = self._locked(fcntl.LOCK_EX)  # through the gate: new sharers wait behind
        except BaseException:
            if resume_shared:
                self._lock_shared()
            raise
        start = time.time()
        self.waited_s += start - asked
        self.taken += 1
        self._fd, self.depth = fd, 1
        try:
            yield
        finally:
            self.depth, self._fd = 0, None
            end = time.time()
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
            self._log(start, end, start - asked)
            if resume_shared:
                self._lock_shared()

    @contextlib.contextmanager
    def share(self) -> Iterator[None]:
        """GPU work that is not timed: with any other process's untimed work, never
        during a timing. A no-op without a lock file, inside :meth:`hold` (the turn is
        this process's already) and when nested."""
        if self.path is None or self.depth or self.shared_depth:
            yield  # nothing to take: no lock file, the turn held, or sharing already
            return
        self._lock_shared()
        self.shared_depth = 1
        try:
            yield
        finally:
            self.shared_depth = 0
            self._unlock_shared()

    @property
    def sharing(self) -> bool:
        """This process holds the shared turn now (inside :meth:`share`, outside
        :meth:`released`)."""
        return self._sh_fd is not None

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """CPU work inside :meth:`share` (compiling): the shared turn is given up
        meanwhile, so no one waits to time for it; taken again after."""
        if not self.sharing:
            yield
            return
        self._unlock_shared()
        try:
            yield
        finally:
            self._lock_shared()

    @contextlib.contextmanager
    def _gate(self) -> Iterator[None]:
        import fcntl

        fd = os.open(f"{self.path}.gate", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def _locked(self, mode: int) -> int:
        """A descriptor of the lock file holding ``mode`` (``LOCK_EX``/``LOCK_SH``),
        taken through the turnstile; closed again when taking it fails."""
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            with self._gate():
                fcntl.flock(fd, mode)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _lock_shared(self) -> None:
        import fcntl

        asked = time.time()
        self._sh_fd = self._locked(fcntl.LOCK_SH)
        self._sh_since = time.time()
        self.waited_s += self._sh_since - asked  # waits for a timing count as waits

    def _unlock_shared(self) -> None:
        fd, self._sh_fd = self._sh_fd, None
        if fd is not None:
            os.close(fd)  # closing drops the lock
            end = time.time()
            if end - self._sh_since >= SHARED_LOG_S:
                self._log(self._sh_since, end, 0.0, SHARED)

    def _log(self, start: float, end: float, wait: float, kind: str = TIMED) -> None:
        if self.log is None:
            return
        label = self.label.replace(",", ";").replace("\n", " ")
        line = (
            f"{self.gpu},{os.getpid()},{start:.6f},{end:.6f},{wait:.6f},{kind},{label}\n".encode()
        )
        try:
            fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError:  # the log is a diagnostic; timing goes on without it
            self.log = None


_TURN: GpuTurn | None = None


def process_turn() -> GpuTurn:
    """This process's turn, from ``$ZLBENCH_GPU_TURN`` (read once)."""
    global _TURN
    if _TURN is None:
        env = os.environ
        gpu = env.get("CUDA_VISIBLE_DEVICES", "")
        _TURN = GpuTurn(env.get(GPU_TURN_VAR), env.get(GPU_TURN_LOG_VAR), gpu)
    return _TURN


def reset_process_turn() -> None:
    """Forget the turn read from the environment (tests; a plugin's unconfigure)."""
    global _TURN
    _TURN = None


__all__ = [
    "GPU_SHARE_VAR",
    "GPU_TURN_LOG_VAR",
    "GPU_TURN_VAR",
    "OLD_TURN_LOG_HEADER",
    "SHARED",
    "SHARED_LOG_S",
    "TIMED",
    "TURN_LOG_HEADER",
    "GpuTurn",
    "process_turn",
    "reset_process_turn",
]

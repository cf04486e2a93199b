"""Finding and killing every process a child started, even after it left the child's
process group, and even after this process is killed with SIGKILL.

Every child that :class:`zlbench.runner.execute.proc.GroupProcess` starts gets
``ZLBENCH_PROC_TAG=<session>.<n>`` in its environment; whatever it starts inherits
it (a ``setsid`` or a double fork does not change the environment), so the tag
finds a descendant wherever it was reparented: :func:`tagged` reads
``/proc/<pid>/environ`` (Linux; elsewhere nothing is found and only the process
group is killed).

The guard: with the first child, this process starts ``python -m
zlbench.runner.execute.proc_guard <session>`` in its own session, holding the
read end of a pipe whose write end only we hold. When we end, however we end
(kill -9 included), the pipe closes and the guard SIGKILLs every process tagged
with our session, then exits. Chosen over PR_SET_PDEATHSIG (which fires when the
spawning *thread* ends and reaches only direct children) and over a
PR_SET_CHILD_SUBREAPER (orphans would come back to us, but they die with us
and we would have to reap foreign zombies behind subprocess's back).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

TAG_VAR = "ZLBENCH_PROC_TAG"
_COUNTER = itertools.count(1)
_lock = threading.Lock()
# per process (a fork gets its own session and guard): pid, session, guard
_state: dict = {"pid": None, "session": "", "guard": None}


def _current() -> dict:
    if _state["pid"] != os.getpid():
        _state.update(pid=os.getpid(), session=f"{os.getpid()}-{uuid.uuid4().hex[:12]}")
        _state["guard"] = None
    return _state


def new_tag() -> str:
    """A tag for one child: ``<session>.<n>``."""
    return f"{_current()['session']}.{next(_COUNTER)}"


def _environ_tag(pid: str) -> str | None:
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for item in data.split(b"\0"):
        if item.startswith(TAG_VAR.encode() + b"="):
            return item.split(b"=", 1)[1].decode("utf-8", "replace")
    return None


def _is_zombie(pid: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def tagged(tag: str, prefix: bool = False) -> list[int]:
    """Live (non-zombie) processes, other than this one, whose tag is ``tag`` (or,
    with ``prefix``, starts with ``tag + '.'``)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    me, found = os.getpid(), []
    for d in proc.iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        t = _environ_tag(d.name)
        if t is None or not (t == tag or (prefix and t.startswith(tag + "."))):
            continue
        if not _is_zombie(d.name):
            found.append(int(d.name))
    return found


def signal_tagged(tag: str, sig: int, prefix: bool = False) -> int:
    """Send ``sig`` to every process :func:`tagged` finds; how many were signalled."""
    n = 0
    for pid in tagged(tag, prefix):
        try:
            os.kill(pid, sig)
            n += 1
        except (ProcessLookupError, PermissionError):
            pass
    return n


def ensure_guard() -> None:
    """Start the guard of this process's session once (no-op without /proc). It
    runs this file as a script: stdlib only, so it starts wherever we run."""
    if not Path("/proc").is_dir():
        return
    with _lock:
        state = _current()
        guard = state["guard"]
        if guard is not None and guard.poll() is None:
            return
        env = {k: v for k, v in os.environ.items() if k != TAG_VAR}
        state["guard"] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), state["session"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )


def sweep(session_id: str, rounds: int = 3) -> None:
    """SIGKILL every process of ``session_id`` (a few rounds: one may fork meanwhile)."""
    for _ in range(rounds):
        if not signal_tagged(session_id, signal.SIGKILL, prefix=True):
            return
        time.sleep(0.1)


def _main(argv: list[str]) -> int:
    session_id = argv[0]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal's Ctrl-C is for the batch
    try:
        while sys.stdin.buffer.read(4096):
            pass  # nobody writes; read() returns b"" when the batch is gone
    finally:
        sweep(session_id)
    return 0


if __name__ == "__main__":  # pragma: no cover - runs as the guard process
    sys.exit(_main(sys.argv[1:]))

"""What follows each finished attempt of an op: another attempt, or its final status.

:class:`AttemptOutcomes` records the attempt on the op's track (:class:`OpAttempts`)
with its error signature, asks the retry rules (:func:`.retry.next_attempt`) for the
next one, which a systemic failure (:class:`.systemic.SystemicTracker`) or a spent time
budget stops, and prints the retry line; else the op's final row goes to the batch's
files (:meth:`.files.BatchFiles.op_final`). Called from the worker threads.
"""

from __future__ import annotations

import time

from zlbench.models import OpStatus, RunResult, RunStatus
from zlbench.runner.batch import progress
from zlbench.runner.batch.attempts import OpAttempts, final_status, said_unsupported
from zlbench.runner.batch.config import BatchConfig
from zlbench.runner.batch.files import BatchFiles
from zlbench.runner.batch.retry import Attempt, next_attempt
from zlbench.runner.batch.systemic import SystemicTracker, run_signature


class AttemptOutcomes:
    """The attempts' outcomes of a batch measuring by ``config`` into ``files``, with a
    time budget of ``budget_s`` seconds from ``t0`` (time.monotonic; None: no budget)."""

    def __init__(self, config: BatchConfig, files: BatchFiles, budget_s: float | None, t0: float):
        self.config = config
        self.files = files
        self.budget_s = budget_s
        self.t0 = t0
        self.systemic = SystemicTracker()

    def attempt_done(self, track: OpAttempts, status: OpStatus, result: RunResult | None) -> None:
        """``track``'s attempt ended with ``status`` (``result``: its result.json)."""
        unsupported = status.status in (RunStatus.FAIL, RunStatus.CRASH) and said_unsupported(
            track.run_dir, result
        )
        track.attempts.append(
            Attempt(status.status, status.rc, track.dtypes, unsupported, track.kind)
        )
        track.seconds += status.seconds
        sig = status.signature or run_signature(status, track.run_dir)
        status = status.model_copy(update={"signature": sig})
        c = self.config
        track.next = next_attempt(
            track.attempts,
            c.max_retries,
            rescue=c.replay_root is None,  # replay: the baseline's rows fix the dtypes
            systemic=self.systemic.observe(track.sel.whole_key, sig) or self.spent(),
        )
        if track.next is not None:
            what = f"{track.next.kind} [{','.join(track.next.dtypes) or 'defaults'}]"
            line = progress.retry_line(
                track.sel.repo, track.sel.run_name, status, what, track.next.why
            )
            self.files.say(line)
            return
        final = final_status(track, status, result, self.files.out, track.expected_rows)
        self.files.op_final(track.sel.key, final, track.run_dir)

    def spent(self) -> bool:
        """The time budget is spent: no more retries."""
        budget = self.budget_s
        return budget is not None and time.monotonic() - self.t0 > budget

"""The interleaved A/B: both compilers' batches at once on the same GPUs, paired row by row.

Each side is one replay batch of the same ops (same pinned configs, shapes, dtypes,
same op order: the plan is deterministic), run with the baseline's single process per
GPU, in its own processes with its own triton and FlagGems caches
(zlbench.runner.execute.worker). The two batches run at the same time; their
benchmark processes meet row by row in ``<ab>/pairs/`` and take samples in turns
(:mod:`zlbench.plugins.pairing`), so the two samples of a pair are milliseconds
apart and every drift slower than that cancels in the pair's ratio. Afterwards the
samples are packed into ``<ab>/pairs.json`` (models.PairsFile) and the meeting dir
is removed; ``<ab>/1/pr/`` and ``<ab>/1/base/`` keep the two batch dirs.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import (
    SIDES,
    PairedSamples,
    PairSample,
    PairsFile,
    RowKey,
    dump_json_model,
    load_json_model,
    resolve_inside,
)
from zlbench.protocol.pairs import DONE_PREFIX, read_samples
from zlbench.runner.ab.rounds import AbRounds

PAIRS_DIR = "pairs"
PAIRS_JSON = "pairs.json"

# measure(side "pr" | "base", op keys, batch out dir, meeting dir) -> the batch dir
MeasurePaired = Callable[[str, list[str], Path, Path], Path]


def run_interleaved(
    ops: list[str],
    root: Path,
    measure: MeasurePaired,
    clock: Callable[[], float] = time.monotonic,
) -> AbRounds:
    """Both sides' batches of ``ops`` at once (threads), meeting in ``root/pairs``;
    then the samples packed into ``root/pairs.json``. A side that raised re-raises
    here after the other side finished (the first error wins)."""
    meet = root / PAIRS_DIR
    meet.mkdir(parents=True, exist_ok=True)
    out = AbRounds(order=list(SIDES))
    dirs: dict[str, Path] = {}
    errors: list[BaseException] = []

    def one(side: str) -> None:
        t0 = clock()
        try:
            dirs[side] = measure(side, list(ops), root / "1" / side, meet)
        except BaseException as e:  # noqa: BLE001 - handed to the caller below
            errors.append(e)
        finally:
            out.seconds[side] = clock() - t0
            (meet / f"{DONE_PREFIX}{side}").touch()  # the other side waits for it no more

    threads = [threading.Thread(target=one, args=(s,), name=f"ab-{s}") for s in SIDES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pack_pairs(meet, root / PAIRS_JSON)
    if errors:
        raise errors[0]
    out.dirs.append((dirs["pr"], dirs["base"]))
    return out


def pack_pairs(meet: Path, dest: Path) -> PairsFile:
    """Every row dir of the meeting dir ``meet`` as one :class:`PairsFile` at ``dest``
    (atomic); then ``meet`` is removed. Unreadable row dirs are left out."""
    rows = [r for d in sorted(meet.iterdir()) if d.is_dir() and (r := _row(d)) is not None]
    packed = PairsFile(rows=rows)
    dump_json_model(dest, packed)
    shutil.rmtree(meet, ignore_errors=True)
    return packed


def _row(d: Path) -> PairedSamples | None:
    try:
        key = RowKey.model_validate_json((d / "key.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    samples = []
    for data in read_samples(d):
        try:
            samples.append(PairSample.model_validate(data, strict=False))
        except ValueError:
            break
    alone = [s for s in SIDES if (d / f"alone.{s}").exists()]
    return PairedSamples(key=key, samples=samples, alone=alone)


def load_pairs(ab_root: Path) -> PairsFile | None:
    """``<ab_root>/pairs.json``, None when the A/B was not interleaved."""
    path = resolve_inside(ab_root, PAIRS_JSON)
    if not path.is_file():
        return None
    try:
        return load_json_model(path, PairsFile)
    except ZlbenchError:
        raise
    except (OSError, ValueError) as e:
        raise ZlbenchError(f"{path}: cannot read: {e}") from None


__all__ = ["PAIRS_JSON", "MeasurePaired", "load_pairs", "pack_pairs", "run_interleaved"]

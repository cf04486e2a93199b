"""The base compiler's side of a PR-vs-base codegen screen, kept for reuse
(docs/codegen.md, "PR against its base compiler").

Every PR on one merge-base rebuilds the baseline's compile requests with the same base
build, so that rebuild is made once and kept in a cache dir, one entry per (base build,
baseline)::

    <cache>/base-v1-<key>/rebuilt.json   RebuiltShard (shard 1/1): the baseline's
                                         manifest sha256, the base's fingerprint, the ids
    <cache>/base-v1-<key>/index.json     the base's rebuilt records
    <cache>/base-v1-<key>/blobs/         their stage texts

``key`` is a digest of the base compiler's build fingerprint and the baseline's
manifest sha256, so another base build or another baseline never finds the entry. An
entry is the rebuilt-shard format of :mod:`zlbench.codegen.shards` (a shard 1 of 1),
written into a temp dir beside it and renamed into place whole: an interrupted write
leaves no entry. An entry at the key whose stamp names another baseline or another base
build (copied there by hand) is refused, one line (exit 2); one that is unfinished or
does not hold this baseline's kernels (written by another zlbench) is rebuilt. A base
rebuild with kernels not rebuilt (their source not loadable, a worker that crashed) is
used but not kept: an environment problem is never cached.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from zlbench.codegen.diff import LOAD_FAILED
from zlbench.codegen.shards import SHARD_JSON, load_shards, read_stamp, write_shard
from zlbench.errors import ZlbenchError
from zlbench.models.codegen import CompileRecord
from zlbench.models.codegen_screen import RebuiltShard

ENTRY_PREFIX = "base-v1-"
WHAT = "base screen cache entry"


def entry_dir(cache: Path, fingerprint: str, baseline_sha256: str) -> Path:
    """The entry of (base build, baseline) in ``cache``."""
    key = hashlib.sha256(f"{fingerprint}\n{baseline_sha256}".encode()).hexdigest()[:32]
    return Path(cache) / f"{ENTRY_PREFIX}{key}"


def load_entry(
    cache: Path,
    fingerprint: str,
    baseline_sha256: str,
    estimates: Mapping[str, float | None],
    say: Callable[[str], None] = lambda s: None,
) -> tuple[dict[str, CompileRecord], dict[str, Path], Path] | None:
    """(id -> base record, id -> its codegen dir, the entry dir) when ``cache`` holds
    the base side of this base build and baseline, else None (rebuild it). An entry
    stamped for another baseline or base build is one line (exit 2)."""
    d = entry_dir(cache, fingerprint, baseline_sha256)
    if not d.is_dir():
        return None
    if not (d / SHARD_JSON).is_file():
        return _drop(d, f"{WHAT} {d} unfinished", say)
    try:
        stamp = read_stamp(d, WHAT)
    except ZlbenchError as e:
        return _drop(d, str(e), say)
    if stamp.baseline_sha256 != baseline_sha256 or stamp.compiler != fingerprint:
        raise ZlbenchError(
            f"{WHAT} {d}: stale, made for another baseline or another base build (manifest "
            f"sha256 {stamp.baseline_sha256[:12] or 'none'}, base {stamp.compiler or 'none'}; "
            f"this screen's: {baseline_sha256[:12]}, {fingerprint}): remove it"
        )
    try:
        rebuilt, dirs = load_shards([d], estimates, baseline_sha256, fingerprint, WHAT)
    except ZlbenchError as e:
        return _drop(d, str(e), say)
    return rebuilt, dirs, d


def _drop(d: Path, why: str, say: Callable[[str], None]) -> None:
    """Take the unusable entry ``d`` out of the cache (renamed away first, so no reader
    finds it half-removed); the base side is rebuilt."""
    say(f"codegen: {why}: the base side is rebuilt")
    gone = d.with_name(f".{d.name}.gone-{os.getpid()}")
    try:
        os.replace(d, gone)
    except OSError:
        return None
    shutil.rmtree(gone, ignore_errors=True)
    return None


def cacheable(rebuilt: Mapping[str, CompileRecord], ids: list[str]) -> str:
    """Why the base side ``rebuilt`` of ``ids`` is not kept ("" when it is): a kernel
    with no result that is not a compile failure (not rebuilt, source not loadable, a
    worker that crashed) says something of this machine, not of the base build."""
    lost = [i for i in ids if i not in rebuilt or _not_a_compile(rebuilt[i])]
    if not lost:
        return ""
    return f"{len(lost)} of {len(ids)} kernel(s) not rebuilt by the base compiler"


def _not_a_compile(rec: CompileRecord) -> bool:
    err = rec.error or ""
    return rec.result is None and (err.startswith(LOAD_FAILED) or "crashed" in err)


def store_entry(
    cache: Path,
    stamp: RebuiltShard,
    rebuilt: dict[str, CompileRecord],
    dirs: dict[str, Path],
) -> Path | None:
    """Write the base side as the entry of ``stamp`` (its compiler and baseline) in
    ``cache``, whole or not at all; the entry dir, or None when another process wrote
    it first (that one stands)."""
    final = entry_dir(cache, stamp.compiler, stamp.baseline_sha256)
    Path(cache).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{final.name}."))
    try:
        write_shard(tmp, stamp, rebuilt, dirs)
        try:
            os.replace(tmp, final)
        except OSError:  # another gate's entry is in place
            return None
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


__all__ = ["ENTRY_PREFIX", "cacheable", "entry_dir", "load_entry", "store_entry"]

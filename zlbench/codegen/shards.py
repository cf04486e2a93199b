"""The codegen screen's rebuild split over several CPU jobs (docs/codegen.md, "Sharded
rebuild").

``zlbench codegen --baseline B --shard K/N --out D`` rebuilds shard K of N of the
baseline's kernels (dealt by recorded compile seconds, longest first onto the lightest
shard, :func:`shard_ids`) and writes, without classifying anything::

    D/rebuilt.json   RebuiltShard: the baseline's manifest sha256, the compiler's
                     fingerprint, K/N, the kernel ids of the shard
    D/index.json     the rebuilt records (a CodegenIndex, as a worker writes it)
    D/blobs/         their stage texts

``gate --screen-only --rebuilt D1 --rebuilt D2 ...`` (and ``zlbench codegen
--rebuilt``) then classifies, diffs and plans from those records as if it had
rebuilt them itself. :func:`load_shards` takes them only whole: the same baseline and
compiler as the screen's, the same N, every K once, and every kernel of the baseline
in exactly the shard it was dealt to, each file read inside its shard dir (a symlink
leading out is refused); else one line, exit 2.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping
from pathlib import Path

from zlbench.codegen.chunks import split
from zlbench.errors import ZlbenchError
from zlbench.models import CodegenIndex, CompileRecord, dump_json_model, load_json_model
from zlbench.models.codegen import CODEGEN_BLOBS, CODEGEN_INDEX, dump_codegen_index
from zlbench.models.codegen_screen import RebuiltShard
from zlbench.models.paths import resolve_inside
from zlbench.protocol.layout import MANIFEST_YAML

SHARD_JSON = "rebuilt.json"


def manifest_sha256(baseline_dir: Path) -> str:
    """sha256 of the baseline's manifest.yaml: it holds the hash of every file of the
    baseline, so it names the baseline's content (a re-recorded vN differs)."""
    return hashlib.sha256((Path(baseline_dir) / MANIFEST_YAML).read_bytes()).hexdigest()


def shard_ids(estimates: Mapping[str, float | None], shard: tuple[int, int]) -> list[str]:
    """The kernel ids of shard ``K`` of ``N`` (K 1-based): the ids dealt into N
    balanced groups by their compile seconds; a shard beyond the kernels is empty."""
    k, n = shard
    groups = split(estimates, n) if estimates else []
    return sorted(groups[k - 1]) if k <= len(groups) else []


def write_shard(
    out: Path,
    stamp: RebuiltShard,
    rebuilt: dict[str, CompileRecord],
    dirs: dict[str, Path],
) -> None:
    """``out``'s shard files: the records in id order, the blobs they name copied
    from each record's codegen dir, the stamp written last (a shard without it is
    refused as unfinished)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / SHARD_JSON).unlink(missing_ok=True)
    blobs = out / CODEGEN_BLOBS
    blobs.mkdir(exist_ok=True)
    records = [rebuilt[i] for i in stamp.ids if i in rebuilt]
    for rec in records:
        for d in rec.result.stages.values() if rec.result else ():
            if d.blob:
                src = resolve_inside(dirs[rec.id], d.blob, f"{rec.id}: blob")
                dst = out / d.blob
                if not dst.is_file():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dst)
    dump_codegen_index(out / CODEGEN_INDEX, CodegenIndex(records=records))
    dump_json_model(out / SHARD_JSON, stamp)


def load_shards(
    given: list[Path],
    estimates: Mapping[str, float | None],
    baseline_sha256: str,
    compiler: str,
    what: str = "--rebuilt",
) -> tuple[dict[str, CompileRecord], dict[str, Path]]:
    """(id -> rebuilt record, id -> its codegen dir) of the shards ``given``, checked
    whole against the baseline being screened (its kernels' ``estimates``, its
    manifest's sha256) and this machine's compiler fingerprint; ``what`` names them in
    the one-line errors."""
    stamps = [(d, read_stamp(d, what)) for d in given]
    ns = {s.shard[1] for _, s in stamps}
    if len(ns) != 1:
        raise ZlbenchError(f"--rebuilt: shards of different splits ({sorted(ns)}): rebuild again")
    (n,) = ns
    ks = sorted(s.shard[0] for _, s in stamps)
    if ks != list(range(1, n + 1)):
        raise ZlbenchError(
            f"--rebuilt: shards {ks} of {n} given; every shard 1..{n} once is needed"
        )
    rebuilt: dict[str, CompileRecord] = {}
    dirs: dict[str, Path] = {}
    for d, s in stamps:
        expected = shard_ids(estimates, tuple(s.shard))
        problem = _problem(s, expected, baseline_sha256, compiler)
        index = (
            load_json_model(resolve_inside(d, CODEGEN_INDEX, f"{what} {d}"), CodegenIndex)
            if problem is None
            else None
        )
        got = {r.id: r for r in index.records} if index is not None else {}
        if problem is None and sorted(got) != expected:
            lost = len(set(expected) - set(got))
            problem = f"{lost} kernel(s) of its shard missing from its index.json: rebuild it"
        if problem is not None:
            raise ZlbenchError(f"{what} {d}: {problem}")
        rebuilt.update(got)
        dirs.update(dict.fromkeys(got, d))
    return rebuilt, dirs


def _problem(s: RebuiltShard, expected: list[str], sha: str, compiler: str) -> str | None:
    """Why shard ``s`` is not this screen's, or None."""
    if s.baseline_sha256 != sha:
        return (
            f"rebuilt from another baseline (manifest sha256 {s.baseline_sha256[:12]}, "
            f"this one's {sha[:12]})"
        )
    if s.compiler != compiler:
        return f"rebuilt with another compiler ({s.compiler or 'none'}; here: {compiler or 'none'})"
    if sorted(s.ids) != expected:
        return f"holds other kernels than shard {s.shard[0]}/{s.shard[1]} of this baseline"
    return None


def read_stamp(d: Path, what: str = "--rebuilt") -> RebuiltShard:
    """The stamp of shard dir ``d``; a dir without one is one line (exit 2). Each file
    of a shard is read inside its dir: a symlink leading out of it is one line too."""
    stamp = resolve_inside(d, SHARD_JSON, f"{what} {d}")
    if not stamp.is_file():
        raise ZlbenchError(
            f"{what} {d}: no {SHARD_JSON}: not the --out of a finished "
            "`zlbench codegen --shard K/N`"
        )
    return load_json_model(stamp, RebuiltShard)


__all__ = ["SHARD_JSON", "load_shards", "manifest_sha256", "read_stamp", "shard_ids", "write_shard"]

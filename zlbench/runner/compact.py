"""``zlbench baseline compact``: a new baseline version that is an older one in the
compact layout (docs/baselines.md "Size").

Records, pinned configs, rows and numbers are copied unchanged, and every stage of
every codegen record keeps its sha256 (the screen classifies by digest). What changes
is where the stage texts are: only the texts the screen's diffs need (``KEPT_STAGES``,
TTIR and TTGIR) are kept, each distinct text once for the whole version, in the
content-addressed xz packs of ``<out>/store/`` (:mod:`zlbench.models.store`); the op
dirs lose ``codegen/blobs/`` and, where they have codegen records, the ``ttgir/`` dumps
(the same TTGIR is a stored stage). ``--reuse`` names an earlier compact version whose
packs holding any of these texts are copied unchanged (git stores each once), so a
version that shares most kernels with it adds a pack of its new texts only.

The old version stays as it is: baselines are immutable. The new dir is written as
every derived version is (:mod:`zlbench.runner.derived`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.gate import baselines
from zlbench.models import (
    BaselineManifest,
    CodegenIndex,
    load_json_model,
    load_yaml_model,
    read_blob,
    text_stored,
)
from zlbench.models.codegen import (
    CODEGEN_BLOBS,
    CODEGEN_DIR,
    CODEGEN_INDEX,
    StageDigest,
    dump_codegen_index,
)
from zlbench.models.paths import resolve_inside
from zlbench.models.store import (
    PACK_SUFFIX,
    STORE_DIR,
    encode_pack,
    plan_packs,
    read_pack,
    store_ref,
)
from zlbench.protocol.layout import MANIFEST_YAML, TTGIR_DIR
from zlbench.runner.derived import derive_version, shown_path

# The stages whose text a compact baseline keeps: the screen's diff of a kernel whose
# TTIR or TTGIR changed shows them; a later first differing stage (LLIR, PTX, SASS)
# says "text not stored in the baseline (digest differs)".
KEPT_STAGES = ("ttir", "ttgir")


@dataclass
class Compaction:
    """What ``compact`` did, for the manifest's ``summary.compact`` and the CLI line."""

    texts: int = 0  # distinct stage texts kept
    digests_only: int = 0  # stage digests whose text was dropped
    packs: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)  # packs copied from --reuse

    def as_dict(self, reuse: str | None) -> dict:
        return {
            "layout": "store",
            "stages_kept": list(KEPT_STAGES),
            "texts": self.texts,
            "digests_only": self.digests_only,
            "packs": len(self.packs),
            "packs_reused": len(self.reused),
            "reuse": reuse,
        }


def compact(src: Path, out: Path, reuse: Path | None = None, name: str | None = None):
    """Write ``out``: baseline ``src`` in the compact layout. Returns (the new manifest,
    what was done)."""
    done = Compaction()

    def compact_copy(root: Path, manifest: BaselineManifest) -> tuple[str, dict]:
        prior = _reuse_packs(reuse) if reuse is not None else {}
        _compact_ops(src, root, manifest, prior, done)
        return "compact", done.as_dict(None if reuse is None else shown_path(reuse))

    new = derive_version(src, out, name or out.name, compact_copy, ignore=_dropped(src))
    return new, done


def _dropped(src: Path):
    """copytree's ignore: the old layout's blobs, TTGIR dumps beside codegen records, and
    a compact source's store (re-packed from its texts)."""
    top = os.path.abspath(src)

    def ignore(d: str, names: list[str]) -> set[str]:
        here = Path(d)
        drop = set()
        if os.path.abspath(d) == top and STORE_DIR in names:
            drop.add(STORE_DIR)
        if here.name == CODEGEN_DIR and CODEGEN_BLOBS in names:
            drop.add(CODEGEN_BLOBS)
        if TTGIR_DIR in names and (here / CODEGEN_DIR / CODEGEN_INDEX).is_file():
            drop.add(TTGIR_DIR)
        return drop

    return ignore


def _reuse_packs(reuse: Path) -> dict[str, tuple[Path, set[str]]]:
    """pack name -> (path, the texts it holds) of a verified compact baseline."""
    manifest = load_yaml_model(resolve_inside(reuse, MANIFEST_YAML), BaselineManifest)
    baselines.check_intact(reuse, manifest)
    packs = sorted((reuse / STORE_DIR).glob(f"*{PACK_SUFFIX}"))
    if not packs:
        raise ZlbenchError(f"--reuse {reuse}: not a compact baseline (no {STORE_DIR}/ packs)")
    return {p.name: (p, set(read_pack(p))) for p in packs}


def _compact_ops(
    src: Path,
    root: Path,
    manifest: BaselineManifest,
    prior: dict[str, tuple[Path, set[str]]],
    done: Compaction,
) -> None:
    texts: dict[str, bytes] = {}
    order: dict[str, str] = {}
    indexes: dict[Path, CodegenIndex] = {}
    for key in manifest.ops:
        path = root / key / CODEGEN_DIR / CODEGEN_INDEX
        if not path.is_file():
            continue
        index = load_json_model(path, CodegenIndex)
        src_cg = src / key / CODEGEN_DIR
        for rec in index.records:
            for stage, d in (rec.result.stages if rec.result else {}).items():
                if stage in KEPT_STAGES and text_stored(d):
                    if d.sha256 not in texts:  # each distinct text read once
                        texts[d.sha256] = read_blob(src_cg, d)
                    order.setdefault(d.sha256, f"{stage}/{rec.request.kernel.name}")
                else:
                    done.digests_only += 1
        indexes[path] = index
    where = _place(root / STORE_DIR, texts, order, prior, done)
    for path, index in indexes.items():
        for rec in index.records:
            if rec.result is not None:
                rec.result.stages = {
                    s: _restored(d, where.get(d.sha256) if s in KEPT_STAGES else None)
                    for s, d in rec.result.stages.items()
                }
        dump_codegen_index(path, index)
    done.texts = len(texts)


def _place(store: Path, texts, order, prior, done: Compaction) -> dict[str, str]:
    """Write the packs: those of ``prior`` holding any needed text copied, the rest new.
    Returns sha256 -> pack name."""
    store.mkdir(parents=True, exist_ok=True)
    where: dict[str, str] = {}
    for name, (path, held) in sorted(prior.items()):
        hit = (held & texts.keys()) - where.keys()
        if hit:
            shutil.copyfile(path, store / name)
            where.update(dict.fromkeys(hit, name))
            done.reused.append(name)
            done.packs.append(name)
    rest = {s: t for s, t in texts.items() if s not in where}
    for pack in plan_packs(rest, order):
        name, data = encode_pack(pack)
        (store / name).write_bytes(data)  # inside the temp dir, renamed whole
        where.update(dict.fromkeys(pack, name))
        done.packs.append(name)
    return where


def _restored(d: StageDigest, pack: str | None) -> StageDigest:
    if not pack:
        return digest_only(d)
    return d.model_copy(update={"blob": store_ref(pack), "compressed_size": 0})


def digest_only(d: StageDigest) -> StageDigest:
    """A stage whose text is not kept: its sha256 and size, blob ""."""
    return d.model_copy(update={"blob": "", "compressed_size": 0})


__all__ = ["KEPT_STAGES", "Compaction", "compact", "digest_only"]

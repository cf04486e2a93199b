"""`zlbench pack DIR...`: keep a shipped tree (a whole-inventory baseline, a large
results dir) as a lock file of digests plus an immutable, digest-named archive that
holds only the blobs no archive there holds yet (zlbench/models/packed.py). Writes
DIR.lock and the new archive; checks the round trip by unpacking into a fresh cache;
leaves DIR for you to `git rm` (every command then reads the packed copy)."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models.packed import ARCHIVE_DIR, lock_path, materialize, pack_tree, tree_files


def add_parser(sub) -> None:
    p = sub.add_parser("pack", help="pack a shipped tree into a lock file and an archive")
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="tree to pack")
    p.add_argument(
        "--archive-dir",
        type=Path,
        default=Path(ARCHIVE_DIR),
        metavar="D",
        help=f"where archives are kept (default: {ARCHIVE_DIR}/, the repository's)",
    )
    p.set_defaults(func=_run)


def _run(args) -> int:
    for d in args.dirs:
        if not d.is_dir():
            raise ZlbenchError(f"{d}: not a dir")
    for d in args.dirs:
        lock, name, size = pack_tree(d, args.archive_dir)
        with tempfile.TemporaryDirectory() as cache:  # the round trip, before the lock
            got = materialize(
                lock, key="check", cache=Path(cache), source=args.archive_dir, where=str(d)
            )
            want = {rel: sha for rel, sha, _ in lock.files}  # the tree as pack_tree read it
            back = {rel: hashlib.sha256(b).hexdigest() for rel, b in tree_files(got).items()}
            if back != want:
                raise ZlbenchError(f"{d}: unpacked copy differs from the tree; lock not written")
        lock_path(d).write_text(lock.render(), encoding="utf-8")
        added = f"new archive {name} ({size / 1e6:.2f} MB)" if name else "no new archive"
        print(
            f"{lock_path(d)}: {len(lock.files)} files in {len(lock.archives)} archive(s); {added}"
        )
    return 0

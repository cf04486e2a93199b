"""The shipped packed trees (zlbench/models/packed.py): a test reads a packed baseline
or example through :func:`shipped`, as every command does, from the read-only cache
(unpacked once, under a lock, whichever xdist worker comes first)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.models.packed import LOCK_SUFFIX, resolve_tree

REPO = Path(__file__).resolve().parents[2]


def shipped(path: str | Path) -> Path:
    """The dir holding shipped tree ``path`` (relative to the repo, or absolute)."""
    p = Path(path)
    return resolve_tree(p if p.is_absolute() else REPO / p, cache=Settings.from_env().cache_dir)


def shipped_dirs(parent: str) -> dict[str, Path]:
    """Every shipped tree under ``parent`` (``baselines``, ``examples``), by name: the
    dirs checked out and the packed ones (a ``NAME.lock``), each resolved."""
    root = REPO / parent
    names = {p.name for p in root.iterdir() if p.is_dir()}
    names |= {p.name[: -len(LOCK_SUFFIX)] for p in root.glob(f"*{LOCK_SUFFIX}")}
    return {n: shipped(root / n) for n in sorted(names)}


def added_files(base: Path, version: Path) -> list[str]:
    """The files ``version`` (a version derived from ``base``: a capture version) adds to
    ``base``, sorted, after checking that every other file of ``base`` but its manifest
    and ``ops_status.csv`` (the version's own) is in ``version`` byte for byte."""
    old, new = _digests(base), _digests(version)
    same = {k for k in old if k not in ("manifest.yaml", "ops_status.csv")}
    assert {k: new.get(k) for k in same} == {k: old[k] for k in same}
    return sorted(set(new) - set(old))


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def captured_version(base: str, name: str, ops: int, gpu: str) -> tuple[dict, set[str]]:
    """Shipped capture version ``baselines/<name>`` of ``baselines/<base>``: checks its
    manifest names it derived from ``base`` and verifies, that it is ``base`` byte for
    byte (:func:`added_files`) plus one ``codegen/launches.json`` for each of ``ops`` ops,
    each naming ``gpu``. Returns its ``summary.captures`` and the captured op keys."""
    from zlbench.gate.baselines import verify
    from zlbench.models import BaselineManifest, load_yaml_model
    from zlbench.models.base import load_json_model
    from zlbench.models.replay import LAUNCHES_JSON, LaunchCapture

    old, new = shipped(f"baselines/{base}"), shipped(f"baselines/{name}")
    m = load_yaml_model(new / "manifest.yaml", BaselineManifest)
    assert (m.name, m.derived_from) == (name, base) and verify(new, m).ok
    added = added_files(old, new)
    assert len(added) == ops and all(k.endswith(f"/codegen/{LAUNCHES_JSON}") for k in added)
    assert {load_json_model(new / k, LaunchCapture).gpu_model for k in added} == {gpu}
    return m.summary["captures"], {k.rsplit("/codegen/", 1)[0] for k in added}

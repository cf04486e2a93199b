"""A new baseline version derived from an older one (``zlbench baseline attribute``,
``zlbench baseline compact``): the same records, configs and numbers with one
transformation applied, and a manifest that says so (``derived_from``, a summary entry
of its own). The older version is verified first and never changed (baselines are
immutable); the new dir is written whole under a temporary name beside ``out`` and
renamed into place, so a failure leaves neither it nor the temporary dir.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zlbench.errors import ZlbenchError
from zlbench.gate import baselines
from zlbench.models import BaselineManifest, dump_yaml_model, load_yaml_model
from zlbench.models.paths import resolve_inside
from zlbench.protocol.layout import MANIFEST_YAML

# (the copy of the older version, its manifest) -> (summary key, what the step did)
Transform = Callable[[Path, BaselineManifest], tuple[str, Any]]


def derive_version(
    src: Path,
    out: Path,
    name: str,
    transform: Transform,
    ignore: Callable[[str, list[str]], set[str]] | None = None,
) -> BaselineManifest:
    """Write ``out`` from baseline ``src``: a copy (``ignore`` as :func:`shutil.copytree`'s)
    that ``transform`` changes in place, its manifest named ``name``, derived from
    ``src``'s, with what ``transform`` returned under its summary key and every file
    hashed again. Returns the new manifest."""
    if out.exists() or out.is_symlink():
        raise ZlbenchError(f"{out} already exists: baselines are immutable, pick the next version")
    manifest = load_yaml_model(resolve_inside(src, MANIFEST_YAML), BaselineManifest)
    baselines.check_intact(src, manifest)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(src, tmp, symlinks=True, ignore=ignore)
        key, summary = transform(tmp, manifest)
        new = manifest.model_copy(deep=True)
        new.name = name
        new.created = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
        # a step of a chain under one name (attribute, then compact, into vN): the
        # version it came from is the chain's start, not itself
        same = manifest.name == name and manifest.derived_from
        new.derived_from = manifest.derived_from if same else manifest.name
        new.summary[key] = summary
        new.files = baselines.content_hashes(tmp)
        dump_yaml_model(tmp / MANIFEST_YAML, new)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return new


def shown_path(path: Path) -> str:
    """A dir as a committed manifest names it: as given when relative, else its last two
    parts (no machine's absolute path in a baseline)."""
    return path.as_posix() if not path.is_absolute() else "/".join(path.parts[-2:])


__all__ = ["Transform", "derive_version", "shown_path"]

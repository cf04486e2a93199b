"""``zlbench baseline attribute``: a new baseline version that is an older one plus
the timed-kernel attribution a later run of its ops recorded (docs/baselines.md).

Records, pinned configs, rows and numbers are copied unchanged; only the ``timed``
flag of the kernel uses in every op's ``codegen/index.json`` is filled in
(:mod:`zlbench.codegen.attribute`), and the manifest says so (``derived_from``,
``summary.attribution``). The old version stays as it is: baselines are immutable.
The new dir is written whole under a temporary name and renamed into place.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from pathlib import Path

from zlbench.codegen.attribute import Attribution, Seen, attribute
from zlbench.errors import ZlbenchError
from zlbench.gate import baselines
from zlbench.models import (
    BaselineManifest,
    CodegenIndex,
    dump_json_model,
    dump_yaml_model,
    load_json_model,
    load_yaml_model,
)
from zlbench.models.codegen import CODEGEN_DIR, CODEGEN_INDEX
from zlbench.models.paths import resolve_inside
from zlbench.protocol.layout import MANIFEST_YAML

MAX_RUN_INDEXES = 100_000  # index files read from the --from dirs, at most


def run_indexes(runs: list[Path]) -> list[CodegenIndex]:
    """Every ``<repo>/<run_name>/codegen/index.json`` under the given run dirs (batch
    dirs: a gate's ``results/``, an A/B side's ``ab/1/base/``), opened only inside them."""
    out: list[CodegenIndex] = []
    for run in runs:
        if not run.is_dir():
            raise ZlbenchError(f"{run}: not a dir (--from takes a batch or results dir)")
        found = sorted(run.glob(f"*/*/{CODEGEN_DIR}/{CODEGEN_INDEX}"))
        if not found:
            raise ZlbenchError(
                f"{run}: no <repo>/<op>/{CODEGEN_DIR}/{CODEGEN_INDEX} under it "
                "(give a batch dir such as a gate's results/)"
            )
        for p in found[: MAX_RUN_INDEXES - len(out)]:
            rel = p.relative_to(run).as_posix()
            out.append(load_json_model(resolve_inside(run, rel), CodegenIndex))
    return out


def derive(src: Path, runs: list[Path], out: Path, name: str | None = None):
    """Write ``out``: baseline ``src`` with its uses attributed from ``runs``.
    Returns (the new manifest, what was attributed)."""
    if out.exists() or out.is_symlink():
        raise ZlbenchError(f"{out} already exists: baselines are immutable, pick the next version")
    manifest = load_yaml_model(resolve_inside(src, MANIFEST_YAML), BaselineManifest)
    baselines.check_intact(src, manifest)
    seen = Seen.of(run_indexes(runs))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(src, tmp, symlinks=True)
        done = _attribute_ops(tmp, manifest, seen)
        new = _manifest(manifest, tmp, name or out.name, done, runs)
        dump_yaml_model(tmp / MANIFEST_YAML, new)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return new, done


def _attribute_ops(root: Path, manifest: BaselineManifest, seen: Seen) -> Attribution:
    done = Attribution()
    for key in manifest.ops:
        path = root / key / CODEGEN_DIR / CODEGEN_INDEX
        if not path.is_file():
            continue
        index, one = attribute(load_json_model(path, CodegenIndex), seen)
        done.add(one)
        if one.timed or one.setup:
            dump_json_model(path, index)
    return done


def _manifest(
    old: BaselineManifest, root: Path, name: str, done: Attribution, runs: list[Path]
) -> BaselineManifest:
    new = old.model_copy(deep=True)
    new.name = name
    new.created = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    new.derived_from = old.name
    new.summary["attribution"] = done.as_dict() | {"from": [_shown(r) for r in runs]}
    new.files = baselines.content_hashes(root)
    return new


def _shown(run: Path) -> str:
    """A --from dir as the manifest names it: as given when relative, else its last
    two parts (no machine's absolute path in a committed baseline)."""
    return run.as_posix() if not run.is_absolute() else "/".join(run.parts[-2:])


__all__ = ["derive", "run_indexes"]

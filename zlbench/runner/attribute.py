"""``zlbench baseline attribute``: a new baseline version that is an older one plus
the timed-kernel attribution a later run of its ops recorded (docs/baselines.md).

Records, pinned configs, rows and numbers are copied unchanged; only the ``timed``
flag of the kernel uses in every op's ``codegen/index.json`` is filled in
(:mod:`zlbench.codegen.attribute`), and the manifest says so (``derived_from``,
``summary.attribution``). The old version stays as it is: baselines are immutable.
The new dir is written as every derived version is (:mod:`zlbench.runner.derived`).
"""

from __future__ import annotations

from pathlib import Path

from zlbench.codegen.attribute import Attribution, Seen, attribute
from zlbench.errors import ZlbenchError
from zlbench.models import (
    BaselineManifest,
    CodegenIndex,
    dump_json_model,
    load_json_model,
)
from zlbench.models.codegen import CODEGEN_DIR, CODEGEN_INDEX
from zlbench.models.paths import resolve_inside
from zlbench.runner.derived import derive_version, shown_path

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
    done = Attribution()

    def attribute_copy(root: Path, manifest: BaselineManifest) -> tuple[str, dict]:
        done.add(_attribute_ops(root, manifest, Seen.of(run_indexes(runs))))
        return "attribution", done.as_dict() | {"from": [shown_path(r) for r in runs]}

    return derive_version(src, out, name or out.name, attribute_copy), done


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


__all__ = ["derive", "run_indexes"]

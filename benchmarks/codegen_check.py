"""Compiler-side checks of codegen records, independent of `zlbench codegen`
(docs/codegen.md). Used by benchmarks/gpu_codegen.sh. Commands:

* ``merge ROOT OUT.json``: every ROOT/*/*/codegen/index.json into one index
  (deduplicated by id);
* ``sizes ROOT``: ops, distinct kernels, compressed bytes per kernel;
* ``compare A_DIR B_DIR``: per kernel, identical or the first differing stage;
* ``patch NAME DEST``: a patched triton (PATCHES of tests/support/codegen.py)
  under DEST; prints the dir to put first on PYTHONPATH.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

from zlbench.models import (
    CODEGEN_INDEX,
    STAGES,
    CodegenIndex,
    dump_json_model,
    load_json_model,
)


def _indexes(root: Path) -> list[tuple[Path, CodegenIndex]]:
    paths = sorted(root.glob(f"*/*/codegen/{CODEGEN_INDEX}"))
    return [(p, load_json_model(p, CodegenIndex)) for p in paths]


def merge(root: Path, out: Path) -> None:
    by_id: dict = {}
    for _, index in _indexes(root):
        for rec in index.records:
            known = by_id.setdefault(rec.id, rec.model_copy(update={"used_by": []}))
            known.used_by.extend(rec.used_by)
    dump_json_model(out, CodegenIndex(records=list(by_id.values())))
    print(f"merged {len(by_id)} kernels from {root} into {out}")


def sizes(root: Path) -> None:
    found = _indexes(root)
    per = {}
    for _, index in found:
        for r in index.records:
            per[r.id] = sum(d.compressed_size for d in r.result.stages.values()) if r.result else 0
    blobs = sum(f.stat().st_size for f in root.glob("*/*/codegen/blobs/*.gz"))
    index_bytes = sum(p.stat().st_size for p, _ in found)
    vals = sorted(per.values()) or [0]
    print(f"ops with codegen: {len(found)}; distinct kernels: {len(per)}")
    print(f"compressed bytes per kernel: median {statistics.median(vals):.0f}, max {vals[-1]}")
    print(f"all blobs on disk: {blobs} bytes; all index.json: {index_bytes} bytes")


def _digests(index: CodegenIndex) -> dict[str, dict[str, str]]:
    return {r.id: {s: d.sha256 for s, d in r.result.stages.items()} if r.result else {}
            for r in index.records}  # fmt: skip


def compare(a_dir: Path, b_dir: Path) -> int:
    a_index = load_json_model(a_dir / CODEGEN_INDEX, CodegenIndex)
    b_index = load_json_model(b_dir / CODEGEN_INDEX, CodegenIndex)
    a, b = _digests(a_index), _digests(b_index)
    errors = {r.id: r.error for r in b_index.records if r.error}
    names = {r.id: r.request.kernel.name for r in a_index.records}
    classes: Counter = Counter()
    for rid in a:
        if rid in errors or rid not in b:
            cls = "failed" if rid in errors else "missing"
        else:
            cls = next((s for s in STAGES if a[rid].get(s) != b[rid].get(s)), "identical")
        classes[cls] += 1
        if cls != "identical":
            print(f"  {names[rid]} [{rid}]: {cls} {errors.get(rid, '')}")
    print(f"{sum(classes.values())} kernels: " + ", ".join(f"{k} {v}" for k, v in classes.items()))
    return 0 if set(classes) <= {"identical"} else 1


def patch(name: str, dest: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.codegen import patched_triton

    print(patched_triton(dest, name))


def main(argv: list[str]) -> int:
    cmd, *args = argv
    if cmd == "merge":
        merge(Path(args[0]), Path(args[1]))
    elif cmd == "sizes":
        sizes(Path(args[0]))
    elif cmd == "compare":
        return compare(Path(args[0]), Path(args[1]))
    elif cmd == "patch":
        patch(args[0], Path(args[1]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

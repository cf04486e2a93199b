"""A stand-in for the rebuild worker in the screen's orchestration tests (no triton).

``python -m tests.support.fakeworker IN.json OUT_DIR`` (writes OUT_DIR/{index.json,blobs/}, as
the real worker does): for each requested kernel, looks up what
to "compile" in the JSON file named by ``FAKE_CODEGEN_PLAN``: kernel name ->
``{"texts": {stage: text}, "figures": {...}}``, ``"fail"`` (a compile error),
``"loadfail"`` (source not importable), ``"crash"`` (the process dies: SIGSEGV)
or ``"skip"`` (no result written). With a third argument (the triton cache dir the
real worker also puts its kernels in) each built kernel leaves a group there,
``<id>/__grp__<name>.json``, tagged with the plan file that built it. A
dict with ``"crash_unless_alone": true`` dies unless the chunk holds only it. It speaks
the compile pool's line protocol (zlbench.protocol.compile_lines), as the real one.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from tests.support.cgsynth import result, write_index
from zlbench.models.codegen import CodegenIndex, CompileRecord
from zlbench.protocol.compile_lines import REBUILD_END, write_end, write_item


def rebuild(rec: CompileRecord, how, alone: bool) -> CompileRecord | None:
    lonely = isinstance(how, dict) and how.get("crash_unless_alone")
    if how == "crash" or (lonely and not alone):
        os.kill(os.getpid(), signal.SIGSEGV)
    if how == "skip":
        return None
    if how == "loadfail":
        return CompileRecord(id=rec.id, request=rec.request, error="load failed: NoModule: x")
    if how == "fail" or how is None:
        return CompileRecord(id=rec.id, request=rec.request, error="compile failed: Boom: no")
    texts = {k: v.encode() for k, v in how["texts"].items()}
    return rec.model_copy(update={"result": result(texts, **how.get("figures", {}))})


def main(argv: list[str]) -> int:
    plan = json.loads(Path(os.environ["FAKE_CODEGEN_PLAN"]).read_text())
    index = CodegenIndex.model_validate_json(Path(argv[0]).read_text())
    out, blobs = [], []
    for rec in index.records:
        how = plan.get(rec.request.kernel.name)
        got = rebuild(rec, how, alone=len(index.records) == 1)
        if got is None:
            continue
        out.append(got)
        write_item(got.id, got.error)
        if isinstance(how, dict):
            blobs.append({k: v.encode() for k, v in how["texts"].items()})
            if len(argv) > 2 and not argv[2].startswith("--"):
                group = Path(argv[2]) / got.id
                group.mkdir(parents=True, exist_ok=True)
                name = rec.request.kernel.name
                (group / f"__grp__{name}.json").write_text(os.environ["FAKE_CODEGEN_PLAN"])
    write_index(Path(argv[1]), out, blobs)
    print(f"fakeworker: {len(out)} rebuilt", file=sys.stderr)
    write_end(REBUILD_END, kernels=len(out), failed=sum(1 for r in out if r.error))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Synthetic codegen records and baseline dirs for the codegen screen's tests.

A kernel is described by its stage texts; ``record`` turns them into a
CompileRecord whose digests are the texts' sha256, ``write_run`` writes a run dir
(``<root>/<repo>/<run_name>/{result.json,codegen/}``) with real gz blobs.
"""

from __future__ import annotations

from pathlib import Path

from zlbench.models import BaselineResult, BaselineRow, dump_json_model
from zlbench.models.codegen import (
    CODEGEN_BLOBS,
    CODEGEN_DIR,
    CODEGEN_INDEX,
    CodegenIndex,
    CompileRecord,
    CompileRequest,
    CompileResult,
    CompilerIdentity,
    ConstValue,
    KernelConfig,
    KernelSource,
    KernelUse,
    StageDigest,
    Target,
    blob_digest,
)

COMPILER = CompilerIdentity(distribution="triton", version="3.6.0")
SHAPE = "[torch.Size([64, 64])]"


def stage_texts(tag: str = "k", **changed: str) -> dict[str, bytes]:
    """Texts of every stage of a kernel ``tag``; ``changed`` replaces some."""
    out = {
        "ttir": f"module @{tag} {{\n  tt.func @{tag}\n}}\n",
        "ttgir": f"#blocked = {tag}\nmodule {{\n  ttg.op\n  ttg.load\n}}\n",
        "llir": f"define void @{tag}() {{\n  ret void\n}}\n",
        "ptx": f".visible .entry {tag}(\n)\n{{\n  ret;\n}}\n",
        "sass": f"  /*0000*/  MOV R1, c[0x0][0x28] ;  // {tag}\n  /*0010*/  EXIT ;\n",
    }
    out.update(changed)
    return {k: v.encode() for k, v in out.items()}


def request(name: str = "add_kernel", block: int = 256, num_warps: int = 4) -> CompileRequest:
    return CompileRequest(
        kernel=KernelSource(
            name=name, module="flag_gems.ops.x", qualname=name, source_sha256="0" * 64
        ),
        signature={"x_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"},
        constexprs=[ConstValue(path=[2], kind="int", value=block)],
        config=KernelConfig(num_warps=num_warps, num_stages=3),
        target=Target(backend="cuda", arch=90, warp_size=32),
    )


def result(texts: dict[str, bytes], **figures) -> CompileResult:
    stages = {}
    for stage, data in texts.items():
        digest, gz = blob_digest(data)
        stages[stage] = StageDigest(
            sha256=digest, size=len(data), compressed_size=len(gz), blob=f"blobs/{digest}.gz"
        )
    figures.setdefault("n_regs", 32)
    figures.setdefault("n_spills", 0)
    figures.setdefault("shared", 0)
    figures.setdefault("sass_instructions", 100)
    figures.setdefault("times", {"ttir": 0.01, "ttgir": 0.02, "sass": 0.1})
    return CompileResult(stages=stages, compiler=COMPILER, **figures)


def record(req: CompileRequest, texts: dict[str, bytes] | None, uses=(), **figures):
    """A record of ``req``; ``texts=None`` makes it a failed compile."""
    if texts is None:
        return CompileRecord(id=req.key(), request=req, error="compile failed: RuntimeError: boom")
    return CompileRecord(
        id=req.key(), request=req, result=result(texts, **figures), used_by=list(uses)
    )


def use(run_name: str, op: str | None = None, dtype="float16", shape=SHAPE, occ=0) -> KernelUse:
    return KernelUse(run_name=run_name, op=op or run_name, dtype=dtype, shape=shape, occurrence=occ)


def write_blobs(cg_dir: Path, texts: dict[str, bytes]) -> None:
    for data in texts.values():
        digest, gz = blob_digest(data)
        path = cg_dir / CODEGEN_BLOBS / f"{digest}.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gz)


def write_index(cg_dir: Path, records: list[CompileRecord], blobs: list[dict]) -> None:
    cg_dir.mkdir(parents=True, exist_ok=True)
    for texts in blobs:
        write_blobs(cg_dir, texts)
    dump_json_model(cg_dir / CODEGEN_INDEX, CodegenIndex(compiler=COMPILER, records=records))


def write_run(
    root: Path,
    run_name: str,
    kernels: list[tuple[CompileRecord, dict]] | None,
    rows: int = 1,
    repo: str = "main",
) -> Path:
    """A baseline run dir with ``rows`` rows and the given (record, texts) pairs;
    ``kernels=None``: a run without codegen records (a v1 baseline)."""
    run_dir = root / repo / run_name
    res = BaselineResult(
        repo=repo,
        run_name=run_name,
        op=run_name,
        timing="cudagraph",
        rows=[
            BaselineRow(op=run_name, dtype="float16", shape=SHAPE, occurrence=i, speedup=1.0)
            for i in range(rows)
        ],
    )
    run_dir.mkdir(parents=True, exist_ok=True)
    dump_json_model(run_dir / "result.json", res)
    if kernels is not None:
        write_index(run_dir / CODEGEN_DIR, [r for r, _ in kernels], [t for _, t in kernels])
    return run_dir

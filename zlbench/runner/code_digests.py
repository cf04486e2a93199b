"""``zlbench baseline code-digests``: a new baseline version whose codegen records carry
their cubin's code digest, taken from a rebuild of its kernels (docs/baselines.md,
"Code digests").

A record made before 2026-12-02 has no ``cubin_code_sha256``, so the codegen screen
disassembles its rebuilt cubin every time (nvdisasm: ~0.7 s a kernel on a small CPU,
more than most compiles; docs/codegen.md). ``zlbench codegen --baseline SRC --shard 1/1
--out D`` under the compiler that recorded SRC rebuilds every kernel and computes the
code digest of each; where the rebuild is the record (every stage digest, TTIR to
SASS, and the registers, spills and SASS instruction count the same, and the same
compiler distribution and version), its code digest is written into the record. Then a
later rebuild whose cubin has that code digest disassembles to the record's SASS: the
screen takes the record's and runs no disassembler. A record the rebuild does not
reproduce keeps no digest and is disassembled as before.

Rows, pinned configs and every other field are copied unchanged; the old version stays
as it is (baselines are immutable); the new dir is written as every derived version is
(:mod:`zlbench.runner.derived`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zlbench.codegen.shards import manifest_sha256, read_stamp
from zlbench.errors import ZlbenchError
from zlbench.models import CodegenIndex, CompileRecord, dump_json_model, load_json_model
from zlbench.models.codegen import CODEGEN_DIR, CODEGEN_INDEX, CompileResult
from zlbench.models.paths import resolve_inside
from zlbench.runner.derived import derive_version, shown_path

SUMMARY_KEY = "code_digests"


@dataclass
class CodeDigests:
    """What the step did, for the manifest's ``summary.code_digests`` and the CLI line."""

    filled: int = 0  # records that got the rebuild's code digest
    had: int = 0  # records that carried one already
    differ: int = 0  # rebuilt, but not the record: no digest
    not_rebuilt: int = 0  # no rebuild of it given (or it failed there)

    def as_dict(self, rebuilt: list[Path]) -> dict:
        return {
            "filled": self.filled,
            "had": self.had,
            "differ": self.differ,
            "not_rebuilt": self.not_rebuilt,
            "rebuilt": [shown_path(d) for d in rebuilt],
        }


def derive(src: Path, rebuilt: list[Path], out: Path, name: str | None = None):
    """Write ``out``: baseline ``src`` with code digests from the ``rebuilt`` shard dirs.
    Returns (the new manifest, what was done)."""
    sha = manifest_sha256(src)
    found = load_rebuilt(rebuilt, sha)
    done = CodeDigests()

    def fill(root: Path, manifest) -> tuple[str, dict]:
        for key in manifest.ops:
            path = root / key / CODEGEN_DIR / CODEGEN_INDEX
            if not path.is_file():
                continue
            index = load_json_model(path, CodegenIndex)
            for rec in index.records:
                _fill(rec, found.get(rec.id), done)
            dump_json_model(path, index)
        return SUMMARY_KEY, done.as_dict(rebuilt)

    new = derive_version(src, out, name or out.name, fill)
    return new, done


def load_rebuilt(dirs: list[Path], baseline_sha256: str) -> dict[str, CompileRecord]:
    """id -> rebuilt record of the shard dirs, each stamped as a rebuild of the baseline
    whose manifest has ``baseline_sha256``; any other dir is one line (exit 2)."""
    out: dict[str, CompileRecord] = {}
    for d in dirs:
        stamp = read_stamp(d)
        if stamp.baseline_sha256 != baseline_sha256:
            raise ZlbenchError(
                f"--rebuilt {d}: rebuilt from another baseline (manifest sha256 "
                f"{stamp.baseline_sha256[:12]}, this one's {baseline_sha256[:12]})"
            )
        index = load_json_model(resolve_inside(d, CODEGEN_INDEX), CodegenIndex)
        out.update({r.id: r for r in index.records})
    return out


def _fill(rec: CompileRecord, rebuilt: CompileRecord | None, done: CodeDigests) -> None:
    if rec.result is None:
        return
    if rec.result.cubin_code_sha256:
        done.had += 1
    elif rebuilt is None or rebuilt.result is None or rebuilt.error is not None:
        done.not_rebuilt += 1
    elif reproduces(rec.result, rebuilt.result):
        rec.result.cubin_code_sha256 = rebuilt.result.cubin_code_sha256
        done.filled += 1
    else:
        done.differ += 1


def reproduces(base: CompileResult, cur: CompileResult) -> bool:
    """Whether rebuild ``cur`` is record ``base``: a code digest, and SASS, every stage
    digest, registers, spills and SASS instructions the same, by the same compiler."""
    if not cur.cubin_code_sha256 or "sass" not in base.stages:
        return False
    same_stages = set(base.stages) == set(cur.stages) and all(
        base.stages[s].sha256 == cur.stages[s].sha256 for s in base.stages
    )
    figures = ("n_regs", "n_spills", "sass_instructions")
    return (
        same_stages
        and all(getattr(base, f) == getattr(cur, f) for f in figures)
        and (base.compiler.distribution, base.compiler.version)
        == (cur.compiler.distribution, cur.compiler.version)
    )


__all__ = ["CodeDigests", "derive", "load_rebuilt", "reproduces"]

"""The PR-vs-base screen's diff when the base side kept only a digest of its SASS.

A rebuild whose cubin has the baseline record's code copies the baseline's SASS
digest without its text (``capture.copy_disassembly``). On the H100 on 2026-12-05 a
gate whose base was the baseline's own compiler (a runner's bootstrapped baseline) and
whose PR changed three kernels' SASS stopped with "stage text … not stored (digest
only)" while writing the diffs: the base's text is the baseline's, read from there.
"""

from __future__ import annotations

from types import SimpleNamespace

from tests.support import cgsynth
from zlbench.codegen import screen
from zlbench.models.codegen_screen import CodegenClass, KernelScreen

PR_SASS = "  /*0000*/  MOV R1, c[0x0][0x28] ;  // k\n  /*0010*/  NOP ;\n  /*0020*/  EXIT ;\n"


def _setup(tmp_path, baseline_keeps_text: bool):
    req = cgsynth.request()
    texts = cgsynth.stage_texts()
    known = cgsynth.record(req, texts)
    if not baseline_keeps_text:  # a compact baseline: the SASS digest only
        known.result.stages["sass"] = known.result.stages["sass"].model_copy(update={"blob": ""})
    bl_dir = tmp_path / "baseline" / "codegen"
    cgsynth.write_index(bl_dir, [known], [texts])
    base_rec = cgsynth.record(req, texts)  # the base's rebuild: the baseline's code
    base_rec.result.stages["sass"] = base_rec.result.stages["sass"].model_copy(
        update={"blob": "", "compressed_size": 0}
    )
    base_dir = tmp_path / "base" / "codegen"
    base_dir.mkdir(parents=True)
    pr_texts = cgsynth.stage_texts(sass=PR_SASS)
    pr_rec = cgsynth.record(req, pr_texts)
    pr_dir = tmp_path / "pr" / "codegen"
    cgsynth.write_index(pr_dir, [pr_rec], [pr_texts])
    k = KernelScreen(
        kernel_id=req.key(),
        name="add_kernel",
        status=CodegenClass.SASS,
        first_stage="sass",
        vs_baseline=CodegenClass.SASS,
    )
    base = SimpleNamespace(records={req.key(): known}, blob_dirs={req.key(): bl_dir})
    side = SimpleNamespace(records={req.key(): base_rec}, dirs={req.key(): base_dir})
    into = tmp_path / "diffs"
    into.mkdir()
    screen._write_diffs(base, [k], {req.key(): pr_rec}, {req.key(): pr_dir}, into, side)
    return k, (into / f"{req.key()}.diff").read_text(encoding="utf-8")


def test_the_base_sides_text_is_the_baselines_when_only_its_digest_was_kept(tmp_path):
    k, text = _setup(tmp_path, baseline_keeps_text=True)
    assert "+  /*0010*/  NOP ;" in text
    assert "-  /*0010*/  EXIT ;" in text
    assert k.changed_lines and k.changed_lines > 0


def test_a_text_kept_nowhere_is_named_not_an_error(tmp_path):
    k, text = _setup(tmp_path, baseline_keeps_text=False)
    assert screen.NOT_STORED in text
    assert "sass" in text and k.changed_lines is None
    base_sha = cgsynth.record(cgsynth.request(), cgsynth.stage_texts()).result.stages["sass"]
    assert f"(sha256 {base_sha.sha256})" in text  # the base side's digest, the one not kept

"""``zlbench codegen`` (issue 26: 16): a baseline is verified against its manifest
before it is screened (one that no longer matches is one line, exit 2), and a
generated kernel's recorded module text is executed by the rebuild worker only for a
verified baseline, never for a batch dir."""

from __future__ import annotations

from pathlib import Path

import pytest

import zlbench.cli.codegen_cmd as codegen_cmd
from tests.support.cgsynth import record, request, stage_texts, use, write_index
from tests.support.zlsynth import brow, one_error_line, write_baseline
from zlbench.cli import main
from zlbench.models import (
    CodegenClass,
    CodegenScreen,
    KernelScreen,
    load_json_model,
)
from zlbench.models.codegen import CODEGEN_DIR, CODEGEN_INDEX

S = "[torch.Size([64, 64])]"


def generated_request(marker: Path):
    """A generated kernel whose recorded module text, once executed, writes ``marker``."""
    req = request("gen_kernel")
    source = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('executed')\n"
    kernel = req.kernel.model_copy(
        update={"module": "_zl_gen_mod", "path": "gen.py", "generated_source": source}
    )
    return req.model_copy(update={"kernel": kernel})


def write_records(root: Path, req) -> Path:
    texts = stage_texts("gen")
    write_index(root / "main" / "gen" / CODEGEN_DIR, [record(req, texts, [use("gen")])], [texts])
    return root


def verified_baseline(root: Path, req) -> Path:
    """A baseline that `zlbench baseline verify` passes, recording ``req``."""
    write_records(root, req)
    (root / "main" / "gen" / "autotune_records").mkdir(parents=True)
    (root / "main" / "gen" / "autotune_records" / "gen.json").write_text("{}")
    write_baseline(root, {"gen": [brow("gen", S, 1.0)]})
    assert main(["baseline", "verify", str(root)]) == 0
    return root


@pytest.fixture
def screened(monkeypatch):
    """Replace the screen: the options it was called with (nothing rebuilt)."""
    calls = []

    def fake_screen(opts, say):
        calls.append(opts)
        k = KernelScreen(kernel_id="k", name="gen_kernel", status=CodegenClass.IDENTICAL)
        return CodegenScreen(baseline_dir=str(opts.baseline), kernels=[k])

    monkeypatch.setattr(codegen_cmd, "run_screen", fake_screen)
    return calls


def test_a_baseline_whose_index_no_longer_matches_its_manifest_is_refused(
    tmp_path, capsys, screened
):
    bl = verified_baseline(tmp_path / "bl", request("add_kernel"))
    index = bl / "main" / "gen" / CODEGEN_DIR / CODEGEN_INDEX
    index.write_text(index.read_text().replace('"num_warps": 4', '"num_warps": 8'))
    capsys.readouterr()
    rc = main(["codegen", "--baseline", str(bl), "--out", str(tmp_path / "cg")])
    assert rc == 2 and screened == []
    line = one_error_line(capsys)
    assert "does not match its manifest" in line and "index.json: content changed" in line
    assert not (tmp_path / "cg").exists()


def test_a_verified_baseline_may_run_its_generated_source_a_batch_dir_may_not(
    tmp_path, capsys, screened
):
    bl = verified_baseline(tmp_path / "bl", request("add_kernel"))
    batch = write_records(tmp_path / "batch", request("add_kernel"))
    assert main(["codegen", "--baseline", str(bl), "--out", str(tmp_path / "a")]) == 0
    assert main(["codegen", "--baseline", str(batch), "--out", str(tmp_path / "b")]) == 0
    assert [o.exec_generated for o in screened] == [True, False]


def test_the_loader_never_executes_generated_source_unless_told(tmp_path):
    pytest.importorskip("triton")
    from zlbench.plugins.compiler.rebuild import Loader, UntrustedSource

    marker = tmp_path / "marker"
    req = generated_request(marker)
    with pytest.raises(UntrustedSource, match="not executed"):
        Loader(tmp_path / "w").function(req)
    assert not marker.exists()
    with pytest.raises(AttributeError):  # executed, then no gen_kernel in it
        Loader(tmp_path / "w2", exec_generated=True).function(req)
    assert marker.read_text() == "executed"


def test_codegen_on_a_batch_dir_never_executes_recorded_source(tmp_path, capsys):
    """The real rebuild worker: the batch's generated kernel is not rebuilt (missing),
    and its module text never ran."""
    pytest.importorskip("triton")
    marker = tmp_path / "marker"
    batch = write_records(tmp_path / "batch", generated_request(marker))
    rc = main(["codegen", "--baseline", str(batch), "--out", str(tmp_path / "cg")])
    assert rc == 2  # no kernel could be rebuilt
    assert not marker.exists()
    (k,) = load_json_model(tmp_path / "cg" / "codegen.json", CodegenScreen).kernels
    assert k.status.value == "missing" and "UntrustedSource" in (k.error or "")
    assert "1 generated kernel(s) not rebuilt" in capsys.readouterr().err


def test_the_generators_globals_never_hide_what_the_recorded_text_binds(tmp_path):
    # a plain module's kernel recorded as generated names the module it imported a JIT
    # function from as a home; that home's globals are merged in, but not over the
    # text's own names (triton.language.random's ``tl`` hid the text's ``tl.philox``)
    pytest.importorskip("triton")
    import triton.language.random as home

    from zlbench.plugins.compiler.rebuild import Loader

    req = request("gen_kernel")
    kernel = req.kernel.model_copy(
        update={
            "module": "_zl_gen_home",
            "path": "gen.py",
            "generated_source": "tl = 'the text binds it'\n",
            "generated_globals": {"philox2": "triton.language.random:philox"},
        }
    )
    mod = Loader(tmp_path / "w", exec_generated=True)._load_generated(
        req.model_copy(update={"kernel": kernel}), "0" * 64
    )
    assert mod.tl == "the text binds it" != home.tl
    assert mod.randint is home.randint  # the home's other names merged in
    assert mod.philox2 is home.philox

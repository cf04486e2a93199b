"""Kernels of a module imported from a directory that its package put on sys.path at
import time (FlagGems' vendor backends: ``hopper.ops.mm`` imported from
``flag_gems/runtime/backend/_nvidia``) are recorded so that the rebuild worker,
which never ran that import, finds them again (docs/codegen.md, "Rebuilding")."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

from tests.support.codegen import (  # noqa: E402
    BENCHPKG_SRC,
    TARGET,
    digests,
    load_index,
    rebuild,
    run_script,
    subprocess_env,
)
from zlbench.models import CodegenIndex  # noqa: E402
from zlbench.plugins.compiler import capture  # noqa: E402

VENDOR_DIR = "flag_gems/runtime/backend/_nvidia"

RECORD = textwrap.dedent("""
    import sys
    from pathlib import Path
    import torch
    from zlbench.plugins import codegen
    from zlbench.plugins.compiler import standin

    recorder = codegen.Recorder()
    standin.activate("{target}", launch="skip")
    codegen.install(recorder)
    from flag_gems.runtime import backend

    backend.load_arch("hopper").fill(torch.empty(300), 1.5)
    assert backend.VENDOR_DIR not in sys.path  # as in FlagGems: gone after the import
    recorder.write("", Path(sys.argv[1]))
""")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("vendor")
    out = dest / "codegen"
    run_script(RECORD.format(target=TARGET), [str(out)], subprocess_env(dest))
    return out


def test_vendor_kernel_is_recorded_relative_to_the_dir_its_package_imported_it_from(recorded):
    (rec,) = load_index(recorded).records
    k = rec.request.kernel
    assert (k.module, k.qualname) == ("hopper.ops.fill", "fill_kernel")
    assert k.path == "hopper/ops/fill.py" and k.root == f"sys.path/{VENDOR_DIR}"
    assert k.generated_source is None and rec.id == rec.request.key()


def test_vendor_kernel_rebuilds_identical_in_a_worker_that_never_loaded_the_arch(
    recorded, tmp_path
):
    proc = rebuild(recorded / "index.json", tmp_path / "out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "kernels=1 failed=0" in proc.stdout
    (out,) = load_index(tmp_path / "out").records
    assert out.error is None and out.notes == []
    assert digests(load_index(tmp_path / "out")) == digests(load_index(recorded))


def test_vendor_kernel_rebuilds_identical_from_a_checkout_elsewhere(recorded, tmp_path):
    src = tmp_path / "elsewhere" / "src"
    shutil.copytree(BENCHPKG_SRC, src, ignore=shutil.ignore_patterns("__pycache__"))
    proc = rebuild(recorded / "index.json", tmp_path / "out", tmp_path, src=src)
    assert proc.returncode == 0, proc.stderr
    assert digests(load_index(tmp_path / "out")) == digests(load_index(recorded))


def test_vendor_kernel_recorded_relative_to_the_arch_dir_alone_is_a_load_failure(
    recorded, tmp_path
):
    """The shape of records made before ``root`` named the import dir: not findable on
    a machine whose package does not load the arch at import (a CPU here)."""
    (rec,) = load_index(recorded).records
    old = rec.model_copy(deep=True)
    old.request.kernel.path, old.request.kernel.root = "ops/fill.py", "sys.path"
    path = tmp_path / "old.json"
    path.write_text(CodegenIndex(records=[old]).model_dump_json(), encoding="utf-8")
    proc = rebuild(path, tmp_path / "out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    (out,) = load_index(tmp_path / "out").records
    assert out.error == "load failed: ModuleNotFoundError: No module named 'hopper'"


def test_vendor_dir_that_is_not_there_is_a_load_failure_naming_it(recorded, tmp_path):
    (rec,) = load_index(recorded).records
    bad = rec.model_copy(deep=True)
    bad.request.kernel.root = "sys.path/flag_gems/runtime/backend/_nowhere"
    path = tmp_path / "bad.json"
    path.write_text(CodegenIndex(records=[bad]).model_dump_json(), encoding="utf-8")
    assert rebuild(path, tmp_path / "out", tmp_path).returncode == 0
    (out,) = load_index(tmp_path / "out").records
    assert out.error == (
        "load failed: LookupError: flag_gems/runtime/backend/_nowhere/hopper/ops/fill.py"
        " not found under any sys.path entry"
    )


def _write(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("", encoding="utf-8")
    return path


def test_locate_names_the_import_dir_only_when_it_lies_inside_a_package(tmp_path, monkeypatch):
    src = tmp_path / "src"
    for pkg in ("gems", "gems/backend", "gems/backend/_v", "gems/backend/_v/arch"):
        _write(src / pkg / "__init__.py")
    plain = _write(src / "gems" / "ops" / "mm.py")
    vendor = _write(src / "gems" / "backend" / "_v" / "arch" / "ops" / "mm.py")
    init = src / "gems" / "backend" / "_v" / "arch" / "__init__.py"
    monkeypatch.syspath_prepend(str(src))
    assert capture.locate("gems.ops.mm", str(plain)) == ("gems/ops/mm.py", "sys.path")
    want = ("arch/ops/mm.py", "sys.path/gems/backend/_v")
    assert capture.locate("arch.ops.mm", str(vendor)) == want
    assert capture.locate("arch", str(init)) == ("arch/__init__.py", "sys.path/gems/backend/_v")
    # the arch dir itself left on sys.path (as FlagGems does) does not change the answer
    monkeypatch.syspath_prepend(str(vendor.parents[1]))
    assert capture.locate("arch.ops.mm", str(vendor)) == want
    # a name that does not match the file: relative to the nearest sys.path entry
    assert capture.locate("other.mm", str(vendor)) == ("ops/mm.py", "sys.path")
    assert capture.locate("m", None) == (None, None)

"""The compiler build fingerprint ``environment.probe`` records: where ``triton`` was
imported from and a cheap, deterministic hash that tells two builds apart even when
their version strings agree (the backend's compiler.py by content, libtriton by
name, size and ELF build id)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import types
from pathlib import Path

import pytest

from zlbench.plugins import environment

BUILD_ID = bytes(range(20))


def _elf64_with_build_id(build_id: bytes = BUILD_ID, pad: int = 0) -> bytes:
    """A minimal little-endian ELF64 file: one PT_NOTE segment holding a GNU build id."""
    note = struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id
    phoff, phentsize = 64, 56
    note_at = phoff + phentsize
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    ehdr = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, phoff, 0, 0, 64, phentsize, 1, 64, 0, 0
    )
    phdr = struct.pack("<IIQQQQQQ", 4, 4, note_at, 0, 0, len(note), len(note), 4)
    return ehdr + phdr + note + bytes(pad)


def _fake_triton(root: Path, compiler: str = "def compile(): pass\n", lib: bytes = b"") -> Path:
    (root / "backends" / "nvidia").mkdir(parents=True)
    (root / "backends" / "nvidia" / "compiler.py").write_text(compiler)
    (root / "_C" / "libtriton").mkdir(parents=True)  # a dir of that name is no library
    (root / "_C" / "libtriton.so").write_bytes(lib or _elf64_with_build_id())
    return root


def test_the_build_id_is_read_from_the_elf_notes(tmp_path):
    f = tmp_path / "lib.so"
    f.write_bytes(_elf64_with_build_id())
    assert environment.elf_build_id(f) == BUILD_ID.hex()
    f.write_bytes(b"not an ELF file at all")
    assert environment.elf_build_id(f) is None
    assert environment.elf_build_id(tmp_path / "absent.so") is None
    f.write_bytes(_elf64_with_build_id()[:80])  # cut inside its program header
    assert environment.elf_build_id(f) is None


def test_the_fingerprint_is_deterministic_and_short(tmp_path):
    a = environment.compiler_build(_fake_triton(tmp_path / "a"))
    b = environment.compiler_build(_fake_triton(tmp_path / "b"))  # same bytes elsewhere
    assert a == b and a is not None
    assert len(a) == environment.BUILD_DIGITS and int(a, 16) >= 0


@pytest.mark.parametrize(
    "other",
    [
        {"compiler": "def compile(): return 1\n"},  # the backend's compiler driver changed
        {"lib": _elf64_with_build_id(bytes(20))},  # same size, another build id
        {"lib": _elf64_with_build_id(pad=1)},  # same build id, another size
    ],
)
def test_two_builds_of_one_version_differ(tmp_path, other):
    a = environment.compiler_build(_fake_triton(tmp_path / "a"))
    assert environment.compiler_build(_fake_triton(tmp_path / "b", **other)) != a


def test_no_compiler_files_no_fingerprint(tmp_path):
    assert environment.compiler_build(tmp_path) is None
    assert environment.compiler_build(None) is None


def test_the_probe_records_where_triton_came_from_and_its_build():
    env = environment.probe(None, "cudagraph", "core")
    import triton  # the probe itself must not need it imported

    where = Path(os.path.abspath(triton.__file__)).parent
    assert env.compiler_path == str(where)
    assert env.compiler_build == environment.compiler_build(where)
    assert env.compiler_build is not None  # triton ships backends/nvidia/compiler.py


def test_a_symlink_copy_with_a_patched_backend_is_told_apart(tmp_path, monkeypatch):
    # the device's patched compilers: a tree of links to one install with one backend
    # file replaced; resolving the links would name (and fingerprint) the install
    real = _fake_triton(tmp_path / "install")
    copy = tmp_path / "copy" / "triton"
    for f in real.rglob("*"):
        if f.is_file():
            (copy / f.relative_to(real)).parent.mkdir(parents=True, exist_ok=True)
            (copy / f.relative_to(real)).symlink_to(f)
    init = real / "__init__.py"
    init.write_text("")
    (copy / "__init__.py").symlink_to(init)
    patched = copy / "backends" / "nvidia" / "compiler.py"
    patched.unlink()
    patched.write_text("def compile(): return 'without one pass'\n")
    monkeypatch.setitem(
        sys.modules, "triton", types.SimpleNamespace(__file__=str(copy / "__init__.py"))
    )
    assert environment.compiler_path() == copy
    assert environment.compiler_build(copy) != environment.compiler_build(real)


def test_the_probe_does_not_import_triton():
    code = (
        "import sys; from zlbench.plugins import environment as e; "
        "p = e.compiler_path(); print(p is not None, 'triton' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) not installed")
def test_the_build_id_agrees_with_readelf():
    lib = next((environment.compiler_path() or Path("/nonexistent")).glob("_C/libtriton*.so"), None)
    if lib is None:
        pytest.skip("this triton has no _C/libtriton*.so")
    text = subprocess.run(["readelf", "-n", str(lib)], capture_output=True, text=True).stdout
    ids = [line.split(":", 1)[1].strip() for line in text.splitlines() if "Build ID:" in line]
    assert environment.elf_build_id(lib) == (ids[0] if ids else None)

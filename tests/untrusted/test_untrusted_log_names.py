"""One log filter on every message that carries a name from input (issue 49 item 5):
a right-to-left override (U+202E, which makes a log line read other than it is) and a
raw newline (which starts a forged line) in a file or op name reach stderr/stdout
escaped (``\\u202e``, ``\\n``), through ``baseline verify``'s stray-file names, the
same-compiler refusal and the old-name warning; every stream the CLI writes shows an
invisible character as its escape (``cli.logsafe.shown``)."""

from __future__ import annotations

import io

import pytest

from tests.support.batch_fakes import make_inventory
from tests.support.interleaved import gate_dir, pairs_of
from tests.support.zlsynth import brow, one_error_line, write_baseline
from tests.untrusted.test_untrusted_strict import edit_json, judge
from zlbench.cli import main
from zlbench.cli.logsafe import LogSafeStream
from zlbench.report.escape import log_escape
from zlbench.runner.catalog.inventory import inventory_path
from zlbench.runner.catalog.old_names import (
    OLD_NAMES_FILE,
    OldName,
    load_old_names,
    write_old_names,
)

RLO = "\u202e"
FORGED = "PASS every op judged"  # a raw newline in a name would print it as a line of its own


def _clean(text: str) -> None:
    """No bidi override and no forged line in ``text``."""
    assert RLO not in text, text
    assert FORGED not in text.splitlines(), text


def test_log_escape_keeps_one_visible_line():
    s = log_escape(f"a{RLO}b\n{FORGED}\r\tc\x1b\ufeffé")
    assert s == f"a\\u202eb\\n{FORGED}\\r\\tc\\x1b\\ufeffé"
    assert log_escape("main/add_[1024]::x y.py") == "main/add_[1024]::x y.py"  # as it was


def test_every_cli_stream_shows_a_bidi_override_escaped():
    buf = io.StringIO()
    LogSafeStream(buf).write(f"op {RLO}dda\x08\x07 \x1b[31mred\x1b[0m\n\tnext\r\n")
    assert buf.getvalue() == "op \\u202edda\\x08\\x07 \x1b[31mred\x1b[0m\n\tnext\r\n"


def test_baseline_verify_names_a_hostile_stray_file_on_one_line(tmp_path, capsys):
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", "[1024]", 1.0)]})
    (bl / f"x{RLO}txt.sh\n{FORGED}").write_text("x\n")
    assert main(["baseline", "verify", str(bl)]) == 1
    out, err = capsys.readouterr()
    _clean(out + err)
    stray = [ln for ln in out.splitlines() if "not part of a baseline" in ln]
    assert stray == [
        f"FAIL x\\u202etxt.sh\\n{FORGED}: not part of a baseline (no refresh writes it)"
    ]


def test_the_same_compiler_refusal_names_hostile_paths_on_one_line(tmp_path, capsys):
    bl, gate = gate_dir(tmp_path, {"big": pairs_of([110.0, 110.5, 109.5, 110.2, 109.8], 100.0)})
    hostile = f"/venv{RLO}/site\n{FORGED}"

    def change(data):
        data["pr"]["path"] = data["base"]["path"] = hostile
        data["base"]["env"] = f"base{RLO}\n{FORGED}"

    edit_json(gate / "ab" / "ab.json", change)
    assert judge(tmp_path, bl, gate) == 2
    line = one_error_line(capsys)  # exactly one stderr line
    assert "same triton" in line and "\\u202e" in line and f"\\n{FORGED}" in line
    _clean(line)


@pytest.fixture
def hostile_ops(tmp_path):
    """An ops dir whose old_names.csv maps a hostile old name to the op ``abs_``."""
    ops = tmp_path / "ops"
    make_inventory(ops, "main", ["abs_"])
    assert inventory_path(ops, "main").is_file()
    old = f"abs{RLO}\n{FORGED}"
    name = OldName(
        repo="main", old_name=old, selector="abs_", nodeid="benchmark/test_abs_.py::test_abs_"
    )
    write_old_names(ops / OLD_NAMES_FILE, [name])
    assert [n.old_name for n in load_old_names(ops / OLD_NAMES_FILE)] == [old]
    return ops, old


def test_the_old_name_warning_names_a_hostile_old_name_on_one_line(hostile_ops, capsys):
    ops, old = hostile_ops
    argv = ["batch", "--plan-only", "--ops-dir", str(ops), "--ops", old]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    warnings = [ln for ln in err.splitlines() if "old name" in ln]
    assert warnings == [f"warning: old name abs\\u202e\\n{FORGED}: using abs_ (ops/old_names.csv)"]
    _clean(out + err)

"""Paths read from artifacts stay inside their root (issue 16): a run_dir, a result.json,
a run.log, a confirm pass, a baseline op or shape file that leads out of its dir by
``..``, an absolute path or a symlink is one error line and exit 2; nothing outside
is read or copied, and the report names no absolute machine path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.zlsynth import (
    brow,
    crow,
    gate,
    one_error_line,
    run_result,
    write_baseline,
    write_results,
    write_status,
)
from zlbench.cli import main
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import sha256_file
from zlbench.gate.load import load_baseline
from zlbench.models import OpStatus, RunStatus

S = "[1024]"


@pytest.fixture
def bl(tmp_path):
    return write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})


def good():
    return [run_result("add", [crow("add", S, 1.0)])]


def slow():
    return [run_result("add", [crow("add", S, 0.5)])]


def status(run_dir: str, st=RunStatus.PASS) -> OpStatus:
    return OpStatus(repo="main", op="add", run_name="add", status=st, rows=1, run_dir=run_dir)


def refused(tmp_path, bl, results, capsys, *words) -> str:
    rc, out = gate(tmp_path, bl, results)
    assert rc == 2
    line = one_error_line(capsys)
    for w in words:
        assert w in line
    assert not (out / "verdict.json").exists()
    return line


# --------------------------------------------------------------------------- results dirs


def outside_run(tmp_path: Path) -> Path:
    """A run dir outside the results dir, holding a slower op's result."""
    d = tmp_path / "elsewhere" / "main" / "add"
    write_results(tmp_path / "elsewhere", slow())
    return d


def test_run_dir_with_dotdot_is_refused(tmp_path, bl, capsys):
    outside_run(tmp_path)
    r = write_results(tmp_path / "r", [])
    write_status(r, status("../elsewhere/main/add"))
    refused(tmp_path, bl, r, capsys, "ops_status.csv", "run_dir", "..")


def test_absolute_run_dir_is_refused(tmp_path, bl, capsys):
    d = outside_run(tmp_path)
    r = write_results(tmp_path / "r", [])
    write_status(r, status(str(d)))
    refused(tmp_path, bl, r, capsys, "ops_status.csv", "run_dir", "absolute")


def test_run_dir_symlinked_out_is_refused(tmp_path, bl, capsys):
    d = outside_run(tmp_path)
    r = write_results(tmp_path / "r", [])
    (r / "main").mkdir()
    (r / "main" / "add").symlink_to(d)
    write_status(r, status("main/add"))
    refused(tmp_path, bl, r, capsys, "ops_status.csv", "outside")


@pytest.mark.parametrize("name", ["result.json", "run.log"])
def test_file_symlinked_out_of_a_run_dir_is_refused(tmp_path, bl, capsys, name):
    d = outside_run(tmp_path)
    (d / "run.log").write_text("secret\n")
    r = write_results(tmp_path / "r", good(), log="ok\n")
    (r / "main" / "add" / name).unlink()
    (r / "main" / "add" / name).symlink_to(d / name)
    refused(tmp_path, bl, r, capsys, name, "outside")


def test_unlisted_run_dir_symlinked_out_is_refused(tmp_path, bl, capsys):
    # no ops_status.csv: the run dirs are found by their result.json
    d = outside_run(tmp_path)
    r = tmp_path / "r"
    (r / "main").mkdir(parents=True)
    (r / "main" / "add").symlink_to(d)
    refused(tmp_path, bl, r, capsys, "result.json", "outside")


def test_results_of_a_gate_dir_symlinked_out_are_refused(tmp_path, bl, capsys):
    write_results(tmp_path / "elsewhere", good())
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "results").symlink_to(tmp_path / "elsewhere")
    refused(tmp_path, bl, tmp_path / "g", capsys, "results", "outside")


def test_confirm_pass_symlinked_out_is_refused(tmp_path, bl, capsys):
    write_results(tmp_path / "g" / "results", slow())
    write_results(tmp_path / "elsewhere", good())
    (tmp_path / "g" / "confirm").mkdir()
    (tmp_path / "g" / "confirm" / "1").symlink_to(tmp_path / "elsewhere")
    refused(tmp_path, bl, tmp_path / "g", capsys, "confirm/1", "outside")


def test_links_that_stay_inside_are_followed(tmp_path, bl):
    r = write_results(tmp_path / "r", good())
    os.rename(r / "main" / "add", r / "main" / "add-real")
    (r / "main" / "add").symlink_to("add-real")
    assert gate(tmp_path, bl, r)[0] == 0


# --------------------------------------------------------------------------- baseline paths


def test_baseline_op_outside_the_baseline_is_refused(tmp_path, capsys):
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})
    # an op entry "<repo>/<run_name>" that climbs out: ../x/result.json
    write_baseline(tmp_path / "x", {"add": [brow("add", S, 0.1)]})
    text = (bl / "manifest.yaml").read_text().replace("- main/add", "- ../x")
    (bl / "manifest.yaml").write_text(text)
    refused(tmp_path, bl, write_results(tmp_path / "r", good()), capsys, "manifest.yaml", "'..'")


@pytest.mark.parametrize("shape_file", ["../shapes.yaml", "/etc/hostname"])
def test_baseline_shape_file_outside_the_baseline_is_refused(tmp_path, capsys, shape_file):
    (tmp_path / "shapes.yaml").write_text("add: {}\n")
    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]}, shape_file=shape_file)
    refused(tmp_path, bl, write_results(tmp_path / "r", good()), capsys, "shape_file")


def test_gate_names_the_baseline_shape_file_inside_it(tmp_path):
    from zlbench.gate.load import baseline_shape_file

    bl = write_baseline(tmp_path / "bl", {"add": [brow("add", S, 1.0)]})
    assert baseline_shape_file(load_baseline(bl)) is None
    (bl / "shapes.yaml").write_text("add: {}\n")
    bl = write_baseline(
        tmp_path / "bl",
        {"add": [brow("add", S, 1.0)]},
        shape_file="shapes.yaml",
        shape_file_sha256=sha256_file(bl / "shapes.yaml"),
    )
    assert baseline_shape_file(load_baseline(bl)) == bl / "shapes.yaml"


# --------------------------------------------------------------------------- merge


def shard(tmp_path: Path, name: str, run_dir: str) -> Path:
    s = write_results(tmp_path / name, [])
    write_status(s, status(run_dir))
    return s


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_merge_never_copies_from_outside_a_shard(tmp_path, capsys, kind):
    d = outside_run(tmp_path)
    if kind == "dotdot":
        s = shard(tmp_path, "s1", "../elsewhere/main/add")
    elif kind == "absolute":
        s = shard(tmp_path, "s1", str(d))
    else:
        s = shard(tmp_path, "s1", "main/add")
        (s / "main").mkdir()
        (s / "main" / "add").symlink_to(d)
    assert main(["merge", str(s), "--out", str(tmp_path / "m" / "merged")]) == 2
    assert "run_dir" in one_error_line(capsys)
    assert not list(tmp_path.glob("m/**/result.json"))


# --------------------------------------------------------------------------- the helper


def test_resolve_inside_returns_the_path_under_its_root(tmp_path):
    from zlbench.models import resolve_inside

    assert resolve_inside(tmp_path, "a/b.json") == tmp_path / "a" / "b.json"
    assert resolve_inside(tmp_path, "") == tmp_path


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("../x", "'..'"),
        ("a/../../x", "'..'"),
        ("a/../b", "'..'"),  # even one that stays inside: artifacts never need it
        ("/etc/passwd", "absolute"),
        ("a\0b", "NUL"),
    ],
)
def test_resolve_inside_refuses_paths_that_leave_their_root(tmp_path, rel, why):
    from zlbench.models import resolve_inside

    with pytest.raises(ZlbenchError, match=why) as e:
        resolve_inside(tmp_path, rel, "ops_status.csv:2: run_dir")
    assert str(e.value).startswith("ops_status.csv:2: run_dir") and "\n" not in str(e.value)


def test_resolve_inside_refuses_a_link_out_and_follows_one_in(tmp_path):
    from zlbench.models import resolve_inside

    root = tmp_path / "root"
    (root / "in").mkdir(parents=True)
    (root / "up").symlink_to(tmp_path)
    (root / "side").symlink_to("in")
    with pytest.raises(ZlbenchError, match="outside"):
        resolve_inside(root, "up/x")
    assert resolve_inside(root, "side/x") == root / "side" / "x"


# --------------------------------------------------------------------------- reports


def test_report_label_never_holds_an_absolute_machine_path(tmp_path, monkeypatch):
    from zlbench.gate.load import report_label

    monkeypatch.chdir(tmp_path)
    assert report_label(str(tmp_path / "run" / "merged")) == "run/merged"
    assert report_label("run/merged") == "run/merged"
    elsewhere = report_label("/home/runner/work/_temp/zlbench-gate/merged")
    assert elsewhere == "…/zlbench-gate/merged"


def test_results_given_by_absolute_path_leave_no_machine_path_in_the_reports(tmp_path, bl):
    r = write_results(tmp_path / "r", good(), log="ok\n")
    rc, out = gate(tmp_path, bl, r.resolve())
    assert rc == 0
    for name in ("report.md", "junit.xml", "verdict.json"):
        assert str(tmp_path.resolve()) not in (out / name).read_text(), name


def test_check_tree_inside_finds_a_link_out_deep_in_a_tree(tmp_path):
    from zlbench.models import check_tree_inside

    root = tmp_path / "root"
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "ok").symlink_to(root / "a")  # inside: fine
    check_tree_inside(root, "a")
    (deep / "log").symlink_to(tmp_path / "secret")  # dangling, outside
    with pytest.raises(ZlbenchError, match="a/b/log.*outside"):
        check_tree_inside(root, "a")

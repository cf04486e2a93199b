"""Strict types and paths inside their root (issue 49: 6). An artifact's number given
as a string or a bool is refused, never coerced; an ab.json that leaves its compilers'
paths out cannot skip the same-compiler check; a rebuild shard's files are read inside
its dir; a value argparse refuses (``--time-budget ''``) is one line, not the usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.interleaved import gate_dir, pairs_of
from tests.support.zlsynth import one_error_line
from tests.untrusted.test_untrusted_numbers import _required_argv, numeric_options
from zlbench.cli import main
from zlbench.codegen.shards import SHARD_JSON, load_shards, write_shard
from zlbench.errors import ZlbenchError
from zlbench.models.codegen import CODEGEN_INDEX
from zlbench.models.codegen_screen import RebuiltShard

SLOWER = {"big": pairs_of([110.0, 110.5, 109.5, 110.2, 109.8], 100.0)}


def judge(tmp_path: Path, bl: Path, gate: Path) -> int:
    out = tmp_path / "out"
    return main(["gate", "--baseline", str(bl), "--results", str(gate), "--out", str(out)])


def edit_json(f: Path, change) -> None:
    data = json.loads(f.read_text())
    change(data)
    f.write_text(json.dumps(data))


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("field", "value"),
    [("ms", "0.11"), ("ms", True), ("mhz", "1980"), ("reasons", "0"), ("plain", "false")],
    ids=["ms-str", "ms-bool", "mhz-str", "reasons-str", "plain-str"],
)
def test_a_pair_sample_of_the_wrong_type_is_refused_not_coerced(tmp_path, capsys, field, value):
    bl, gate = gate_dir(tmp_path, SLOWER)

    def change(data):
        data["rows"][0]["samples"][0][field] = value

    edit_json(gate / "ab" / "pairs.json", change)
    assert judge(tmp_path, bl, gate) == 2
    line = one_error_line(capsys)
    assert "pairs.json" in line and field in line and len(line) < 400
    assert not (tmp_path / "out" / "verdict.json").exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [("threshold", "0.03"), ("threshold_plain", "0.25"), ("rounds", "1"), ("aa", 0)],
)
def test_an_ab_json_number_or_flag_of_the_wrong_type_is_refused(tmp_path, capsys, field, value):
    bl, gate = gate_dir(tmp_path, SLOWER)
    edit_json(gate / "ab" / "ab.json", lambda d: d.update({field: value}))
    assert judge(tmp_path, bl, gate) == 2
    line = one_error_line(capsys)
    assert "ab.json" in line and field in line


def test_an_int_where_a_float_stands_is_still_a_number(tmp_path):
    """The control: ``"ms": 1`` (a JSON writer that drops ``.0``) is read as 1.0 ms."""
    bl, gate = gate_dir(tmp_path, SLOWER)

    def change(data):
        for s in data["rows"][0]["samples"]:
            s["ms"] = round(s["ms"] * 1000) if s["side"] == "pr" else s["ms"] * 1000

    edit_json(gate / "ab" / "pairs.json", change)
    assert judge(tmp_path, bl, gate) in (0, 1)


# --------------------------------------------------------------------------- compilers


@pytest.mark.parametrize("sides", [("pr", "base"), ("base",)], ids=["both", "base"])
def test_an_ab_json_without_compiler_paths_is_refused_not_left_unchecked(tmp_path, capsys, sides):
    bl, gate = gate_dir(tmp_path, SLOWER)

    def change(data):
        for side in sides:
            data[side]["path"] = None

    edit_json(gate / "ab" / "ab.json", change)
    assert judge(tmp_path, bl, gate) == 2
    line = one_error_line(capsys)
    assert "records no triton path" in line and "base" in line


def test_an_ab_json_of_one_compiler_is_still_refused(tmp_path, capsys):
    bl, gate = gate_dir(tmp_path, SLOWER)
    edit_json(gate / "ab" / "ab.json", lambda d: d["base"].update(path=d["pr"]["path"]))
    assert judge(tmp_path, bl, gate) == 2
    assert "same triton" in one_error_line(capsys)


# --------------------------------------------------------------------------- rebuild shards


def _shard(d: Path) -> Path:
    stamp = RebuiltShard(baseline_sha256="a" * 64, compiler="c", shard=(1, 1), ids=[])
    write_shard(d, stamp, {}, {})
    return d


@pytest.mark.parametrize("name", [SHARD_JSON, CODEGEN_INDEX])
def test_a_rebuild_shards_file_linked_out_of_its_dir_is_refused(tmp_path, name):
    d = _shard(tmp_path / "shard")
    assert load_shards([d], {}, "a" * 64, "c") == ({}, {})  # the control: it loads
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (d / name).rename(outside / name)
    (d / name).symlink_to(outside / name)
    with pytest.raises(ZlbenchError, match="leads outside") as e:
        load_shards([d], {}, "a" * 64, "c")
    assert "\n" not in str(e.value) and name in str(e.value)


# --------------------------------------------------------------------------- argv


def test_an_empty_time_budget_is_one_line_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["gate", "--baseline", "baselines/v5", "--time-budget", ""])
    assert e.value.code == 2
    line = one_error_line(capsys)
    assert "--time-budget" in line and "invalid float value" in line


@pytest.mark.parametrize(
    ("path", "parser", "action"),
    [
        pytest.param(p, parser, a, id=f"{' '.join(p)} {a.option_strings[0]}")
        for p, parser, a in numeric_options()
    ],
)
def test_every_numeric_flag_that_is_not_a_number_is_one_line(capsys, path, parser, action):
    """The class: argparse's own refusal of any ``type=int``/``type=float`` flag."""
    with pytest.raises(SystemExit) as e:
        main([*path, *_required_argv(parser), action.option_strings[0], "x\u202e"])
    assert e.value.code == 2
    line = one_error_line(capsys)
    assert action.option_strings[0] in line and "\u202e" not in line


def test_help_still_prints_the_usage(capsys):
    with pytest.raises(SystemExit) as e:
        main(["gate", "-h"])
    assert e.value.code == 0 and "usage: zlbench gate" in capsys.readouterr().out

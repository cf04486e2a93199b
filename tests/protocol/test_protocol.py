"""zlbench.protocol: the runner and the plugins speak one language.

Each test takes the writer of one side and the reader of the other: a flag the
runner builds must be an option the plugins register, a line the plugins print
must be found by the runner's parser, and no file name of the contract may be
spelled anywhere but in protocol.layout."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from zlbench.models import Marker, MarkerKind, PlanEntry, WorkerPlan
from zlbench.protocol import boundary, faults, layout, markers, options
from zlbench.runner.execute.oplog import OpLogSplitter
from zlbench.runner.execute.worker import build_pytest_argv

ZLBENCH = Path(__file__).resolve().parents[2] / "zlbench"


def plugin_parser() -> argparse.ArgumentParser:
    """An argparse parser with every option the plugins register (every table)."""
    p = argparse.ArgumentParser()
    options.add_options(p.add_argument)
    options.add_options(p.add_argument, table=options.SWEEP_OPTIONS)
    options.add_options(p.add_argument, table=options.CODEGEN_OPTIONS)
    return p


def test_every_zl_flag_of_a_runner_command_line_is_a_registered_plugin_option(tmp_path):
    entry = PlanEntry(repo="main", op="abs", run_name="abs", run_dir=str(tmp_path), nodeids=["t"])
    plan = WorkerPlan(entries=[entry])
    extra = options.arg("sweep-shard", "1/4") + options.arg("sweep-out", tmp_path / "o.json")
    argv = build_pytest_argv(tmp_path / layout.PLAN_JSON, plan, extra=extra)
    zl = [a for a in argv if a.startswith(options.PREFIX)]
    assert zl == ["--zl-plan", "--zl-sweep-shard", "--zl-sweep-out"]
    pairs = [x for a in zl for x in (a, argv[argv.index(a) + 1])]
    ns = plugin_parser().parse_args(pairs)
    assert ns.zl_plan == str(tmp_path / "plan.json") and ns.zl_sweep_shard == "1/4"


def test_codegen_flags_the_runner_spells_are_the_ones_the_recorder_reads():
    argv = options.arg("codegen-standin", "cuda:90") + [options.flag("no-codegen")]
    assert argv == ["--zl-codegen-standin", "cuda:90", "--zl-no-codegen"]
    ns = plugin_parser().parse_args(argv)
    assert ns.zl_codegen_standin == "cuda:90" and ns.zl_no_codegen is True
    assert options.dest("no-codegen") == "zl_no_codegen"


def test_a_flag_outside_the_table_is_refused():
    with pytest.raises(KeyError):
        options.flag("sweep-shards")
    assert options.arg("replays", 3) == ["--zl-replays", "3"]


@pytest.mark.parametrize("noise", ["", "tests/test_x.py .", "\x1b[32m"])
def test_boundary_lines_are_found_by_the_parser_even_mid_line(noise):
    assert boundary.find_begin(noise + boundary.begin_line("mm__at__t.py")) == "mm__at__t.py"
    assert boundary.find_end(noise + boundary.end_line("abs", "FAIL")) == ("abs", "FAIL")
    assert boundary.find_begin(boundary.end_line("abs", "PASS")) is None
    assert boundary.find_end(boundary.begin_line("abs")) is None


def test_the_runner_splits_the_log_at_the_lines_the_plugins_print(tmp_path):
    entries = [
        PlanEntry(repo="main", op=n, run_name=n, run_dir=str(tmp_path / n), nodeids=["t"])
        for n in ("a", "b")
    ]
    for e in entries:
        Path(e.run_dir).mkdir()
    split = OpLogSplitter(entries)
    lines = [boundary.begin_line("a"), "x", boundary.end_line("a", "PASS")]
    lines += [boundary.begin_line("b"), "y", boundary.end_line("b", "FAIL")]
    events = [split.feed(line) for line in lines]
    split.close()
    assert [e[0] for e in events if e] == ["begin", "end", "begin", "end"]
    assert split.ops["b"].end_status == "FAIL"
    assert (tmp_path / "a" / layout.RUN_LOG).read_text().splitlines()[1] == "x"


@pytest.mark.parametrize("kind", list(MarkerKind))
def test_every_marker_kind_round_trips_through_its_line(kind):
    if kind is MarkerKind.REPLAY_FALLBACK:
        m = Marker(kind=kind, reason="key_missing", kernel="mm_kernel")
    else:
        m = Marker(kind=kind, phase="capture", reason="RuntimeError:boom")
    assert markers.parse_marker_line("12.3 " + m.line()) == m


def test_sticky_faults_are_device_faults_and_only_they_poison_the_process(tmp_path):
    sticky = [t for t, s in faults.FAULTS if s]
    assert sticky and set(sticky) < set(faults.FAULT_TEXTS)
    for text, is_sticky in faults.FAULTS:
        line = f"RuntimeError: CUDA error: {text.upper()}"
        assert faults.is_device_fault(line)
        assert bool(faults.STICKY_FAULT_RE.search(line)) is is_sticky, text
    entry = PlanEntry(repo="main", op="a", run_name="a", run_dir=str(tmp_path), nodeids=["t"])
    split = OpLogSplitter([entry])
    split.feed(boundary.begin_line("a"))
    split.feed("torch.OutOfMemoryError: CUDA out of memory")
    assert split.ops["a"].fault is None  # OOM fails the op, the process may go on
    split.feed("CUDA error: an illegal memory access was encountered")
    split.close()
    assert "illegal memory access" in split.ops["a"].fault


CONTRACT_NAMES = [
    v
    for k, v in vars(layout).items()
    if k.isupper() and isinstance(v, str) and ("." in v or "_" in v)
]


def test_contract_file_names_are_spelled_only_in_protocol_layout():
    """A quoted "result.json" (or any other name of the layout) outside
    protocol/layout.py means a second spelling that can drift."""
    quoted = [f"{q}{n}{q}" for n in CONTRACT_NAMES for q in "\"'"]
    pattern = re.compile("|".join(map(re.escape, quoted)))
    spelled = [
        f"{path.relative_to(ZLBENCH)}:{i}: {line.strip()}"
        for path in sorted(ZLBENCH.rglob("*.py"))
        if path != ZLBENCH / "protocol" / "layout.py"
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert spelled == []


def test_boundary_tokens_are_spelled_only_in_protocol_boundary():
    spelled = [
        str(path.relative_to(ZLBENCH))
        for path in sorted(ZLBENCH.rglob("*.py"))
        if path != ZLBENCH / "protocol" / "boundary.py"
        and re.search(r'["\'f]ZLBENCH_(OP_BEGIN|OP_END|RUNNER)', path.read_text(encoding="utf-8"))
    ]
    assert spelled == []

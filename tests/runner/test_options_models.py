"""The measuring options in one place (issue 28 item 2): the option models
(``zlbench.models.options``), the shared builders and readers (``zlbench.cli.options``),
the plugin flags rendered only by ``zlbench.protocol.options.measuring_args``, and
``BatchConfig.from_options`` as the one place the models become a batch's config."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import ValidationError

import zlbench
from zlbench.cli import build_parser
from zlbench.cli.options import (
    config_from_args,
    measuring_from,
    scheduling_from,
    selection_from,
)
from zlbench.cli.settings import Settings
from zlbench.errors import ZlbenchError
from zlbench.models.options import Measuring, Scheduling, Selection
from zlbench.protocol import options
from zlbench.runner.batch.config import BatchConfig

CLI = Path(zlbench.__file__).parent / "cli"


def _args(*argv: str):
    return build_parser().parse_args(list(argv))


def test_the_models_are_frozen_and_refuse_unknown_fields():
    m = Measuring()
    with pytest.raises(ValidationError):
        m.replays = 3  # type: ignore[misc]
    for model in (Selection, Measuring, Scheduling):
        with pytest.raises(ValidationError):
            model(nonsense=1)


@pytest.mark.parametrize(
    "bad",
    [dict(warmup_ms=-1.0), dict(warmup_ms=float("nan")), dict(replays=0), dict(split_rows="on")],
)
def test_measuring_refuses_what_the_cli_refuses(bad):
    with pytest.raises(ValidationError):
        Measuring(**bad)


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        (Measuring(), []),
        (Measuring(warmup_ms=25.0), ["--zl-warmup-ms", "25"]),
        (Measuring(replays=5), ["--zl-replays", "5"]),
        (Measuring(warmup_ms=0.5, replays=2), ["--zl-warmup-ms", "0.5", "--zl-replays", "2"]),
        (Measuring(phase_timings=True), ["-p", options.PHASES_PLUGIN]),
        (Measuring(aot_compile=False), ["--zl-aot-compile", "off"]),
        (
            Measuring(phase_timings=True, warmup_ms=1.0, replays=3, aot_compile=False),
            ["-p", options.PHASES_PLUGIN, "--zl-warmup-ms", "1", "--zl-replays", "3"]
            + ["--zl-aot-compile", "off"],
        ),
        # what the process gets through the plan and the environment is no option
        (Measuring(mode="kernel", ttgir=False, reuse_tuning_db=True, split_rows="off"), []),
    ],
)
def test_measuring_args_render_the_given_options_in_order(how, expected):
    assert options.measuring_args(how) == expected


def test_every_rendered_plugin_flag_is_in_the_plugins_table():
    how = Measuring(phase_timings=True, warmup_ms=1.0, replays=3, aot_compile=False)
    zl = [a for a in options.measuring_args(how) if a.startswith(options.PREFIX)]
    tables = {**options.OPTIONS, **options.SWEEP_OPTIONS}
    assert zl and all(a.removeprefix(options.PREFIX) in tables for a in zl)


def test_batch_flags_become_the_three_models():
    args = _args(
        *["batch", "--ops", "abs", "mm", "--repos", "main", "vllm", "--dtypes", "float16"],
        *["--shape-file", "s.yaml", "--recheck-dismissed", "--ops-dir", "od"],
        *["--mode", "kernel", "--warmup-ms", "12.5", "--replays", "4", "--phase-timings"],
        *["--no-ttgir", "--no-aot-compile", "--split-rows", "off"],
        *["--gpus", "0,1", "--gpu-share", "2", "--per-process", "3", "--op-timeout", "0"],
        *["--max-retries", "1", "--precompile-jobs", "-3"],
    )
    settings = Settings.from_env({})
    assert selection_from(args) == Selection(
        ops=("abs", "mm"),
        repos=("main", "vllm"),
        ops_dir=Path("od"),
        recheck_left_out=True,
        dtypes=("float16",),
        shape_file=Path("s.yaml"),
    )
    assert measuring_from(args) == Measuring(
        mode="kernel",
        warmup_ms=12.5,
        replays=4,
        phase_timings=True,
        ttgir=False,
        aot_compile=False,
        split_rows="off",
    )
    assert scheduling_from(args, settings) == Scheduling(
        gpus=("0", "1"), gpu_share=2, per_process=3, op_timeout_s=0.0, max_retries=1
    )


def test_the_defaults_of_batch_flags_are_the_models_defaults():
    args = _args("batch", "--all", "--ops-dir", "od")
    settings = Settings.from_env({"CUDA_VISIBLE_DEVICES": ""})
    assert selection_from(args) == Selection(all_ops=True, ops_dir=Path("od"))
    assert measuring_from(args) == Measuring()
    assert scheduling_from(args, settings) == Scheduling()


@pytest.mark.parametrize("argv", [["gate", "--baseline", "b"], ["report", "r", "--baseline", "b"]])
def test_a_command_without_a_flag_keeps_the_models_default(argv):
    assert measuring_from(_args(*argv)) == Measuring()
    # no --gpus flag: the host's GPUs are never looked at
    assert scheduling_from(_args(*argv), Settings.from_env({})) == Scheduling()


def test_the_gate_reads_its_replay_speed_flags_into_the_models():
    args = _args(
        *["gate", "--baseline", "b", "--gpu-share", "3", "--precompile-jobs", "2"],
        *["--split-rows", "off", "--warmup-ms", "3", "--replays", "2"],
    )
    assert measuring_from(args) == Measuring(warmup_ms=3.0, replays=2, split_rows="off")
    assert scheduling_from(args, Settings.from_env({})) == Scheduling(
        gpu_share=3, precompile_jobs=2
    )


def test_run_reads_mode_sweep_and_budgets_as_every_command_does():
    args = _args("run", "--op", "abs", "--mode", "kernel", "--replays", "3", "--reuse-tuning-db")
    assert measuring_from(args) == Measuring(mode="kernel", replays=3, reuse_tuning_db=True)
    assert scheduling_from(args, Settings.from_env({})) == Scheduling()
    nan = _args("run", "--op", "abs", "--warmup-ms", "nan")
    with pytest.raises(ZlbenchError, match="^--warmup-ms nan: must be a finite number$"):
        measuring_from(nan)  # one line, not the model's validation error


def test_config_from_args_is_from_options_of_the_three_models(tmp_path):
    argv = ["batch", "--ops", "abs", "--ops-dir", str(tmp_path), "--gpus", "0"]
    argv += ["--warmup-ms", "7", "--gpu-share", "2", "--no-aot-compile", "--out", "o"]
    args, settings = _args(*argv), Settings.from_env({})
    config = config_from_args(args, settings)
    rebuilt = BatchConfig.from_options(
        selection_from(args),
        measuring_from(args),
        scheduling_from(args, settings),
        out_dir=Path("o"),
        flaggems_dirs={},
        progress=config.progress,
        sink=config.sink,
        argv=config.argv,
    )
    assert rebuilt == config
    assert config.extra_pytest_args == ["--zl-warmup-ms", "7", "--zl-aot-compile", "off"]
    assert (config.gpus, config.gpu_share, config.ops) == (["0"], 2, ["abs"])


def test_from_options_puts_the_callers_pytest_args_after_the_measuring_ones(tmp_path):
    config = BatchConfig.from_options(
        Selection(all_ops=True, ops_dir=tmp_path),
        Measuring(replays=3),
        Scheduling(),
        out_dir=tmp_path / "b",
        flaggems_dirs={},
        extra_pytest_args=["--zl-codegen-no-sass"],
    )
    assert config.extra_pytest_args == ["--zl-replays", "3", "--zl-codegen-no-sass"]
    assert config.ops_dir == tmp_path and config.gpus == [""]


def _cli_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("zlbench.cli."):
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(CLI.glob("*_cmd.py")), ids=lambda p: p.name)
def test_no_command_takes_its_shared_flags_from_another_command(path):
    others = {m for m in _cli_imports(path) if m.endswith("_cmd")}
    # report is the gate's offline re-judge: it takes the gate's job; history add
    # re-judges a gate dir as report does (then records it): it takes report's job
    allowed = {
        "report_cmd.py": {"zlbench.cli.gate_cmd"},
        "history_cmd.py": {"zlbench.cli.report_cmd"},
    }.get(path.name, set())
    assert others <= allowed


def _flag_help(argv: list[str], flag: str) -> str:
    parser = build_parser()
    for word in argv:  # down to the command's own parser
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = sub.choices[word]
    return next(a.help for a in parser._actions if flag in a.option_strings)


@pytest.mark.parametrize("flag", ["--base-compiler", "--thresholds"])
def test_a_flag_of_two_meanings_is_declared_once_in_the_options_module(flag):
    declared = {
        path.name
        for path in CLI.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"
        if any(isinstance(a, ast.Constant) and a.value == flag for a in node.args)
    }
    assert declared == {"options.py"}


def test_each_command_says_what_its_base_compiler_and_thresholds_mean():
    ab, gate = _flag_help(["ab"], "--base-compiler"), _flag_help(["gate"], "--base-compiler")
    shared = "the base compiler: a venv dir, interpreter or site dir; "
    assert ab.startswith(shared) and gate.startswith(shared)
    assert "side A" in ab and "--aa" in ab  # ab: side A, default an A/A
    assert "paired row by row" in gate and "default: no A/B" in gate
    compare = _flag_help(["compare"], "--thresholds")
    assert compare == "thresholds yaml (default: A's manifest when A is a baseline, else zlbench's)"
    for argv in (["gate"], ["report"]):
        assert (
            _flag_help(argv, "--thresholds") == "thresholds yaml (default: the baseline manifest's)"
        )


@pytest.mark.parametrize(
    ("flags", "selection"),
    [
        ([], Selection(ops_dir=Path("od"))),
        (["--ops", "abs", "mm"], Selection(ops=("abs", "mm"), ops_dir=Path("od"))),
        (["--ops-file", "f.txt"], Selection(ops_file=Path("f.txt"), ops_dir=Path("od"))),
    ],
)
def test_the_gate_job_embeds_the_selection_of_its_flags(flags, selection):
    from zlbench.cli.gate_cmd import job_from_args

    args = _args("gate", "--baseline", "b", *flags)
    job = job_from_args(args, Settings.from_env({}), Path("od"))
    assert job.selection == selection
    assert not any(hasattr(job, name) for name in ("ops", "ops_file", "ops_dir"))


def test_a_configs_options_are_the_models_it_was_built_from(tmp_path):
    selection = Selection(ops=("abs",), repos=("main",), ops_dir=tmp_path, dtypes=("float16",))
    measuring = Measuring(mode="kernel", ttgir=False, reuse_tuning_db=True, split_rows="off")
    scheduling = Scheduling(gpus=("0", "1"), gpu_share=2, per_process=3, op_timeout_s=0.0)
    config = BatchConfig.from_options(
        selection, measuring, scheduling, out_dir=tmp_path, flaggems_dirs={}
    )
    assert config.options() == (selection, measuring, scheduling)
    # the budgets became plugin flags: the config's options keep the models' defaults
    budgets = Measuring(warmup_ms=5.0, replays=2, phase_timings=True, aot_compile=False)
    config = BatchConfig.from_options(
        selection, budgets, scheduling, out_dir=tmp_path, flaggems_dirs={}
    )
    assert config.options()[1] == Measuring()


def test_batch_json_is_built_from_the_option_models_in_its_own_flat_format(tmp_path):
    from zlbench.models import BatchInfo

    info = BatchInfo.from_options(
        Selection(ops=("abs", "mm"), ops_file=None, repos=("main",), dtypes=("float16",),
                  shape_file=Path("s.yaml")),
        Measuring(mode="kernel", reuse_tuning_db=True),
        Scheduling(gpus=("0",), gpu_share=2, per_process=3, max_retries=1),
        replay_root="bl", restricted=True, op_timeout_s=900.0, created="T",
    )  # fmt: skip
    flat = info.model_dump(exclude_defaults=True)
    assert flat == {
        "created": "T",
        "selection": {
            "all": False,
            "ops": ["abs", "mm"],
            "ops_file": None,
            "repos": ["main"],
            "restricted": True,
        },
        "mode": "replay",
        "replay_root": "bl",
        "timing": "kernel",
        "dtypes": ["float16"],
        "shape_file": "s.yaml",
        "gpus": ["0"],
        "per_process": 3,
        "gpu_share": 2,
        "op_timeout_s": 900.0,
        "max_retries": 1,
    }  # a replay never reuses a tuning DB: reuse_tuning_db stays False


# (flag, value, the option model and its field the flag sets)
OUT_OF_RANGE = [
    ("--warmup-ms", "-1", Measuring, "warmup_ms"),
    ("--warmup-ms", "nan", Measuring, "warmup_ms"),
    ("--replays", "0", Measuring, "replays"),
    ("--gpu-share", "9", Scheduling, "gpu_share"),
    ("--gpu-share", "0", Scheduling, "gpu_share"),
    ("--per-process", "0", Scheduling, "per_process"),
    ("--max-retries", "-1", Scheduling, "max_retries"),
    ("--precompile-jobs", "-1", Scheduling, "precompile_jobs"),
    ("--op-timeout", "-5", Scheduling, "op_timeout_s"),
]


@pytest.mark.parametrize(("flag", "value", "model", "field"), OUT_OF_RANGE)
def test_a_value_out_of_range_is_refused_alike_from_argv_and_from_the_model(
    flag, value, model, field, capsys
):
    from zlbench.cli import main
    from zlbench.models.ranges import options_error

    assert main(["batch", "--ops", "abs", flag, value]) == 2
    from_argv = capsys.readouterr().err.strip().removeprefix("zlbench batch: error: ")
    number = float(value) if model is Measuring or field == "op_timeout_s" else int(value)
    with pytest.raises(ValidationError) as e:
        model(**{field: number})
    assert "\n" not in from_argv and from_argv == str(options_error(e.value))
    assert from_argv.startswith(f"{flag} {value}: must be ")


def test_the_budgets_of_a_recorded_timing_are_refused_in_the_same_words():
    from zlbench.models import Timing
    from zlbench.models.ranges import options_error

    with pytest.raises(ValidationError) as e:
        Timing(replays=0)
    assert str(options_error(e.value)) == "--replays 0: must be at least 1"


@pytest.mark.parametrize(("flag", "value", "model", "field"), OUT_OF_RANGE)
def test_the_cli_checks_an_option_models_flag_with_the_models_own_range(flag, value, model, field):
    from zlbench.cli.numbers import RULES

    annotated = model.model_fields[field].metadata  # the field's AfterValidator
    dest = flag.removeprefix("--").replace("-", "_")
    assert annotated and RULES[dest].problem(flag, float(value)) is not None
    assert RULES[dest] is _model_range(model, field)


def _model_range(model, field):
    from zlbench.models import options as option_models
    from zlbench.models import timing

    ranges = {
        "warmup_ms": timing.WARMUP_MS,
        "replays": timing.REPLAYS,
        "gpu_share": option_models.GPU_SHARE,
        "per_process": option_models.PER_PROCESS,
        "max_retries": option_models.MAX_RETRIES,
        "precompile_jobs": option_models.PRECOMPILE_JOBS,
        "op_timeout_s": option_models.OP_TIMEOUT,
    }
    return ranges[field]


def test_every_option_field_reaches_the_config_or_its_plugin_flags():
    from zlbench.runner.batch.config import OPTION_FIELDS

    mapped = {(model, name) for model, name in OPTION_FIELDS.values()}
    as_plugin_flags = {"timing_method", "warmup_ms", "replays", "phase_timings", "aot_compile"}
    for model in (Selection, Measuring, Scheduling):
        for name in model.model_fields:
            assert ((model, name) in mapped) != (model is Measuring and name in as_plugin_flags)
    assert set(OPTION_FIELDS) <= set(BatchConfig.__dataclass_fields__)

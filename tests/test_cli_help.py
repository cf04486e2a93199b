"""Every command and option of the CLI has help text, and no message or help text
names a zlbench flag that no command has (walks the real argparse parser)."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

import zlbench
from zlbench.cli import build_parser, main
from zlbench.protocol import options

PKG = Path(zlbench.__file__).parent
# Flags of other programs that zlbench passes on or names: pytest, upstream
# FlagGems' conftest, pip.
FOREIGN = {
    "--collect-only", "--color", "--continue-on-collection-errors", "--rootdir", "--level",
    "--record", "--output", "--shape_file", "--no-deps", "--target", "--dtypes", "--mode",
    # git (bisect's commit range) and nvidia-smi (the runner's GPU model)
    "--first-parent", "--is-ancestor", "--merges", "--quiet", "--reverse", "--query-gpu",
}  # fmt: skip
# flags of zlbench's own worker modules (python -m ...), not of a command
# zlbench.plugins.compiler.rebuild (--in-cache, --no-sass: the replay's builds);
# zlbench.plugins.replay.worker (--skip; --warm: the gate's first worker, started early;
# --avoid: the rows a restarted worker does not try, the caller's quarantine)
WORKER_FLAGS = {"--exec-generated", "--skip", "--in-cache", "--no-sass", "--warm", "--avoid"}


def commands(parser: argparse.ArgumentParser, path=()):
    """(command path, its parser, its help) for every command and sub-command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, helps.get(name)
                yield from commands(sub, (*path, name))


COMMANDS = list(commands(build_parser()))


def command_flags() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {f: {""} for a in build_parser()._actions for f in a.option_strings}
    for path, sub, _ in COMMANDS:
        for action in sub._actions:
            for flag in action.option_strings:
                out.setdefault(flag, set()).add(" ".join(path))
    return out


def plugin_flags() -> set[str]:
    """The --zl-* flags the plugins register: the protocol's tables (every ``*OPTIONS``
    dict), plus the literal first argument of any addoption(...) call in plugins."""
    tables = [v for k, v in vars(options).items() if k.endswith("OPTIONS") and isinstance(v, dict)]
    flags = {options.PREFIX + name for table in tables for name in table}
    for path in (PKG / "plugins").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "addoption":
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    flags.add(first.value)
    return flags


def test_the_walk_finds_every_command():
    names = {p[0] for p, _, _ in COMMANDS}
    assert {"run", "batch", "gate", "report", "merge", "baseline", "inventory"} <= names
    assert ("baseline", "refresh") in {p for p, _, _ in COMMANDS}


@pytest.mark.parametrize("path,sub,help_text", COMMANDS, ids=[" ".join(c[0]) for c in COMMANDS])
def test_every_command_and_option_has_help(path, sub, help_text):
    assert help_text, f"zlbench {' '.join(path)} has no help"
    missing = [
        a.option_strings or [a.dest]
        for a in sub._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
        and (not a.help or a.help == argparse.SUPPRESS)
    ]
    assert missing == []


def test_every_flag_zlbench_names_exists():
    known = set(command_flags()) | plugin_flags() | FOREIGN | WORKER_FLAGS
    named: dict[str, set[str]] = {}
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*[a-z0-9](?![\w-])", node.value):
                    named.setdefault(flag, set()).add(path.relative_to(PKG).as_posix())
    assert {f: sorted(w) for f, w in named.items() if f not in known} == {}


def test_gate_without_a_flaggems_checkout_names_no_flag_gate_lacks(tmp_path, capsys, monkeypatch):
    """The batch runner's "no FlagGems checkout" line reaches gate too, which has no
    --flaggems-dir: the line must only name what gate users can set."""
    from tests.support.batch_fakes import make_inventory
    from tests.support.zlsynth import brow, write_baseline

    for var in ("ZLBENCH_FLAGGEMS_DIR", "ZLBENCH_FLAGGEMS_VLLM_DIR"):
        monkeypatch.delenv(var, raising=False)
    make_inventory(tmp_path / "ops", "main", ["abs"])
    bl = write_baseline(tmp_path / "bl", {"abs": [brow("abs", "[8]", 1.0)]})
    argv = ["gate", "--baseline", str(bl), "--ops-dir", str(tmp_path / "ops")]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no FlagGems checkout" in err and "ZLBENCH_FLAGGEMS_DIR" in err
    gate_flags = {f for f, cmds in command_flags().items() if "gate" in cmds}
    assert set(re.findall(r"--[a-z][\w-]*", err)) <= gate_flags


def test_the_readme_lists_every_command():
    readme = (PKG.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Commands", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^zlbench (\w+)", section, re.M))
    assert listed == {path[0] for path, _, _ in COMMANDS}


def _readme_synopsis() -> dict[str, str]:
    """README's "## Commands" code block: command -> its synopsis (continuation lines
    joined)."""
    readme = (PKG.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Commands", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 1)[1].split("```", 1)[0]
    out: dict[str, str] = {}
    name = ""
    for line in block.splitlines():
        if m := re.match(r"zlbench (\w+)\s+(.*)", line):
            name = m.group(1)
            out[name] = m.group(2)
        else:
            out[name] += " " + line.strip()
    return out


def _flags_of(path: tuple[str, ...]) -> set[str]:
    """Every flag of a command and of its sub-commands (``baseline refresh``...)."""
    return {
        flag
        for p, sub, _ in COMMANDS
        if p[: len(path)] == path
        for action in sub._actions
        for flag in action.option_strings
    }


@pytest.mark.parametrize("name", sorted(_readme_synopsis()))
def test_every_flag_in_the_readme_synopsis_exists(name):
    synopsis = _readme_synopsis()[name]
    named = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", synopsis))
    assert named, synopsis
    assert named - _flags_of((name,)) == set(), (name, synopsis)


def test_every_flag_the_readme_names_exists():
    """Prose too: a flag the README names is some command's (or pip's / pytest's)."""
    readme = (PKG.parent / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"(?<![\w-])--[a-z][\w-]*[a-z0-9](?![\w-])", readme))
    pip, pytest_ = {"--extra-index-url"}, {"--dist", "--durations"}
    assert named - set(command_flags()) - FOREIGN - pip - pytest_ == set()


def test_readme_names_flaggems_dir_only_for_commands_that_take_it():
    readme = (PKG.parent / "README.md").read_text(encoding="utf-8")
    line = next(p for p in readme.split("\n\n") if "The FlagGems checkout" in p)
    cmds = set(re.findall(r"`(\w+)`", line.split("--flaggems-dir")[0].rsplit(";", 1)[1]))
    assert cmds and all("--flaggems-dir" in _flags_of((c,)) for c in cmds), line
    assert "--flaggems-dir" not in _flags_of(("gate",))


def test_no_arguments_lists_the_commands(capsys):
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    for path in (p for p, _, _ in COMMANDS if len(p) == 1):
        assert re.search(rf"^\s+{path[0]}\b", err, re.M), path
    assert "usage: zlbench" in err


@pytest.mark.proc
@pytest.mark.parametrize("command", ["gate", "report", "batch"])
def test_help_builds_no_verdict_or_ab_model(command):
    """`zlbench COMMAND --help` imports its command's module alone and no model it does
    not need: not the verdict's, the A/B's or the workflow (issue 50 item 7; the
    measured seconds are in docs/contributing.md, never timed here)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from zlbench.cli import main\n"
        "try:\n"
        f"    main([{command!r}, '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('zlbench')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = ast.literal_eval(out.strip().splitlines()[-1])
    assert "zlbench.cli.gate_cmd" in loaded or command != "gate"
    for heavy in ("zlbench.models.verdict", "zlbench.models.ab", "zlbench.workflow.gate"):
        assert heavy not in loaded, (command, heavy)

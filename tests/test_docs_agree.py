"""The docs say what the code does (issue 50 item 6): the default baseline is the
workflow's, README's synopses name every option of `--help`, README and
docs/contributing.md state the same measured test time, examples/README.md names every
shipped example, and the default output dirs are git-ignored."""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path

import pytest
import yaml

from zlbench.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "flagtree-gate.yml"


def _text(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def workflow_default_baseline() -> str:
    """The baseline the gate workflow uses when none is given: every input default and
    every ``|| 'baselines/vN'`` fallback must agree."""
    text = _text(".github/workflows/flagtree-gate.yml")
    data = yaml.safe_load(text)
    on = data.get("on", data.get(True))
    defaults = {
        trigger["inputs"]["baseline"]["default"]
        for trigger in on.values()
        if isinstance(trigger, dict) and "baseline" in trigger.get("inputs", {})
    }
    fallbacks = set(re.findall(r"\|\| '(baselines/[^']+)'", text))
    found = defaults | fallbacks
    assert len(found) == 1, found
    return found.pop()


def test_the_docs_name_the_workflows_default_baseline():
    default = workflow_default_baseline()
    name = default.removeprefix("baselines/")
    ci = re.findall(r"\((v\d+), the default\)", _text("docs/ci.md"))
    assert ci and set(ci) == {name}, ci
    readme = re.findall(
        r"\*\*`(baselines/v\d+)`\*\*, the CI workflow's default", _text("README.md")
    )
    assert readme == [default]


def _commands_section() -> str:
    return _text("README.md").split("## Commands", 1)[1].split("\n## ", 1)[0]


def _options(command: str) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    cmd = sub.choices[command]
    return {o for a in cmd._actions for o in a.option_strings if o.startswith("--")} - {"--help"}


@pytest.mark.parametrize("command", ["gate", "report"])
def test_readme_names_every_option_of_the_help(command):
    """Each option of `zlbench COMMAND --help` is in README's synopsis of the command,
    or in the list under the synopses."""
    section = _commands_section()
    lines = section.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"zlbench {command} "))
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith(("zlbench ", "```"))),
        len(lines),
    )
    synopsis = "\n".join(lines[start:end])
    listed = section.split("```", 2)[-1]
    missing = [
        o
        for o in sorted(_options(command))
        if not re.search(rf"{re.escape(o)}(?![\w-])", synopsis)
        and not re.search(rf"`{re.escape(o)}(?![\w-])", listed)
    ]
    assert missing == [], f"README's `zlbench {command}` synopsis leaves out {missing}"


MEASURED = re.compile(r"\*\*(\d+)–(\d+) s\*\* \((\d{4}-\d\d-\d\d)")


def test_readme_and_contributing_state_the_same_measured_test_time():
    readme = MEASURED.findall(_text("README.md"))
    contributing = MEASURED.findall(_text("docs/contributing.md"))
    assert len(readme) == 1 and readme == contributing[:1], (readme, contributing)
    lo, hi, _ = readme[0]
    setup = _text("README.md").split("## Set up on a fresh machine", 1)[1].split("\n## ")[0]
    # any "N–M minutes" said of the tests is the measured seconds, rounded
    for a, b in re.findall(r"about (\d+)–(\d+) minutes", setup):
        assert int(a) <= int(lo) / 60 + 1 and int(b) >= int(hi) / 60 - 1, (a, b, lo, hi)


def test_readme_notes_the_extra_index_on_a_mirror():
    setup = _text("README.md").split("## Set up on a fresh machine", 1)[1].split("\n## ")[0]
    assert "PIP_RETRIES=1" in setup and "mirror" in setup


def test_examples_readme_names_every_shipped_example():
    text = _text("examples/README.md")
    names = sorted(
        p.name.removesuffix(".lock")
        for p in (ROOT / "examples").iterdir()
        if p.is_dir() or p.name.endswith(".lock")
    )
    assert names, "no shipped example"
    missing = [n for n in names if f"`{n}/`" not in text]
    assert missing == [], f"examples/README.md does not describe {missing}"


def test_the_default_out_dirs_are_git_ignored():
    """Every `--out` default of a command that writes (zlbench-gate, zlbench-report...)
    is git-ignored, so a run in a checkout leaves `git status` clean."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    defaults = set()
    for cmd in sub.choices.values():
        for a in cmd._actions:
            if "--out" in a.option_strings and isinstance(a.default, str) and a.default:
                top = a.default.split("/")[0]
                if not (ROOT / top).is_dir():  # ops/: a shipped dir that inventory rewrites
                    defaults.add(top)
    patterns = [
        ln.strip().strip("/")
        for ln in _text(".gitignore").splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    # a used --out is never reused: the next run writes <out>-2 (runner.claim)
    for out in sorted(defaults):
        for name in (out, f"{out}-2"):
            assert any(fnmatch(name, p) for p in patterns), f"{name} is not git-ignored"

"""Issue references in artifact text (issue 26: 19): ``#4242``, ``org/repo#4242`` and
``GH-4242`` in an error, a note, a failure signature, a marker or the environment
reach report.md and comment.md broken by an invisible word joiner, so GitHub neither
links them nor cross-references the issue (a backslash escape alone is consumed
before GitHub autolinks the text)."""

from __future__ import annotations

import re

import pytest

from tests.support.mdcheck import outside_fences, strip_code_spans
from tests.support.zlsynth import (
    ENV,
    brow,
    crow,
    gate,
    replay_marker,
    run_result,
    write_baseline,
    write_results,
)
from zlbench.models import OpStatus, RunStatus
from zlbench.report.escape import WJ, md_text, neutralize

S = "[1024]"
REFS = "see #4242, org/repo#4243 and GH-4244 (fixes #1)"
# what GitHub links: #N or GH-N not inside a word, owner/repo#N
LINKED = re.compile(r"(?i)(?<![\w-])(#|gh-)\d|[\w.-]+/[\w.-]+#\d")


def rendered(md: str) -> str:
    """The text GitHub autolinks: outside fences and code spans, escapes consumed."""
    return "\n".join(re.sub(r"\\(.)", r"\1", strip_code_spans(line)) for line in outside_fences(md))


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("refs")
    bl = write_baseline(tmp / "bl", {"add": [brow("add", S, 1.0)], "mul": [brow("mul", S, 1.0)]})
    env = ENV.model_copy(update={"torch": f"2.11.0 {REFS}", "hostname": REFS})
    marker = replay_marker("bfloat16", S, kernel=REFS, reason="key_missing")
    results = [
        run_result("add", [crow("add", S, 0.5)], markers=[marker], env=env),
        run_result("mul", [], status=RunStatus.FAIL, error=REFS, failing_shape=REFS, env=env),
    ]
    mul = OpStatus(
        repo="main", op="mul", run_name="mul", status=RunStatus.FAIL, run_dir="main/mul",
        note=REFS, signature=REFS,
    )  # fmt: skip
    rdir = write_results(tmp / "res", results, [mul], log=f"Traceback\nRuntimeError: {REFS}\n")
    rc, out = gate(tmp, bl, rdir, "--confirm", "0")
    assert rc == 1
    return out


@pytest.mark.parametrize("name", ["report.md", "comment.md"])
def test_no_issue_reference_reaches_the_markdown(out, name):
    md = (out / name).read_text(encoding="utf-8")
    assert "4242" in md and "4243" in md and "4244" in md  # the text is shown ...
    text = rendered(md)
    assert not LINKED.search(text), LINKED.search(text)  # ... but links nothing


def test_the_one_escaping_breaks_every_reference_and_reads_the_same():
    for s in ("#4242", "org/repo#4242", "GH-4242", "gh-1"):
        assert not LINKED.search(neutralize(s)) and neutralize(s).replace(WJ, "") == s
        assert not LINKED.search(re.sub(r"\\(.)", r"\1", md_text(s)))
    assert neutralize("C# 4, a#b, xgh-4") == "C# 4, a#b, xgh-4"  # no number: no reference

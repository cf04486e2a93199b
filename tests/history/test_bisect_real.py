"""zlbench bisect, phase 1 with real compilers: the benchpkg kernels recorded for sm_90
on this CPU, rebuilt by patched triton copies (tests.support.codegen), one per commit
of a 6-commit history whose commit 4 removes the coalescing pass. The CLI builds the
missing compilers with --build-cmd and finds commit 4, the add kernel and its TTGIR
diff, in at most log2(6) + 1 builds. About 40 s on 2 cores."""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

import pytest

from tests.support.cli import zlbench_cli
from tests.support.codegen import BENCHPKG_SRC, record_benchpkg, write_op_codegen
from zlbench.models import load_json_model
from zlbench.models.bisect import BisectState

pytestmark = [pytest.mark.proc, pytest.mark.slow]

N, STEP = 6, 4
ROW = "main/add bfloat16 [64, 128]"
BUILD = """
import sys
from pathlib import Path
from benchmarks.ab_tools import EXTRA_PATCHES, noop_patch
from tests.support.codegen import patched_triton
commit, out, log = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
with log.open("a") as f:
    f.write(commit + "\\n")
i = int(commit[1:])
if i == 2:
    sys.exit(125)  # this commit cannot be built
patched_triton(out, EXTRA_PATCHES["no_coalesce"] if i >= {step} else noop_patch())
"""


def test_the_cli_finds_the_commit_that_removed_the_coalescing_pass(tmp_path):
    rec = tmp_path / "rec"
    record_benchpkg(rec)
    baseline = tmp_path / "baseline"
    write_op_codegen(rec, baseline, {"add": "add_kernel", "softmax": "softmax_kernel"}, "[64, 128]")
    commits = [f"c{i}" for i in range(N)]
    (tmp_path / "commits.txt").write_text("\n".join(commits) + "\n")
    script = tmp_path / "build.py"
    script.write_text(BUILD.format(step=STEP))
    log = tmp_path / "built.log"
    build = f"{shlex.quote(sys.executable)} {script} {{commit}} {{out}} {log}"
    repo = Path(__file__).resolve().parents[2]
    env = {
        "PYTHONPATH": f"{repo}:{BENCHPKG_SRC}:{rec / 'helpers'}",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    # the rebuild workers import the benchpkg sources: ZLBENCH_FLAGGEMS_DIR's src
    env["ZLBENCH_FLAGGEMS_DIR"] = str(BENCHPKG_SRC.parent)
    out = tmp_path / "out"
    argv = ["bisect", "c0", f"c{N - 1}", "--row", ROW,
            "--baseline", str(baseline), "--commits", str(tmp_path / "commits.txt"),
            "--compilers", str(tmp_path / "compilers"), "--build-cmd", build,
            "--jobs", "2", "--out", str(out)]  # fmt: skip
    p = zlbench_cli(*argv, env=env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    state = load_json_model(out / "bisect.json", BisectState)
    a = state.answer
    assert (a.commit, a.parent) == (f"c{STEP}", f"c{STEP - 1}")
    assert [(k.name, k.first_stage) for k in a.kernels] == [("add_kernel", "ttgir")]
    assert state.builds <= math.ceil(math.log2(N)) + 1
    assert state.probes.get("c2") is None or state.probes["c2"].status == "skip"
    diff = (out / a.kernels[0].diff_file).read_text()
    assert diff.startswith("--- c3/") and "#blocked" in diff
    assert "add_kernel" in (out / "report.md").read_text()
    built = log.read_text().split()
    assert sorted(built) == sorted(state.probes)  # only the commits probed were built
    # a re-run resumes: nothing rebuilt, no compiler built, the same answer
    again = zlbench_cli(*argv, env=env, timeout=300)
    assert again.returncode == 0 and log.read_text().split() == built, again.stderr
    assert json.loads((out / "bisect.json").read_text())["answer"]["commit"] == f"c{STEP}"

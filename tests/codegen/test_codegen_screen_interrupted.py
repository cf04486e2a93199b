"""An interrupted codegen screen leaves what it has found (issue 48, item 1): the
kernels classified before the stop in ``codegen.partial.json``/``.md`` and the
``INTERRUPTED`` marker, never ``codegen.json``; a later whole screen removes them. The
screen shows progress to its end (the classification and the diffs after the rebuild).
And a screen whose PR side was rebuilt by shard jobs (``--rebuilt``, the CI's
``screen_shards`` > 1) is still decided against the base compiler. The stand-in rebuild
worker (tests/support/fakeworker.py) on both sides, as in test_codegen_base_screen."""

from __future__ import annotations

import json

import pytest
from test_codegen_base_screen import BASE, BASE_FP, PR, base_side, by_name, plans  # noqa: F401

from tests.support.cgsynth import record, request, stage_texts, use, write_run
from zlbench.codegen.screen import (
    PARTIAL_JSON,
    PARTIAL_MD,
    RebuiltInput,
    ScreenOptions,
    rebuild_shard,
    run_screen,
)
from zlbench.codegen.shards import manifest_sha256
from zlbench.models.codegen_screen import CodegenClass, CodegenScreen, RebuiltShard

pytestmark = pytest.mark.proc  # the rebuild workers are child processes

NAMES = [f"k{i}_kernel" for i in range(6)]
PR_PLAN = {n: ({"texts": {"ttgir": f"pr {n}\n"}} if n in ("k1_kernel", "k4_kernel") else {})
           for n in NAMES}  # fmt: skip


@pytest.fixture
def many(tmp_path):
    """Six ops, one kernel each: three chunks of two with jobs=1 (so a stop after the
    first chunk leaves two kernels found)."""
    root = tmp_path / "bl"
    for n in NAMES:
        op = n.split("_")[0]
        req = request(n)
        write_run(root, op, [(record(req, stage_texts(op), [use(op)]), stage_texts(op))])
    (root / "manifest.yaml").write_text("recorded\n")
    return root


def _plan(tmp_path, monkeypatch, plan: dict) -> None:
    """What the stand-in worker compiles: a kernel's TTGIR changed where asked."""
    from test_codegen_base_screen import _texts

    full = {}
    for n, how in plan.items():
        tag = n.split("_")[0]
        full[n] = {"texts": _texts(tag, **how["texts"])} if how else {"texts": _texts(tag)}
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(full))
    monkeypatch.setenv("FAKE_CODEGEN_PLAN", str(f))


class StopAt:
    """``say`` that raises KeyboardInterrupt (a Ctrl-C) on the first line starting with
    ``prefix``, as the signal would arrive while the screen prints."""

    def __init__(self, prefix: str):
        self.prefix, self.lines = prefix, []

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        if line.startswith(self.prefix):
            raise KeyboardInterrupt


def test_an_interrupted_screen_leaves_what_it_found_and_no_plan(
    many,
    plans,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    _plan(tmp_path, monkeypatch, PR_PLAN)
    out = tmp_path / "out"
    opts = ScreenOptions(baseline=many, out=out, jobs=1, chunks_per_job=3)
    stop = StopAt("codegen: chunk 1/3")
    with pytest.raises(KeyboardInterrupt):
        run_screen(opts, stop)
    assert not (out / "codegen.json").exists() and not (out / "codegen.md").exists()
    assert (out / "INTERRUPTED").is_file()
    part = CodegenScreen.model_validate_json((out / PARTIAL_JSON).read_text())
    assert part.partial_of == 6 and len(part.kernels) == 2  # the first chunk's
    md = (out / PARTIAL_MD).read_text()
    assert md.startswith("**Interrupted**: interrupted: 2 of 6 kernel(s) screened")
    assert "Not a plan" in md
    assert any("codegen: interrupted: 2 of 6" in ln for ln in stop.lines)
    # a whole screen in the same dir takes the stop's leftovers away
    lines: list[str] = []
    whole = run_screen(opts, lines.append)
    assert len(whole.kernels) == 6 and whole.partial_of == 0
    assert not any((out / n).exists() for n in ("INTERRUPTED", PARTIAL_JSON, PARTIAL_MD))
    assert (out / "codegen.json").is_file()
    # progress to the end: after the last chunk, the classification, the diffs, done
    tail = lines[lines.index(next(ln for ln in lines if "chunk 3/3" in ln)) + 1 :]
    assert tail[0] == "codegen: 6 kernel(s) classified; writing 2 diff(s)"
    assert tail[1].startswith("codegen: 2 diff(s) written in ")
    assert tail[-1].startswith("codegen: screen done in ")


def test_a_stop_in_the_base_rebuild_says_where_the_base_stopped(
    many,
    plans,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    _plan(tmp_path, monkeypatch, PR_PLAN)
    base_plan = tmp_path / "base_plan.json"
    base_plan.write_text((tmp_path / "plan.json").read_text())
    out = tmp_path / "out"
    opts = ScreenOptions(baseline=many, out=out, jobs=1, chunks_per_job=3,
                         base=base_side(base_plan, None))  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        run_screen(opts, StopAt("codegen: base chunk 2/3"))
    part = CodegenScreen.model_validate_json((out / PARTIAL_JSON).read_text())
    assert part.kernels == [] and part.partial_of == 6
    assert "the base compiler's rebuild stopped at 4 of 6" in (out / PARTIAL_MD).read_text()
    assert (out / "INTERRUPTED").is_file() and not (out / "codegen.json").exists()


def test_a_pr_side_rebuilt_by_shard_jobs_is_decided_against_the_base(
    tmp_path,
    plans,  # noqa: F811
    monkeypatch,
):
    """screen_shards > 1 with a base: the PR's kernels come from two `codegen --shard`
    jobs, the base side is rebuilt here, and the base decides (add_kernel differs from
    the baseline's compiler only, so it is identical)."""
    from test_codegen_base_screen import ADD, MUL, SUM

    root = tmp_path / "bl"
    for op, req in (("add", ADD), ("mul", MUL), ("sum", SUM)):
        tag = req.kernel.name.split("_")[0]
        write_run(root, op, [(record(req, stage_texts(tag), [use(op)]), stage_texts(tag))])
    (root / "manifest.yaml").write_text("recorded\n")
    base_plan = plans(PR, BASE)
    sha, fp = manifest_sha256(root), "flagtree 3.6.0+pr sha256:0123"
    shards = []
    for k in (1, 2):
        d = tmp_path / f"shard{k}"
        stamp = RebuiltShard(baseline_sha256=sha, compiler=fp, shard=(k, 2))
        rebuild_shard(ScreenOptions(baseline=root, out=d, jobs=1), (k, 2), stamp)
        shards.append(d)
    opts = ScreenOptions(
        baseline=root,
        out=tmp_path / "out",
        jobs=2,
        base=base_side(base_plan, None),
        rebuilt=RebuiltInput(tuple(shards), sha, fp),
    )
    lines: list[str] = []
    s = run_screen(opts, lines.append)
    k = by_name(s)
    assert s.decided_by == "base" and s.base_compiler == BASE_FP
    assert k["add_kernel"].status is CodegenClass.IDENTICAL
    assert k["add_kernel"].vs_baseline is CodegenClass.TTGIR
    assert k["mul_kernel"].status is CodegenClass.TTGIR
    assert k["sum_kernel"].status is CodegenClass.FAILED
    assert any("rebuilt by 2 shard job(s)" in ln for ln in lines)
    assert not any(ln.startswith("codegen: chunk") for ln in lines)  # the PR not rebuilt

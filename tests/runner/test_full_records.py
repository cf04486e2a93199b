"""benchmarks/full_records.py: the record pass's per-call records merged, packed for git
with the texts decompressed, and unpacked back to the device's layout."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.support.trees import shipped

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def fr():
    spec = importlib.util.spec_from_file_location("full_records", BENCH / "full_records.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _text(body: str) -> tuple[str, bytes]:
    data = body.encode()
    return hashlib.sha256(data).hexdigest(), data


def _call(path: Path, ops: dict[str, str]) -> Path:
    """A device call's records.tgz: per op an index, a record and one gzip'd text."""
    with tarfile.open(path, "w:gz") as tar:
        for op, body in ops.items():
            sha, data = _text(body)
            files = {
                f"main/{op}/codegen/index.json": f'{{"op": "{op}", "blob": "blobs/{sha}.gz"}}',
                f"main/{op}/autotune_records/{op}.json": f'{{"op": "{op}"}}',
            }
            for name, text in files.items():
                _add(tar, name, text.encode())
            _add(tar, f"main/{op}/codegen/blobs/{sha}.gz", gzip.compress(data))
    return path


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_merge_pack_unpack_round_trip_a_later_call_replacing_an_op(fr, tmp_path):
    one = _call(tmp_path / "1.tgz", {"abs": "tt.func @abs_v1", "cos": "tt.func @cos"})
    two = _call(tmp_path / "2.tgz", {"abs": "tt.func @abs_v2"})
    merged = tmp_path / "merged"
    assert fr.merge(merged, [one, two]) == ["main/abs", "main/cos"]
    blobs = sorted(p.name for p in (merged / "main/abs/codegen/blobs").iterdir())
    assert blobs == [_text("tt.func @abs_v2")[0] + ".gz"]  # call 2's abs, whole

    packed = tmp_path / "records.tar.xz"
    assert fr.pack(merged, packed) == (2, 2)
    with tarfile.open(packed, "r:xz") as tar:
        names = tar.getnames()
        sha = _text("tt.func @cos")[0]
        assert tar.extractfile(f"main/cos/codegen/blobs/{sha}").read() == b"tt.func @cos"
    assert not any(n.endswith(".gz") for n in names)  # stored plain, for xz
    assert not packed.with_name("records.tar.xz.tmp").exists()

    back = tmp_path / "back"
    assert fr.unpack([packed], back) == (2, 2)
    for path in merged.rglob("*"):
        if path.is_file():
            got = (back / path.relative_to(merged)).read_bytes()
            if path.suffix == ".gz":
                assert gzip.decompress(got) == gzip.decompress(path.read_bytes())
            else:
                assert got == path.read_bytes()


def test_unpack_refuses_a_text_that_does_not_match_its_name(fr, tmp_path):
    bad = tmp_path / "bad.tar.xz"
    with tarfile.open(bad, "w:xz") as tar:
        _add(tar, "main/abs/codegen/blobs/" + "0" * 64, b"tt.func @abs")
    with pytest.raises(SystemExit, match="does not match its sha256"):
        fr.unpack([bad], tmp_path / "out")


def test_merge_refuses_a_member_outside_the_dir(fr, tmp_path):
    evil = tmp_path / "evil.tgz"
    with tarfile.open(evil, "w:gz") as tar:
        _add(tar, "../outside/x.json", b"{}")
    with pytest.raises(SystemExit, match="not a plain file inside"):
        fr.merge(tmp_path / "m", [evil])
    assert not (tmp_path / "outside").exists()


def test_unrecorded_unmarks_the_pass_ops_no_pack_holds(fr, tmp_path):
    merged = tmp_path / "merged"
    fr.merge(merged, [_call(tmp_path / "1.tgz", {"abs": "tt.func @abs"})])
    (tmp_path / "packs").mkdir()
    fr.pack(merged, tmp_path / "packs" / "a.tar.xz")
    full = tmp_path / "full"
    for op, status in [("abs", "PASS"), ("cos", "PASS"), ("sin", "SKIP")]:
        (full / "main" / op).mkdir(parents=True)
        (full / "main" / op / ".complete").write_text(status + "\n")
        (full / "main" / op / "run.log").write_text("ZLBENCH_OP_END\n")
    assert fr.forget_unrecorded(full, sorted((tmp_path / "packs").glob("*.tar.xz"))) == ["main/cos"]
    left = sorted(p.parent.name for p in full.glob("main/*/.complete"))
    assert left == ["abs", "sin"]  # recorded, and a SKIP: nothing to record
    assert (full / "main" / "cos" / "run.log").is_file()  # resume runs it after new ops


def test_records_packs_the_complete_ops_records_with_ttir_and_ttgir_texts_only(fr, tmp_path):
    # the device side: v3's addmm as a complete op of the record pass; a restored op
    # (no records: they came back with an earlier call) and an op in flight are skipped
    from zlbench.models import CodegenIndex
    from zlbench.runner.compact import KEPT_STAGES

    src = shipped("baselines/v3") / "main" / "addmm__at__test_addmm.py"
    full = tmp_path / "full"
    done = full / "main" / "addmm"
    shutil.copytree(src, done)
    (done / ".complete").write_text("PASS\n")
    (full / "main" / "restored").mkdir()
    (full / "main" / "restored" / ".complete").write_text("PASS\n")
    shutil.copytree(src, full / "main" / "in_flight")  # no .complete
    ops, texts = fr.records(full, tmp_path / "records.tgz")
    recorded = CodegenIndex.model_validate_json((src / "codegen" / "index.json").read_text())
    kept = {
        d.blob for r in recorded.records for s, d in r.result.stages.items() if s in KEPT_STAGES
    }
    assert (ops, texts) == (1, sum(1 for r in recorded.records for s in r.result.stages
                                   if s in KEPT_STAGES))  # fmt: skip
    with tarfile.open(tmp_path / "records.tgz") as tar:
        names = set(tar.getnames())
        index = CodegenIndex.model_validate_json(
            tar.extractfile("main/addmm/codegen/index.json").read()
        )
    assert {n.split("codegen/")[1] for n in names if "/blobs/" in n} == kept
    assert any("autotune_records/" in n for n in names)
    assert not any(n.startswith(("main/restored", "main/in_flight")) for n in names)
    for rec, old in zip(index.records, recorded.records, strict=True):
        for stage, d in rec.result.stages.items():
            assert d.sha256 == old.result.stages[stage].sha256  # every digest kept
            assert bool(d.blob) is (stage in KEPT_STAGES)


def _kernel(module: str, path: str, generated: bool, globals_: dict | None = None) -> dict:
    return {
        "request": {
            "kernel": {
                "module": module,
                "qualname": "k",
                "path": path,
                "generated_source": "def k(): ...\n" if generated else None,
                "generated_globals": globals_ or {},
            }
        }
    }


@pytest.mark.parametrize(
    ("kernel", "gap"),
    [
        (_kernel("flag_gems.ops.softmax", "flag_gems/ops/softmax.py", False), None),
        (_kernel("flag_gems.ops.softmax", "softmax.py", True), "kept as generated"),
        (_kernel("_gen_module_ab_rank_1", "pointwise_dynamic_ab_k.py", True), "without its"),
        (_kernel("_gen_module_ab_rank_1", "pointwise_dynamic_ab_k.py", True, {"f": "m:f"}), None),
        (_kernel("_gen_module_rank_2", "scatter_rank_2.py", True), None),  # injects none
        (_kernel("zl.kernels", "gen_1234.py", True), None),  # generated by other means
    ],
)
def test_recording_gap_of_the_recorder_before_its_fix(fr, kernel, gap):
    got = fr.recording_gap({"records": [_kernel("hopper.ops.fill", "fill.py", False), kernel]})
    assert (got is None) if gap is None else (gap in got)


def _pack_with(fr, tmp_path: Path, name: str, ops: dict[str, dict]) -> Path:
    """A records pack of ``ops`` (run_name -> one kernel record of its index)."""
    src = tmp_path / f"src-{name}"
    for op, kernel in ops.items():
        cg = src / "main" / op / "codegen"
        cg.mkdir(parents=True)
        (cg / "index.json").write_text(json.dumps({"records": [kernel]}))
    (tmp_path / "packs").mkdir(exist_ok=True)
    fr.pack(src, tmp_path / "packs" / name)
    return tmp_path / "packs"


def test_unrecorded_unmarks_ops_with_a_gap_until_a_later_pack_records_them_whole(fr, tmp_path):
    ok = _kernel("flag_gems.ops.abs", "flag_gems/ops/abs.py", False)
    gap = _kernel("flag_gems.ops.cos", "cos.py", True)
    packs = _pack_with(fr, tmp_path, "2026-12-01-a.tar.xz", {"abs": ok, "cos": gap})
    full = tmp_path / "full"

    def mark() -> None:
        for op in ("abs", "cos"):
            (full / "main" / op).mkdir(parents=True, exist_ok=True)
            (full / "main" / op / ".complete").write_text("PASS\n")

    mark()
    assert fr.forget_unrecorded(full, sorted(packs.glob("*.tar.xz"))) == ["main/cos"]
    assert fr.main(["gaps", str(packs)]) == 0

    cos_ok = _kernel("flag_gems.ops.cos", "flag_gems/ops/cos.py", False)
    _pack_with(fr, tmp_path, "2026-12-01-b.tar.xz", {"cos": cos_ok})
    mark()
    assert fr.forget_unrecorded(full, sorted(packs.glob("*.tar.xz"))) == []


def test_unrecorded_refuses_while_a_sent_op_is_in_no_pack(fr, tmp_path):
    # a call recorded "cos" (its records are here), the pack stage noted it as sent;
    # the next call restores full.tgz, but that call's records.tgz was not packed yet
    full = tmp_path / "full"
    for op in ("abs", "cos"):
        (full / "main" / op).mkdir(parents=True)
        (full / "main" / op / ".complete").write_text("PASS\n")
    (full / "main" / "cos" / "autotune_records").mkdir()
    assert fr.note_sent(full) == ["main/cos"]
    shutil.rmtree(full / "main" / "cos" / "autotune_records")  # restored elsewhere
    (full / "main" / "abs" / "codegen").mkdir()
    (full / "main" / "abs" / "codegen" / "index.json").write_text("{}")
    assert fr.note_sent(full) == ["main/abs", "main/cos"]  # the earlier call's kept

    ok = _kernel("flag_gems.ops.abs", "flag_gems/ops/abs.py", False)
    packs = _pack_with(fr, tmp_path, "2026-12-01-a.tar.xz", {"abs": ok})
    with pytest.raises(SystemExit, match=r"1 op\(s\) .* in no pack \(e.g. main/cos\)"):
        fr.forget_unrecorded(full, sorted(packs.glob("*.tar.xz")))
    assert (full / "main" / "cos" / ".complete").is_file()  # nothing unmarked

    cos = _kernel("flag_gems.ops.cos", "flag_gems/ops/cos.py", False)
    _pack_with(fr, tmp_path, "2026-12-01-b.tar.xz", {"cos": cos})
    assert fr.forget_unrecorded(full, sorted(packs.glob("*.tar.xz"))) == []


def test_the_script_packs_the_sent_list_and_stops_at_a_refused_unrecorded(fr, tmp_path):
    full, out = tmp_path / "full", tmp_path / "out"
    out.mkdir()
    run = full / "main" / "cos"
    (run / "autotune_records").mkdir(parents=True)
    (run / ".complete").write_text("PASS\n")
    (run / "run.log").write_text("ZLBENCH_OP_END run_name=cos status=PASS\n")
    (tmp_path / "packs").mkdir()
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "FULL": str(full)}
    script = str(BENCH / "gpu_full_screen.sh")
    done = subprocess.run(
        ["bash", script, "pack", "unrecorded", str(tmp_path / "packs"), "records"],
        env={**env, "OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    with tarfile.open(out / "full.tgz") as tar:
        assert tar.extractfile("records_sent.txt").read() == b"main/cos\n"
        assert "main/cos/.complete" in tar.getnames()
    assert "in no pack (e.g. main/cos)" in done.stderr
    assert "stage records" not in done.stdout  # no later stage ran
    assert (run / ".complete").is_file()


def test_retry_takes_failed_ops_out_of_the_statuses_keep_failed_keeps(fr, tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    text = "repo,op,run_name,status\nmain,mm,mm_out,TIMEOUT\nmain,abs,abs,PASS\nmain,x,x,FAIL\n"
    (full / "ops_status.csv").write_text(text)
    with pytest.raises(SystemExit, match="retry: abs: PASS, not one of FAIL, TIMEOUT, CRASH"):
        fr.retry(full, ["mm_out", "abs"])
    with pytest.raises(SystemExit, match="retry: nope: not in ops_status.csv"):
        fr.retry(full, ["nope"])
    assert (full / "ops_status.csv").read_text() == text  # refused whole
    assert fr.retry(full, ["mm_out", "x"]) == ["mm_out", "x"]
    assert (full / "ops_status.csv").read_text() == "repo,op,run_name,status\nmain,abs,abs,PASS\n"


def test_a_retried_timeout_runs_again_after_the_ops_not_started(fr, tmp_path):
    # the batch's own resume decision over the file retry rewrote
    from test_batch_collaborators import config, sel, status

    from zlbench.models import RunStatus
    from zlbench.protocol.layout import RUN_LOG
    from zlbench.runner.batch.resume import Resume
    from zlbench.runner.batch.status import write_ops_status

    a, b, c = (sel(n) for n in "abc")
    (tmp_path / "main" / "b").mkdir(parents=True)
    (tmp_path / "main" / "b" / RUN_LOG).write_text("ZLBENCH_OP_BEGIN\n")
    write_ops_status(tmp_path, [status(a, RunStatus.FAIL), status(b, RunStatus.TIMEOUT)])
    cfg = config(tmp_path, resume=True, keep_failed=True)

    def todo() -> list[str]:
        return [
            t.sel.run_name
            for t in Resume(cfg, tmp_path, {}).tracks({"0": [a, b, c]}, {"0": "0"})["0"]
        ]

    assert todo() == ["c"]  # both kept as they ended
    fr.retry(tmp_path, ["b"])
    assert todo() == ["c", "b"]  # b again, after the op not started


@pytest.mark.parametrize("recheck", [None, "1"])
def test_the_run_stage_rechecks_the_dismissed_ops_only_when_asked(tmp_path, recheck):
    """RECHECK=1: the resumed pass also runs the dismissed and unconditionally skipped
    ops (--recheck-dismissed); unset, the same batch command as before."""
    full = tmp_path / "full"
    full.mkdir()
    (full / "ops_status.csv").write_text("repo,op,run_name,status\n")
    env = {"FULL": str(full), **({"RECHECK": recheck} if recheck else {})}
    done = _script(tmp_path, "run", "5", **env)
    assert done.returncode == 0 and "rc=0" in done.stdout, done.stdout + done.stderr
    args = (tmp_path / "argv.txt").read_text().split()
    assert args[:4] == ["-m", "zlbench", "batch", "--all"]
    assert {"--resume", "--keep-failed"} <= set(args)
    assert ("--recheck-dismissed" in args) == bool(recheck)


def test_the_run_stage_runs_the_ops_named_in_ops_instead_of_all(tmp_path):
    """OPS="a b@t.py": a pass of those ops only (the dismiss list's re-check apart from
    the whole pass), each spec one argument; unset, --all."""
    full = tmp_path / "full"
    env = {"FULL": str(full), "NEW_PASS": "1", "RECHECK": "1"}
    done = _script(tmp_path, "run", "5", OPS="hstack mul@test_blas_perf_parallel.py", **env)
    assert done.returncode == 0 and "rc=0" in done.stdout, done.stdout + done.stderr
    args = (tmp_path / "argv.txt").read_text().split()
    assert args[3:6] == ["--ops", "hstack", "mul@test_blas_perf_parallel.py"]
    assert "--all" not in args and "--recheck-dismissed" in args


@pytest.mark.parametrize(
    "rel",
    [
        "h200-full-screen",
        "h200-full-screen/recheck-2026-12-03",
        "h200-full-screen/shapefix-2026-12-03/multi",
    ],
)
def test_a_shipped_ops_status_csv_is_the_one_inside_its_full_tgz(rel):
    """examples/ ships each pass's ops_status.csv beside its full.tgz, to read as is: a
    copy of the tarball's, which must not drift from it when the pass is updated."""
    d = BENCH.parent / "examples" / rel
    with tarfile.open(d / "full.tgz") as tar:
        member = tar.extractfile("ops_status.csv")
        assert member is not None
        assert member.read() == (d / "ops_status.csv").read_bytes()


def _script(tmp_path, *stages, **env):
    """gpu_full_screen.sh STAGES with a python3 that records its argv instead of running."""
    shim = tmp_path / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "python3").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "argv.txt"}\n')
    (shim / "python3").chmod(0o755)
    return subprocess.run(
        ["bash", str(BENCH / "gpu_full_screen.sh"), *stages],
        env={"PATH": f"{shim}:/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _pass_tgz(path: Path, *final: str) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        rows = "".join(f"main,{op},{op},PASS\n" for op in final)
        _add(tar, "ops_status.csv", f"repo,op,run_name,status\n{rows}".encode())
    return path


def test_the_run_stage_refuses_to_begin_a_new_pass_unless_asked(tmp_path):
    """A call that finds a fresh machine and runs without restoring would begin the whole
    pass again (2026-12-02: 9 minutes of the H200 on 111 ops already final)."""
    full = tmp_path / "full"
    done = _script(tmp_path, "run", "5", "pack", FULL=str(full), OUT=str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "holds no pass" in done.stderr and "NEW_PASS=1" in done.stderr
    assert not (tmp_path / "argv.txt").exists()  # no batch, no later stage
    done = _script(tmp_path, "run", "5", FULL=str(full), NEW_PASS="1")
    assert done.returncode == 0 and "rc=0" in done.stdout, done.stdout + done.stderr
    assert (tmp_path / "argv.txt").read_text().split()[:3] == ["-m", "zlbench", "batch"]


def test_resume_keeps_a_warm_machines_pass_and_restores_a_fresh_ones(tmp_path):
    full, carried = tmp_path / "full", _pass_tgz(tmp_path / "full.tgz", "abs", "cos")
    done = _script(tmp_path, "resume", str(carried), FULL=str(full))  # fresh
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"fresh machine, {full} restored from {carried} (2 op(s) final)" in done.stdout
    (full / "ops_status.csv").write_text(
        (full / "ops_status.csv").read_text() + "main,exp,exp,PASS\n"
    )
    (full / "main" / "exp").mkdir(parents=True)
    done = _script(tmp_path, "resume", str(carried), FULL=str(full))  # warm
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"warm machine, {full} kept (3 op(s) final)" in done.stdout
    assert (full / "main" / "exp").is_dir()  # this machine's work is not replaced


def test_resume_on_a_fresh_machine_without_the_carried_pass_stops_the_call(tmp_path):
    done = _script(tmp_path, "resume", str(tmp_path / "none.tgz"), "run", "5",
                   FULL=str(tmp_path / "full"))  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"a fresh machine and no {tmp_path / 'none.tgz'}" in done.stderr
    assert "stage run" not in done.stdout


def test_merge_says_which_ops_ran_kernels_without_a_record(fr, tmp_path, capsys):
    """After each device call: the new recorder's count of kernels an op ran without a
    record (many ops with some would mean a launch it misses everywhere)."""
    call = tmp_path / "1.tgz"
    with tarfile.open(call, "w:gz") as tar:
        for op, extra in (("abs", {"unrecorded": 0}), ("cat", {"unrecorded": 3}), ("cos", {})):
            _add(
                tar, f"main/{op}/codegen/index.json", json.dumps({"records": [], **extra}).encode()
            )
    assert fr.main(["merge", str(tmp_path / "m"), str(call)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "unrecorded kernels: 1 op(s) ran some (main/cat 3), 1 none, 1 not counted (older recorder)"
    )


TAILS = {  # run.log tails of each kind, as the H200's TIMEOUTs ended (2026-12-02)
    "sdpa": "benchmark/test_attention.py\nSUCCESS  1.0  0.5  2.0  [x]\n\n.\n"
    "ZLBENCH_RUNNER run_name=sdpa status=TIMEOUT timed out after 300 s\n",
    "pad": "SUCCESS  0.05  0.03  1.58  [a]\nSUCCESS  5.8  2.7  2.1  [b]\n"
    "ZLBENCH_RUNNER run_name=pad status=TIMEOUT timed out after 300 s\n",
    "lu": "ZLBENCH_OP_BEGIN run_name=lu\nBENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=E\n"
    "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=E\n",
    "pool": "collected 191 items\n\nZLBENCH_OP_BEGIN run_name=pool\n\nbenchmark/test_pool.py \n"
    "ZLBENCH_RUNNER run_name=pool status=TIMEOUT timed out after 300 s\n",
    "addmv": "SUCCESS  0.003  0.003  0.98  [a]\n\n.\n\n"
    "ZLBENCH_OP_HOOK_SLOW run_name=addmv hook=Recorder.on_end after=30s\n"
    "ZLBENCH_RUNNER run_name=addmv status=TIMEOUT timed out after 300 s\n",
}


def _timeout_pass(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    lines = ["repo,op,run_name,status"] + [f"main,{n},{n},TIMEOUT" for n in TAILS]
    (root / "ops_status.csv").write_text("\n".join([*lines, "main,abs,abs,PASS"]) + "\n")
    for name, tail in TAILS.items():
        (root / "main" / name).mkdir(parents=True)
        (root / "main" / name / "run.log").write_text(tail)


def test_timeouts_say_what_each_op_was_doing_from_a_dir_or_a_pack(fr, tmp_path):
    full = tmp_path / "full"
    _timeout_pass(full)
    want = [
        (
            "addmv",
            "op-end",
            1,
            0,
            "ZLBENCH_OP_HOOK_SLOW run_name=addmv hook=Recorder.on_end after=30s",
        ),
        ("lu", "capture", 0, 2, "BENCHMARK_DIRECT_NO_CUDAGRAPH phase=capture reason=E"),
        ("pad", "rows", 2, 0, "SUCCESS  5.8  2.7  2.1  [b]"),
        ("pool", "silent", 0, 0, "benchmark/test_pool.py"),
        ("sdpa", "after-pass", 1, 0, "."),
    ]
    assert fr.timeouts(full) == want
    packed = tmp_path / "full.tgz"
    with tarfile.open(packed, "w:gz") as tar:  # as the pack stage names its members
        for f in sorted(full.rglob("*")):
            if f.is_file():
                tar.add(f, arcname=str(f.relative_to(full)))
    assert fr.timeouts(packed) == want


def test_the_timeouts_command_names_the_retry_of_the_ops_a_longer_limit_finishes(
    fr, tmp_path, capsys
):
    _timeout_pass(tmp_path)
    assert fr.main(["timeouts", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == "timeouts: 5 (1 op-end, 1 after-pass, 1 rows, 1 capture, 1 silent)"
    assert out[-1] == 'retry with a longer OP_TIMEOUT: retry "addmv pad sdpa"'
    (tmp_path / "ops_status.csv").write_text("repo,op,run_name,status\n")
    with pytest.raises(SystemExit, match="timeouts: no ops_status.csv with rows"):
        fr.main(["timeouts", str(tmp_path)])


def test_status_says_what_is_final_what_is_left_and_what_of_a_tier(fr, tmp_path, capsys):
    full = tmp_path / "full"
    full.mkdir()
    (full / "ops_status.csv").write_text(
        "repo,op,run_name,status,rows\nmain,abs,abs,PASS,3\nmain,mm,mm__at__test_mm.py,PASS,2\n"
        "main,exp,exp,TIMEOUT,0\nmain,index_add,index_add,SKIP,0\n"
    )
    ops = ["main/abs", "main/mm@test_mm.py", "main/exp", "main/add", "main/sum"]
    (full / "batch.json").write_text(json.dumps({"ops": ops}))
    tier = tmp_path / "pr.txt"
    tier.write_text("# tier\nabs  # core\nsum\nmm@test_mm.py\nadd\n")
    got = fr.pass_status(full, fr._ops_file(tier))
    assert (got["final"], got["rows"], got["selected"], got["outside"]) == (4, 5, 5, 1)
    assert got["counts"] == {"PASS": 2, "TIMEOUT": 1, "SKIP": 1}
    assert (got["left"], got["tier_left"]) == (["add", "sum"], ["sum", "add"])
    assert fr.main(["status", str(full), "--tier", str(tier)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "status: 4 op(s) final (2 PASS, 1 TIMEOUT, 1 SKIP; 1 not selected: dismissed or "
        "unconditional skips), 5 rows of PASS ops; 2 of the batch's 5 selected op(s) to run"
    )
    assert out[1] == f"status: {tier}: 2 of 4 final, to run: sum add"
    with pytest.raises(SystemExit, match="status: --tier .*nope.txt: no such file"):
        fr.main(["status", str(full), "--tier", str(tmp_path / "nope.txt")])


def test_dismiss_proposes_the_failed_ops_waits_for_the_retry_and_drops_what_passed(
    fr, tmp_path, capsys
):
    """The dismiss list updated from the pass: a line to add per FAIL and per TIMEOUT
    a longer limit will not finish, the rest after the retry, the entries whose op
    passed (RECHECK=1) to drop; an op already dismissed is not proposed again."""
    from zlbench.runner.catalog.dismiss import parse_dismiss

    _timeout_pass(tmp_path)
    with (tmp_path / "ops_status.csv").open("a") as f:
        f.write("main,beam,beam,FAIL\nmain,lcm,lcm,PASS\n")
    (tmp_path / "batch.json").write_text('{"gpu_share": 3}')
    listed = tmp_path / "dismiss.txt"
    listed.write_text(
        "main:lcm  # 2026-08-12 NVRTC on the H20\nmain:pool  # 2026-08-12 hangs on the H20\n"
    )
    entries = parse_dismiss(listed.read_text())
    add, wait, drop = fr.dismiss_proposal(tmp_path, entries, "2026-12-03")
    assert [line.split()[0] for line in add] == ["main:beam", "main:lu"]
    assert "FAIL: no note" in add[0] and "--gpu-share 3" in add[0]
    assert "capture failing at every shape" in add[1] and "2 capture fallbacks" in add[1]
    proposed = parse_dismiss("\n".join(add))  # each line an entry the list reads
    assert [(e.repo, e.op, str(e.date)) for e in proposed] == [
        ("main", "beam", "2026-12-03"),
        ("main", "lu", "2026-12-03"),
    ]
    assert [w.split(":")[1] for w in wait] == ["addmv", "pad", "sdpa"]  # RETRY_KINDS
    assert drop == ["main:lcm (line 1): PASS in the H200 record pass, --gpu-share 3, 0 rows"]
    add, wait, _ = fr.dismiss_proposal(tmp_path, entries, "2026-12-03", retried=True)
    assert wait == [] and [a.split()[0] for a in add] == [
        "main:addmv", "main:beam", "main:lu", "main:pad", "main:sdpa"
    ]  # fmt: skip
    assert "pool" not in " ".join(add)  # dismissed already

    assert (
        fr.main(["dismiss", str(tmp_path), "--dismiss", str(listed), "--date", "2026-12-03"]) == 0
    )
    out = capsys.readouterr()
    assert out.out.splitlines()[0].startswith("main:beam  # 2026-12-03 FAIL")
    assert "# drop: main:lcm" in out.out
    assert "dismiss: 2 to add, 3 to retry first, 1 to drop" in out.err
    with pytest.raises(SystemExit, match="dismiss: Invalid isoformat"):
        fr.main(["dismiss", str(tmp_path), "--dismiss", str(listed), "--date", "Dec 3"])

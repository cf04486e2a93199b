"""The budgeted stage loop of the GPU-host scripts (benchmarks/lib_stages.sh), run on CPU:
a stage whose estimate no longer fits is skipped with one line, `pack` always runs (a
device call cut at its limit loses what it did not pack)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "benchmarks" / "lib_stages.sh"


def bash(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def run_script(name: str, tmp_path: Path, *stages: str) -> tuple[Path, Path, str]:
    """benchmarks/NAME with OUT and W in tmp_path: (OUT, W, its stdout and stderr)."""
    out, work = tmp_path / "out", tmp_path / "w"
    out.mkdir()
    done = bash([str(REPO / "benchmarks" / name), *stages], tmp_path, OUT=str(out), W=str(work))
    return out, work, done.stdout + done.stderr


def test_stage_fits_parses_the_estimate_and_skips_what_no_longer_fits(tmp_path):
    log = tmp_path / "out" / "log.txt"
    done = bash(
        [
            "-c",
            # the clock stopped (SECONDS unset is a plain variable): a loaded machine's
            # second ticking between the lines must not move "left 100s"
            "unset SECONDS; SECONDS=0\n"
            f'source "{LIB}"; stages_begin 100 "{log}"\n'
            "for spec in run:50 plain late:500 pack:999; do\n"
            '  if stage_fits "$spec"; then echo "RAN $stage $est"\n'
            '  else echo "NOT $stage $est"; fi\n'
            "done",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    ran = [line for line in done.stdout.splitlines() if line[:3] in ("RAN", "NOT")]
    assert ran == ["RAN run 50", "RAN plain 60", "NOT late 500", "RAN pack 999"]
    text = log.read_text()
    assert "SKIP late (left 100s < 500)" in text
    assert "pack" not in text  # pack is never skipped, so nothing is said of it


def test_gpu_v6_skips_what_does_not_fit_and_still_packs(tmp_path):
    out, _, said = run_script(
        "gpu_v6.sh", tmp_path, "5", "unpack:100", "same:300", "bogus:1", "pack"
    )
    log = (out / "v6.log").read_text()
    assert "SKIP unpack (left" in log and "SKIP same (left" in log, said
    assert "unknown stage bogus" in log  # an estimate that fits runs the stage
    assert "stage pack" in log and (out / "v6.tgz").is_file()
    assert not (tmp_path / "baselines").exists()  # the skipped unpack wrote nothing


def test_gpu_judge_on_runner_skips_a_gate_that_does_not_fit_and_still_packs(tmp_path):
    out, work, said = run_script(
        "gpu_judge_on_runner.sh", tmp_path, "5", "aa-v6-1:150", "patched-v6:420", "nope:1", "pack"
    )
    log = (out / "log.txt").read_text()
    assert "SKIP aa-v6-1 (left" in log and "SKIP patched-v6 (left" in log, said
    assert "unknown stage nope" in log
    assert (out / "judge.tgz").is_file()
    assert not (work / "walls.txt").exists()  # no gate ran


def test_gpu_capture_packs_this_calls_batches_without_stage_records(tmp_path):
    """benchmarks/gpu_capture.sh: no band fits the budget left, so it packs the batches
    this call's TAG names (another call's are not), leaving out the kernels' stage
    records (*.gz, *.ttgir), which `baseline capture --from` does not read."""
    out, work = tmp_path / "out", tmp_path / "w"
    out.mkdir()
    for name in ("capwork-band-0-5-c2", "capwork-band-0-5-c1"):
        run = work / name / "replay" / "main" / "abs" / "codegen"
        run.mkdir(parents=True)
        (run / "launches.json").write_text("{}")
        (run / "blob.gz").write_bytes(b"x")
        (run / "k.ttgir").write_text("ir")
    (work / "mode").write_text("untimed\n")
    script = [str(REPO / "benchmarks" / "gpu_capture.sh"), "50"]
    done = bash(script, tmp_path, OUT=str(out), W=str(work), TAG="c2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gpu_capture: mode untimed" in done.stdout
    names = subprocess.run(
        ["tar", "tzf", str(out / "cap-c2.tgz")], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "capwork-band-0-5-c2/replay/main/abs/codegen/launches.json" in names
    assert not [n for n in names if n.endswith((".gz", ".ttgir")) or "-c1" in n], names
    (work / "capwork-band-0-5-c2").rename(work / "elsewhere")
    again = bash(script, tmp_path, OUT=str(out), W=str(work), TAG="c2")
    assert again.returncode == 1 and "gpu_capture: no batch this call" in again.stdout

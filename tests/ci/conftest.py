"""Shared helpers for the CI tests: paths, loading ci/*.py, fake tools on PATH."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CI = REPO / "ci"
WORKFLOWS = REPO / ".github" / "workflows"

# One fake for every external program the scripts call (zlbench, the job's python,
# nvidia-smi): it logs its argv (and whether the job summary was visible) as a JSON
# line to $FAKE_LOG and acts on FAKE_* variables.
FAKE_TOOL = r"""
import json, os, sys
args = sys.argv[1:]
tool = os.path.basename(sys.argv[0])
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps({"tool": tool, "argv": args,
                        "summary_visible": "GITHUB_STEP_SUMMARY" in os.environ,
                        "wheel_name_env": os.environ.get("FLAGTREE_WHEEL_NAME")}) + "\n")

def opt(name):
    return args[args.index(name) + 1]

if tool == "nvidia-smi":
    sys.stdout.write(os.environ.get("FAKE_SMI_OUT", ""))
    sys.exit(int(os.environ.get("FAKE_SMI_RC", "0")))
if tool == "zlbench":
    if args[:1] == ["merge"]:
        sys.exit(int(os.environ.get("FAKE_MERGE_RC", "0")))
    if args[:1] == ["gate"]:
        os.makedirs(opt("--out"), exist_ok=True)
        with open(os.path.join(opt("--out"), "report.md"), "w") as f:
            f.write("<!-- zlbench-gate -->\nFAKE REPORT\n")
        with open(os.path.join(opt("--out"), "comment.md"), "w") as f:
            f.write("<!-- zlbench-gate -->\nFAKE COMMENT\n")
        sys.exit(int(os.environ.get("FAKE_GATE_RC", "0")))
    if args[:1] == ["codegen"] and "--shard" in args:
        rc = int(os.environ.get("FAKE_CODEGEN_RC", "0"))
        if rc == 0 and not os.environ.get("FAKE_CODEGEN_NO_STAMP"):
            os.makedirs(opt("--out"), exist_ok=True)
            with open(os.path.join(opt("--out"), "rebuilt.json"), "w") as f:
                f.write(json.dumps({"shard": opt("--shard")}))
        sys.exit(rc)
    if args[:2] in (["baseline", "refresh"], ["baseline", "bootstrap"]):
        os.makedirs(opt("--out"), exist_ok=True)
        open(os.path.join(opt("--out"), "manifest.yaml"), "w").write("name: x\n")
        sys.exit(int(os.environ.get("FAKE_REFRESH_RC", "0")))
    if args[:2] == ["baseline", "show"]:
        print("FAKE MANIFEST SUMMARY")
    sys.exit(0)
# the job's python
if args[:3] == ["-m", "pip", "wheel"]:
    rc = int(os.environ.get("FAKE_BUILD_RC", "0"))
    if rc == 0:
        os.makedirs(opt("-w"), exist_ok=True)
        name = os.environ.get("FAKE_WHEEL", "flagtree-0.5.0-cp311-cp311-linux_x86_64.whl")
        open(os.path.join(opt("-w"), name), "w").write("wheel")
    sys.exit(rc)
if args and args[0].endswith("check_triton_dist.py"):
    sys.exit(int(os.environ.get("FAKE_CHECK_RC", "0")))
sys.exit(int(os.environ.get("FAKE_PY_RC", "0")))
"""


def load_ci_module(name: str):
    """Import ci/<name>.py (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(f"zlbench_ci_{name}", CI / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Sandbox:
    """A fake GitHub Actions step: summary/output files, a bin dir of fakes, a log."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.log = tmp / "calls.jsonl"
        self.summary = tmp / "summary.md"
        self.output = tmp / "output.txt"
        self.env = {
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(tmp / "home"),
            "FAKE_LOG": str(self.log),
            "GITHUB_STEP_SUMMARY": str(self.summary),
            "GITHUB_OUTPUT": str(self.output),
            "ZLBENCH_CACHE": str(tmp / "cache"),
            "LC_ALL": "C.UTF-8",
        }

    def fake(self, name: str) -> Path:
        path = self.bin / name
        path.write_text(f"#!{sys.executable}\n{FAKE_TOOL}")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return path

    def run(self, script: str, *args: str, cwd: Path | None = None, **env: str):
        cmd = ["bash", str(CI / script)] if script.endswith(".sh") else [sys.executable]
        if not script.endswith(".sh"):
            cmd.append(str(CI / script))
        return subprocess.run(
            [*cmd, *args],
            env={**self.env, **env},
            cwd=cwd or self.tmp,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def calls(self, tool: str | None = None) -> list[dict]:
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [r for r in rows if tool is None or r["tool"] == tool]

    def outputs(self) -> dict[str, str]:
        """The step outputs: ``key=value`` lines and ``key<<DELIMITER`` blocks (a
        multiline value, its lines joined by newlines)."""
        if not self.output.exists():
            return {}
        out: dict[str, str] = {}
        lines = iter(self.output.read_text().splitlines())
        for line in lines:
            if "<<" in line and "=" not in line.split("<<", 1)[0]:
                key, delimiter = line.split("<<", 1)
                out[key] = "\n".join(iter(lines.__next__, delimiter))
            else:
                key, value = line.split("=", 1)
                out[key] = value
        return out

    def summary_text(self) -> str:
        return self.summary.read_text() if self.summary.exists() else ""


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


@pytest.fixture
def shard_env(sandbox):
    """ci/run_shard.sh's inputs: shard 2 of 3 of baseline bl, a fake zlbench on PATH."""
    sandbox.fake("zlbench")
    (sandbox.tmp / "bl").mkdir()
    return {"ZL_BASELINE": "bl", "ZL_SHARD_INDEX": "2", "ZL_SHARD_COUNT": "3"}


@pytest.fixture
def ci_module():
    """``ci_module("collect_shards")`` imports ci/collect_shards.py."""
    return load_ci_module

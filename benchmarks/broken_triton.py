"""Helpers of benchmarks/gpu_broken_compiler.sh (issue 15: a gate under a compiler
that breaks most kernels must fail fast and say once what is broken).

    python benchmarks/broken_triton.py copies DEST     # DEST/same, DEST/broken triton copies
    python benchmarks/broken_triton.py check WORK      # wall times and the diagnosis

``copies`` writes two symlink trees of the installed triton (tests/support/codegen.py
``patched_triton``): ``DEST/same`` (unchanged) and ``DEST/broken``, whose CUDA
launcher raises ``SystemError`` on every kernel launch while ``ZL_BROKEN=1`` is set
(the failure seen on the H200 with triton 3.7.1 and this FlagGems: a SystemError in
triton's launcher for every pointwise kernel). ``check`` reads ``WORK/timings.txt``
(written by the script) and the broken gate's batch.json: the broken gate must take
at most 1.5x the A/A gate's wall time and name one systemic failure.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests.support package

from tests.support.codegen import Patch, patched_triton, triton_dir  # noqa: E402
from zlbench.models import load_json_model  # noqa: E402
from zlbench.models.batch import BatchInfo  # noqa: E402

DRIVER = "backends/nvidia/driver.py"
CALL = "    def __call__(self, gridX, gridY, gridZ, stream, function, *args):\n"
RAISE = (
    CALL + "        if __import__('os').environ.get('ZL_BROKEN') == '1':\n"
    "            raise SystemError('launch refused (zlbench broken-compiler patch)')\n"
)
MAX_RATIO = 1.5


def _same_patch() -> Patch:
    return Patch(DRIVER, CALL, CALL, "none", frozenset())


def copies(dest: Path) -> None:
    text = (triton_dir() / DRIVER).read_text(encoding="utf-8")
    if text.count(CALL) != 1:
        sys.exit(f"{DRIVER}: the launcher's __call__ line is not there once; update CALL")
    patched_triton(dest / "same", _same_patch())
    patched_triton(dest / "broken", Patch(DRIVER, CALL, RAISE, "none", None))
    print(f"same={dest / 'same'}\nbroken={dest / 'broken'}")


def _wall(timings: str, out: str) -> float:
    m = re.findall(rf"rc=\d+ (\d+)s: .*--out \S*/{re.escape(out)}\b", timings)
    if not m:
        sys.exit(f"no timing of the {out} gate in timings.txt")
    return float(m[-1])


def check(work: Path) -> int:
    timings = (work / "timings.txt").read_text(encoding="utf-8")
    aa, broken = _wall(timings, "aa"), _wall(timings, "broken")
    infos = [load_json_model(p, BatchInfo) for p in (work / "broken").rglob("batch.json")]
    systemic = [f for info in infos for f in info.systemic]
    print(f"A/A gate {aa:.0f} s, broken-compiler gate {broken:.0f} s: {broken / aa:.2f}x")
    for f in systemic:
        print(f"diagnosis: {f.line}")
    ok = broken <= MAX_RATIO * aa and len(systemic) >= 1
    print("OK" if ok else f"NOT OK (want <= {MAX_RATIO}x and a systemic line)")
    return 0 if ok else 1


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("copies").add_argument("dest", type=Path)
    sub.add_parser("check").add_argument("work", type=Path)
    args = p.parse_args()
    if args.cmd == "copies":
        copies(args.dest)
    else:
        sys.exit(check(args.work))


if __name__ == "__main__":
    main()

"""Fail unless `import triton` resolves to the FlagTree build (distribution `flagtree`).

Usage: python ci/check_triton_dist.py [--expect flagtree]

The gate measures whichever compiler `import triton` finds. pip can silently put
upstream Triton back (a dependency that names `triton`), and a venv with system
site-packages can see a second copy, so the check asks which installed
distribution owns the file that `import triton` would load, without importing it
(importing triton needs a GPU driver on some builds). Exit 0 and one line naming
the distribution, its version and path; else one clear error and exit 2.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import importlib.util
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gha import CiError, run_main, warn  # noqa: E402


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def triton_origin() -> Path:
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.origin or spec.origin in ("namespace", "built-in"):
        raise CiError("`import triton` finds nothing: the FlagTree wheel is not installed")
    return Path(spec.origin).resolve()


def owners(origin: Path) -> list[md.Distribution]:
    """Installed distributions whose RECORD lists ``origin`` (normally exactly one)."""
    found = []
    for name in md.packages_distributions().get("triton", []):
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        for f in dist.files or []:
            if f.name == origin.name and Path(dist.locate_file(f)).resolve() == origin:
                found.append(dist)
                break
    return found


def check(expect: str) -> str:
    """The success line; CiError when triton is not provided by ``expect``."""
    origin = triton_origin()
    dists = owners(origin)
    if not dists:
        raise CiError(f"cannot tell which distribution provides triton at {origin}")
    names = sorted({_norm(d.metadata["Name"]) for d in dists})
    if names != [_norm(expect)]:
        raise CiError(
            f"`import triton` resolves to distribution {', '.join(names)} at {origin}, "
            f"not {expect}: the gate would measure the wrong compiler "
            f"(run `pip uninstall -y triton` and reinstall the {expect} wheel)"
        )
    others = [n for n in md.packages_distributions().get("triton", []) if _norm(n) != names[0]]
    if others:
        warn(f"also installed but shadowed: {', '.join(sorted(set(others)))}")
    return f"triton is provided by {expect} {dists[0].version} at {origin.parent}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--expect", default="flagtree")
    args = ap.parse_args(argv)
    print(check(args.expect))
    return 0


if __name__ == "__main__":
    run_main(main)

"""Write ops/old_names.csv: the old scripts' op names -> zlbench's selectors.

The old scripts (run_pytest.sh, run_batch.py) named an op by its benchmark test
function without ``test_``; zlbench by the test's first pytest mark. This derives,
from the inventories (``ops/inventory_<repo>.csv``, the function column), one row per
test whose old name is not its op id (zlbench.runner.catalog.old_names,
docs/ops.md "Old op names"). Re-run it after ``zlbench inventory`` rebuilt an
inventory; tests/runner/test_old_names.py checks that the shipped file is its output.

    python benchmarks/old_names.py [OPS_DIR]     # default: ops/ of this checkout
"""

from __future__ import annotations

import sys
from pathlib import Path

from zlbench.models import REPOS
from zlbench.runner.catalog.inventory import inventory_path, load_inventory
from zlbench.runner.catalog.old_names import OLD_NAMES_FILE, derive_old_names, write_old_names

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    ops_dir = Path(argv[0]) if argv else ROOT / "ops"
    rows = []
    for repo in REPOS:
        path = inventory_path(ops_dir, repo)
        if path.is_file():
            rows += load_inventory(path)
    names = derive_old_names(rows)
    write_old_names(ops_dir / OLD_NAMES_FILE, names)
    for repo in REPOS:
        mine = [r for r in rows if r.repo == repo]
        tests = sum(1 for r in mine if r.function.removeprefix("test_") != r.op)
        print(f"{repo}: {tests} of {len(mine)} tests have an old name other than their op id")
    print(f"{ops_dir / OLD_NAMES_FILE}: {len(names)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

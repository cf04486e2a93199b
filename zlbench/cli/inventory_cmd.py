"""`zlbench inventory`: rebuild ops/inventory_<repo>.csv from FlagGems checkouts.

``--migrate-shapes Y --shapes-out Y2`` also merges the upstream
``benchmark/core_shapes.yaml`` keys that Y lacks into Y2 (curated keys kept).
"""

from __future__ import annotations

from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.errors import ZlbenchError
from zlbench.models import REPOS, atomic_write_text
from zlbench.runner.catalog.inventory import (
    carry_collected,
    inventory_path,
    load_inventory,
    scan_checkout,
    verify_collect,
    write_inventory,
)
from zlbench.runner.catalog.shapes_migrate import (
    leading_comments,
    load_shapes,
    migrate_shapes,
    render_shapes,
)
from zlbench.runner.preflight import check_flaggems_dir, flaggems_fix


def add_parser(sub) -> None:
    p = sub.add_parser("inventory", help="rebuild ops/inventory_<repo>.csv (AST scan)")
    p.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="FlagGems checkout per repo label (default: $ZLBENCH_FLAGGEMS_DIR as main, "
        "$ZLBENCH_FLAGGEMS_VLLM_DIR as vllm)",
    )
    p.add_argument("--verify-collect", action="store_true", help="run pytest --collect-only")
    p.add_argument("--out", default="ops", metavar="DIR", help="where the CSVs go (default ops/)")
    p.add_argument("--migrate-shapes", metavar="Y", help="curated shape yaml to migrate")
    p.add_argument("--shapes-out", metavar="Y", help="where the migrated shape yaml goes")
    p.set_defaults(func=_run)


def parse_repos(specs: list[str], settings: Settings) -> dict[str, str]:
    repos: dict[str, str] = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or label not in REPOS or not path:
            raise ZlbenchError(f"--repo {spec!r}: expected LABEL=PATH with LABEL in {REPOS}")
        repos[label] = path
    if not specs:
        repos = dict(settings.flaggems_dirs)
    if not repos:
        raise ZlbenchError(
            "no FlagGems checkout: pass --repo main=PATH or set ZLBENCH_FLAGGEMS_DIR"
        )
    return repos


def inventory_one(label: str, path: str, out: Path, verify: bool) -> str:
    """Rebuild one repo's inventory; returns a one-line summary."""
    root = check_flaggems_dir(path, label, flaggems_fix(label, f"--repo {label}=PATH"))
    target = inventory_path(out, label)
    if verify:
        rows = verify_collect(root, label)
    else:
        rows = scan_checkout(root, label)
        if target.exists():
            rows = carry_collected(rows, load_inventory(target))
    write_inventory(target, rows)
    ops = len({r.op for r in rows})
    skipped = len({r.op for r in rows if r.skip})
    missing = sum(1 for r in rows if r.collected == "no")
    extra = f", {missing} not collected" if verify else ""
    return f"{target}: {len(rows)} tests, {ops} ops, {skipped} with an unconditional skip{extra}"


def migrate(curated: str, upstream: Path, out: str) -> str:
    """Write ``out``: curated keys + upstream keys they lack; returns a summary."""
    data = load_shapes(curated)
    up = load_shapes(upstream)
    merged = migrate_shapes(data, up)
    header = leading_comments(Path(curated).read_text(encoding="utf-8"))
    atomic_write_text(out, render_shapes(merged, header))
    return f"{out}: {len(data)} curated keys kept, {len(merged) - len(data)} upstream keys added"


def _run(args) -> int:
    if bool(args.migrate_shapes) != bool(args.shapes_out):
        raise ZlbenchError("--migrate-shapes and --shapes-out go together")
    repos = parse_repos(args.repo, Settings.from_env())
    out = Path(args.out)
    for label, path in repos.items():
        print(inventory_one(label, path, out, args.verify_collect))
    if args.migrate_shapes:
        label = "main" if "main" in repos else next(iter(repos))
        fix = flaggems_fix(label, f"--repo {label}=PATH")
        upstream = check_flaggems_dir(repos[label], label, fix) / "benchmark" / "core_shapes.yaml"
        print(migrate(args.migrate_shapes, upstream, args.shapes_out))
    return 0

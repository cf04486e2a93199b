"""`zlbench codegen --baseline B`: rebuild every kernel the baseline recorded with
the compiler importable here, classify each, write codegen.{json,md} and diffs/
(docs/codegen.md). Exit 1 when a kernel the baseline compiled fails to compile.

A baseline is verified against its manifest first (as `zlbench baseline verify`; one
that fails is one line, exit 2). A batch dir (no manifest.yaml) is screened too, but
its generated kernels are not rebuilt: their recorded module text is never executed
(docs/codegen.md, "Generated kernels")."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from zlbench.cli.options import (
    add_base_compiler_option,
    add_base_screen_cache_option,
    add_rebuilt_option,
    base_screen_cache,
)
from zlbench.cli.settings import Settings
from zlbench.codegen.screen import (
    SCREEN_MD,
    RebuiltInput,
    ScreenOptions,
    flaggems_sources,
    rebuild_shard,
    run_screen,
)
from zlbench.codegen.shards import manifest_sha256
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import check_out_outside_baseline, verified_baseline
from zlbench.models.codegen_screen import RebuiltShard
from zlbench.protocol.layout import MANIFEST_YAML
from zlbench.report.codegen import headline
from zlbench.report.escape import log_line
from zlbench.runner.batch.shard import parse_shard
from zlbench.workflow.codegen_artifact import compiler_fingerprint


def add_parser(sub) -> None:
    p = sub.add_parser("codegen", help="rebuild a baseline's kernels and diff the generated code")
    p.add_argument(
        "--baseline",
        required=True,
        metavar="B",
        help="baseline dir, verified against its manifest first (or a batch dir: its "
        "generated kernels are not rebuilt; docs/codegen.md)",
    )
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="parallel rebuild processes")
    p.add_argument("--out", default="zlbench-codegen", metavar="DIR", help="output dir")
    p.add_argument(
        "--python",
        metavar="PY",
        help="interpreter whose triton rebuilds the kernels (default: this one)",
    )
    add_rebuild_shard_options(p)
    add_base_compiler_option(
        p,
        "its rebuild of the same requests, not the baseline's records, is what each kernel "
        'is compared with (docs/codegen.md, "PR against its base compiler")',
    )
    add_base_screen_cache_option(p)
    p.set_defaults(func=_run)


def add_rebuild_shard_options(p) -> None:
    """The screen's rebuild split over CPU jobs (docs/codegen.md, "Sharded rebuild")."""
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="rebuild only shard K of N of the kernels into --out (no classification): "
        "what --rebuilt takes",
    )
    add_rebuilt_option(p)


def _run(args) -> int:
    check_out_outside_baseline(args.out, args.baseline)  # nor inside a batch dir given
    verified = verified_baseline(args.baseline)  # a baseline that fails: one line, exit 2
    settings = Settings.from_env()
    if args.base_compiler and args.shard:
        raise ZlbenchError("--shard rebuilds the PR's side only: not with --base-compiler")
    opts = ScreenOptions(
        baseline=Path(args.baseline),
        out=Path(args.out),
        jobs=args.jobs,
        python=_interpreter(args.python),
        pythonpath=flaggems_sources(settings.flaggems_dirs.values()),
        exec_generated=verified,
    )
    say = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    if args.base_compiler:
        from zlbench.workflow.codegen import base_side

        cache = base_screen_cache(args, settings.cache_dir)
        opts.base = base_side(args.base_compiler, cache, print)  # a note on stdout
    if args.shard:
        return _rebuild_shard(opts, args, say)
    opts.rebuilt = rebuilt_input(args.rebuilt, Path(args.baseline))
    screen = run_screen(opts, say=say)
    print(f"zlbench codegen: {headline(screen)}; wrote {opts.out / SCREEN_MD}")
    for k in screen.failed():
        print(log_line(f"FAILED {k.name} [{k.config}]: {k.error}"), file=sys.stderr)
    missing = screen.missing()
    # the rebuild worker's error for recorded source it did not execute
    untrusted = [k for k in missing if "UntrustedSource" in (k.error or "")]
    if untrusted:
        print(f"zlbench codegen: {len(untrusted)} generated kernel(s) not rebuilt: "
              f"{args.baseline} is not a baseline (no manifest.yaml), so their recorded "
              "source is never executed (docs/codegen.md)", file=sys.stderr)  # fmt: skip
    if missing:
        print(log_line(f"zlbench codegen: {len(missing)} kernel(s) not rebuilt, first: "
                       f"{missing[0].name}: {missing[0].error}"), file=sys.stderr)  # fmt: skip
    if len(missing) == len(screen.kernels):
        raise ZlbenchError(
            "no kernel could be rebuilt (is the FlagGems checkout on "
            "ZLBENCH_FLAGGEMS_DIR / importable?)"
        )
    return 1 if screen.failed() else 0


def rebuilt_input(dirs: list[Path], baseline: Path) -> RebuiltInput | None:
    """``--rebuilt`` dirs, to be checked against ``baseline`` and this compiler."""
    if not dirs:
        return None
    return RebuiltInput(tuple(dirs), _manifest_sha256(baseline), compiler_fingerprint())


def _manifest_sha256(baseline: Path) -> str:
    return manifest_sha256(baseline) if (baseline / MANIFEST_YAML).is_file() else ""


def _rebuild_shard(opts: ScreenOptions, args, say) -> int:
    if args.rebuilt:
        raise ZlbenchError("--shard rebuilds what --rebuilt takes: not both")
    stamp = RebuiltShard(
        baseline_sha256=_manifest_sha256(opts.baseline),
        compiler=compiler_fingerprint(),
        shard=parse_shard(args.shard),
    )
    done = rebuild_shard(opts, stamp.shard, stamp, say=say)
    k, n = done.shard
    print(f"zlbench codegen: shard {k}/{n}: {len(done.ids)} kernel(s) rebuilt in "
          f"{done.wall_s} s; wrote {opts.out} (for --rebuilt)")  # fmt: skip
    return 0


def _interpreter(python: str | None) -> str:
    if python is None:
        return sys.executable
    found = shutil.which(python)
    if found is None:
        raise ZlbenchError(f"--python {python}: no such interpreter")
    return found

"""`zlbench baseline refresh | bootstrap | show | verify | attribute | compact |
code-digests | capture`: pinned record sets
(docs/design.md §3)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from zlbench.cli.settings import Settings
from zlbench.errors import ZlbenchError

DEFAULT_SHAPES = Path(__file__).resolve().parents[2] / "ops" / "shapes_single.yaml"


def add_parser(sub) -> None:
    p = sub.add_parser("baseline", help="refresh, show or verify a baseline dir")
    bsub = p.add_subparsers(dest="baseline_command", metavar="ACTION", required=True)
    _add_refresh(bsub)
    _add_bootstrap(bsub)
    show = bsub.add_parser("show", help="manifest and a summary of its ops (--table: each op)")
    show.add_argument("dir", type=Path, help="baseline dir (baselines/vN)")
    show.add_argument(
        "--table", action="store_true", help="one line per op (default: a summary of the ops)"
    )
    show.set_defaults(func=_show)
    verify = bsub.add_parser("verify", help="schema, content hashes, records and rows of every op")
    verify.add_argument("dir", type=Path, help="baseline dir (baselines/vN)")
    verify.set_defaults(func=_verify)
    _add_attribute(bsub)
    _add_compact(bsub)
    _add_code_digests(bsub)
    _add_capture(bsub)


def _derived_parser(bsub, name: str, help: str, description: str):
    """A subcommand that writes a new version from an older one: SRC and --out."""
    p = bsub.add_parser(name, help=help, description=description)
    p.add_argument("src", type=Path, help="the baseline to derive from (baselines/vN)")
    p.add_argument(
        "--out", type=Path, required=True, metavar="baselines/vM", help="the new baseline dir"
    )
    return p


def _dirs_option(p, flag: str, what: str, dest: str | None = None) -> None:
    """A required, repeatable ``flag DIR`` of a derived version's inputs."""
    p.add_argument(
        flag,
        dest=dest or flag.lstrip("-"),
        type=Path,
        action="append",
        required=True,
        metavar="DIR",
        help=f"{what} (repeatable)",
    )


def _add_attribute(bsub) -> None:
    a = _derived_parser(
        bsub,
        "attribute",
        help="a new version: an older baseline plus the timed-kernel attribution of a later run",
        description="Copy baseline SRC to --out with every kernel use's 'timed' flag filled "
        "in from the codegen records of a later run of its ops (a gate's results/, an A/B "
        "side's ab/1/base/): the screen then tells setup kernels from timed ones. Records, "
        "configs and numbers are unchanged (docs/baselines.md).",
    )
    _dirs_option(a, "--from", "a batch dir whose codegen records carry the attribution", "runs")
    a.set_defaults(func=_attribute)


def _attribute(args) -> int:
    from zlbench.runner.attribute import derive

    manifest, done = derive(args.src, args.runs, args.out)
    print(
        f"{args.out}: {manifest.name} from {manifest.derived_from}: {done.uses} kernel uses, "
        f"{done.timed} timed, {done.setup} setup only, {done.unknown} unknown "
        f"({len(done.unknown_ops)} ops), {done.kept} already attributed"
    )
    return 0


def _add_compact(bsub) -> None:
    c = _derived_parser(
        bsub,
        "compact",
        help="a new version: an older baseline in the compact layout (content-addressed store)",
        description="Copy baseline SRC to --out with its TTIR and TTGIR texts packed once "
        "each in --out/store/ (content-addressed xz packs) and the other stages' texts "
        "dropped (every stage keeps its digest, so the screen classifies as before). "
        "Records, configs and numbers are unchanged (docs/baselines.md 'Size').",
    )
    c.add_argument(
        "--reuse",
        type=Path,
        metavar="baselines/vK",
        help="an earlier compact version: its packs holding texts of SRC are copied as they "
        "are (git stores them once), only the other texts are packed anew",
    )
    c.set_defaults(func=_compact)


def _compact(args) -> int:
    from zlbench.runner.compact import compact

    manifest, done = compact(args.src, args.out, args.reuse)
    print(
        f"{args.out}: {manifest.name} from {manifest.derived_from}: {done.texts} stage texts "
        f"in {len(done.packs)} pack(s) ({len(done.reused)} reused), "
        f"{done.digests_only} stage(s) kept as digests only"
    )
    return 0


def _add_code_digests(bsub) -> None:
    c = _derived_parser(
        bsub,
        "code-digests",
        help="a new version: an older baseline whose records carry their cubin's code digest",
        description="Copy baseline SRC to --out with each codegen record's cubin code digest "
        "taken from a rebuild of it (`zlbench codegen --baseline SRC --shard 1/1 --out D` "
        "under the compiler that recorded SRC) where that rebuild is the record: every "
        "stage, registers and spills the same. The screen then takes such a kernel's SASS "
        "from the record when its cubin has that code, without a disassembler run "
        "(docs/baselines.md 'Code digests').",
    )
    _dirs_option(c, "--rebuilt", "the --out of `zlbench codegen --baseline SRC --shard K/N`")
    c.set_defaults(func=_code_digests)


def _code_digests(args) -> int:
    from zlbench.runner.code_digests import derive

    manifest, done = derive(args.src, args.rebuilt, args.out)
    print(
        f"{args.out}: {manifest.name} from {manifest.derived_from}: {done.filled} record(s) "
        f"given a code digest, {done.had} had one, {done.differ} not reproduced by the "
        f"rebuild, {done.not_rebuilt} not rebuilt"
    )
    return 0


def _add_capture(bsub) -> None:
    from zlbench.cli.options import SPEC_HELP, add_budget_options, add_ops_dir_option

    c = bsub.add_parser(
        "capture",
        help="a new version: an older baseline plus the launch captures of a replay of it",
        description="Copy baseline --baseline to --out with each op's kernel-replay capture "
        "(codegen/launches.json) taken from one replay batch of its ops, pinned to its "
        "autotune records: run here on this machine's GPU (into --work), or the batch dir "
        "--from of such a replay run elsewhere. The batch must have replayed this "
        "baseline, and an op's capture enters only when it names kernels of the "
        "baseline's own codegen records; the new version is verified before it is put "
        "at --out. Records, configs, rows and numbers are unchanged (docs/replay.md "
        "'Captures for an existing baseline').",
    )
    c.add_argument(
        "--baseline", type=Path, required=True, metavar="DIR", help="the baseline (baselines/vN)"
    )
    c.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="baselines/vM",
        help="the new baseline dir (required but with --batch-only)",
    )
    c.add_argument(
        "--batch-only",
        action="store_true",
        help="run the replay batch into --work DIR/replay and stop: no new version; "
        "derive it later with --from that batch (and the others of a capture taken over "
        "several device calls): the derive copies and verifies the whole baseline",
    )
    c.add_argument(
        "--from",
        dest="from_batches",
        type=Path,
        nargs="+",
        default=[],
        metavar="BATCH_DIR",
        help="measure nothing: take the captures of these batch dirs, each a replay of "
        "--baseline or of a capture version of it (`zlbench batch --replay-root DIR`, or "
        "a capture's --work DIR/replay, a cut one too); an op several captured takes the "
        "last one's",
    )
    c.add_argument(
        "--replace",
        action="store_true",
        help="an op --baseline holds a capture of takes the batch's when the batch "
        "captured it soundly (ops captured again, e.g. for their run order), else keeps "
        "its own; default: every op with a capture keeps it",
    )
    c.add_argument(
        "--work",
        type=Path,
        default=None,
        metavar="DIR",
        help="run the replay batch in DIR/replay and keep it there (the same command with "
        "the same --work resumes it); default: a temp dir, removed at the end",
    )
    sel = c.add_mutually_exclusive_group()
    sel.add_argument(
        "--ops", nargs="+", metavar="SPEC", help=f"only these baseline ops ({SPEC_HELP})"
    )
    sel.add_argument("--ops-file", type=Path, metavar="F", help="file of op SPECs, one a line")
    c.add_argument(
        "--op-timeout",
        type=float,
        default=None,
        metavar="S",
        help="per-op timeout of the replay batch in seconds (default: 10x the longest op "
        "the baseline recorded, 120 to 900; 0 = no limit): an op that hangs loses its own "
        "capture only",
    )
    c.add_argument(
        "--gpu-share",
        type=int,
        default=1,
        metavar="N",
        help="N replay processes per GPU, overlapping their start-up, compiles and Python "
        "(default 1); with N > 1 the recorded seconds stay as they are, since shared "
        "processes wait for each other's timing",
    )
    c.add_argument(
        "--untimed",
        action="store_true",
        help="time nothing: each measurement is two eager calls in the GPU's shared turn "
        "(no graph, no exclusive turn; --zl-timing capture), the capture keeping the "
        "second's launches; the recorded seconds stay as they are",
    )
    add_budget_options(
        c.add_argument_group(
            "the replay batch's timing budgets",
            "a launch is captured at each measurement's first, untimed call: smaller budgets "
            "cost less GPU time and capture the same; with budgets other than a gate's op "
            "path's (the baseline's), the recorded seconds stay as they are",
        )
    )
    add_ops_dir_option(c)
    c.set_defaults(func=_capture)


def _capture(args) -> int:
    from zlbench.cli.options import default_ops_dir, flaggems_dirs, preflight
    from zlbench.runner.capture_baseline import CaptureJob, capture, capture_batch

    settings = Settings.from_env()
    job = CaptureJob(
        baseline=args.baseline,
        out=args.out,
        from_batches=list(args.from_batches),
        work=args.work,
        ops=list(args.ops or ()),
        ops_file=args.ops_file,
        ops_dir=args.ops_dir or default_ops_dir(),
        flaggems_dirs=flaggems_dirs([], settings),
        cuda_visible_devices=settings.cuda_visible_devices,
        argv=list(sys.argv),
        progress=sys.stdout,
        preflight=preflight,
        op_timeout_s=args.op_timeout,
        gpu_share=args.gpu_share,
        warmup_ms=args.warmup_ms,
        replays=args.replays,
        untimed=args.untimed,
        replace=args.replace,
    )
    if args.batch_only:
        batch = capture_batch(job)
        print(
            f"{batch}: the replay batch of {args.baseline}; its captures go into a new "
            f"version with: zlbench baseline capture --baseline {args.baseline} --out DIR "
            f"--from {batch}"
        )
        return 0
    done = capture(job)
    m, got = done.manifest, done.captured
    for key, line in sorted(got.unsound.items()):
        print(f"  {key}: no capture: {line}")
    replaced = f", {len(got.replaced)} replaced theirs" if got.replaced else ""
    print(
        f"{done.out}: {m.name} from {m.derived_from}: {len(got.ops)} ops captured "
        f"({got.rows} rows), {len(got.without)} ops without a capture, {len(got.kept)} "
        f"kept their own{replaced}; from {', '.join(map(str, got.batches))}, a replay of "
        f"{got.replayed}"
    )
    for why, n in got.counts().items():
        print(f"  without a capture: {n} op(s): {why}")
    if got.address_twins:
        print(
            f"  {len(got.address_twins)} op(s) captured with a kernel the baseline recorded "
            f"under an address-keyed cache key, matched by all else: "
            f"{', '.join(got.address_twins)}"
        )
    if got.generated_twins:
        print(
            f"  {len(got.generated_twins)} op(s) captured with a generated kernel the baseline "
            f"recorded under another module name (its generator's pid or hash), matched by "
            f"all else: {', '.join(got.generated_twins)}"
        )
    if got.durations:
        print(f"  recorded seconds: {got.durations} op(s) now the replay batch's (replay mode)")
    if got.durations_kept:
        print(f"  recorded seconds: kept: {got.durations_kept}")
    print(f"verified: {done.verified_ops} ops, {done.verified_rows} rows: OK")
    return 0


def _add_refresh(bsub) -> None:
    from zlbench.cli.options import add_selection_options

    r = bsub.add_parser(
        "refresh",
        help="record pass + K replay passes -> a new immutable baseline dir",
        description="Record an op set (fresh autotune), replay it K times to measure each "
        "row's noise, and write the baseline dir with its manifest.",
    )
    r.add_argument(
        "--out", type=Path, required=True, metavar="baselines/vN", help="the new baseline dir"
    )
    add_selection_options(r)
    _add_refresh_options(r)
    r.add_argument(
        "--commit", action="store_true", help="commit the new dir on branch baseline/<name>"
    )
    r.set_defaults(func=_refresh, shard=None, replay_root=None, resume=False, keep_failed=False)


def _add_refresh_options(r) -> None:
    """How a refresh records (``refresh`` and ``bootstrap``): passes, measuring, work dirs."""
    from zlbench.cli.options import add_measure_options

    r.add_argument(
        "--repeats", type=int, default=None, metavar="K", help="replay passes (default 3)"
    )
    r.add_argument(
        "--no-replay",
        action="store_true",
        help="no replay pass: the rows are the record pass's own measurements (one sample "
        "each, noise 0), context numbers, as the manifest's summary.numbers says (with "
        "--from-work: a record pass alone; not with --repeats)",
    )
    r.add_argument(
        "--min-repeats",
        type=int,
        default=None,
        metavar="M",
        help="an op a replay pass never finished (cut by its time limit) enters with the "
        "M or more passes that did; the manifest lists it (default: every pass must hold it)",
    )
    add_measure_options(r, shape_file=DEFAULT_SHAPES, dtypes=["bfloat16"])
    r.add_argument(
        "--flagtree-dir",
        type=Path,
        default=None,
        metavar="D",
        help="FlagTree checkout whose commit the manifest records (env ZLBENCH_FLAGTREE_DIR)",
    )
    r.add_argument(
        "--keep-work",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep the record/replay batch dirs (logs) here",
    )
    r.add_argument(
        "--from-work",
        type=Path,
        default=None,
        metavar="DIR",
        help="measure nothing: build from the --keep-work dir of an earlier refresh",
    )
    r.add_argument(
        "--work",
        type=Path,
        default=None,
        metavar="DIR",
        help="measure the passes in DIR and keep them there: stopped (a time limit), the "
        "same command with the same --work resumes each pass where it stopped (complete "
        "ops kept, a failed op stays failed)",
    )
    r.add_argument(
        "--require-codegen",
        action="store_true",
        help="only ops whose record pass kept codegen records enter; the others are listed "
        "in the manifest's summary.excluded (a record pass whose records were kept for some "
        "ops only)",
    )


def _refresh_config(args):
    """The ``RefreshConfig`` of the refresh flags (``refresh`` and ``bootstrap``)."""
    from zlbench.cli.options import config_from_args
    from zlbench.runner.refresh import RefreshConfig

    if args.no_replay and args.repeats is not None:
        raise ZlbenchError("--no-replay and --repeats: give one of them")
    if args.work is not None and (args.from_work is not None or args.keep_work is not None):
        raise ZlbenchError(
            "--work keeps the passes where they are measured: not with --from-work or --keep-work"
        )
    repeats = 0 if args.no_replay else (3 if args.repeats is None else args.repeats)
    settings = Settings.from_env()
    batch = config_from_args(args, settings)
    flagtree = args.flagtree_dir or (Path(settings.flagtree_dir) if settings.flagtree_dir else None)
    return RefreshConfig(
        out=args.out,
        batch=batch,
        repeats=repeats,
        min_repeats=args.min_repeats,
        require_codegen=args.require_codegen,
        flagtree_dir=flagtree,
        keep_work=args.keep_work,
        from_work=args.from_work,
        work=args.work,
        zlbench_commit=settings.zlbench_commit,
        progress=sys.stdout,
    )


def _print_refreshed(out) -> None:
    m = out.manifest
    print(f"baseline {m.name}: {len(m.ops)} ops, {m.summary.get('rows')} rows -> {out.out}")
    for key, why in out.excluded.items():
        print(f"  left out {key}: {why}")
    for key, which in m.summary.get("short", {}).items():
        print(f"  fewer passes {key}: {which}")


def _refresh(args) -> int:
    from zlbench.runner.refresh import commit_baseline, refresh

    out = refresh(_refresh_config(args))
    _print_refreshed(out)
    if args.commit:
        print(f"committed on branch {commit_baseline(out.out, out.manifest)}")
    return 0


def _add_bootstrap(bsub) -> None:
    from zlbench.cli.options import add_ops_dir_option
    from zlbench.models import REPOS

    b = bsub.add_parser(
        "bootstrap",
        help="a runner's first baseline: refresh a tier, verify it, put it where the gate reads",
        description="Record the tier NAME (ops/tiers/NAME.txt) on this runner with this "
        "compiler, as `baseline refresh --ops-file ops/tiers/NAME.txt` does, verify it as "
        "`baseline verify` does, and only then put it at --out; a bootstrap that fails, "
        "does not verify or is stopped leaves nothing there. Prints the gate command to "
        "use next and the pack step before committing (docs/ci.md 'Adopt zlbench in "
        "FlagTree').",
    )
    b.add_argument(
        "--tier",
        required=True,
        metavar="NAME",
        help="the op set: a tier of ops/tiers/ (pr, nightly, ...; --ops-dir's tiers/)",
    )
    b.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="baselines/RUNNER",
        help="the new baseline dir, named for the runner class (e.g. baselines/h100); "
        "must not exist, nor its packed lock",
    )
    b.add_argument(
        "--repos",
        nargs="+",
        choices=REPOS,
        default=None,
        metavar="R",
        help="repos the tier's ops are selected from (default: main)",
    )
    add_ops_dir_option(b)
    _add_refresh_options(b)
    b.set_defaults(
        func=_bootstrap,
        shard=None,
        replay_root=None,
        resume=False,
        keep_failed=False,
        all=False,
        ops=None,
        ops_file=None,
        recheck_dismissed=False,
    )


def _bootstrap(args) -> int:
    from zlbench.cli.options import default_ops_dir
    from zlbench.runner.refresh import bootstrap, check_out_free, tier_file

    check_out_free(args.out)  # before any other check: an existing --out is the first word
    args.ops_file = tier_file(args.ops_dir or default_ops_dir(), args.tier)
    done = bootstrap(_refresh_config(args), args.ops_file)
    _print_refreshed(done.refreshed)
    rep = done.verified
    print(f"verified: {rep.ops} ops, {rep.rows} rows: OK (tier {args.tier}: {args.ops_file})")
    out = done.out
    print("next, gate against it on this runner (add --base-compiler ENV for the A/B):")
    print(f"  zlbench gate --baseline {out} --out out/gate-{out.name}")
    print(f"  (the caller workflow: baseline: {out})")
    print('before committing it, pack it (docs/baselines.md "Packed versions"):')
    print(f"  zlbench pack {out} --archive-dir {_archive_dir(out)} && rm -rf {out}")
    print(f"  git add {out}.lock {_archive_dir(out)}")
    return 0


def _archive_dir(out: Path) -> Path:
    """Where ``zlbench pack`` must put --out's archive: the nearest ancestor's
    ``archive/``, where every command looks for it (docs/baselines.md)."""
    from zlbench.models.packed import ARCHIVE_DIR

    for parent in Path(out).parents:
        if (parent / ARCHIVE_DIR).is_dir():
            return parent / ARCHIVE_DIR
    return Path(out).parent.parent / ARCHIVE_DIR


def _show(args) -> int:
    from zlbench.gate.baselines import summarize
    from zlbench.gate.load import load_baseline
    from zlbench.report.baseline import render_show

    b = load_baseline(args.dir)
    print(render_show(b.manifest, summarize(sorted(b.ops.items())), table=args.table))
    return 0


class _VerifyProgress:
    """``verify: 412/999 ops, 3.1s, ETA 4.4s`` on stderr while verify runs over a few
    seconds: on a terminal from TTY_AFTER_S on, rewritten in place at most every
    TTY_EVERY_S; elsewhere (a CI log) one line every LOG_EVERY_S."""

    TTY_AFTER_S, TTY_EVERY_S, LOG_EVERY_S = 2.0, 0.25, 30.0

    def __init__(self, stream):
        self.stream, self.tty = stream, bool(getattr(stream, "isatty", None) and stream.isatty())
        self.started = self.last = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        from zlbench.runner.batch.progress import eta, fmt_seconds

        now = time.monotonic()
        if done == 0:
            self.started = now  # the ops' ETA, without the hashing before them
        after, every = (self.TTY_AFTER_S, self.TTY_EVERY_S) if self.tty else (self.LOG_EVERY_S,) * 2
        if now - self.started < after or (self.shown and now - self.last < every):
            return
        self.last, self.shown = now, True
        rest = eta(now - self.started, done, total)
        tail = f", ETA {fmt_seconds(rest)}" if rest else ""
        line = f"verify: {done}/{total} ops, {fmt_seconds(now - self.started)}{tail}"
        self.stream.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
        self.stream.flush()

    def end(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _verify(args) -> int:
    from zlbench.gate.baselines import verify
    from zlbench.models import BaselineManifest, load_yaml_model
    from zlbench.protocol.layout import MANIFEST_YAML

    if not args.dir.is_dir():
        raise ZlbenchError(f"{args.dir}: baseline dir not found")
    manifest = load_yaml_model(args.dir / MANIFEST_YAML, BaselineManifest)
    show = _VerifyProgress(sys.stderr)
    rep = verify(args.dir, manifest, show)
    show.end()
    for problem in rep.problems:
        print(f"FAIL {problem}")
    state = "OK" if rep.ok else f"{len(rep.problems)} problem(s)"
    print(f"baseline {manifest.name}: {rep.ops} ops, {rep.rows} rows: {state}")
    if rep.ops and not rep.codegen_ops:
        print("note: no codegen records (docs/baselines.md): a gate times every op")
    return 0 if rep.ok else 1

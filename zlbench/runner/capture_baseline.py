"""``zlbench baseline capture``: a new baseline version that is an older one plus the
kernel-replay launch captures (``<op>/codegen/launches.json``, docs/replay.md) of a
replay of its own records.

A baseline recorded before the capture existed (v5, v6, v7) has none, so
``gate --replay`` times every one of its rows through the op path. The capture comes
from any batch that ran its ops (the codegen recorder writes it in record and replay
mode); a batch that replayed the baseline's autotune records launched exactly the
kernels the baseline pinned. So: one replay batch of the baseline's ops, pinned to its
records (the refresh's own replay pass, :func:`zlbench.runner.refresh.run_pass`), or
such batches that ran elsewhere (``--from``, several: a capture over device calls, the
last one given that captured an op deciding it), and each op's capture is copied into a
copy of the baseline, each row with the kernels that run launched while timed
(``RowLaunches.replay_timed``, from its codegen index:
:func:`zlbench.codegen.attribute.with_replay_timed`).
Records, configs, rows and numbers are copied unchanged; the old version stays as it is
(baselines are immutable).

The one thing the batch changes besides: the recorded seconds (``ops_status.csv``) of
each op in scope that the batch ran PASS become the batch's (:func:`replay_durations`).
A baseline recorded without a replay pass (v7) holds its record pass's seconds,
autotune sweeps included: an H100 replayed v7's ``mm@test_mm.py`` in 29 s of its 243
recorded, ``addmv_`` in 11 s of 240 (docs/measurements.md, thirty-fourth session), and
the gate's budget, shard deal and forecast take those seconds for what its op path
costs. A replay pass's are what the op path runs, on the capturing runner's GPU (as
``baseline refresh`` keeps its first replay pass's, docs/baselines.md). Not those of a
batch that shared its GPU (``--gpu-share`` > 1), nor of one timed with other graph
budgets than a gate's op path (``--warmup-ms``, ``--replays``), which a capture may:
nothing it keeps depends on the timing (each launch is read at a measurement's first,
untimed call), but each op's seconds then are not what the op path costs
(:func:`durations_kept`).

What is checked, from the evidence, before anything is written:

- each batch replayed this baseline: its ``batch.json`` says replay, and the replay root
  it names is this baseline (a dir here whose ``manifest.yaml`` is this one's, byte for
  byte, or a capture version of it with the same records, :func:`capture_version_of`,
  or the unpacked copy of the same packed lock: ``trees/<lock digest>/<tree>``);
  anything else, or a dir given twice, is one line (exit 2);
- per op: the batch's run of it passed, in replay mode, and left a capture that is
  readable and names only kernels of this baseline's codegen records for that op
  (:func:`zlbench.gate.baselines.unknown_kernel_problem`); one that names another
  kernel ran a kernel the baseline did not record (another compiler, FlagGems, GPU or
  argument specialisation: on an H100, v5's ``cumsum``, recorded on an H200 with the
  same triton): that op gets no capture, and the outcome names it.

The new dir is a derived version (:func:`zlbench.runner.derived.derive_version`: the
manifest's content hashes recomputed, ``derived_from``, and ``summary.captures``
saying where the captures came from), written into a stage beside ``out``, checked as
``zlbench baseline verify`` checks a baseline, and only then renamed to ``out``: a
failure, or a baseline that does not verify, leaves nothing there.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from zlbench.codegen.attribute import with_replay_timed
from zlbench.codegen.request_diff import (
    KEY,
    PLACE,
    renamed,
    renamed_index,
    twins,
    why_not_held,
)
from zlbench.errors import ZlbenchError
from zlbench.gate.baselines import (
    check_out_outside_baseline,
    sha256_file,
    unknown_kernel_problem,
    unknown_kernels,
    verify,
)
from zlbench.gate.env import common_timing
from zlbench.gate.load import BaselineSet, load_baseline
from zlbench.gate.plan import baseline_scope
from zlbench.models import (
    BaselineManifest,
    BatchInfo,
    CodegenIndex,
    RunResult,
    RunStatus,
    Timing,
    TimingMethod,
    codegen_dir,
    load_codegen_index,
    load_json_model,
    load_yaml_model,
)
from zlbench.models.batch import read_ops_status
from zlbench.models.options import Measuring, Scheduling
from zlbench.models.packed import packed_label
from zlbench.models.paths import resolve_inside
from zlbench.models.replay import LAUNCHES_JSON, LaunchCapture
from zlbench.plugins.replay_capture import write_launches
from zlbench.protocol.layout import MANIFEST_YAML, OPS_STATUS, RESULT_JSON, op_key
from zlbench.protocol.ops import read_ops_file
from zlbench.runner.baseline_batch import baseline_durations, baseline_replay_config
from zlbench.runner.batch.config import REPLAY_OP_TIMEOUT_S, BatchConfig, BatchOutcome
from zlbench.runner.batch.info import read_batch_info
from zlbench.runner.batch.run import run_batch
from zlbench.runner.batch.status import write_ops_status
from zlbench.runner.derived import derive_version, shown_path, stage_beside
from zlbench.runner.refresh import RefreshConfig, check_out_free, run_pass

SUMMARY_KEY = "captures"
BATCH_DIR = "replay"  # the replay batch's dir inside --work

# Why an op of the new version has no capture (counted by these words)
NOT_ASKED = "not asked for (--ops / --ops-file)"
NOT_RUN = "not run by the batch"
NO_RESULT = "the batch's run of it left no readable result.json"
NOT_PASSED = "the batch's run of it did not pass"
NOT_REPLAYED = "the batch's run of it recorded instead of replaying"
NO_CAPTURE = "no launches.json in its run dir"
NO_RECORDS = "no codegen records in the baseline to check a capture against"
UNREADABLE = "its launches.json is unreadable"
FOREIGN = "names a kernel the baseline's codegen records do not hold"
# The ops that carry a capture of their own already keep it (not overwritten)
KEPT = "the baseline holds a capture of it already (kept)"


@dataclass
class CaptureJob:
    """What one ``zlbench baseline capture`` is asked to do. ``baseline``: B (a packed
    one already resolved to its unpacked copy by the CLI); ``out``: the new version;
    ``from_batches``: derive from those batch dirs (:func:`_choose`: an op two of them
    captured takes the last one's), else run one replay batch of B's ops into ``work``
    (None: a temp dir, removed at the end); ``ops`` / ``ops_file``: SPECs narrowing B's
    op set (``ops_dir``: the inventories they are read with). The rest is the replay
    batch's: FlagGems checkouts, CUDA_VISIBLE_DEVICES, argv; ``preflight`` checks
    the batch's config before any work (the CLI's); ``batch_runner``: a seam."""

    baseline: Path
    out: Path | None  # None: ``capture_batch`` only (``--batch-only``)
    from_batches: list[Path] = field(default_factory=list)
    work: Path | None = None
    ops: list[str] = field(default_factory=list)
    ops_file: Path | None = None
    ops_dir: Path | None = None
    flaggems_dirs: dict[str, Path] = field(default_factory=dict)
    cuda_visible_devices: str | None = None
    argv: list[str] = field(default_factory=list)
    progress: TextIO | None = None
    preflight: Callable[[BatchConfig], None] | None = None
    batch_runner: Callable[[BatchConfig], BatchOutcome] = run_batch
    op_timeout_s: float | None = None  # None: :func:`capture_op_timeout`; 0: no limit
    gpu_share: int = 1  # benchmark processes per GPU (--gpu-share): see replay_config
    warmup_ms: float | None = None  # graph-timing budgets (None: the plugin's default)
    replays: int | None = None
    untimed: bool = False  # each measurement two eager calls (TimingMethod.CAPTURE)
    # --replace: an op B holds a capture of takes the batches' when one captured it
    # soundly (ops captured again after the capture learnt more), else keeps B's
    replace: bool = False


@dataclass
class Captured:
    """What the step did: the ops given a capture and their capture rows, the ops
    without one (key -> one of the reasons above), the per-op lines of the captures
    left out as unsound (key -> the problem), and the batches it read."""

    batches: list[Path]
    replayed: str  # the baseline the batch replayed (its name)
    ops: list[str] = field(default_factory=list)
    rows: int = 0
    without: dict[str, str] = field(default_factory=dict)
    unsound: dict[str, str] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # --replace: B's capture replaced
    durations: int = 0  # ops whose recorded seconds became the batch's (replay_durations)
    durations_gpu: str | None = None  # the GPU model(s) those batches ran on, when said
    durations_kept: str | None = None  # why a batch's op seconds did not replace the recorded
    # op key -> its accepted capture as the new version holds it: its ids the baseline's
    # and each row's replay_timed from the batch's own codegen index (_why_not)
    accepted: dict[str, LaunchCapture] = field(default_factory=dict)
    # the ops captured with a kernel taken as the baseline's record of it but for an
    # address in its cache key, and but for its generated module's name and file
    # (request_diff.twins: KEY, PLACE)
    address_twins: list[str] = field(default_factory=list)
    generated_twins: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Ops without a capture, by reason, most first."""
        return dict(Counter(self.without.values()).most_common())

    def as_dict(self, infos: list[BatchInfo]) -> dict:
        """``summary.captures`` of the new manifest (``baseline show`` prints it); with
        several batches, each field that names one says each, comma-separated."""
        return {
            "from": ", ".join(shown_path(b) for b in self.batches),
            "replayed": self.replayed,
            "batch_created": _each(i.created for i in infos),
            "batch_host": _each(i.hostname for i in infos),
            "compiler": _each(_batch_compiler(i) for i in infos),
            "ops": len(self.ops),
            "rows": self.rows,
            "kept": len(self.kept),
            "replaced": sorted(self.replaced),
            "durations": self.durations,
            "durations_gpu": self.durations_gpu,
            "durations_kept": self.durations_kept,
            "without": self.counts(),
            "unsound": sorted(self.unsound),  # their lines: the command's output
            "address_twins": sorted(self.address_twins),
            "generated_twins": sorted(self.generated_twins),
        }


@dataclass
class CaptureOutcome:
    out: Path
    manifest: BaselineManifest
    captured: Captured
    verified_ops: int
    verified_rows: int


def capture(job: CaptureJob) -> CaptureOutcome:
    """Write ``job.out``: ``job.baseline`` plus the launch captures of replays of it
    (``job.from_batches``, else one replay batch run here). Bad input is one
    ZlbenchError line, before anything is written."""
    if job.out is None:
        raise ZlbenchError("give --out, the new version (or --batch-only with --work)")
    out = Path(job.out)
    check_out_free(out, "a capture")
    baseline = load_baseline(job.baseline)
    check_out_outside_baseline(out, baseline.path)
    scope = _scope(job, baseline)
    if job.from_batches:
        if job.work is not None:
            raise ZlbenchError(
                "--work is where the replay batch runs; with --from the batch has run: "
                "give one of them"
            )
        return derive(baseline, _distinct(job.from_batches), out, scope, job.replace)
    if job.work is not None:  # kept there, and resumed by the same command
        work = Path(job.work)
        check_out_outside_baseline(work, baseline.path)
        batch = replay_batch(job, baseline, scope, work / BATCH_DIR, resume=True)
        return derive(baseline, [batch], out, scope, job.replace)
    tmp = Path(tempfile.mkdtemp(prefix="zl-capture-"))
    try:
        batch = replay_batch(job, baseline, scope, tmp / BATCH_DIR, resume=False)
        return derive(baseline, [batch], out, scope, job.replace)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def capture_batch(job: CaptureJob) -> Path:
    """Only the replay batch of ``job`` (``--batch-only``): run in ``job.work``/replay,
    kept and resumed there, and no new version written. Its captures are derived
    later, on any machine, with ``--from`` it and the other batches of a capture taken
    over several calls: the derive copies and verifies the whole baseline, minutes of a
    device call for v7 (233 s after v7c's 210 s batch, thirty-eighth session)."""
    if job.work is None:
        raise ZlbenchError(
            "--batch-only runs the replay batch into --work DIR and stops: give --work"
        )
    if job.from_batches:
        raise ZlbenchError(
            "--batch-only runs a replay batch; --from takes batches that ran: give one of them"
        )
    if job.out is not None:
        raise ZlbenchError("--batch-only writes no new version: leave out --out")
    baseline = load_baseline(job.baseline)
    work = Path(job.work)
    check_out_outside_baseline(work, baseline.path)
    return replay_batch(job, baseline, _scope(job, baseline), work / BATCH_DIR, resume=True)


def _distinct(batches: list[Path]) -> list[Path]:
    """The ``--from`` dirs, each once (one given twice is one ZlbenchError line: which of
    its two places decides an op both name would be a guess)."""
    seen: dict[Path, Path] = {}
    for b in map(Path, batches):
        real = b.resolve()
        if real in seen:
            raise ZlbenchError(f"--from {b}: given twice (also as {seen[real]})")
        seen[real] = b
    return list(seen.values())


def _scope(job: CaptureJob, baseline: BaselineSet) -> set[str]:
    """B's op keys that ``--ops`` / ``--ops-file`` ask for (neither: all of them)."""
    specs = list(job.ops) or (read_ops_file(job.ops_file) if job.ops_file else None)
    known = None
    if job.ops_file is not None and not job.ops and job.ops_dir is not None:
        from zlbench.runner.catalog.inventory import inventory_op_keys

        known = inventory_op_keys(job.ops_dir)  # an ops file may be wider than B (a tier)
    source = "--ops" if job.ops else f"--ops-file {job.ops_file}"
    scope, _ = baseline_scope(baseline, specs, source=source, known=known)
    return set(baseline.ops) if scope is None else scope


# --------------------------------------------------------------------------- the replay batch


# An op of the capture's replay may take this many times the longest op the baseline
# recorded in scope, at least CAPTURE_TIMEOUT_MIN_S, at most the replay's own default.
# On an H100 v5's argsort hung in the capture pass for 7 minutes (of the replay's 15)
# after two ops had taken 1.7x and 2.7x their recorded (H200) seconds.
CAPTURE_TIMEOUT_FACTOR = 10.0
CAPTURE_TIMEOUT_MIN_S = 120.0


def capture_op_timeout(recorded: Mapping[str, float], scope: Collection[str]) -> float:
    """The per-op timeout of the capture's replay batch (the constants above): an op
    that hangs loses that op's capture, not the capture of the ops after it."""
    longest = max((recorded[k] for k in scope if k in recorded), default=0.0)
    bound = max(CAPTURE_TIMEOUT_MIN_S, CAPTURE_TIMEOUT_FACTOR * longest)
    return min(REPLAY_OP_TIMEOUT_S, bound)


def replay_config(
    job: CaptureJob, baseline: BaselineSet, scope: set[str], out_dir: Path
) -> BatchConfig:
    """The batch that replays ``scope`` of ``baseline`` as a gate measures it
    (:func:`zlbench.runner.baseline_batch.baseline_replay_config`), each op within
    ``job.op_timeout_s`` (None: :func:`capture_op_timeout` of the recorded seconds),
    ``job.gpu_share`` processes per GPU, timed with ``job.warmup_ms`` / ``job.replays``,
    or not timed at all (``job.untimed``: each measurement two eager calls in the GPU's
    shared turn, :data:`TimingMethod.CAPTURE`; the capture keeps the second's launches):
    what a launch captures does not depend on the timing (it is read at each
    measurement's untimed calls), so the processes may overlap their start-up, compiles
    and Python, and time with smaller budgets or none (their seconds then stay out of
    the baseline: :func:`durations_kept`)."""
    if job.ops_dir is None:
        raise ZlbenchError("the replay batch needs the ops dir (--ops-dir)")
    if job.untimed and (job.warmup_ms is not None or job.replays is not None):
        raise ZlbenchError(
            "--untimed runs no graph timing: --warmup-ms and --replays mean nothing with it"
        )
    timeout = job.op_timeout_s
    if timeout is None:
        timeout = capture_op_timeout(baseline_durations(baseline.path, per_dtype=False), scope)
    return baseline_replay_config(
        baseline,
        scope,
        out_dir,
        ops_dir=job.ops_dir,
        flaggems_dirs=job.flaggems_dirs,
        cuda_visible_devices=job.cuda_visible_devices,
        # never in row parts: each part compiles and loads its op's kernels again (topk's
        # parts each took about the whole op's time, docs/measurements.md), and a capture
        # has no timing of its own to spread
        measuring=Measuring(
            split_rows="off",
            timing_method=TimingMethod.CAPTURE if job.untimed else None,
            warmup_ms=job.warmup_ms,
            replays=job.replays,
        ),
        scheduling=Scheduling(op_timeout_s=timeout, gpu_share=job.gpu_share),
        progress=job.progress,
        argv=list(job.argv),
    )


def replay_batch(
    job: CaptureJob, baseline: BaselineSet, scope: set[str], out_dir: Path, resume: bool
) -> Path:
    """Run the replay batch of ``scope`` (the refresh's replay pass); its dir."""
    config = replay_config(job, baseline, scope, out_dir)
    if job.preflight is not None:
        job.preflight(config)
    cfg = RefreshConfig(
        out=out_dir,  # run_pass reads the batch's config only: the version is derive()'s
        batch=config,
        progress=job.progress,
        batch_runner=job.batch_runner,
    )
    what = f"replay of {baseline.manifest.name}'s records ({len(scope)} ops)"
    done = run_pass(cfg, out_dir, baseline.path, what, resume=resume, who="capture")
    if done.exit_code == 2:
        raise ZlbenchError(f"the replay batch {done.out_dir} measured nothing")
    return done.out_dir


# --------------------------------------------------------------------------- the new version


def derive(
    baseline: BaselineSet, batches: list[Path], out: Path, scope: set[str], replace: bool = False
) -> CaptureOutcome:
    """Write ``out``: ``baseline`` plus the sound captures of ``batches``, each a replay
    of it (or of a capture version of it: :func:`same_baseline`), the ones given later
    deciding an op several ran (:func:`_choose`, :func:`_take_durations`); ``replace``:
    theirs replace the baseline's own where they captured an op soundly."""
    infos = [replayed_info(batch, baseline) for batch in batches]
    found = _choose(baseline, batches, scope, replace)

    def add_captures(root: Path, manifest: BaselineManifest) -> tuple[str, dict]:
        for key in found.ops:
            write_launches(codegen_dir(root / key), found.accepted[key])
        _take_durations(found, root, baseline, list(zip(batches, infos, strict=True)), scope)
        return SUMMARY_KEY, found.as_dict(infos)

    stage = stage_beside(out)  # stale stages of killed writers of this name swept
    try:
        stage.mkdir()
        made = stage / out.name
        manifest = derive_version(baseline.path, made, out.name, add_captures)
        rep = verify(made, manifest)
        if not rep.ok:
            raise ZlbenchError(
                f"the new version does not verify ({len(rep.problems)} problem(s), first: "
                f"{rep.problems[0]}); nothing was written at {out}"
            )
        check_out_free(out, "a capture")  # nothing appeared there meanwhile
        os.rename(made, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return CaptureOutcome(out, manifest, found, rep.ops, rep.rows)


def _take_durations(
    found: Captured,
    root: Path,
    baseline: BaselineSet,
    batches: list[tuple[Path, BatchInfo]],
    scope: set[str],
) -> None:
    """The recorded seconds of ``root`` (the new version's copy) from each batch in turn
    whose seconds may replace them (:func:`durations_kept`), so that an op two of them
    ran takes the later's; ``found`` says how many ops, from which GPU models, and why
    the other batches' seconds were kept."""
    taken: set[str] = set()
    gpus, kept = [], []
    for batch, info in batches:
        why = durations_kept(info, baseline)
        if why is not None:
            kept.append(why)
            continue
        got = replay_durations(root, batch, scope)
        taken |= got
        gpus.append(_batch_gpu(info) if got else None)
    found.durations = len(taken)
    found.durations_gpu = _each(gpus) if taken else None
    found.durations_kept = _each(kept, "; ")


def durations_kept(info: BatchInfo, baseline: BaselineSet) -> str | None:
    """Why the batch's op seconds must not replace the recorded ones (None: they may),
    as its batch.json says: a batch that shared its GPU (``--gpu-share`` > 1) timed in
    turns, so each op's seconds hold its waits for the other processes' timing, which a
    gate's op path (one process per side) does not wait for; a batch whose
    environments recorded another Timing than :func:`op_path_timing` (other budgets,
    or another method) spent other seconds on each measurement. An environment that
    recorded no Timing is not a reason."""
    if info.gpu_share > 1:
        return (
            f"the batch shared its GPU (--gpu-share {info.gpu_share}): its op seconds hold "
            "waits for the GPU's turn, which a gate's op path does not"
        )
    gate = op_path_timing(baseline)
    timed = {_budgets(e.timing) for e in info.environments.values() if e.timing is not None}
    other = sorted(t.text() for t in timed - {gate})
    if other:
        return (
            f"the batch timed with other budgets ({'; '.join(other)}; a gate's op path: "
            f"{gate.text()}): its op seconds are not the op path's"
        )
    return None


def op_path_timing(baseline: BaselineSet) -> Timing:
    """How a gate's op path against ``baseline`` times, upstream's mode aside (the
    batch's is the baseline's, :func:`replay_config`): the Timing the baseline recorded,
    in its manifest or else the one its ops' result.json files agree on (a gate refuses
    another, :mod:`zlbench.gate.env`); else a gate's own defaults (no ``--warmup-ms`` /
    ``--replays``: the plugin's)."""
    recorded = baseline.manifest.timing_method or common_timing(baseline.ops.values())
    return _budgets(recorded or Timing())


def _budgets(timing: Timing) -> Timing:
    """``timing`` without upstream's mode: its method and budgets."""
    return timing.model_copy(update={"mode": None})


def replay_seconds(batch: Path) -> dict[str, float]:
    """Op key -> the seconds ``batch`` (a dir with an ops_status.csv) took for each op it
    ran PASS, a finite positive number: what a replay batch says its ops cost (one
    ZlbenchError line for a file that is not a valid ops_status.csv)."""
    return {
        op_key(st.repo, st.run_name): st.seconds
        for st in read_ops_status(batch / OPS_STATUS)
        if st.status is RunStatus.PASS and math.isfinite(st.seconds) and st.seconds > 0
    }


def replay_durations(root: Path, batch: Path, scope: Collection[str]) -> set[str]:
    """Rewrite ``root``'s ops_status.csv (a baseline's copy): each op of ``scope`` that
    ``batch`` ran PASS, with a finite positive number of seconds, takes the batch's
    seconds; every other column and op stays as recorded. A baseline without the file
    stays without (its shards keep the hash deal), and so does one when the batch has
    none. Returns the keys of the ops that took the batch's seconds. A file that is not a valid
    ops_status.csv is one ZlbenchError line (nothing is written: the caller's stage)."""
    own = root / OPS_STATUS
    if not own.is_file() or not (batch / OPS_STATUS).is_file():
        return set()
    measured = replay_seconds(batch)
    rows, taken = [], set()
    for st in read_ops_status(own):
        key = op_key(st.repo, st.run_name)
        if key in scope and key in measured:
            st = st.model_copy(update={"seconds": measured[key]})
            taken.add(key)
        rows.append(st)
    if taken:
        write_ops_status(root, rows)
    return taken


def replayed_info(batch: Path, baseline: BaselineSet) -> BatchInfo:
    """``batch``'s batch.json, when it says the batch replayed ``baseline``'s records
    (re-derived: :func:`same_baseline`); else one ZlbenchError line."""
    if not batch.is_dir():
        raise ZlbenchError(f"--from {batch}: not a dir (give a batch dir)")
    info = read_batch_info(batch)
    if info is None:
        raise ZlbenchError(f"--from {batch}: not a batch dir (no batch.json)")
    name = baseline.manifest.name
    if info.mode != "replay" or not info.replay_root:
        raise ZlbenchError(
            f"--from {batch}: a record batch (batch.json mode {info.mode}), not a replay "
            f"of {name}'s records"
        )
    why = same_baseline(Path(info.replay_root), baseline.path)
    if why is not None:
        raise ZlbenchError(
            f"--from {batch} replayed {info.replay_root}, not {name} ({baseline.path}): {why}"
        )
    return info


def same_baseline(replayed: Path, base: Path) -> str | None:
    """Why the replay root a batch names is not baseline ``base``; None when it is: a
    dir here whose manifest.yaml is ``base``'s byte for byte (the manifest hashes every
    file), or a capture version of it (:func:`capture_version_of`: the same records,
    which the batch replayed), or an unpacked copy of the same lock
    (``trees/<lock digest>/<tree>``, as the cache of the machine that ran the batch
    names it)."""
    mine = base / MANIFEST_YAML
    theirs = replayed / MANIFEST_YAML
    if theirs.is_file():
        if sha256_file(theirs) == sha256_file(mine) or capture_version_of(theirs, mine):
            return None
        return "another baseline (its manifest.yaml differs)"
    if packed_label(base) is not None and replayed.parts[-3:] == base.parts[-3:]:
        return None  # the same lock's digest and tree: the same packed baseline
    return "no such baseline here to compare with; run the command where it is"


def capture_version_of(theirs: Path, mine: Path) -> bool:
    """Whether manifest ``theirs`` is of a version that differs from ``mine``'s only as a
    capture derives one (``BaselineManifest.records_view`` without the seconds: the same
    records, rows and codegen indexes, so a replay of it pinned the same autotune
    choices and compiled the same kernels). Re-derived from both manifests (an
    unreadable one: False)."""
    try:
        a = load_yaml_model(theirs, BaselineManifest)
        b = load_yaml_model(mine, BaselineManifest)
    except ZlbenchError:
        return False
    return a.records_view(seconds=False) == b.records_view(seconds=False)


def _choose(
    baseline: BaselineSet, batches: list[Path], scope: set[str], replace: bool = False
) -> Captured:
    """Which ops get a batch's capture, and why the others do not. An op several
    batches ran takes the capture of the last one given that captured it soundly (a
    capture over device calls: an op run again later, after a fix of the capture,
    replaces its earlier capture); one that none captured says why by the last batch
    that ran it. An op the baseline holds a capture of keeps it, unless ``replace`` and
    a batch captured the op (in scope) soundly: then it takes that batch's."""
    found = Captured(batches=list(batches), replayed=baseline.manifest.name)
    for key in sorted(baseline.ops):
        own = baseline.path / key
        has_own = (codegen_dir(own) / LAUNCHES_JSON).is_file()
        if has_own and not (replace and key in scope):
            found.kept.append(key)
            continue
        if key not in scope:
            found.without[key] = NOT_ASKED
            continue
        why, unsound = NOT_RUN, None
        records = functools.cache(functools.partial(load_codegen_index, own))  # once an op
        for batch in reversed(batches):
            said: dict[str, str] = {}
            got = _why_not(key, records, batch, found, said)
            if got is None:
                found.ops.append(key)
                if has_own:
                    found.replaced.append(key)
                break
            if why == NOT_RUN:  # the last batch that ran it says why
                why, unsound = got, said.get(key)
        else:
            if has_own:  # --replace, and no batch captured it soundly: its own stays
                found.kept.append(key)
                continue
            found.without[key] = why
            if unsound is not None:
                found.unsound[key] = unsound
    return found


def _why_not(
    key: str,
    records: Callable[[], CodegenIndex | None],
    batch: Path,
    found: Captured,
    unsound: dict[str, str],
) -> str | None:
    """Why the batch's capture of ``key`` does not enter (None: it does, its rows
    counted in ``found``); the line of a capture left out as unsound into ``unsound``.
    ``records``: B's codegen index of the op (read at most once for all the batches)."""
    try:
        run_dir = resolve_inside(batch, key, f"--from {batch}: op")
    except ZlbenchError:
        return NOT_RUN
    if not run_dir.is_dir():
        return NOT_RUN
    try:
        result = load_json_model(run_dir / RESULT_JSON, RunResult)
    except ZlbenchError:
        return NO_RESULT
    if result.status is not RunStatus.PASS:
        return NOT_PASSED
    if result.mode != "replay":
        return NOT_REPLAYED
    path = codegen_dir(run_dir) / LAUNCHES_JSON
    if not path.is_file():
        return NO_CAPTURE
    index = records()
    if index is None:
        return NO_RECORDS
    try:
        capture = load_json_model(path, LaunchCapture)
    except ZlbenchError as e:
        unsound[key] = str(e)
        return UNREADABLE
    try:  # what the batch compiled: its own codegen index of the op, read once
        own, unread = load_codegen_index(run_dir), None
    except ZlbenchError as e:
        own, unread = None, e
    found_twins = twins(own, index) if own is not None else {}
    ids = {k: t.id for k, t in found_twins.items()}
    capture = renamed(capture, ids)
    problem = unknown_kernel_problem(path, capture, index)  # checked against B's index
    if problem is not None:
        why = (
            f"the batch's codegen index is unreadable ({unread})"
            if unread is not None
            else why_not_held(unknown_kernels(capture, index)[0], own, index)
        )
        unsound[key] = (
            f"{problem} ({found.replayed}'s records of this op): the batch compiled a "
            f"kernel {found.replayed} did not record: {why}"
        )
        return FOREIGN
    if unread is not None:  # a sound capture's rows need it (replay_timed): bad input
        raise unread
    if own is not None:  # each row with what the run launched while timed
        capture = with_replay_timed(capture, renamed_index(own, ids), {r.id for r in index.records})
    found.rows += len(capture.rows)
    found.accepted[key] = capture
    reasons = {why for t in found_twins.values() for why in t.reasons}
    if KEY in reasons:
        found.address_twins.append(key)
    if PLACE in reasons:
        found.generated_twins.append(key)
    return None


def _each(named: Iterable[str | None], sep: str = ", ") -> str | None:
    """The distinct names given, in their first order, ``sep``-joined (none: None)."""
    return sep.join(dict.fromkeys(n for n in named if n)) or None


def _batch_gpu(info: BatchInfo) -> str | None:
    """The GPU model the batch's environments name, when they name one."""
    named = sorted({e.gpu_model for e in info.environments.values() if e.gpu_model})
    return ", ".join(named) or None


def _batch_compiler(info: BatchInfo) -> str | None:
    """The compiler the batch's environments name (``dist version``), when they do."""
    named = sorted(
        {
            f"{e.triton_dist} {e.triton_version}"
            for e in info.environments.values()
            if e.triton_dist or e.triton_version
        }
    )
    return ", ".join(named) or None


__all__ = [
    "CaptureJob",
    "CaptureOutcome",
    "Captured",
    "capture",
    "capture_version_of",
    "derive",
    "replay_config",
    "replay_durations",
    "replay_seconds",
    "replayed_info",
    "same_baseline",
]

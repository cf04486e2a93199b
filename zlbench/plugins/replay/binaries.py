"""Both compilers' binaries of the replayed kernels: built, checked, loaded (issue 51).

**Building.** Each side compiles the recorded compile requests of the kernels a row
launches into a triton cache dir of its own, with the rebuild worker the codegen screen
runs (``python -m zlbench.plugins.compiler.rebuild INDEX OUT CACHE_DIR``, under the
stand-in driver for the recorded target, so no GPU is needed): the PR's side with this
interpreter, the base's with the base environment's (the caller passes its interpreter
and environment, ``zlbench.runner.ab.env.CompilerEnv``). The worker writes
``OUT/groups.json`` (kernel id -> the cache group dir's name, triton's hash of the
compile), so each kernel id names the group its binary is in (:func:`build_side`). It
runs with ``--no-sass``: a binary's check needs its code digest, not its disassembly,
which was most of a cache hit's cost.

**Checking.** A binary counts only when its code is the screen's: :func:`code_digest`
is the digest the screen gives a rebuild's cubin (``capture.code_sha256``, the
``cubin_code_sha256`` of the side's CompileRecord), and :func:`load_kernel` refuses a
group whose cubin has another (``ReplayError: replayed binary differs from the
screen's``) before any sample is taken.

**Loading** in the timing process (the PR's environment: one triton runtime and one
launcher for both sides): the request's JIT function is found as the rebuild finds it
(:class:`~zlbench.plugins.compiler.rebuild.Loader`), its ``ASTSource`` rebuilt
(``rebuild.ast_source``), and ``triton.compiler.compiler.CompiledKernel(src,
metadata_group, hash)`` constructed from the group's files (read where the group dir is
now, not where the group file says they were written), so ``kernel[grid](*args)``
launches that side's cubin through this runtime's launcher, every parameter in order
(constexprs included: the launcher skips them, as ``JITFunction.run`` passes them).
triton 3.6: ``CompiledKernel.__getitem__`` calls ``_init_handles``, which asks
``driver.active`` for the device, builds the launcher (``launcher_cls(src, metadata)``)
and loads the cubin (``utils.load_binary``). On a CPU host under the stand-in driver
with ``launch="skip"`` all of that runs and the launch does nothing (the tests use
this); with the default ``launch="error"`` loading raises. Only a GPU launches.

One runtime for both sides assumes the two compilers share the kernel ABI (the same
triton minor version, as a FlagTree PR and its base do): the base's metadata is read by
the PR's triton; a field the PR's launcher needs and the base's metadata lacks is a
ReplayError when the kernel is loaded.

:func:`check_args` guards what the binary was specialised on where the launch itself
depends on it: the number of arguments and 16-byte divisibility (pointers and
integers): an argument that breaks one would need another binary, so the row is not
replayed. A constexpr slot (``== 1`` integers included) is not checked: a
``CompiledKernel``'s launcher drops those slots, the binary has its own values baked in,
and the capture names the binary by the hash of the kernel that was launched. What a
launcher passed there can differ from what the kernel was compiled with: FlagGems'
``LibEntry`` passes the autotune config's ``PRE_LOAD_V=True`` to a flash-attention
kernel whose heuristic compiled it with ``False`` (an H100, 2026-12-06: 5 of v5's 25
flash-attention rows fell back on it); the replay launches the binary that ran, with the
grid and arguments it ran with, as the op did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zlbench.models import (
    CodegenIndex,
    CompileRecord,
    CompileRequest,
    CompilerIdentity,
    load_json_model,
)
from zlbench.models.base import dump_json_model
from zlbench.models.replay import BinaryRef, SideBuildTime
from zlbench.plugins.compiler import capture, rebuild
from zlbench.plugins.replay.materialize import ReplayError
from zlbench.protocol.compile_lines import read_lines

DIFFERS = "replayed binary differs from the screen's"
BUILD_TIMEOUT_S = 1800.0
LOG_TAIL = 3  # stderr lines kept in a failed build's error


# --------------------------------------------------------------------------- building


@dataclass
class SideBuild:
    """One side's binaries: kernel id -> its group (and the digest it must have), and
    kernel id -> why it has none (one line)."""

    refs: dict[str, BinaryRef] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    rebuilt: dict[str, CompileRecord] = field(default_factory=dict)  # id -> the build's record
    seconds: float = 0.0  # the side's wall
    started: float = 0.0  # time.monotonic() when it began
    parts: list[PartTime] = field(default_factory=list)  # per rebuild worker

    def timing(self, side: str, kernels: int) -> SideBuildTime:
        """Where this side's build went (its workers' end lines: ``rebuild.PHASES``;
        ``start``: a worker's wall beyond them). ``compiled``: kernels whose every stage
        ran (a cache hit runs none)."""
        phases: dict[str, float] = {}
        for part in self.parts:
            wall, got = part.wall, part.phases
            for k, v in {**got, "start": max(0.0, wall - sum(got.values()))}.items():
                phases[k] = round(phases.get(k, 0.0) + v, 3)
        spawned = [p.spawned - self.started for p in self.parts]
        ended = max((p.spawned + p.wall for p in self.parts), default=self.started)
        compiled = sum(
            1 for r in self.rebuilt.values() if r.result and "cubin" in (r.result.times or {})
        )
        return SideBuildTime(
            side=side,
            workers=len(self.parts),
            kernels=kernels,
            compiled=compiled,
            seconds=round(self.seconds, 3),
            slowest_s=round(max((p.wall for p in self.parts), default=0.0), 3),
            phases_s=phases,
            late_s=round(max(spawned, default=0.0), 3),
            after_s=round(max(0.0, self.started + self.seconds - ended) if self.parts else 0.0, 3),
        )


@dataclass
class PartTime:
    """One rebuild worker: when it was started (``time.monotonic()``), its wall seconds,
    and its end line's phase seconds (``rebuild.PHASES``)."""

    spawned: float
    wall: float
    phases: dict[str, float] = field(default_factory=dict)


def build_side(
    records: Sequence[CompileRecord],
    work: Path,
    cache_dir: Path,
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    expected: Mapping[str, str] | None = None,
    exec_generated: bool = False,
    timeout_s: float = BUILD_TIMEOUT_S,
    jobs: int = 1,
    in_cache: bool = False,
) -> SideBuild:
    """Compile ``records``' requests with the compiler of the environment ``python``
    (None: this interpreter) and ``env`` (None: this process's) into ``cache_dir``;
    ``work`` holds the worker's input and output (``work/part-<i>/`` each with
    ``jobs`` > 1: that many rebuild workers at once, the records dealt round-robin, one
    cache dir: triton writes a group whole or not at all). ``expected``: kernel id ->
    the screen's code digest of this side's cubin; a kernel built with another is
    refused (:data:`DIFFERS`), and a kernel's ref carries the screen's digest (without
    ``expected``, the build's own). A build that fails as a whole is every kernel of
    its part's error; nothing raises. ``in_cache``: compile in ``cache_dir`` itself, so a
    kernel already there (the screen's build of it, in the gate's shared cache) is a
    cache hit, not compiled again."""
    out = SideBuild()
    if not records:
        return out
    t0 = out.started = time.monotonic()
    n = max(1, min(jobs, len(records)))
    parts = (
        [(work, list(records))]
        if n == 1
        else [(work / f"part-{i}", list(records[i::n])) for i in range(n)]
    )
    # the parent's compiler identity once for the side, not once per part: reading it
    # walks every installed distribution's metadata under the GIL (importlib.metadata;
    # 16 threads at once 1.2 s on the CI machine's 41 distributions, the device has
    # ~200, torch's and jax's RECORDs among them). The likely cause, not yet confirmed
    # on a GPU, of each side's last worker starting 18-21 s late with 13-15 parts on an
    # H100's host (replay.json ``late_s``, docs/measurements.md, thirty-second session)
    compiler = capture.compiler_identity()
    args = (python, env, exec_generated, timeout_s, cache_dir, in_cache, compiler)
    if n == 1:
        built = [_build_part(*parts[0], *args)]
    else:
        with ThreadPoolExecutor(max_workers=n) as pool:  # each part is its own process
            built = list(pool.map(lambda p: _build_part(*p, *args), parts))
    out.seconds = time.monotonic() - t0
    for (_, part), (why, index, groups, timing) in zip(parts, built, strict=True):
        out.parts.append(timing)
        if why is not None:
            out.errors.update({r.id: why for r in part})
            continue
        by_id = {r.id: r for r in index.records}
        out.rebuilt.update(by_id)
        for rec in part:
            ref, err = _ref(rec.id, by_id.get(rec.id), groups, cache_dir,
                            (expected or {}).get(rec.id))  # fmt: skip
            if ref is not None:
                out.refs[rec.id] = ref
            else:
                out.errors[rec.id] = err or "not built"
    return out


def _build_part(
    work: Path,
    records: list[CompileRecord],
    python: str | None,
    env: Mapping[str, str] | None,
    exec_generated: bool,
    timeout_s: float,
    cache_dir: Path,
    in_cache: bool,
    compiler: CompilerIdentity,
) -> tuple[str | None, CodegenIndex, dict[str, str], PartTime]:
    """One rebuild worker over ``records``: (why the build failed as a whole or None,
    its index, kernel id -> cache group name, its :class:`PartTime`)."""
    work.mkdir(parents=True, exist_ok=True)
    index_in, rebuilt = work / "in.json", work / "out"
    dump_json_model(index_in, CodegenIndex(compiler=compiler, records=records))
    cmd = [python or sys.executable, "-m", "zlbench.plugins.compiler.rebuild", "--no-sass"]
    cmd += ["--exec-generated"] if exec_generated else []
    cmd += ["--in-cache"] if in_cache else []
    cmd += [str(index_in), str(rebuilt), str(cache_dir)]
    t0 = time.monotonic()
    why, phases = _run_build(cmd, env, timeout_s)
    timing = PartTime(spawned=t0, wall=time.monotonic() - t0, phases=phases)
    if why is None:
        try:
            index = load_json_model(rebuilt / "index.json", CodegenIndex)
            groups = json.loads((rebuilt / rebuild.GROUPS_JSON).read_text(encoding="utf-8"))
            return None, index, groups, timing
        except Exception as e:  # noqa: BLE001 - any unreadable output: the build failed
            why = f"build failed: {rebuild.first_line(e)}"
    return why, CodegenIndex(compiler=compiler), {}, timing


def _run_build(
    cmd: list[str], env: Mapping[str, str] | None, timeout_s: float
) -> tuple[str | None, dict[str, float]]:
    """Run one rebuild worker: (why it failed as a whole or None, the seconds of each
    phase its end line gives, ``rebuild.PHASES``)."""
    try:
        proc = subprocess.run(
            cmd,
            env=dict(env) if env is not None else None,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"build failed: {rebuild.first_line(e)}", {}
    end = read_lines(proc.stdout.splitlines(), rebuild.REBUILD_END).end
    if proc.returncode != 0 or end is None:
        tail = " | ".join(proc.stderr.strip().splitlines()[-LOG_TAIL:])
        return f"build failed (exit {proc.returncode}): {tail}".rstrip(": "), {}
    return None, _phases(end)


def _phases(end: Mapping[str, str]) -> dict[str, float]:
    """The phase seconds of a rebuild worker's end line (``<phase>_s=``); one that is
    missing or not a number is left out (a worker of an older zlbench)."""
    out = {}
    for name in rebuild.PHASES:
        try:
            out[name] = float(end[f"{name}_s"])
        except (KeyError, ValueError):
            continue
    return out


def _ref(
    kid: str,
    rec: CompileRecord | None,
    groups: Mapping[str, str],
    cache_dir: Path,
    expected: str | None,
) -> tuple[BinaryRef | None, str | None]:
    if rec is None:
        return None, "not built"
    if rec.error:
        return None, rec.error
    built = rec.result.cubin_code_sha256 if rec.result else None
    group = groups.get(kid)
    if not built or not group:
        return None, "no cubin in the build" if not built else "not put into the cache dir"
    if expected is not None and built != expected:
        return None, DIFFERS
    return BinaryRef(group_dir=str(Path(cache_dir) / group), code_digest=expected or built), None


# --------------------------------------------------------------------------- checking


def group_files(group_dir: str | os.PathLike) -> dict[str, str]:
    """The group's ``metadata_group`` ({file name: path}) as triton's CompiledKernel
    reads it, the paths under ``group_dir`` as it is now (a group file names the paths
    it was written at). ReplayError when the group is not complete there."""
    d = Path(group_dir)
    grps = sorted(d.glob("__grp__*.json"))
    if len(grps) != 1:
        raise ReplayError(f"cache group {d.name}: {len(grps)} group files (one expected)")
    try:
        children = json.loads(grps[0].read_text(encoding="utf-8"))["child_paths"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ReplayError(f"cache group {d.name}: unreadable: {rebuild.first_line(e)}") from None
    files = {name: str(d / name) for name in children}
    missing = sorted(n for n, p in files.items() if not os.path.isfile(p))
    if missing or not any(n.endswith(".json") for n in files):
        raise ReplayError(f"cache group {d.name}: missing {', '.join(missing) or 'metadata json'}")
    return files


def code_digest(group_dir: str | os.PathLike) -> str:
    """The code digest of the group's cubin: the screen's digest of a rebuild's cubin
    (``capture.code_sha256``: debug and line info left out). ReplayError without one."""
    return _cubin_digest(Path(group_dir).name, group_files(group_dir))


def _cubin_digest(group: str, files: Mapping[str, str]) -> str:
    """:func:`code_digest` of the group named ``group`` whose files are ``files``."""
    cubins = [p for n, p in files.items() if n.endswith(".cubin")]
    if len(cubins) != 1:
        raise ReplayError(f"cache group {group}: {len(cubins)} cubins (one expected)")
    digest = capture.code_sha256(Path(cubins[0]).read_bytes())
    if digest is None:
        raise ReplayError(f"cache group {group}: its cubin is not an ELF")
    return digest


def verify(ref: BinaryRef) -> dict[str, str]:
    """The group's files, once its cubin's code digest is the one ``ref`` expects
    (ReplayError :data:`DIFFERS` when not)."""
    files = group_files(ref.group_dir)
    if _cubin_digest(Path(ref.group_dir).name, files) != ref.code_digest:
        raise ReplayError(DIFFERS)
    return files


# --------------------------------------------------------------------------- loading


def load_kernel(ref: BinaryRef, request: CompileRequest, loader: rebuild.Loader) -> Any:
    """Side binary ``ref`` of ``request`` as a triton ``CompiledKernel`` of this runtime
    (module docstring), after :func:`verify`. ReplayError when its digest differs, its
    JIT function cannot be found here, or triton cannot construct it."""
    from triton.compiler.compiler import CompiledKernel

    files = verify(ref)
    try:
        fn = loader.function(request)
        src = rebuild.ast_source(request, fn)
    except Exception as e:  # noqa: BLE001 - any failure to find the kernel: not replayable
        raise ReplayError(f"load failed: {rebuild.first_line(e)}") from None
    try:
        kernel = CompiledKernel(src, files, Path(ref.group_dir).name)
    except Exception as e:  # noqa: BLE001 - a group this triton cannot read
        raise ReplayError(
            f"cache group {Path(ref.group_dir).name}: {rebuild.first_line(e)}"
        ) from None
    if capture.code_sha256(bytes(kernel.kernel)) != ref.code_digest:  # the bytes it loads
        raise ReplayError(DIFFERS)
    if kernel.name != request.kernel.name:
        raise ReplayError(f"cache group {Path(ref.group_dir).name} holds {kernel.name}, not "
                     f"{request.kernel.name}")  # fmt: skip
    return kernel


class Binaries:
    """The timing process's loaded kernels, each (kernel id, side, binary) loaded and
    checked once: ``get(kid, side, ref)``. Generated kernels' module text is executed only with
    ``exec_generated`` (a verified baseline's requests, docs/security.md)."""

    def __init__(self, requests: Mapping[str, CompileRequest], exec_generated: bool = False):
        self.requests = requests
        self._tmp = tempfile.TemporaryDirectory(prefix="zl-replay-")
        self.loader = rebuild.Loader(Path(self._tmp.name), exec_generated)
        self.loaded: dict[tuple[str, str, str, str], Any] = {}

    def get(self, kid: str, side: str, ref: BinaryRef) -> Any:
        key = (kid, side, ref.group_dir, ref.code_digest)
        if key not in self.loaded:
            request = self.requests.get(kid)
            if request is None:
                raise ReplayError(f"kernel {kid}: no compile request in the plan")
            self.loaded[key] = load_kernel(ref, request, self.loader)
        return self.loaded[key]

    def close(self) -> None:
        self._tmp.cleanup()


def launcher_key(kernel: Any) -> str:
    """What triton's launcher for ``kernel`` (a CompiledKernel) is generated from: its
    signature, its constants and its tensor descriptors' metadata (two kernels of one
    key share one compiled launcher, ``__triton_launcher``)."""
    src, meta = kernel.src, kernel.metadata
    parts = (src.signature, getattr(src, "constants", {}), getattr(meta, "tensordesc_meta", None))
    return repr(parts)


def prebuild_launchers(kernels: Sequence[Any], jobs: int, build: Any = None) -> int:
    """Compile the launchers of ``kernels`` (loaded CompiledKernels) into triton's cache,
    one per :func:`launcher_key`, ``jobs`` at once; how many were asked for. A kernel's
    first launch otherwise builds its launcher with the C compiler, one after another
    in the timing process: ~0.3 s each on a fresh H100 host (10 for the v7 slice; v7's
    6,922 kernels have ~475), a cache hit after (docs/measurements.md, thirty-sixth
    session). ``build``: the launcher class (None: ``driver.active.launcher_cls``). A
    failure is left to that kernel's first launch, which meets it again."""
    if build is None:
        from triton.runtime import driver

        build = driver.active.launcher_cls
    one: dict[str, Any] = {}
    for k in kernels:
        one.setdefault(launcher_key(k), k)

    def make(kernel: Any) -> None:
        try:
            build(kernel.src, kernel.metadata)
        except Exception:  # noqa: BLE001 - the first launch says why, in its row
            pass

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # the C compiler's processes
        list(pool.map(make, one.values()))
    return len(one)


def launch(kernel: Any, grid: Sequence[int], args: Sequence[Any]) -> None:
    """One launch of a loaded side binary on the current stream (every parameter in
    order, constexprs included)."""
    kernel[tuple(grid)](*args)


# --------------------------------------------------------------------------- specialisation


def check_args(request: CompileRequest, args: Sequence[Any]) -> None:
    """ReplayError unless ``args`` (every parameter in order) fit what the binary was
    compiled for: as many as its signature, and each argument compiled as 16-byte
    divisible (a pointer's address, an integer's value) divisible. An argument that
    breaks one would make triton compile another binary; launching this one with it
    would be wrong. Constexpr slots are not compared (module docstring)."""
    names = list(request.signature)
    if len(args) != len(names):
        raise ReplayError(
            f"{len(args)} arguments for {request.kernel.name}'s {len(names)} parameters"
        )
    for a in request.attrs:
        if len(a.path) != 1 or not 0 <= a.path[0] < len(args):
            continue
        if ["tt.divisibility", 16] in a.attrs:
            value = args[a.path[0]]
            at = value.data_ptr() if hasattr(value, "data_ptr") else value
            if isinstance(at, int) and at % 16:
                raise ReplayError(f"argument {names[a.path[0]]} is not 16-byte divisible where "
                             "the binary assumes it")  # fmt: skip

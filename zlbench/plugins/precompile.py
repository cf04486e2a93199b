"""Precompile worker: compile recorded kernels into a triton cache dir, without a GPU
(docs/screening.md, "Precompile").

A measured run spends most of its GPU time compiling kernels in a fresh triton cache,
one at a time, while the GPU waits. The baseline's codegen records
(``<op>/codegen/index.json``, docs/codegen.md) hold every compile request an op made:
compiled here, under the stand-in driver for the recorded target, with
``triton.knobs.cache.dir`` set to the op's cache dir, each lands in triton's cache at
the key the benchmark process will ask for (same function source, signature,
constexprs, specialisation, options and target), so the benchmark process finds it
there (the listener reports a cache hit) and only loads it.

Entry point (one process; run several on shards for parallelism)::

    python -m zlbench.plugins.precompile INDEX_JSON CACHE_DIR [--shard K/N]

speaks the compile pool's line protocol (:mod:`zlbench.protocol.compile_lines`): per
kernel as it is done ``ZLBENCH_COMPILED <id> ok`` or ``ZLBENCH_COMPILED <id> failed
<error>``, then ``ZLBENCH_PRECOMPILE kernels=N failed=F seconds=S``. Exit 0 even when kernels fail
(the benchmark then compiles them itself, as without precompile); exit 2 with one line
on stderr for unusable input. Shards are ``K/N`` with 0 <= K < N (record i goes to
shard i % N), as the rebuild worker's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.models import CodegenIndex, CompileRecord, load_json_model
from zlbench.plugins.compiler import standin as standin_mod
from zlbench.plugins.compiler.rebuild import (
    Loader,
    compile_request,
    first_line,
    select,
    target_spec,
)
from zlbench.plugins.sweep import parse_sweep_shard
from zlbench.protocol.compile_lines import PRECOMPILE_END, write_end, write_item


def precompile_one(rec: CompileRecord, loader: Loader) -> str | None:
    """Compile one recorded request into the current triton cache; the error, or None."""
    try:
        fn = loader.function(rec.request)
    except Exception as e:  # noqa: BLE001 - a kernel that cannot load is compiled later
        return f"load failed: {first_line(e)}"
    try:
        with standin_mod.standin(target_spec(rec.request)):
            compile_request(rec.request, fn)
    except Exception as e:  # noqa: BLE001 - a kernel that does not compile is left out
        return f"compile failed: {first_line(e)}"
    return None


def precompile_index(
    index: CodegenIndex,
    cache_dir: Path,
    shard: tuple[int, int] | None = None,
    exec_generated: bool = False,
    on_item: Callable[[str, str | None], None] | None = None,
) -> dict[str, str]:
    """Compile (a shard of) ``index`` into ``cache_dir``; ``{record id: error}`` of
    failures (``on_item(id, error or None)`` as each kernel is done). A generated
    kernel's recorded module text is executed only with ``exec_generated`` (the records
    are a verified baseline's); else such a kernel is left to the benchmark process,
    which generates its own (docs/security.md)."""
    import triton

    cache_dir.mkdir(parents=True, exist_ok=True)
    triton.knobs.cache.dir = str(cache_dir)
    failed: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="zl-precompile-") as tmp:
        loader = Loader(Path(tmp) / "generated", exec_generated=exec_generated)
        for rec in select(index.records, shard):
            error = precompile_one(rec, loader)
            if error:
                failed[rec.id] = error
            if on_item is not None:
                on_item(rec.id, error or None)
    return failed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m zlbench.plugins.precompile")
    p.add_argument("index", help="a codegen index.json (CodegenIndex)")
    p.add_argument("cache_dir", help="the triton cache dir to fill")
    p.add_argument("--shard", default=None, metavar="K/N", help="records i with i %% N == K")
    p.add_argument(
        "--exec-generated",
        action="store_true",
        help="execute generated kernels' recorded module text (a verified baseline's only)",
    )
    args = p.parse_args(argv)
    t0 = time.monotonic()
    try:
        shard = parse_sweep_shard(args.shard, "--shard") if args.shard else None
        index = load_json_model(args.index, CodegenIndex)
        cache_dir = Path(args.cache_dir)
        failed = precompile_index(index, cache_dir, shard, args.exec_generated, write_item)
    except ZlbenchError as e:
        print(f"zlbench: {e}", file=sys.stderr)
        return 2
    n = len(select(index.records, shard))
    secs = f"{time.monotonic() - t0:.2f}"
    write_end(PRECOMPILE_END, kernels=n, failed=len(failed), seconds=secs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

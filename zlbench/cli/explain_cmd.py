"""`zlbench explain RESULTS_DIR --op OP`: for one op, the kernels its rows launched
with their codegen status, first differing stage, resource deltas and diff file."""

from __future__ import annotations

import os
from pathlib import Path

from zlbench.codegen.explain import explain_op
from zlbench.codegen.screen import SCREEN_JSON
from zlbench.errors import ZlbenchError
from zlbench.gate.plan import suggest_op
from zlbench.models.base import load_json_model
from zlbench.models.codegen_screen import CodegenScreen
from zlbench.models.verdict import GateVerdict
from zlbench.protocol.layout import CODEGEN_SCREEN_DIR, VERDICT_JSON, op_key
from zlbench.protocol.ops import select_keys, spec_matches, spec_of
from zlbench.report.escape import log_line

# Where a codegen screen lives inside a results dir: its own out dir, or the
# gate output dir's codegen/ sub-dir.
SCREEN_PLACES = (SCREEN_JSON, f"{CODEGEN_SCREEN_DIR}/{SCREEN_JSON}")


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="one op's kernels and what the codegen screen found")
    p.add_argument("results", metavar="RESULTS_DIR", help="gate output dir or codegen out dir")
    p.add_argument("--op", required=True, metavar="OP", help="op selector, run name or repo/run")
    p.add_argument("--screen", metavar="FILE", help="codegen.json (default: in RESULTS_DIR)")
    p.set_defaults(func=_run)


def find_screen(results: Path, screen: str | None) -> Path:
    if screen is not None:
        path = Path(screen)
        return path / SCREEN_JSON if path.is_dir() else path
    for rel in SCREEN_PLACES:
        if (results / rel).is_file():
            return results / rel
    raise ZlbenchError(
        f"{results}: no codegen screen ({' or '.join(SCREEN_PLACES)}); "
        "run `zlbench codegen --baseline B --out DIR` or pass --screen"
    )


def op_spec(spec: str, screen: CodegenScreen, rows) -> str:
    """``spec`` as given when it names an op of the screen or the verdict exactly; a
    plain op name that fits one op: that op's SPEC (``bmm`` -> ``bmm@test_bmm.py``);
    several: one line listing them (:func:`zlbench.protocol.ops.select_keys`); none: a
    close match when there is one."""
    keys = {o for k in screen.kernels for o in k.ops}
    keys |= {op_key(r.key.repo, r.key.run_name) for r in rows or ()}
    if any(spec_matches(spec, k) for k in keys):
        return spec
    found = select_keys(spec, keys, " in the codegen screen")
    if len(found) == 1:
        return spec_of(next(iter(found)))
    if not any(r.key.op == spec for r in rows or ()) and (near := suggest_op(spec, keys)):
        raise ZlbenchError(f"op {spec!r}: no row or kernel of it (did you mean {near!r}?)")
    return spec


def _run(args) -> int:
    results = Path(args.results)
    if not results.is_dir():
        raise ZlbenchError(f"{results}: results dir not found")
    path = find_screen(results, args.screen)
    screen = load_json_model(path, CodegenScreen)
    verdict_file = results / VERDICT_JSON
    rows = load_json_model(verdict_file, GateVerdict).rows if verdict_file.is_file() else None
    diff_root = str(path.parent) + os.sep
    print(log_line(explain_op(screen, op_spec(args.op, screen, rows), rows, diff_root)), end="")
    return 0

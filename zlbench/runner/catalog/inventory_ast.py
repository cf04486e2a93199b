"""AST reading of one FlagGems benchmark module (no import, no GPU).

Mirrors how upstream's ``benchmark/conftest.py`` names an op: the first mark
of ``item.iter_markers()`` that is not a builtin one. pytest lists a
function's own marks bottom decorator first, then the marks of its
``pytest.param`` (``marks=``), then the module's ``pytestmark``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Marks that are not an op id (upstream benchmark/conftest.py BUILTIN_MARKS).
BUILTIN_MARKS = frozenset(
    {
        "parametrize",
        "skip",
        "skipif",
        "xfail",
        "usefixtures",
        "filterwarnings",
        "timeout",
        "tryfirst",
        "trylast",
    }
)


@dataclass(frozen=True)
class Mark:
    name: str
    args: tuple[ast.expr, ...] = ()
    kwargs: tuple[tuple[str, ast.expr], ...] = ()

    def kw(self, name: str) -> ast.expr | None:
        return dict(self.kwargs).get(name)


@dataclass(frozen=True)
class ScannedTest:
    """One selectable test (a function, or one ``pytest.param`` of it)."""

    op: str
    function: str
    param_id: str  # "" for the whole function
    op_name: str
    bench_class: str
    skip: str


def dotted_tail(node: ast.expr) -> str:
    """``a.b.C`` -> ``C``; ``C`` -> ``C``; anything else -> ""."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return node.id if isinstance(node, ast.Name) else ""


def as_mark(node: ast.expr) -> Mark | None:
    """``pytest.mark.X`` / ``pytest.mark.X(...)`` (or ``mark.X``) -> Mark."""
    call = node if isinstance(node, ast.Call) else None
    target = call.func if call else node
    name = _dotted(target)
    parts = name.split(".")
    if len(parts) < 2 or parts[-2] != "mark" or (len(parts) > 2 and parts[-3] != "pytest"):
        return None
    if call is None:
        return Mark(parts[-1])
    kwargs = tuple((k.arg, k.value) for k in call.keywords if k.arg)
    return Mark(parts[-1], tuple(call.args), kwargs)


def marks_of(node: ast.expr | None) -> list[Mark]:
    """A mark, or a list/tuple of marks (``marks=`` / ``pytestmark =``)."""
    if node is None:
        return []
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    return [m for m in map(as_mark, items) if m is not None]


def _const_str(node: ast.expr | None) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _reason(m: Mark, first_arg: int) -> str:
    text = _const_str(m.kw("reason"))
    if not text and len(m.args) > first_arg:
        text = _const_str(m.args[first_arg])
    return text or m.name


def skip_reason(marks: list[Mark]) -> str:
    """Reason of an unconditional skip among ``marks``: skip, or skipif(<true constant>)."""
    for m in marks:
        if m.name == "skip":
            return _reason(m, 0)
        if m.name == "skipif" and m.args:
            cond = m.args[0]
            if isinstance(cond, ast.Constant) and cond.value and not isinstance(cond.value, str):
                return _reason(m, 1)
    return ""


def body_skip(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``pytest.skip(...)`` as the first statement of the body (after a docstring)."""
    body = list(func.body)
    if body and isinstance(body[0], ast.Expr) and _const_str(body[0].value):
        body = body[1:]
    if not body or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
        return ""
    call = body[0].value
    if _dotted(call.func) not in ("pytest.skip", "skip"):
        return ""
    reason = _const_str(call.args[0]) if call.args else _const_str(_kw(call, "reason"))
    return reason or "pytest.skip"


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _op_name_arg(call: ast.Call) -> ast.expr | None:
    """The op_name argument of a Benchmark call: ``op_name=`` or the first positional
    (upstream ``Benchmark.__init__(self, op_name, torch_op, ...)``)."""
    kw = _kw(call, "op_name")
    if kw is not None:
        return kw
    first = call.args[0] if call.args else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first
    return None


def bench_call(func: ast.AST, class_ops: dict[str, str] | None = None) -> tuple[str, str]:
    """(literal op_name, class name) of the Benchmark constructed in ``func``.

    The op_name is a keyword, the first positional argument of a ``...Benchmark(``
    call, or (``class_ops``) the one a class of the module passes to
    ``super().__init__``."""
    fallback = ("", "")
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        cls = dotted_tail(node.func)
        named = cls.endswith("Benchmark")
        op_name = _kw(node, "op_name") if not named else _op_name_arg(node)
        if op_name is not None:
            return _const_str(op_name), cls if cls[:1].isupper() else ""
        if named and (class_ops or {}).get(cls):
            return (class_ops or {})[cls], cls
        if named and fallback == ("", ""):
            fallback = ("", cls)
    return fallback


def class_op_names(tree: ast.Module) -> dict[str, str]:
    """Classes of a module that pass a literal op_name to ``super().__init__``."""
    out: dict[str, str] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "__init__"
                and isinstance(node.func.value, ast.Call)
                and dotted_tail(node.func.value.func) == "super"
            ):
                name = _const_str(_op_name_arg(node))
                if name:
                    out[cls.name] = name
                    break
    return out


def module_marks(tree: ast.Module) -> list[Mark]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            return marks_of(node.value)
    return []


@dataclass(frozen=True)
class Param:
    """One ``pytest.param`` with marks of a single ``parametrize``."""

    param_id: str
    marks: list[Mark]
    values: dict[str, ast.expr]


def _argnames(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [a.strip() for a in node.value.split(",") if a.strip()]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_const_str(e) for e in node.elts]
    return []


def _value_id(node: ast.expr, argname: str, idx: int) -> str:
    """pytest's id for one parameter value (functions and classes give their name)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool)):
        return str(node.value)
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    return dotted_tail(node) or f"{argname}{idx}"


def _param_set(item: ast.expr, names: list[str]) -> tuple[list[ast.expr], list[Mark], str]:
    if isinstance(item, ast.Call) and _dotted(item.func) in ("pytest.param", "param"):
        return list(item.args), marks_of(_kw(item, "marks")), _const_str(_kw(item, "id"))
    if len(names) > 1 and isinstance(item, (ast.Tuple, ast.List)):
        return list(item.elts), [], ""
    return [item], [], ""


def marked_params(m: Mark) -> list[Param]:
    """The params of a ``parametrize`` mark that carry a non-builtin mark."""
    if len(m.args) < 2 or not isinstance(m.args[1], (ast.List, ast.Tuple)):
        return []
    names = _argnames(m.args[0])
    ids = m.kw("ids")
    given = [_const_str(e) for e in ids.elts] if isinstance(ids, (ast.List, ast.Tuple)) else []
    out = []
    for idx, item in enumerate(m.args[1].elts):
        values, marks, pid = _param_set(item, names)
        if not any(x.name not in BUILTIN_MARKS for x in marks):
            continue
        if not pid:
            pid = given[idx] if idx < len(given) and given[idx] else ""
        if not pid:
            pid = "-".join(_value_id(v, n, idx) for v, n in zip(values, names, strict=False))
        out.append(Param(pid, marks, dict(zip(names, values, strict=False))))
    return out


def _ops(marks: list[Mark]) -> list[str]:
    return [m.name for m in marks if m.name not in BUILTIN_MARKS]


def _scan_function(func, mod: list[Mark], class_ops: dict[str, str]) -> list[ScannedTest]:
    own = [m for m in map(as_mark, reversed(func.decorator_list)) if m is not None]
    skip = skip_reason(own) or skip_reason(mod) or body_skip(func)
    op_name, bench_class = bench_call(func, class_ops)
    if _ops(own):
        return [ScannedTest(_ops(own)[0], func.name, "", op_name, bench_class, skip)]
    parametrizes = [m for m in own if m.name == "parametrize"]
    params = [p for m in parametrizes for p in marked_params(m)]
    if params and len(parametrizes) == 1:
        return [_param_test(func.name, p, op_name, bench_class, skip) for p in params]
    if _ops(mod):
        return [ScannedTest(_ops(mod)[0], func.name, "", op_name, bench_class, skip)]
    return []


def _param_test(name: str, p: Param, op_name: str, bench_class: str, skip: str) -> ScannedTest:
    op_name = _const_str(p.values.get("op_name")) or op_name
    classes = [dotted_tail(v) for v in p.values.values() if dotted_tail(v).endswith("Benchmark")]
    return ScannedTest(
        op=_ops(p.marks)[0],
        function=name,
        param_id=p.param_id,
        op_name=op_name,
        bench_class=classes[0] if classes else bench_class,
        skip=skip or skip_reason(p.marks),
    )


def scan_module(tree: ast.Module) -> list[ScannedTest]:
    """Selectable tests of one module, in source order (top-level ``test*`` functions)."""
    mod = module_marks(tree)
    class_ops = class_op_names(tree)
    out: list[ScannedTest] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            out += _scan_function(node, mod, class_ops)
    return out

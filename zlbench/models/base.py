"""What every on-disk model shares: the base classes, the format versions and their
upgrades, the loaders and the atomic writers.

Every model written as a file of its own is an :class:`OnDisk` model: it declares
its own ``FORMAT_VERSION`` (the version this zlbench writes, as its
``schema_version`` field) independent of every other format. The loaders read a
file's version, upgrade an older one step by step to the current one (the pure
``dict -> dict`` functions registered with :func:`upgrade_from`), refuse a newer
one, and turn any problem of reading or validating into one
:class:`~zlbench.errors.ZlbenchError` line (docs/contributing.md "Changing an
on-disk format"). The writers never leave a half-written file. The models
themselves live in the sibling modules.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticSerializationError

from zlbench.errors import ZlbenchError

REPOS = ("main", "vllm")
# Python package that each repo label imports.
REPO_PACKAGES = {"main": "flag_gems", "vllm": "flaggems_vllm"}
# Environment variable that names each repo's FlagGems checkout.
FLAGGEMS_DIR_VARS = {"main": "ZLBENCH_FLAGGEMS_DIR", "vllm": "ZLBENCH_FLAGGEMS_VLLM_DIR"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


# An upgrade of one format from version N to N+1: a pure function of the file's data
# (a new dict; the loader then sets ``schema_version`` to N+1).
Upgrade = Callable[[dict[str, Any]], dict[str, Any]]
_UPGRADES: dict[type[BaseModel], dict[int, Upgrade]] = {}


class OnDisk(_Model):
    """A model written as a file of its own: its format has its own version.

    A subclass declares ``FORMAT_VERSION: ClassVar[int] = N`` (the version this
    zlbench writes) and ``schema_version: int = FORMAT_VERSION``; ``UNVERSIONED`` is
    the version of a file without ``schema_version`` (1 for the formats that carried
    the field from the start; 0 for autotune records, which had none). An older
    file is upgraded by the functions registered with :func:`upgrade_from`."""

    FORMAT_VERSION: ClassVar[int]
    UNVERSIONED: ClassVar[int] = 1

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        version = cls.__dict__.get("FORMAT_VERSION")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise TypeError(f"{cls.__name__}: an on-disk model declares its own FORMAT_VERSION")
        field = cls.model_fields.get("schema_version")
        if field is None or field.default != version:
            raise TypeError(f"{cls.__name__}: schema_version must default to FORMAT_VERSION")


_M = TypeVar("_M", bound=BaseModel)


def upgrade_from(model: type[OnDisk], version: int) -> Callable[[Upgrade], Upgrade]:
    """Register the upgrade of ``model``'s format from ``version`` to ``version + 1``
    (a decorator; one function per step, each step below FORMAT_VERSION)."""

    def register(fn: Upgrade) -> Upgrade:
        steps = _UPGRADES.setdefault(model, {})
        if version in steps or not 0 <= version < model.FORMAT_VERSION:
            raise ValueError(f"{model.__name__}: no upgrade from version {version} to register")
        steps[version] = fn
        return fn

    return register


def upgrades(model: type[BaseModel]) -> dict[int, Upgrade]:
    """The registered upgrades of ``model``'s format: {from version: function}."""
    return dict(_UPGRADES.get(model, {}))


def _short_error(path: Path, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e.get("loc", ())) or "(top level)"
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{path}: field '{loc}': {e.get('msg')}{more}"


def upgrade(path: str | os.PathLike, model: type[_M], data: Any) -> Any:
    """``data`` read from ``path`` as ``model``'s current format version: an older
    version upgraded step by step, a newer or unknown one (or a version that is not an
    integer) one ZlbenchError line. Data that is no object, or a model that is no
    :class:`OnDisk` format, comes back as it is (the validation says what is wrong)."""
    current = getattr(model, "FORMAT_VERSION", None)
    if not isinstance(data, dict) or current is None:
        return data
    v = data.get("schema_version", model.UNVERSIONED)
    if isinstance(v, bool) or not isinstance(v, int):
        # "1" (a string), 1.0, true: not a version number, whatever it compares equal to
        raise ZlbenchError(
            f"{path}: field 'schema_version': {v!r} is not an integer "
            f"(write schema_version: {current})"
        )
    name = model.__name__
    if v > current:
        raise ZlbenchError(
            f"{path}: schema_version {v} is not supported (written by a newer zlbench; "
            f"this one reads {name} up to version {current})"
        )
    steps = _UPGRADES.get(model, {})
    if any(step not in steps for step in range(v, current)):
        oldest = current
        while oldest - 1 in steps:
            oldest -= 1
        since = f", upgraded from version {oldest}" if oldest < current else ""
        raise ZlbenchError(
            f"{path}: schema_version {v} is not supported "
            f"(this zlbench reads {name} version {current}{since})"
        )
    for step in range(v, current):
        data = {**steps[step](dict(data)), "schema_version": step + 1}
    return data


def read_regular(path: str | os.PathLike) -> bytes:
    """A regular file's bytes. Anything else (a FIFO, whose reading would wait for a
    writer forever; a device such as /dev/zero, endless; a dir) raises OSError
    ("not a regular file") before a byte is read: opened without blocking, checked by
    its own descriptor (no window between the check and the read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike, missing: str = "file not found") -> str:
    """A file's text; a missing (``<path>: <missing>``), unreadable, non-regular (a
    FIFO: never waited on) or non-UTF-8 file is one ZlbenchError line."""
    path = Path(path)
    try:
        text = read_regular(path).decode("utf-8")
    except FileNotFoundError:
        raise ZlbenchError(f"{path}: {missing}") from None
    except OSError as e:
        raise ZlbenchError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ZlbenchError(f"{path}: cannot read: not UTF-8 text ({e.reason})") from None
    # newlines as a text-mode read gives them (universal newlines)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


# Every model nests a handful of levels; an artifact nested deeper is refused before
# the validators see it, one nested past the parsers' recursion limit as well (issue 26).
MAX_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_surrogates(text: str) -> str:
    """``text`` with lone surrogates (``\\ud800`` in a JSON or YAML escape: not a
    character, no UTF-8 writer takes it) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _clean(data: Any, path: Path, depth: int = 0, seen: dict | None = None) -> Any:
    """``data`` with every string cleaned of surrogates; deeper than MAX_DEPTH: one line.
    A dict or list reached twice (a graph, not a tree: YAML aliases) is cleaned once per
    depth (``seen``: (id, depth) -> its copy), so a "billion laughs" costs its nodes,
    not its expansion."""
    if isinstance(data, str):
        return clean_surrogates(data)
    if not isinstance(data, dict | list):
        return data
    if depth >= MAX_DEPTH:
        raise ZlbenchError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a zlbench file")
    seen = {} if seen is None else seen
    key = (id(data), depth)
    if key in seen:
        return seen[key][1]
    if isinstance(data, dict):
        out: Any = {
            _clean(k, path, depth, seen): _clean(v, path, depth + 1, seen) for k, v in data.items()
        }
    else:
        out = [_clean(v, path, depth + 1, seen) for v in data]
    seen[key] = (data, out)  # data kept: its id is not reused while seen lives
    return out


# A JSON text yields a lone surrogate only from one in the text or a \uD800-\uDFFF
# escape: without either, parse_json only checks the depth (no copy of every string).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _may_hold_surrogates(text: str) -> bool:
    return bool(
        ("\\u" in text and _SURROGATE_ESCAPE.search(text))
        or (not text.isascii() and _SURROGATE.search(text))
    )


def _check_depth(data: Any, path: Path, depth: int = 0) -> None:
    """:func:`_clean`'s depth rule alone: one line for data nested deeper than MAX_DEPTH."""
    if depth >= MAX_DEPTH:
        raise ZlbenchError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a zlbench file")
    for v in data.values() if isinstance(data, dict) else data:
        if isinstance(v, dict | list):
            _check_depth(v, path, depth + 1)


class _DuplicateKey(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise _DuplicateKey(k)
        d[k] = v
    return d


class _Alias(ValueError):
    pass


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` for zlbench's own files (manifests, accept and thresholds
    files): refuses a mapping holding one key twice (PyYAML keeps the last: an accept
    entry read by a reviewer at its first value would take another) and every alias
    (``*name``): no zlbench file needs one, and nested aliases ("billion laughs")
    expand exponentially in whatever walks the data."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Alias(
                f"YAML alias *{str(event.anchor)[:40]} (line {event.start_mark.line + 1}): "
                "a zlbench file uses no anchors or aliases"
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    dup = key in seen
                    seen.add(key)
                except TypeError:  # unhashable: the base class says so
                    continue
                if dup:
                    raise _DuplicateKey(
                        f"key {str(key)[:60]!r} twice (line {key_node.start_mark.line + 1})"
                    )
        return super().construct_mapping(node, deep)


def parse_yaml(text: str, path: str | os.PathLike, unique_keys: bool = False) -> Any:
    """``yaml.safe_load`` (``unique_keys``: a zlbench file, where a key twice in one
    mapping and any alias are refused); a syntax error, a duplicate key, an alias or
    nesting past MAX_DEPTH is one ZlbenchError line; strings come back cleaned of lone
    surrogates (a shared value cleaned once: aliases cost no expansion)."""
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader if unique_keys else yaml.SafeLoader)
    except _DuplicateKey as e:
        raise ZlbenchError(f"{path}: {e}: one value per key") from None
    except _Alias as e:
        raise ZlbenchError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ZlbenchError(f"{path}: not valid YAML{where}") from None
    except RecursionError:
        raise ZlbenchError(f"{path}: nested too deeply: not a zlbench file") from None
    return _clean(data, Path(path))


def parse_json(text: str, path: str | os.PathLike) -> Any:
    """``json.loads`` for an untrusted file: a syntax error, a key twice in one
    object or nesting past MAX_DEPTH is one ZlbenchError line; strings come back
    cleaned of lone surrogates."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_pairs)
    except _DuplicateKey as e:
        raise ZlbenchError(
            f"{path}: key {str(e)[:60]!r} twice in one object: one value per key"
        ) from None
    except json.JSONDecodeError as e:
        raise ZlbenchError(f"{path}: not valid JSON (truncated or corrupted?): {e}") from None
    except RecursionError:
        raise ZlbenchError(f"{path}: nested too deeply: not a zlbench file") from None
    if _may_hold_surrogates(text):
        return _clean(data, Path(path))
    if isinstance(data, dict | list):
        _check_depth(data, Path(path))
    return data


def validate(path: str | os.PathLike, model: type[_M], data: Any) -> _M:
    """``data`` read from ``path`` (parsed JSON or YAML) as a ``model``: upgraded to
    its current format version (:func:`upgrade`), then validated; any problem is one
    ZlbenchError line. The loaders' one path; also for a reader that parsed the file
    itself."""
    path = Path(path)
    data = upgrade(path, model, data)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ZlbenchError(_short_error(path, e)) from None
    except RecursionError:
        raise ZlbenchError(f"{path}: nested too deeply: not a zlbench file") from None


def load_json_model(path: str | os.PathLike, model: type[_M]) -> _M:
    """Read and validate a JSON file; any problem is one ZlbenchError line."""
    path = Path(path)
    return validate(path, model, parse_json(read_text(path), path))


def load_yaml_model(path: str | os.PathLike, model: type[_M]) -> _M:
    path = Path(path)
    data = parse_yaml(read_text(path), path, unique_keys=True)
    return validate(path, model, {} if data is None else data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write via a temp file in the same dir + rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # a lone surrogate (from the environment, say) is written as "?", never a crash
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def model_json(obj: BaseModel) -> str:
    """``obj.model_dump_json(indent=2)``; strings holding a lone surrogate (which
    pydantic cannot encode) are written with U+FFFD in its place."""
    try:
        return obj.model_dump_json(indent=2)
    except PydanticSerializationError:
        data = _clean(obj.model_dump(mode="json"), Path(type(obj).__name__))
        return json.dumps(data, indent=2, ensure_ascii=False)


def dump_json_model(path: str | os.PathLike, obj: BaseModel) -> None:
    atomic_write_text(path, model_json(obj) + "\n")


def dump_yaml_model(path: str | os.PathLike, obj: BaseModel) -> None:
    data = obj.model_dump(mode="json")
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))

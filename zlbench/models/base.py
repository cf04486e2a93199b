"""What every on-disk model shares: the base class, the schema version, the loaders
and the atomic writers.

Every top-level file model carries ``schema_version``; the loaders refuse an
unknown version and turn any problem of reading or validating into one
:class:`~zlbench.errors.ZlbenchError` line. The writers never leave a
half-written file. The models themselves live in the sibling modules.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticSerializationError

from zlbench.errors import ZlbenchError

SCHEMA_VERSION = 1

REPOS = ("main", "vllm")
# Python package that each repo label imports.
REPO_PACKAGES = {"main": "flag_gems", "vllm": "flaggems_vllm"}
# Environment variable that names each repo's FlagGems checkout.
FLAGGEMS_DIR_VARS = {"main": "ZLBENCH_FLAGGEMS_DIR", "vllm": "ZLBENCH_FLAGGEMS_VLLM_DIR"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


_M = TypeVar("_M", bound=BaseModel)


def _short_error(path: Path, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e.get("loc", ())) or "(top level)"
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{path}: field '{loc}': {e.get('msg')}{more}"


def _check_version(path: Path, data: Any) -> None:
    if isinstance(data, dict) and "schema_version" in data:
        v = data["schema_version"]
        if isinstance(v, bool) or not isinstance(v, int):
            # "1" (a string), 1.0, true: not a version number, whatever it compares equal to
            raise ZlbenchError(
                f"{path}: field 'schema_version': {v!r} is not an integer "
                f"(write schema_version: {SCHEMA_VERSION})"
            )
        if v != SCHEMA_VERSION:
            raise ZlbenchError(
                f"{path}: schema_version {v} is not supported "
                f"(this zlbench reads version {SCHEMA_VERSION})"
            )


def read_text(path: str | os.PathLike, missing: str = "file not found") -> str:
    """A file's text; a missing (``<path>: <missing>``), unreadable or non-UTF-8 file
    is one ZlbenchError line."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ZlbenchError(f"{path}: {missing}") from None
    except OSError as e:
        raise ZlbenchError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ZlbenchError(f"{path}: cannot read: not UTF-8 text ({e.reason})") from None


# Every model nests a handful of levels; an artifact nested deeper is refused before
# the validators see it, one nested past the parsers' recursion limit as well (issue 26).
MAX_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_surrogates(text: str) -> str:
    """``text`` with lone surrogates (``\\ud800`` in a JSON or YAML escape: not a
    character, no UTF-8 writer takes it) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _clean(data: Any, path: Path, depth: int = 0) -> Any:
    """``data`` with every string cleaned of surrogates; deeper than MAX_DEPTH: one line."""
    if isinstance(data, str):
        return clean_surrogates(data)
    if depth >= MAX_DEPTH and isinstance(data, dict | list):
        raise ZlbenchError(f"{path}: nested deeper than {MAX_DEPTH} levels: not a zlbench file")
    if isinstance(data, dict):
        return {_clean(k, path, depth): _clean(v, path, depth + 1) for k, v in data.items()}
    if isinstance(data, list):
        return [_clean(v, path, depth + 1) for v in data]
    return data


class _DuplicateKey(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise _DuplicateKey(k)
        d[k] = v
    return d


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping holding one key twice (PyYAML keeps
    the last: an accept entry read by a reviewer at its first value would take another)."""

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
    """``yaml.safe_load`` (``unique_keys``: a key twice in one mapping is refused);
    a syntax error, a duplicate key or nesting past MAX_DEPTH is one ZlbenchError
    line; strings come back cleaned of lone surrogates."""
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader if unique_keys else yaml.SafeLoader)
    except _DuplicateKey as e:
        raise ZlbenchError(f"{path}: {e}: one value per key") from None
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
    return _clean(data, Path(path))


def _validate(path: Path, model: type[_M], data: Any) -> _M:
    _check_version(path, data)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ZlbenchError(_short_error(path, e)) from None
    except RecursionError:
        raise ZlbenchError(f"{path}: nested too deeply: not a zlbench file") from None


def load_json_model(path: str | os.PathLike, model: type[_M]) -> _M:
    """Read and validate a JSON file; any problem is one ZlbenchError line."""
    path = Path(path)
    return _validate(path, model, parse_json(read_text(path), path))


def load_yaml_model(path: str | os.PathLike, model: type[_M]) -> _M:
    path = Path(path)
    data = parse_yaml(read_text(path), path, unique_keys=True)
    return _validate(path, model, {} if data is None else data)


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

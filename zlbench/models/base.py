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
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

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


def parse_yaml(text: str, path: str | os.PathLike) -> Any:
    """``yaml.safe_load``; a syntax error is one ZlbenchError line naming the line."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ZlbenchError(f"{path}: not valid YAML{where}") from None


def load_json_model(path: str | os.PathLike, model: type[_M]) -> _M:
    """Read and validate a JSON file; any problem is one ZlbenchError line."""
    path = Path(path)
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ZlbenchError(f"{path}: not valid JSON (truncated or corrupted?): {e}") from None
    _check_version(path, data)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ZlbenchError(_short_error(path, e)) from None


def load_yaml_model(path: str | os.PathLike, model: type[_M]) -> _M:
    path = Path(path)
    data = parse_yaml(read_text(path), path)
    if data is None:
        data = {}
    _check_version(path, data)
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ZlbenchError(_short_error(path, e)) from None


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write via a temp file in the same dir + rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
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


def dump_json_model(path: str | os.PathLike, obj: BaseModel) -> None:
    atomic_write_text(path, obj.model_dump_json(indent=2) + "\n")


def dump_yaml_model(path: str | os.PathLike, obj: BaseModel) -> None:
    data = obj.model_dump(mode="json")
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))

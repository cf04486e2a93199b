"""A version per on-disk format, and the one loader path that upgrades an older file
step by step and refuses a newer one (docs/contributing.md "Changing an on-disk
format").

Every shipped baseline and example file loads through it; every model written to
disk declares its own version; an old version is upgraded (a test-only format, and
the genuine upgrade of autotune records without a version); a future one is refused
in one line."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import lzma
import pkgutil
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from pydantic import BaseModel

import zlbench.models
from tests.support.trees import shipped_dirs
from zlbench.errors import ZlbenchError
from zlbench.models import (
    AbSummary,
    AutotuneRecords,
    BaselineManifest,
    CodegenIndex,
    OnDisk,
    PairsFile,
    SweepTrust,
    dump_json_model,
    load_json_model,
    load_yaml_model,
    records_json,
    store,
    upgrade,
    upgrade_from,
    upgrades,
)

REPO = Path(__file__).resolve().parent.parent
TREES = [REPO / "baselines", REPO / "examples"]

# --------------------------------------------------------------------------- discovery


def _model_classes() -> list[type[BaseModel]]:
    """Every pydantic model class defined in a module of zlbench.models."""
    found = {}
    for info in pkgutil.iter_modules(zlbench.models.__path__, "zlbench.models."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseModel) and obj.__module__ == module.__name__:
                found[obj.__qualname__] = obj
    return list(found.values())


def _single_kind(model: type[BaseModel]) -> str | None:
    """The ``kind`` a file of ``model`` always carries (a one-value Literal), else None."""
    field = model.model_fields.get("kind")
    if field is None or typing.get_origin(field.annotation) is not Literal:
        return None
    values = typing.get_args(field.annotation)
    return values[0] if len(values) == 1 else None


def _written_to_disk(model: type[BaseModel]) -> bool:
    return "schema_version" in model.model_fields or _single_kind(model) is not None


ON_DISK = [m for m in _model_classes() if _written_to_disk(m)]


def test_the_on_disk_models_are_found():
    names = {m.__name__ for m in ON_DISK}
    assert {"RunResult", "BaselineResult", "BaselineManifest", "GateVerdict", "BatchInfo"} <= names
    assert {"AutotuneRecords", "SweepTrust", "CodegenIndex", "PairsFile", "AcceptList"} <= names
    assert len(ON_DISK) >= 17


@pytest.mark.parametrize("model", ON_DISK, ids=lambda m: m.__name__)
def test_every_on_disk_model_declares_its_own_version(model):
    assert issubclass(model, OnDisk), f"{model.__name__} is written to disk: make it OnDisk"
    assert "FORMAT_VERSION" in model.__dict__, f"{model.__name__} inherits its version"
    version = model.__dict__["FORMAT_VERSION"]
    assert isinstance(version, int) and not isinstance(version, bool) and version >= 1
    assert model.model_fields["schema_version"].default == version  # the version it writes
    steps = sorted(upgrades(model))  # one chain of upgrades up to the current version
    assert steps == list(range(steps[0] if steps else version, version))
    assert model.UNVERSIONED == version or model.UNVERSIONED in steps  # a file without one


def test_an_on_disk_model_without_its_own_version_is_refused_at_import():
    with pytest.raises(TypeError, match="FORMAT_VERSION"):

        class NoVersion(OnDisk):
            schema_version: int = 1

    with pytest.raises(TypeError, match="schema_version"):

        class OtherDefault(OnDisk):
            FORMAT_VERSION: ClassVar[int] = 2
            schema_version: int = 1


# --------------------------------------------------------------------------- shipped files

KINDS = {kind: m for m in ON_DISK if (kind := _single_kind(m)) is not None}
BY_NAME = {
    "manifest.yaml": BaselineManifest,
    "index.json": CodegenIndex,  # <op>/codegen/index.json
    "ab.json": AbSummary,
    "pairs.json": PairsFile,
}
NOT_ZLBENCH = {"shapes.yaml"}  # upstream FlagGems shape files, copied as they are


def _model_of(path: Path) -> type[OnDisk] | None:
    if path.name in NOT_ZLBENCH:
        return None
    if path.parent.name == "autotune_records":
        return AutotuneRecords
    if path.name in BY_NAME:
        return BY_NAME[path.name]
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and data.get("kind") in KINDS, f"{path}: no model reads it"
    return KINDS[data["kind"]]


def _shipped() -> list[Path]:
    files = []
    for tree in TREES:  # the packed trees too, unpacked
        files += [p for p in tree.rglob("*") if p.suffix in (".json", ".yaml") and p.is_file()]
        for packed in shipped_dirs(tree.name).values():
            if not packed.is_relative_to(tree):
                files += [p for p in packed.rglob("*") if p.suffix in (".json", ".yaml")]
    return sorted(files)


def test_every_shipped_baseline_and_example_loads_through_the_versioned_loader():
    loaded: dict[str, int] = {}
    for path in _shipped():
        model = _model_of(path)
        if model is None:
            continue
        load = load_yaml_model if path.suffix == ".yaml" else load_json_model
        obj = load(path, model)
        assert obj.schema_version == model.FORMAT_VERSION, path
        loaded[model.__name__] = loaded.get(model.__name__, 0) + 1
    # what the trees hold today: each of these formats is read at least once
    for name in ("BaselineManifest", "BaselineResult", "RunResult", "BatchInfo", "CodegenIndex"):
        assert loaded.get(name, 0) >= 4, (name, loaded)
    for name in ("AutotuneRecords", "CodegenScreen", "TimingPlanFile", "GateSteps", "PairsFile"):
        assert loaded.get(name, 0) >= 1, (name, loaded)
    assert loaded["AutotuneRecords"] >= 100  # version 0 files: read through their upgrade


# --------------------------------------------------------------------------- upgrades


class _Toy(OnDisk):
    """A test-only format at version 3: v1 named the field ``ms``, v2 added ``unit``."""

    FORMAT_VERSION: ClassVar[int] = 3
    schema_version: int = FORMAT_VERSION
    kind: Literal["toy"] = "toy"
    latency: float
    unit: str


@upgrade_from(_Toy, 1)
def _toy_v1(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    data["latency"] = data.pop("ms")
    return data


@upgrade_from(_Toy, 2)
def _toy_v2(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "unit": "ms"}


def _write(tmp_path: Path, data: Any, name: str = "toy.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _one_line(fn, *args) -> str:
    with pytest.raises(ZlbenchError) as err:
        fn(*args)
    assert "\n" not in str(err.value) and err.value.exit_code == 2
    return str(err.value)


def test_an_old_version_is_upgraded_step_by_step(tmp_path):
    v1 = {"schema_version": 1, "kind": "toy", "ms": 2.5}
    toy = load_json_model(_write(tmp_path, v1), _Toy)
    assert (toy.schema_version, toy.latency, toy.unit) == (3, 2.5, "ms")
    v2 = {"schema_version": 2, "kind": "toy", "latency": 4.0}
    assert load_json_model(_write(tmp_path, v2), _Toy).unit == "ms"
    current = {"schema_version": 3, "kind": "toy", "latency": 1.0, "unit": "us"}
    assert load_json_model(_write(tmp_path, current), _Toy).unit == "us"
    # a file without the field is UNVERSIONED (1 for the formats that always wrote it)
    toy = load_json_model(_write(tmp_path, {"kind": "toy", "ms": 7.0}), _Toy)
    assert (toy.latency, toy.unit) == (7.0, "ms")


def test_the_upgrade_functions_are_pure(tmp_path):
    v1 = {"schema_version": 1, "kind": "toy", "ms": 2.5}
    assert upgrade(tmp_path / "t.json", _Toy, v1) == {
        "schema_version": 3,
        "kind": "toy",
        "latency": 2.5,
        "unit": "ms",
    }
    assert v1 == {"schema_version": 1, "kind": "toy", "ms": 2.5}  # the input is left alone


def test_a_future_version_is_refused_in_one_line(tmp_path):
    path = _write(tmp_path, {"schema_version": 4, "kind": "toy", "latency": 1.0})
    assert _one_line(load_json_model, path, _Toy) == (
        f"{path}: schema_version 4 is not supported (written by a newer zlbench; "
        "this one reads _Toy up to version 3)"
    )
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("schema_version: 2\nname: v\ncreated: now\n")
    msg = _one_line(load_yaml_model, manifest, BaselineManifest)
    assert "schema_version 2" in msg and "newer zlbench" in msg and "BaselineManifest" in msg


def test_a_version_older_than_any_upgrade_or_not_an_integer_is_refused(tmp_path):
    path = _write(tmp_path, {"schema_version": 0, "kind": "toy", "ms": 1.0})
    assert _one_line(load_json_model, path, _Toy) == (
        f"{path}: schema_version 0 is not supported (this zlbench reads _Toy version 3, "
        "upgraded from version 1)"
    )
    path = _write(tmp_path, {"schema_version": "2", "kind": "toy", "latency": 1.0})
    assert "not an integer" in _one_line(load_json_model, path, _Toy)


def test_an_upgrade_is_registered_once_per_step_below_the_current_version():
    for bad in (3, -1, 1):  # the current version, no version, a step already registered
        with pytest.raises(ValueError):
            upgrade_from(_Toy, bad)(lambda d: d)


def test_no_version_is_shared():
    """Each format has its own constant (above); no package-wide version is left."""
    assert not hasattr(zlbench.models, "SCHEMA_VERSION")
    assert not hasattr(zlbench.models.base, "SCHEMA_VERSION")


# --------------------------------------------------------------------------- autotune files

V0 = {"mod:kernel": {"[8]": {"kwargs": {"BLOCK": 64}, "num_warps": 4}}}


def test_autotune_records_without_a_version_are_version_0_and_upgraded(tmp_path):
    rec = load_json_model(_write(tmp_path, V0, "op.json"), AutotuneRecords)
    assert rec.schema_version == 1 and rec.kernels == V0
    assert load_json_model(_write(tmp_path, {}, "empty.json"), AutotuneRecords).kernels == {}
    assert upgrades(AutotuneRecords).keys() == {0}


def test_autotune_records_are_written_with_their_version(tmp_path):
    text = records_json(V0)
    data = json.loads(text)
    assert data == {"kernels": V0, "kind": "autotune_record_set", "schema_version": 1}
    assert text == records_json(dict(reversed(list(V0.items()))))  # sorted: same bytes
    back = load_json_model(_write(tmp_path, data, "op.json"), AutotuneRecords)
    assert back.kernels == V0
    future = _write(tmp_path, {**data, "schema_version": 2}, "f.json")
    assert "newer zlbench" in _one_line(load_json_model, future, AutotuneRecords)


def test_a_shipped_version_0_record_reads_as_the_bare_mapping():
    trees = shipped_dirs("baselines").values()  # v1 first, as the checkout names them
    shipped = [p for d in trees for p in sorted(d.glob("main/*/autotune_records/*.json"))]
    nonempty = [p for p in shipped if json.loads(p.read_text()) != {}]
    assert nonempty
    raw = json.loads(nonempty[0].read_text())
    assert "schema_version" not in raw
    assert load_json_model(nonempty[0], AutotuneRecords).kernels == raw


def _trust(**extra: Any) -> dict:
    return {
        "repo": "main",
        "run_name": "softmax",
        "gpus": ["0", "1"],
        "keys": 3,
        "differing": 1,
        "close": 0,
        "close_rel": 0.02,
        "children": [
            {
                "shard": "0/2",
                "gpu": "0",
                "rc": 0,
                "seconds": 1.5,
                "sweep_out": "sweep/shard-0.json",
                "log": "sweep/shard-0.log",
            }
        ],
        "measured": {"how": "single-process replay", "gpu": "0", "status": "PASS"},
        **extra,
    }


def test_trust_files_carry_their_version(tmp_path):
    # as the sweep wrote it before trust.json had a model: the same keys
    old = _write(tmp_path, _trust(schema_version=1, kind="sweep_trust"), "trust.json")
    trust = load_json_model(old, SweepTrust)
    assert (trust.keys, trust.children[0].shard) == (3, "0/2")
    dump_json_model(tmp_path / "new.json", trust)
    data = json.loads((tmp_path / "new.json").read_text())
    assert data["schema_version"] == SweepTrust.FORMAT_VERSION and data["kind"] == "sweep_trust"
    assert load_json_model(_write(tmp_path, _trust(), "bare.json"), SweepTrust) == trust
    future = _write(tmp_path, _trust(schema_version=9), "future.json")
    assert "schema_version 9 is not supported" in _one_line(load_json_model, future, SweepTrust)


# --------------------------------------------------------------------------- store packs


def _pack(tmp_path: Path, header: bytes) -> Path:
    data = lzma.compress(header + b"\n")
    path = tmp_path / (hashlib.sha256(data).hexdigest() + store.PACK_SUFFIX)
    path.write_bytes(data)
    return path


def test_a_store_pack_of_a_newer_version_is_refused_by_its_version(tmp_path):
    current = _pack(tmp_path, store.MAGIC + b" 0")
    assert store.read_pack(current) == {}
    assert store.MAGIC == b"zlbench-pack %d" % store.PACK_VERSION
    newer = _pack(tmp_path, b"zlbench-pack %d 0" % (store.PACK_VERSION + 1))
    assert _one_line(store.read_pack, newer) == (
        f"{newer}: codegen store pack version {store.PACK_VERSION + 1} is not supported "
        f"(this zlbench reads version {store.PACK_VERSION})"
    )
    other = _pack(tmp_path, b"something 0")
    assert _one_line(store.read_pack, other).endswith("codegen store pack corrupt: bad header")


def test_the_ab_records_reader_reads_every_version_through_the_loader(tmp_path):
    from zlbench.runner.ab.records import read_records_dir

    other = {"mod:other": {"[1]": {"kwargs": {}}}}
    _write(tmp_path, V0, "a.json")  # version 0: the bare mapping
    (tmp_path / "b.json").write_text(records_json(other))
    assert read_records_dir(tmp_path) == {**V0, **other}
    _write(tmp_path, {**json.loads(records_json(other)), "schema_version": 2}, "b.json")
    assert read_records_dir(tmp_path) is None  # a newer version is not guessed at

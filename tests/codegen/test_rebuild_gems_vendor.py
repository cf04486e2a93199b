"""The rebuild worker names FlagGems' vendor from the recorded targets when the
environment names none: on a CPU job FlagGems finds no device at import, and a rebuild
without GEMS_VENDOR loaded none of v6's 3591 kernels (2026-12-02)."""

from __future__ import annotations

from tests.support.cgsynth import record, request, stage_texts
from zlbench.models.codegen import Target
from zlbench.plugins.compiler.rebuild import gems_vendor_for

CUDA = record(request("add_kernel"), stage_texts("add"))


def _on(backend: str, arch):
    req = request("hip_kernel").model_copy(
        update={"target": Target(backend=backend, arch=arch, warp_size=64)}
    )
    return record(req, stage_texts("hip"))


def test_cuda_records_name_nvidia_when_the_environment_names_no_vendor():
    assert gems_vendor_for([CUDA, CUDA], {}) == "nvidia"
    assert gems_vendor_for([CUDA], {"GEMS_VENDOR": ""}) == "nvidia"


def test_a_vendor_the_environment_names_is_left_alone():
    assert gems_vendor_for([CUDA], {"GEMS_VENDOR": "iluvatar"}) is None


def test_other_or_mixed_targets_and_no_records_name_none():
    hip = _on("hip", "gfx942")
    assert gems_vendor_for([hip], {}) is None
    assert gems_vendor_for([CUDA, hip], {}) is None
    assert gems_vendor_for([], {}) is None

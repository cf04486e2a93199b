"""Shared fixtures and the test tiers. Keep this file small: put tier-specific fixtures
next to their tests.

Tiers by cost (markers registered in pyproject.toml):

* ``unit``: in-process only (no child process, no compiler, no browser). The default:
  every test that is none of the others is marked ``unit`` here, and a unit test that
  starts a child process fails with a line that says to mark it ``proc``.
* ``proc``: starts child processes (the zlbench CLI or pytest in a subprocess, a
  compile with triton, a shell script) -- see :data:`PROC`.
* ``data``: reads the big shipped data (baselines/, examples/) -- see :data:`DATA`.
* ``slow``, ``gpu``: as before (marked in their files).

``python -m pytest -q -m unit`` is the developer's loop; ``-m "not unit"`` the rest.
"""

from __future__ import annotations

import _posixsubprocess
import os
import subprocess
from pathlib import Path

import pytest

from tests.support import cache

DATA_DIR = Path(__file__).parent / "data"
TESTS = Path(__file__).resolve().parent

# Tests that start child processes, by node id prefix relative to tests/ (a file, or
# one test of it). A whole file where most of its tests spawn; single tests otherwise.
PROC: tuple[str, ...] = (
    "ab/test_ab_env.py",
    "ci/test_ci_ab.py",
    "ci/test_ci_pyscripts.py",
    "ci/test_ci_rebuild_job.py",
    "ci/test_ci_screen_job.py",
    "ci/test_ci_scripts.py",
    "ci/test_workflows.py::test_run_scripts_pass_shellcheck",
    "codegen/test_codegen_cli.py",
    "codegen/test_codegen_layering.py::test_screen_imports_without_triton",
    "codegen/test_compile_pool.py",
    "gate/test_baselines.py::test_commit_creates_a_branch_with_a_summary",
    "plugins/test_aot_compile.py",
    "plugins/test_autotune.py",
    "plugins/test_autotune_isolation.py",
    "plugins/test_code_digest.py",
    "plugins/test_codegen.py",
    "plugins/test_codegen_options.py::test_codegen_options_parse_in_a_pytest_run",
    "plugins/test_codegen_vendor.py",
    "plugins/test_core_process.py",
    "plugins/test_core_run.py",
    "plugins/test_environment_build.py::test_the_build_id_agrees_with_readelf",
    "plugins/test_environment_build.py::test_the_probe_does_not_import_triton",
    "plugins/test_phases.py",
    "plugins/test_phases_op_end.py",
    "plugins/test_sweep.py::test_sweep_child_writes_winner_and_timing_per_key",
    "plugins/test_ttgir.py::test_interpreter_run_writes_index_and_legend_without_ir",
    "protocol/test_protocol.py::test_contract_file_names_are_spelled_only_in_protocol_layout",
    "protocol/test_turn.py",
    "protocol/test_turn_shared.py",
    "runner/test_batch_kill.py",
    "runner/test_device_kit.py",
    "runner/test_device_stages.py",
    "runner/test_full_records.py::test_resume_keeps_a_warm_machines_pass_and_restores_a_fresh_ones",
    "runner/test_full_records.py::test_resume_on_a_fresh_machine_without_the_carried_pass_stops_the_call",
    "runner/test_full_records.py::test_the_run_stage_rechecks_the_dismissed_ops_only_when_asked",
    "runner/test_full_records.py::test_the_run_stage_refuses_to_begin_a_new_pass_unless_asked",
    "runner/test_full_records.py::test_the_run_stage_runs_the_ops_named_in_ops_instead_of_all",
    "runner/test_full_records.py::test_the_script_packs_the_sent_list_and_stops_at_a_refused_unrecorded",
    "runner/test_inventory.py::test_collect_sets_gems_vendor_unless_set",
    "runner/test_level_and_marker_counts.py::test_a_real_benchmark_process_runs_at_core_and_its_markers_reach_ops_status",
    "runner/test_precompile.py",
    "runner/test_proc_tree.py",
    "runner/test_run_cmd.py::test_prepare_and_run_plan_with_fake_pytest",
    "runner/test_run_timing_e2e.py",
    "runner/test_shard.py::test_stable_across_processes",
    "runner/test_sweep_batch.py::test_a_failing_sweep_child_then_a_failing_serial_sweep_fails_the_op",
    "runner/test_sweep_batch.py::test_record_batch_sweeps_each_op_then_measures_on_the_first_gpu",
    "runner/test_sweep_deal.py::test_a_record_batch_deals_an_op_s_shapes_over_the_sweep_gpus",
    "runner/test_sweep_deal.py::test_without_known_shapes_the_batch_deals_configs_as_before",
    "runner/test_sweep_run.py::test_children_run_together_and_keep_their_logs",
    "runner/test_sweep_run.py::test_interrupt_kills_every_child_group",
    "runner/test_sweep_run.py::test_timeout_kills_a_child_and_marks_it",
    "runner/test_v6_assemble.py",
    "runner/test_worker.py",
    "runner/test_worker_proc.py",
    "test_cli_pipe.py",
    "test_gitinfo.py",
    "test_parse.py::test_no_torch_import_and_real_torch_reprs",
    "test_repo_paths.py::test_no_shipped_file_names_a_machines_path",
    "untrusted/test_untrusted_ab.py",
    "untrusted/test_untrusted_codegen_source.py::test_codegen_on_a_batch_dir_never_executes_recorded_source",
    "untrusted/test_untrusted_outputs.py::test_a_second_writer_into_a_held_out_refuses",
    "untrusted/test_untrusted_outputs.py::test_concurrent_judges_into_one_out_leave_one_verdicts_files",
    "untrusted/test_untrusted_outputs.py::test_racing_batches_never_share_an_empty_existing_dir",
    "untrusted/test_untrusted_stale_out.py::test_temp_dirs_of_killed_writers_are_removed_by_the_next_write",
)

# Tests that read the big shipped baselines/ or examples/ data (node id prefixes).
DATA: tuple[str, ...] = (
    "ab/test_interleaved_examples.py",
    "codegen/test_codegen_attribute.py",
    "codegen/test_compact_store.py",
    "codegen/test_h200_no_pipeline_example.py",
    "codegen/test_pinned_records.py",
    "codegen/test_rebuild_shards.py",
    "gate/test_baseline_inventory.py",
    "report/test_real_reports_doc.py",
    "report/test_report_why.py",
    "runner/test_full_records.py::test_records_packs_the_complete_ops_records_with_ttir_and_ttgir_texts_only",
    "runner/test_level_and_marker_counts.py::test_marker_counts_of_a_real_h200_log_reach_ops_status",
    "runner/test_ops_data.py::test_no_op_of_a_shipped_baseline_is_dismissed",
    "runner/test_v6_assemble.py",
    "test_format_versions.py",
    "test_repo_paths.py::test_no_shipped_file_names_a_machines_path",
)

TIERS = ("proc", "data", "slow", "gpu")


def _listed(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    return any(nodeid == p or nodeid.startswith((p + "::", p + "[")) for p in prefixes)


def pytest_collection_modifyitems(config, items):
    for item in items:
        rel = os.path.relpath(item.path, TESTS)
        nodeid = rel + item.nodeid[item.nodeid.index("::") :] if "::" in item.nodeid else rel
        for marker, prefixes in (("proc", PROC), ("data", DATA)):
            if _listed(nodeid, prefixes):
                item.add_marker(getattr(pytest.mark, marker))
        if not any(item.get_closest_marker(t) for t in TIERS):
            item.add_marker(pytest.mark.unit)


def _no_child(*_args, **_kwargs):
    raise AssertionError(
        "a unit test started a child process: mark it @pytest.mark.proc "
        "(or list it in tests/conftest.py PROC)"
    )


@pytest.fixture(autouse=True)
def _unit_starts_no_child(request, monkeypatch):
    """The unit tier's promise: no child process (so no compiler, no browser)."""
    if request.node.get_closest_marker("unit") is not None:
        monkeypatch.setattr(subprocess, "_fork_exec", _no_child)
        monkeypatch.setattr(_posixsubprocess, "fork_exec", _no_child)
        for name in ("fork", "system", "posix_spawn", "posix_spawnp"):
            monkeypatch.setattr(os, name, _no_child)
    yield


@pytest.fixture(autouse=True)
def _measuring_again():
    """A test that stops measuring (runner.execute.stop: an interrupt, stop_all) leaves
    the process-wide flag set; the next test in this worker measures again (else its
    first benchmark process raises KeyboardInterrupt and ends the xdist worker)."""
    from zlbench.runner.execute import stop

    stop.clear()
    yield
    stop.clear()


@pytest.fixture(scope="session", autouse=True)
def _fixture_cache(tmp_path_factory):
    """tests.support.cache's root: the run's temp dir that every xdist worker shares."""
    base = tmp_path_factory.getbasetemp()
    cache.ROOT = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    yield
    cache.ROOT = None


@pytest.fixture
def flaggems_h200_dir() -> Path:
    """Real upstream FlagGems output captured on an H200 (see its README.md)."""
    return DATA_DIR / "flaggems-h200"

"""The replay's L2 policies are named once for the CLI (models.options.REPLAY_L2, which
`zlbench gate --help` reads without importing the replay's models) and once for the
models (models.replay.L2Policy, L2_POLICIES): the same names, the default first."""

from __future__ import annotations

import json
from typing import get_args

from zlbench.models import load_json_model
from zlbench.models.options import REPLAY_L2
from zlbench.models.replay import DEFAULT_L2, L2_POLICIES, L2Policy, ReplayRun


def test_the_cli_and_the_models_name_the_same_policies_the_default_first():
    assert sorted(get_args(L2Policy)) == sorted(REPLAY_L2) == sorted(L2_POLICIES)
    assert DEFAULT_L2 == REPLAY_L2[0] == "warm"  # the fiftieth session's A/As and agreement
    assert L2_POLICIES["warm"] == (False, "zero", False)  # no flush, restored once a sample
    assert L2_POLICIES["flush"] == (True, "zero", True)  # the timing before the switch
    assert ReplayRun().l2 == DEFAULT_L2


def test_a_version_1_replay_run_naming_no_policy_was_timed_under_flush(tmp_path):
    """Format 1's default was "flush" (before the fiftieth session): such a file that
    names no policy is read as timed under it; one that names its policy keeps it; a
    version 2 file that names none has today's default."""
    got = {}
    for name, data in {
        "v1": {"schema_version": 1, "kind": "replay_run"},
        "v1-clean": {"schema_version": 1, "kind": "replay_run", "l2": "clean"},
        "unversioned": {"kind": "replay_run"},
        "v2": {"schema_version": 2, "kind": "replay_run"},
    }.items():
        (tmp_path / name).write_text(json.dumps(data))
        got[name] = load_json_model(tmp_path / name, ReplayRun).l2
    assert got == {"v1": "flush", "v1-clean": "clean", "unversioned": "flush", "v2": "warm"}

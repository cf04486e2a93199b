"""The replay's L2 policies are named once for the CLI (models.options.REPLAY_L2, which
`zlbench gate --help` reads without importing the replay's models) and once for the
models (models.replay.L2Policy, L2_POLICIES): the same names, the default first."""

from __future__ import annotations

from typing import get_args

from zlbench.models.options import REPLAY_L2
from zlbench.models.replay import L2_POLICIES, L2Policy, ReplayRun


def test_the_cli_and_the_models_name_the_same_policies_the_default_first():
    assert get_args(L2Policy) == REPLAY_L2 == tuple(L2_POLICIES)
    assert ReplayRun().l2 == REPLAY_L2[0] == "flush"
    assert L2_POLICIES["flush"] == (True, "zero", True)  # today's timing, unchanged

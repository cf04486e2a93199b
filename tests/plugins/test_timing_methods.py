"""One timer per timing method (``models.TimingMethod``, issue 28 item 1): every member
has a timer in ``plugins/timing.py`` ``TIMERS`` and a ``--zl-timing`` choice, and each
timer installs what its method says (graph: zlbench's do_bench; upstream: nothing).
Parametrized over the enum, so a new method is covered by itself."""

from __future__ import annotations

import argparse

import pytest

from zlbench.models import Timing, TimingMethod
from zlbench.plugins import timing
from zlbench.protocol import options

# what each method does to triton.testing.do_bench (a new member must say here)
REPLACES_DO_BENCH = {
    TimingMethod.GRAPH: True,
    TimingMethod.UPSTREAM: False,
    TimingMethod.CAPTURE: True,
}


class Config:
    """A pytest config over the plugin options alone."""

    def __init__(self, argv: list[str]) -> None:
        parser = argparse.ArgumentParser()
        options.add_options(parser.add_argument)
        self.ns = parser.parse_args(argv)

    def getoption(self, name: str):
        return getattr(self.ns, name)


@pytest.fixture
def clean_triton():
    pytest.importorskip("triton")
    timing.uninstall()
    yield
    timing.uninstall()


def test_every_method_has_one_timer_and_one_option_choice():
    assert set(timing.TIMERS) == set(TimingMethod)
    assert options.OPTIONS["timing"]["choices"] == [m.value for m in TimingMethod]
    assert set(REPLACES_DO_BENCH) == set(TimingMethod)


@pytest.mark.parametrize("method", list(TimingMethod))
def test_the_options_of_a_timing_read_back_as_it(method):
    how = Timing(mode="kernel", method=method, warmup_ms=12.5, replays=4)
    assert timing.configured_timing(Config(options.timing_args(how)), "kernel") == how


def test_the_plugin_defaults_are_the_models():
    assert timing.configured_timing(Config([])) == Timing()


def test_no_timing_where_the_options_are_not_registered():
    class Bare:
        def getoption(self, name):
            raise ValueError(f"no option named {name!r}")

    assert timing.configured_timing(Bare()) is None


@pytest.mark.parametrize("method", list(TimingMethod))
def test_each_timer_installs_what_its_method_says(clean_triton, method):
    import triton.testing as testing

    before = testing.do_bench
    config = Config(
        [*options.timing_args(Timing(method=method, replays=3)), "--zl-timing-backend", "cpu"]
    )
    timing.pytest_configure(config)
    assert (testing.do_bench is not before) == REPLACES_DO_BENCH[method]
    timing.pytest_unconfigure(config)
    assert testing.do_bench is before

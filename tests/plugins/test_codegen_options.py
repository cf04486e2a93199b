"""The codegen recorder registers its options from the shared protocol table
(zlbench.protocol.options.CODEGEN_OPTIONS), so the runner and the plugin cannot
disagree on a flag; the stand-in option reaches the plugin through that table."""

from __future__ import annotations

import pytest

from zlbench.plugins import codegen
from zlbench.protocol import options

pytest_plugins = ["pytester"]


class _Group:
    def __init__(self) -> None:
        self.added: dict[str, dict] = {}

    def addoption(self, flag: str, **kwargs) -> None:
        self.added[flag] = kwargs


class _Parser:
    def __init__(self) -> None:
        self.groups: dict[str, _Group] = {}

    def getgroup(self, name: str) -> _Group:
        return self.groups.setdefault(name, _Group())


def test_recorder_registers_exactly_the_protocol_table():
    parser = _Parser()
    codegen.pytest_addoption(parser)
    added = parser.groups["zlbench-codegen"].added
    assert sorted(added) == sorted(options.flag(n) for n in options.CODEGEN_OPTIONS)
    for name, kwargs in options.CODEGEN_OPTIONS.items():
        assert added[options.flag(name)] == {"dest": options.dest(name), **kwargs}


def test_codegen_options_parse_in_a_pytest_run(pytester: pytest.Pytester):
    pytester.makeconftest(
        "from zlbench.protocol import options\n"
        "def pytest_configure(config):\n"
        "    print('NO', options.get(config, 'no-codegen'),"
        " 'STANDIN', options.get(config, 'codegen-standin'))\n"
    )
    pytester.makepyfile("def test_ok():\n    pass\n")
    res = pytester.runpytest_subprocess("-p", "zlbench.plugins.codegen", "-s", "--zl-no-codegen")
    res.stdout.fnmatch_lines(["*NO True STANDIN None*"])
    assert res.ret == 0

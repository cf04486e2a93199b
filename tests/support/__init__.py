"""Helpers shared by several test tiers: import them as ``from tests.support.zlsynth
import ...`` (the repo root is on sys.path through pyproject's pytest ``pythonpath``).

* zlsynth: synthetic baseline / results dirs (the gate, report, A/B, workflow tiers)
* batch_fakes: an inventory writer and a scripted fake execute_plan (the batch tiers)
* cgsynth, fakeworker: synthetic codegen records, a stand-in rebuild worker
* codegen: the benchpkg recording (compiles under triton) and a patched triton
* mdcheck: a small markdown / HTML reader for the reports
* interleaved: a gate dir of an interleaved A/B
* cache: expensive fixtures built once per test run under a file lock
"""

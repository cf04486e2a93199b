"""The run protocol: everything the runner and the plugins must agree on.

The runner (``zlbench.runner``) starts pytest processes that load the plugins
(``zlbench.plugins``); the two sides talk only through what is defined here,
and both import it, so a name cannot drift between them:

* :mod:`.layout`: the run-dir, batch-dir, gate-dir and baseline-dir file names,
  and the op key ``<repo>/<run_name>`` (which is also an op's path in a batch);
* :mod:`.options`: the plugins' ``--zl-*`` command-line options (one table: the
  plugins register it, the runner builds its command lines from it);
* :mod:`.boundary`: the ``ZLBENCH_OP_BEGIN`` / ``ZLBENCH_OP_END`` lines around
  each op in the process output (writer and parser), the ``ZLBENCH_OP_ERROR``
  line naming why a test of the op failed, and the runner's own
  ``ZLBENCH_RUNNER`` lines in run.log;
* :mod:`.signature`: how an error signature names a failure (exception type and
  innermost frame, machine prefixes stripped), for both sides;
* :mod:`.markers`: the marker lines (``AUTOTUNE_REPLAY_FALLBACK``,
  ``BENCHMARK_DIRECT_NO_CUDAGRAPH``), writer and parser;
* :mod:`.faults`: the texts of real device faults, for the plugins (never hide
  one behind a fallback) and the runner (a poisoned process is replaced).

Pure: imports only ``zlbench.models`` and ``zlbench.errors`` (no torch, triton,
pytest). docs/design.md describes the contract in words.
"""

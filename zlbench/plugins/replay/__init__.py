"""The kernel-replay tier's engine, inside a benchmark (timing) process (issue 51,
``zlbench.models.replay``): a captured launch's arguments materialized on the device
(:mod:`.materialize`), both compilers' binaries of a changed kernel timed paired and
their outputs compared (:mod:`.timing`), the binaries built and checked against the
screen's digests and the per-row worker (:mod:`.binaries`, :mod:`.worker`).

The only layer besides the rest of ``zlbench.plugins`` that imports torch and triton;
nothing here judges: the samples go to the pair rule of ``zlbench.protocol.pairs``.
"""

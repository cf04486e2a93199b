"""Same-runner A/B against the base compiler (``gate --base-compiler ENV``).

``env``: what an ENV is (a venv, an interpreter, or a site dir put first on
PYTHONPATH), the batch config that measures in it, and the probe of its
compiler's identity. ``rounds``: the alternation (A B A B ..., each side a fresh
batch with its own processes and caches), ``<gate out>/ab/`` on disk, and the
rounds read back as (PR rows, base rows) pairs for :mod:`zlbench.gate.paired`.
"""

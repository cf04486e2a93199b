"""The codegen screen (docs/codegen.md): rebuild every compile request a baseline
recorded with the compiler under test and say, per kernel, what changed.

``diff`` (classification and diff text), ``collect`` (a baseline's records,
deduplicated), ``select`` (which ops the gate must time; row annotations) and
``explain`` are pure: they never import triton and write no files. ``screen``
runs the rebuild workers (subprocesses) and writes the screen's output.
"""

"""Compiler side of the codegen records (docs/codegen.md): the IR normaliser, the
stand-in triton driver, turning triton's compilation listener calls into
:class:`~zlbench.models.CompileRecord` s, and the rebuild worker.

Only ``normalise`` is importable without triton; the other modules import it.
"""

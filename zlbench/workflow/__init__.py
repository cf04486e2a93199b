"""Workflows: the jobs a command does, as library functions with plain inputs.

A workflow strings the layers together (runner measures, gate judges, report
renders) and writes the outputs. Its side effects go through injectable seams
(the measuring function, the clock, the output streams), so tests and other
callers run it without argv and without a GPU. The CLI only parses argv into a
job and calls the workflow.
"""

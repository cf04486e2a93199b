"""The test suite; a package so that ``tests.support`` imports from any tier."""

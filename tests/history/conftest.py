"""The results store's fixtures: ``store_url`` runs a test against SQLite (a file in
tmp_path) and against the real PostgreSQL server that .ci/run starts
(``ZLBENCH_TEST_PG_URL``; each test gets a database of its own, dropped after)."""

from __future__ import annotations

import os
import uuid

import pytest

PG_URL = os.environ.get("ZLBENCH_TEST_PG_URL", "")
NO_PG = "ZLBENCH_TEST_PG_URL is unset: no PostgreSQL server (.ci/run starts one)"


def _with_db(url: str, db: str) -> str:
    """``url`` naming database ``db`` (postgresql://user@host/DB?query)."""
    head, _, query = url.partition("?")
    scheme, rest = head.split("://", 1)
    hostpart = rest.split("/", 1)[0]
    return f"{scheme}://{hostpart}/{db}" + (f"?{query}" if query else "")


@pytest.fixture
def pg_url():
    """A fresh database on the test server, dropped after the test."""
    if not PG_URL:
        pytest.skip(NO_PG)
    import psycopg

    name = f"zl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_URL, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    try:
        yield _with_db(PG_URL, name)
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A store's URL on each backend (the PostgreSQL half skips without a server)."""
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return request.getfixturevalue("pg_url")

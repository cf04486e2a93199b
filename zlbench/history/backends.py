"""The two databases the results store runs on, behind one small interface.

- **SQLite** (a plain path or ``sqlite:///path``): the stdlib's ``sqlite3``; a write
  is one ``BEGIN IMMEDIATE`` transaction (one writer at a time, the others wait up to
  :data:`BUSY_TIMEOUT_S`); a writer killed mid-transaction leaves its journal, which
  the next opener rolls back.
- **PostgreSQL** (``postgresql://...`` or ``postgres://...``): psycopg 3, an optional
  dependency (``pip install 'zlbench[postgres]'``) imported only here and only then; a
  write is one transaction that first takes a transaction-scoped advisory lock (one
  writer at a time, as SQLite), so positions are given out in order.

SQL is written with ``?`` placeholders; the PostgreSQL side turns them into ``%s``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from zlbench.errors import ZlbenchError
from zlbench.history.schema import POSTGRES, SQLITE, Dialect

BUSY_TIMEOUT_S = 120.0  # how long a writer waits for another (SQLite)
WRITE_LOCK = 52_0001  # PostgreSQL's advisory lock key of the store's writers


def redact(url: str) -> str:
    """``url`` with a password replaced (never printed in an error line)."""
    if "://" in url and "@" in url.split("://", 1)[1]:
        scheme, rest = url.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        user = cred.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}" if ":" in cred else url
    return url


class StoreError(ZlbenchError):
    """A database error, as one line (exit 2)."""


class Backend:
    """A connection and its dialect. ``write()`` is one transaction holding the
    store's write lock; ``read()`` a consistent snapshot."""

    dialect: Dialect
    label: str

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise NotImplementedError

    @contextmanager
    def write(self) -> Iterator[None]:
        raise NotImplementedError
        yield  # pragma: no cover

    @contextmanager
    def read(self) -> Iterator[None]:
        raise NotImplementedError
        yield  # pragma: no cover

    def table_exists(self, name: str) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class SqliteBackend(Backend):
    dialect = SQLITE

    def __init__(self, path: Path, create: bool):
        self.label = str(path)
        if not path.exists() and not create:
            raise ZlbenchError(f"no results store at {path}")
        if path.exists() and not path.is_file():
            raise ZlbenchError(f"results store {path}: not a file")
        if not path.parent.is_dir():
            raise ZlbenchError(f"results store {path}: no directory {path.parent}")
        try:
            # isolation_level None: the transactions are ours (BEGIN IMMEDIATE)
            self.conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self.conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as e:
            raise ZlbenchError(f"results store {path}: {e}") from None

    def _run(self, fn, *args):
        try:
            return fn(*args)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"results store {self.label}: {e}") from e

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self._run(lambda: self.conn.execute(sql, tuple(params)).fetchall())

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._run(self.conn.executemany, sql, rows)

    @contextmanager
    def write(self) -> Iterator[None]:
        self._run(self.conn.execute, "BEGIN IMMEDIATE")  # waits for another writer
        try:
            yield
        except BaseException:
            self.conn.rollback()
            raise
        self._run(self.conn.execute, "COMMIT")

    @contextmanager
    def read(self) -> Iterator[None]:
        self._run(self.conn.execute, "BEGIN")
        try:
            yield
        finally:
            self.conn.rollback()

    def table_exists(self, name: str) -> bool:
        q = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return bool(self.execute(q, (name,)))

    def close(self) -> None:
        self.conn.close()


class PostgresBackend(Backend):
    dialect = POSTGRES

    def __init__(self, url: str):
        self.label = redact(url)
        try:
            import psycopg  # the optional dependency: only for a postgresql:// store
        except ImportError:
            raise ZlbenchError(
                f"results store {self.label}: PostgreSQL needs psycopg 3: "
                "pip install 'zlbench[postgres]'"
            ) from None
        self._psycopg = psycopg
        try:
            self.conn = psycopg.connect(url, autocommit=False, connect_timeout=30)
        except psycopg.Error as e:
            raise ZlbenchError(f"results store {self.label}: {_one_line(e)}") from None

    def _run(self, fn, *args):
        try:
            return fn(*args)
        except self._psycopg.Error as e:
            raise StoreError(f"results store {self.label}: {_one_line(e)}") from e

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        def go():
            cur = self.conn.execute(sql.replace("?", "%s"), tuple(params))
            return cur.fetchall() if cur.description is not None else []

        return self._run(go)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        def go():
            with self.conn.cursor() as cur:
                cur.executemany(sql.replace("?", "%s"), list(rows))

        self._run(go)

    @contextmanager
    def write(self) -> Iterator[None]:
        try:
            self.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))
            yield
        except BaseException:
            self.conn.rollback()
            raise
        self._run(self.conn.commit)

    @contextmanager
    def read(self) -> Iterator[None]:
        try:
            yield
        finally:
            self.conn.rollback()

    def table_exists(self, name: str) -> bool:
        # a plain scan of pg_class (this statement's snapshot): to_regclass reads the
        # catalog snapshot, which may predate a table another writer just committed
        q = "SELECT 1 FROM pg_catalog.pg_class WHERE relname = ? AND pg_table_is_visible(oid)"
        return bool(self.execute(q, (name,)))

    def close(self) -> None:
        self.conn.close()


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def connect(url_or_path: str | Path, create: bool = True) -> Backend:
    """The backend of a store's URL or path."""
    text = str(url_or_path)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresBackend(text)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]  # SQLAlchemy's form: sqlite:////abs, sqlite:///rel
    elif "://" in text:
        raise ZlbenchError(
            f"results store {redact(text)}: not a path, sqlite:///PATH or postgresql://URL"
        )
    if not text:
        raise ZlbenchError("results store: an empty path")
    return SqliteBackend(Path(text), create)

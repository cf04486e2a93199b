"""The results store: every gate's rows across commits (docs/history.md).

The API (the change-point and bisect code is written against it; keep it)::

    store = open_store("history.sqlite")            # or sqlite:///x, postgresql://...
    run_id = store.add_gate(gate_dir_or_verdict, commit="abc123", parent="abc122")
    store.series("main/mm bfloat16 [...]")          # -> list[SeriesPoint], by position
    store.op_series("main/mm")                      # every row of the op, row by row
    store.runs(branch="main")                       # -> list[GateRun], by position
    store.commits(branch="main")                    # -> list[CommitRef], by position

A run is written in one transaction holding the store's write lock, or not at all
(an exception or a kill mid-write leaves nothing); a run whose key is already
there is not written again (``add_gate`` returns the recorded id).

**Commit order** (one branch's series): a commit already in the store keeps its
position; a new one takes ``position`` when given, else its ``parent``'s + 1 (the
parent must be in the store, and must not have another child: not a linear history,
refused), else the branch's next position (the order runs arrive in).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from zlbench.errors import ZlbenchError
from zlbench.history.backends import Backend, connect
from zlbench.history.record import gate_record
from zlbench.history.schema import SCHEMA_VERSION, VERDICT_CODES, steps
from zlbench.models.history import DEFAULT_BRANCH, CommitRef, GateRun, RowPoint, SeriesPoint
from zlbench.models.verdict import GateVerdict

__all__ = ["Store", "open_store"]

_VERDICT_CODE = {v: i for i, v in enumerate(VERDICT_CODES)}
_CHUNK = 500  # ids looked up per statement

_RUN_COLUMNS = (
    "r.id, r.run_key, c.sha, c.branch, c.position, r.base_commit, r.flaggems_commit, "
    "r.runner, r.gpu, r.baseline, r.baseline_digest, r.instrument, r.verdict, r.generated, "
    "r.n_rows"
)
_POINT_COLUMNS = (
    "c.sha, c.position, p.run_id, k.row_key, p.value_us, p.change, p.change_lo, p.change_hi, "
    "p.verdict, d.digest"
)
_POINT_JOINS = (
    "FROM points p JOIN runs r ON r.id = p.run_id JOIN commits c ON c.id = r.commit_id "
    "JOIN rowkeys k ON k.id = p.row_id LEFT JOIN digests d ON d.id = p.digest_id"
)


def open_store(url_or_path: str | Path, *, create: bool = True) -> Store:
    """The store at a path or URL (a plain path or ``sqlite:///path``: SQLite;
    ``postgresql://...``: PostgreSQL through psycopg 3), created when absent (unless
    ``create`` is False: then a missing SQLite file is one line, exit 2) and migrated
    to this code's schema; a store of a newer schema is refused (one line, exit 2)."""
    backend = connect(url_or_path, create)
    try:
        store = Store(backend)
        store.ensure_schema()
    except BaseException:
        backend.close()
        raise
    return store


class Store:
    def __init__(self, backend: Backend):
        self.db = backend
        self._row_ids: dict[str, int] = {}  # committed ids (a rolled-back one is never here)
        self._digest_ids: dict[str, int] = {}

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    @property
    def label(self) -> str:
        return self.db.label

    # ------------------------------------------------------------------ schema

    def schema_version(self) -> int | None:
        if not self.db.table_exists("meta"):
            return None
        got = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'")
        if not got:
            raise ZlbenchError(f"results store {self.label}: no schema_version in its meta table")
        try:
            return int(got[0][0])
        except ValueError:
            raise ZlbenchError(
                f"results store {self.label}: schema_version {got[0][0]!r} is not a number"
            ) from None

    def ensure_schema(self) -> None:
        """Create or migrate the tables (one transaction, under the write lock)."""
        with self.db.read():
            found = self.schema_version()
        if found == SCHEMA_VERSION:
            return
        self._check_not_newer(found)
        with self.db.write():
            found = self.schema_version()  # another writer may have done it meanwhile
            self._check_not_newer(found)
            for version, statements in steps(self.db.dialect, found):
                for sql in statements:
                    self.db.execute(sql)
                self.db.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(version),),
                )

    def _check_not_newer(self, found: int | None) -> None:
        if found is not None and found > SCHEMA_VERSION:
            raise ZlbenchError(
                f"results store {self.label} has schema version {found}, newer than this "
                f"zlbench's {SCHEMA_VERSION}: use a newer zlbench (a store is never downgraded)"
            )

    # ------------------------------------------------------------------ writing

    def add_gate(
        self,
        gate: str | Path | GateVerdict,
        commit: str | CommitRef | None = None,
        *,
        branch: str = DEFAULT_BRANCH,
        parent: str | None = None,
        position: int | None = None,
        run_key: str | None = None,
        baseline_digest: str = "",
    ) -> int:
        """Record one gate: its verdict (a :class:`GateVerdict`, or a gate dir whose
        ``verdict.json`` the caller's own judge wrote: docs/security.md) at ``commit``
        (None: the FlagTree commit its results recorded); the run's id."""
        verdict = gate if isinstance(gate, GateVerdict) else _load_verdict(Path(gate))
        if isinstance(commit, str):
            commit = CommitRef(sha=commit, branch=branch, parent=parent, position=position)
        elif commit is None and verdict.current_env.flagtree_commit:
            sha = verdict.current_env.flagtree_commit
            commit = CommitRef(sha=sha, branch=branch, parent=parent, position=position)
        run, rows = gate_record(verdict, commit, baseline_digest=baseline_digest, key=run_key)
        return self.add_run(run, rows, parent=parent)

    def add_run(self, run: GateRun, rows: Iterable[RowPoint], *, parent: str | None = None) -> int:
        """Write ``run`` and its ``rows`` in one transaction; the run's id (the recorded
        one, nothing written, when its key is already in the store)."""
        rows = list(rows)
        new_rows: dict[str, int] = {}
        new_digests: dict[str, int] = {}
        with self.db.write():
            found = self.db.execute("SELECT id FROM runs WHERE run_key = ?", (run.run_key,))
            if found:
                return int(found[0][0])
            commit_id = self._commit_id(run, parent)
            run_id = self.db.execute(
                "INSERT INTO runs (run_key, commit_id, base_commit, flaggems_commit, runner, gpu, "
                "baseline, baseline_digest, instrument, verdict, generated, n_rows) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    run.run_key,
                    commit_id,
                    run.base_commit,
                    run.flaggems_commit,
                    run.runner,
                    run.gpu,
                    run.baseline,
                    run.baseline_digest,
                    run.instrument,
                    run.verdict,
                    run.generated,
                    len(rows),
                ),
            )[0][0]
            row_ids = self._intern(
                "rowkeys", "row_key", {r.row: r.op for r in rows}, self._row_ids, new_rows
            )
            digests = {r.digest: None for r in rows if r.digest}
            digest_ids = self._intern("digests", "digest", digests, self._digest_ids, new_digests)
            seen: set[str] = set()
            points = []
            for r in rows:
                if r.row in seen:
                    raise ZlbenchError(f"run {run.run_key[:12]}: row {r.row} given twice")
                seen.add(r.row)
                if r.verdict not in _VERDICT_CODE:
                    raise ZlbenchError(f"row {r.row}: unknown verdict {r.verdict!r}")
                points.append(
                    (
                        row_ids[r.row],
                        run_id,
                        r.value_us,
                        r.change,
                        r.change_lo,
                        r.change_hi,
                        _VERDICT_CODE[r.verdict],
                        digest_ids.get(r.digest),
                    )
                )
            sql = (
                "INSERT INTO points (row_id, run_id, value_us, change, change_lo, change_hi, "
                "verdict, digest_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            )
            self.db.executemany(sql, points)
        self._row_ids.update(new_rows)  # committed: the ids are real
        self._digest_ids.update(new_digests)
        return int(run_id)

    def _commit_id(self, run: GateRun, parent: str | None) -> int:
        """The id of the run's commit on its branch, inserted at its position."""
        branch, sha = run.branch, run.commit
        got = self.db.execute(
            "SELECT id, position, parent FROM commits WHERE branch = ? AND sha = ?", (branch, sha)
        )
        if got:
            cid, pos, old_parent = got[0]
            if run.position is not None and run.position != pos:
                raise ZlbenchError(
                    f"commit {sha} is at position {pos} on {branch}, not {run.position}"
                )
            if parent is not None and old_parent is not None and parent != old_parent:
                raise ZlbenchError(
                    f"commit {sha} on {branch} has parent {old_parent}, not {parent}: "
                    "not a linear history"
                )
            return int(cid)
        pos = run.position
        if pos is None and parent is not None:
            got = self.db.execute(
                "SELECT position FROM commits WHERE branch = ? AND sha = ?", (branch, parent)
            )
            if not got:
                raise ZlbenchError(f"parent {parent} of {sha} is not in the store on {branch}")
            pos = int(got[0][0]) + 1
        elif pos is None:
            last = self.db.execute("SELECT MAX(position) FROM commits WHERE branch = ?", (branch,))
            pos = 0 if last[0][0] is None else int(last[0][0]) + 1
        taken = self.db.execute(
            "SELECT sha FROM commits WHERE branch = ? AND position = ?", (branch, pos)
        )
        if taken:
            raise ZlbenchError(
                f"position {pos} on {branch} is commit {taken[0][0]}, not {sha}: "
                "not a linear history"
            )
        return int(
            self.db.execute(
                "INSERT INTO commits (branch, sha, position, parent) VALUES (?, ?, ?, ?) "
                "RETURNING id",
                (branch, sha, pos, parent),
            )[0][0]
        )

    def _intern(
        self,
        table: str,
        column: str,
        wanted: dict[str, str | None],
        cache: dict[str, int],
        new: dict[str, int],
    ) -> dict[str, int]:
        """Ids of ``wanted`` values in ``table`` (rowkeys carry their op), inserting
        the absent ones inside the current transaction."""
        ids = {k: cache[k] for k in wanted if k in cache}
        missing = [k for k in wanted if k not in ids]
        for i in range(0, len(missing), _CHUNK):
            part = missing[i : i + _CHUNK]
            marks = ", ".join("?" * len(part))
            for rid, value in self.db.execute(
                f"SELECT id, {column} FROM {table} WHERE {column} IN ({marks})", part
            ):
                ids[value] = new[value] = int(rid)
        for k in (k for k in missing if k not in ids):
            if table == "rowkeys":
                sql, params = (
                    "INSERT INTO rowkeys (row_key, op) VALUES (?, ?) RETURNING id",
                    (
                        k,
                        wanted[k],
                    ),
                )
            else:
                sql, params = f"INSERT INTO {table} ({column}) VALUES (?) RETURNING id", (k,)
            ids[k] = new[k] = int(self.db.execute(sql, params)[0][0])
        return ids

    # ------------------------------------------------------------------ reading

    def series(
        self, row: str, *, branch: str = DEFAULT_BRANCH, last: int | None = None
    ) -> list[SeriesPoint]:
        """The row's points on ``branch`` by commit position (runs of one commit by
        run id); only the ``last`` ones when given."""
        with self.db.read():
            got = self.db.execute("SELECT id FROM rowkeys WHERE row_key = ?", (row,))
            if not got:
                return []
            found = self.db.execute(
                f"SELECT {_POINT_COLUMNS} {_POINT_JOINS} WHERE p.row_id = ? AND c.branch = ? "
                "ORDER BY c.position, p.run_id",
                (got[0][0], branch),
            )
        points = [_point(t) for t in found]
        return points[-last:] if last else points

    def op_series(self, op: str, *, branch: str = DEFAULT_BRANCH) -> list[SeriesPoint]:
        """Every row of ``op`` (``<repo>/<op>``, or ``<op>`` in any repo), row by row,
        each by commit position."""
        where = "k.op = ?" if "/" in op else "k.op LIKE ?"
        arg = op if "/" in op else f"%/{op}"
        with self.db.read():
            found = self.db.execute(
                f"SELECT {_POINT_COLUMNS} {_POINT_JOINS} WHERE {where} AND c.branch = ? "
                "ORDER BY k.row_key, c.position, p.run_id",
                (arg, branch),
            )
        return [_point(t) for t in found]

    def rows(self, op: str | None = None) -> list[str]:
        """Every row key in the store (of ``op`` when given), sorted."""
        with self.db.read():
            if op is None:
                found = self.db.execute("SELECT row_key FROM rowkeys ORDER BY row_key")
            else:
                found = self.db.execute(
                    "SELECT row_key FROM rowkeys WHERE op = ? ORDER BY row_key", (op,)
                )
        return [t[0] for t in found]

    def runs(
        self, *, branch: str | None = DEFAULT_BRANCH, commit: str | None = None
    ) -> list[GateRun]:
        """The recorded runs (of ``branch``, None: every branch; of ``commit`` when
        given), by branch, position and id."""
        where, args = [], []
        if branch is not None:
            where.append("c.branch = ?")
            args.append(branch)
        if commit is not None:
            where.append("c.sha = ?")
            args.append(commit)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        with self.db.read():
            found = self.db.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs r JOIN commits c ON c.id = r.commit_id "
                f"{clause} ORDER BY c.branch, c.position, r.id",
                args,
            )
        return [_run(t) for t in found]

    def commits(self, *, branch: str = DEFAULT_BRANCH) -> list[CommitRef]:
        """The branch's commits by position."""
        with self.db.read():
            found = self.db.execute(
                "SELECT sha, branch, position, parent FROM commits WHERE branch = ? "
                "ORDER BY position",
                (branch,),
            )
        return [CommitRef(sha=s, branch=b, position=int(p), parent=par) for s, b, p, par in found]

    def counts(self) -> dict[str, int]:
        """How many commits, runs, rows and points the store holds."""
        with self.db.read():
            return {
                t: int(self.db.execute(f"SELECT COUNT(*) FROM {t}")[0][0])
                for t in ("commits", "runs", "rowkeys", "points")
            }


def _point(t: tuple) -> SeriesPoint:
    sha, pos, run_id, row, value, change, lo, hi, code, digest = t
    return SeriesPoint(
        commit=sha,
        position=int(pos),
        run_id=int(run_id),
        row=row,
        value_us=value,
        change=change,
        change_lo=lo,
        change_hi=hi,
        verdict=VERDICT_CODES[code] if 0 <= code < len(VERDICT_CODES) else f"?{code}",
        digest=digest or "",
    )


def _run(t: tuple) -> GateRun:
    names = (
        "run_id run_key commit branch position base_commit flaggems_commit runner gpu "
        "baseline baseline_digest instrument verdict generated rows"
    ).split()
    return GateRun(**dict(zip(names, t, strict=True)))


def _load_verdict(gate_dir: Path) -> GateVerdict:
    from zlbench.models.base import load_json_model
    from zlbench.protocol.layout import VERDICT_JSON

    path = gate_dir / VERDICT_JSON if gate_dir.is_dir() else gate_dir
    if not path.is_file():
        raise ZlbenchError(f"{gate_dir}: no {VERDICT_JSON} (not a judged gate dir)")
    return load_json_model(path, GateVerdict)

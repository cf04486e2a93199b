"""The results store on SQLite and on the real PostgreSQL server (issue 52, item 1):
the API the change-point and bisect code use, commit order, a run written once,
a write that fails half way leaving nothing, concurrent writers, the schema's
versions and migrations."""

from __future__ import annotations

import threading

import pytest

from zlbench.errors import ZlbenchError
from zlbench.history import schema
from zlbench.history.backends import Backend, connect
from zlbench.history.store import open_store
from zlbench.models.history import GateRun, RowPoint

ROW_A = "main/mm bfloat16 [torch.Size([4096, 4096])]"
ROW_B = "main/mm float16 [torch.Size([4096, 4096])]"
ROW_C = "main/sum bfloat16 [torch.Size([1048576])]"


def run_of(i: int, **kw) -> GateRun:
    return GateRun(run_key=kw.pop("key", f"run-{i}"), commit=kw.pop("commit", f"c{i:02d}"), **kw)


def rows_of(i: int, digest: str = "d0") -> list[RowPoint]:
    return [
        RowPoint(
            row=ROW_A,
            op="main/mm",
            value_us=100.0 + i,
            change=0.01 * i,
            verdict="PASS",
            change_lo=0.01 * i - 0.005,
            change_hi=0.01 * i + 0.005,
            digest=digest,
        ),  # fmt: skip
        RowPoint(row=ROW_B, op="main/mm", value_us=50.0, verdict="REGRESSION", digest=digest),
        RowPoint(row=ROW_C, op="main/sum", value_us=None, verdict="FAILED"),
    ]


def test_series_op_series_runs_and_commits_come_back_in_commit_order(store_url):
    with open_store(store_url) as s:
        ids = [s.add_run(run_of(i, gpu="NVIDIA H200"), rows_of(i, f"d{i // 2}")) for i in range(5)]
        assert ids == sorted(ids) and len(set(ids)) == 5
        pts = s.series(ROW_A)
        assert [p.commit for p in pts] == ["c00", "c01", "c02", "c03", "c04"]
        assert [p.position for p in pts] == [0, 1, 2, 3, 4]
        assert pts[3].value_us == 103.0 and pts[3].change == pytest.approx(0.03)
        assert pts[3].change_lo == pytest.approx(0.025) and pts[3].verdict == "PASS"
        assert [p.digest for p in pts] == ["d0", "d0", "d1", "d1", "d2"]
        assert pts[2].run_id == ids[2]
        assert s.series(ROW_A, last=2)[0].commit == "c03"
        assert s.series(ROW_C)[0].value_us is None and s.series(ROW_C)[0].digest == ""
        assert s.series("main/nothing") == [] and s.series(ROW_A, branch="other") == []
        assert {p.row for p in s.op_series("main/mm")} == {ROW_A, ROW_B}
        assert len(s.op_series("mm")) == 10  # any repo's mm
        assert [r.commit for r in s.runs()] == ["c00", "c01", "c02", "c03", "c04"]
        assert s.runs(commit="c02")[0].gpu == "NVIDIA H200" and s.runs()[0].rows == 3
        assert [c.position for c in s.commits()] == [0, 1, 2, 3, 4]
        assert s.rows("main/sum") == [ROW_C]
        assert s.counts() == {"commits": 5, "runs": 5, "rowkeys": 3, "points": 15}


def test_a_run_is_never_written_twice(store_url):
    with open_store(store_url) as s:
        first = s.add_run(run_of(1), rows_of(1))
        assert s.add_run(run_of(1), rows_of(2)) == first  # the same key: nothing written
        assert s.counts()["points"] == 3 and s.series(ROW_A)[0].value_us == 101.0
    with open_store(store_url) as s:  # another connection: the key is in the store
        assert s.add_run(run_of(1), rows_of(1)) == first and s.counts()["runs"] == 1


def test_a_row_given_twice_in_one_run_is_refused_and_nothing_is_written(store_url):
    with open_store(store_url) as s:
        rows = rows_of(1)
        with pytest.raises(ZlbenchError, match="given twice"):
            s.add_run(run_of(1), [*rows, rows[0]])
        assert s.counts() == {"commits": 0, "runs": 0, "rowkeys": 0, "points": 0}


def test_commit_order_by_parent_and_position_and_a_non_linear_history_refused(store_url):
    with open_store(store_url) as s:
        s.add_run(run_of(0, commit="root"), rows_of(0))
        s.add_run(run_of(2, commit="grandchild", position=5), rows_of(2))
        s.add_run(run_of(1, commit="child"), rows_of(1), parent="root")
        assert [(c.sha, c.position) for c in s.commits()] == [
            ("root", 0), ("child", 1), ("grandchild", 5)]  # fmt: skip
        assert [p.commit for p in s.series(ROW_A)] == ["root", "child", "grandchild"]
        # a second run of a known commit joins its position
        s.add_run(run_of(3, commit="child"), rows_of(3))
        assert [p.commit for p in s.series(ROW_A)] == ["root", "child", "child", "grandchild"]
        with pytest.raises(ZlbenchError, match="not a linear history"):
            s.add_run(run_of(4, commit="sibling"), rows_of(4), parent="root")
        with pytest.raises(ZlbenchError, match="not in the store"):
            s.add_run(run_of(5, commit="orphan"), rows_of(5), parent="unknown")
        with pytest.raises(ZlbenchError, match="at position 1 on main, not 7"):
            s.add_run(run_of(6, commit="child", position=7), rows_of(6))
        with pytest.raises(ZlbenchError, match="has parent root, not grandchild"):
            s.add_run(run_of(7, commit="child"), rows_of(7), parent="grandchild")
        assert s.counts()["runs"] == 4  # none of the refused ones left a trace
        # branches are separate histories
        s.add_run(run_of(8, commit="root", branch="release"), rows_of(8))
        assert [c.position for c in s.commits(branch="release")] == [0]


def test_a_write_that_fails_half_way_leaves_nothing(store_url, monkeypatch):
    with open_store(store_url) as s:
        s.add_run(run_of(0), rows_of(0))
        real = type(s.db).executemany

        def half(self, sql, rows):  # the points half written, then the writer dies
            rows = list(rows)
            real(self, sql, rows[:1])
            raise KeyboardInterrupt

        monkeypatch.setattr(type(s.db), "executemany", half)
        with pytest.raises(KeyboardInterrupt):
            s.add_run(run_of(1, commit="new"), [*rows_of(1), RowPoint(
                row="main/new row", op="main/new", verdict="NEW", digest="fresh")])  # fmt: skip
        monkeypatch.setattr(type(s.db), "executemany", real)
        assert s.counts() == {"commits": 1, "runs": 1, "rowkeys": 3, "points": 3}
        assert [c.sha for c in s.commits()] == ["c00"]
        # the ids of the rolled-back row and digest are not believed: writing again works
        s.add_run(run_of(1, commit="new"), [*rows_of(1), RowPoint(
            row="main/new row", op="main/new", verdict="NEW", digest="fresh")])  # fmt: skip
        assert s.series("main/new row")[0].digest == "fresh"
        assert s.counts() == {"commits": 2, "runs": 2, "rowkeys": 4, "points": 7}


def test_two_shards_writing_at_once_both_land_in_order(store_url):
    def shard(k: int, errors: list) -> None:
        try:
            with open_store(store_url) as s:
                for i in range(6):
                    row = RowPoint(row=f"main/op{k} f32 [{i}]", op=f"main/op{k}", verdict="PASS")
                    s.add_run(run_of(i, key=f"s{k}-{i}", commit=f"s{k}-c{i}"), [row])
                    # the same run key from both shards: written once
                    s.add_run(run_of(i, key=f"both-{i}", commit=f"both-{i}"), [row])
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    errors: list = []
    threads = [threading.Thread(target=shard, args=(k, errors)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with open_store(store_url) as s:
        counts = s.counts()
        assert counts["runs"] == 18 and counts["commits"] == 18
        assert [c.position for c in s.commits()] == list(range(18))


# ---------------------------------------------------------------------- the schema


def _v1_store(backend: Backend) -> None:
    """A store as version 1 wrote it, with one run."""
    with backend.write():
        for sql in schema.steps(backend.dialect, None)[0][1]:
            backend.execute(sql)
        backend.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
        backend.execute(
            "INSERT INTO commits (branch, sha, position, parent) VALUES ('main', 'old', 0, NULL)"
        )
        backend.execute(
            "INSERT INTO runs (run_key, commit_id, baseline, baseline_digest, verdict, "
            "generated, n_rows) VALUES ('k-old', 1, 'baselines/v7', '', 'PASS', '', 1)"
        )
        backend.execute("INSERT INTO rowkeys (row_key, op) VALUES (?, 'main/mm')", (ROW_A,))
        backend.execute(
            "INSERT INTO points (row_id, run_id, value_us, verdict) VALUES (1, 1, 12.5, 0)"
        )


def test_a_version_1_store_is_migrated_and_keeps_its_runs(store_url):
    backend = connect(store_url)
    _v1_store(backend)
    backend.close()
    with open_store(store_url) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION == 2
        (run,) = s.runs()
        assert run.instrument == "" and run.baseline == "baselines/v7"  # the new column
        assert s.series(ROW_A)[0].value_us == 12.5
        s.add_run(run_of(1, instrument="ratio + A/B interleaved"), rows_of(1))
        assert s.runs()[-1].instrument == "ratio + A/B interleaved"
    with open_store(store_url) as s:  # opening a current store changes nothing
        assert s.schema_version() == 2 and s.counts()["runs"] == 2


def test_a_store_of_a_newer_schema_is_refused_in_one_line(store_url):
    with open_store(store_url) as s:
        s.add_run(run_of(0), rows_of(0))
        with s.db.write():
            s.db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ZlbenchError, match=r"schema version 99, newer than this zlbench's 2") as e:
        open_store(store_url)
    assert "\n" not in str(e.value)


def test_a_file_that_is_not_a_store_is_one_line(tmp_path):
    bad = tmp_path / "h.sqlite"
    bad.write_text("not a database at all\n" * 100)
    with pytest.raises(ZlbenchError, match="file is not a database"):
        open_store(bad)
    with pytest.raises(ZlbenchError, match="no results store at"):
        open_store(tmp_path / "absent.sqlite", create=False)
    with pytest.raises(ZlbenchError, match="not a path, sqlite:///PATH or postgresql://URL"):
        open_store("mysql://u:secret@h/db")


def test_sqlite_urls_name_files_as_sqlalchemy_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    open_store("sqlite:///rel.sqlite").close()
    open_store(f"sqlite:///{tmp_path}/abs.sqlite").close()
    assert (tmp_path / "rel.sqlite").is_file() and (tmp_path / "abs.sqlite").is_file()


def test_a_password_never_reaches_the_error_line():
    with pytest.raises(ZlbenchError) as e:
        open_store("postgresql://zl:hunter2@127.0.0.1:1/none")
    assert "hunter2" not in str(e.value) and "zl:***@127.0.0.1:1" in str(e.value)

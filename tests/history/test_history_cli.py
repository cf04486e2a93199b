"""`zlbench history` and `gate --store` (issue 52, items 1, 2 and the report's noise):
a gate dir re-judged and recorded once, a row's or op's series printed, bad input one
line with exit 2, and the gate's report showing each row's usual noise."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from zlbench.cli import main
from zlbench.history.store import open_store
from zlbench.models import GateVerdict, load_json_model
from zlbench.models.history import GateRun, RowPoint

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "h200-gate-v2-no-pipeline"
BASELINE = ROOT / "baselines" / "v2"
MM = "main/mm bfloat16 [torch.Size([1024, 1024]), torch.Size([1024, 1024])]"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("ZLBENCH_STORE", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def add(store: Path, *extra: str) -> int:
    argv = ["history", "add", str(EXAMPLE), "--baseline", str(BASELINE), "--store", str(store)]
    return main(argv + list(extra))


@pytest.mark.data
def test_history_add_rejudges_a_gate_dir_and_records_it_once(tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    assert add(store, "--commit", "aaa111") == 0
    first = capsys.readouterr().out
    assert "run 1: aaa111 at position 0 on main, 8 rows (FAIL)" in first
    assert add(store, "--commit", "aaa111") == 0  # the same gate: not written again
    assert "run 1:" in capsys.readouterr().out
    with open_store(store) as s:
        assert s.counts() == {"commits": 1, "runs": 1, "rowkeys": 8, "points": 8}
        (p,) = s.series(MM)
        run = s.runs()[0]
    # the verdict is the judge's, re-derived from the evidence (4 regressions there)
    assert p.verdict == "REGRESSION" and p.change == pytest.approx(0.729, abs=1e-3)
    assert p.digest and len(p.digest) == 16  # the screen named its kernels
    assert run.baseline.endswith("v2") and len(run.baseline_digest) == 64
    assert run.gpu == "NVIDIA H200" and run.instrument == "torch_normalized"
    assert add(store, "--commit", "bbb222", "--parent", "aaa111", "--run-key", "ci-2") == 0
    assert main(["history", "--store", str(store), "--row", MM]) == 0
    out = capsys.readouterr().out
    assert "aaa111" in out and "bbb222" in out and "REGRESSION" in out
    assert "usual noise: n/a" in out
    assert main(["history", "--store", str(store), "--op", "mm"]) == 0
    assert "main/mm bfloat16" in capsys.readouterr().out


@pytest.mark.data
def test_history_add_without_a_commit_is_one_line(tmp_path, capsys):
    assert add(tmp_path / "h.sqlite") == 2  # the example's results record none
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("zlbench history: error:") and "give --commit" in err[-1]
    with open_store(tmp_path / "h.sqlite") as s:
        assert s.counts()["runs"] == 0


def test_bad_stores_and_rows_are_one_line_exit_2(tmp_path, capsys):
    missing = tmp_path / "none.sqlite"
    assert main(["history", "--store", str(missing), "--row", MM]) == 2
    assert "no results store at" in capsys.readouterr().err
    assert not missing.exists()  # reading never creates a store
    assert main(["history", "--row", MM]) == 2
    assert "give --store URL or set ZLBENCH_STORE" in capsys.readouterr().err
    store = tmp_path / "h.sqlite"
    with open_store(store) as s:
        s.add_run(
            GateRun(run_key="k", commit="c"), [RowPoint(row=MM, op="main/mm", verdict="PASS")]
        )
    assert main(["history", "--store", str(store), "--row", "main/nothing"]) == 2
    assert "not in the store on main" in capsys.readouterr().err
    assert main(["history", "--store", str(store), "--row", MM, "--commit", "x"]) == 2
    assert "are for `history add`" in capsys.readouterr().err
    with open_store(store) as s, s.db.write():
        s.db.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    assert main(["history", "--store", str(store), "--row", MM]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "schema version 7, newer than this zlbench's 2" in err


def test_the_store_comes_from_zlbench_store(tmp_path, capsys, monkeypatch):
    store = tmp_path / "h.sqlite"
    with open_store(store) as s:
        s.add_run(
            GateRun(run_key="k", commit="c1"), [RowPoint(row=MM, op="main/mm", verdict="PASS")]
        )
    monkeypatch.setenv("ZLBENCH_STORE", f"sqlite:///{store}")
    assert main(["history"]) == 0
    assert "1 run(s), 1 commit(s)" in capsys.readouterr().out


def seed(store: Path, rows: list[str], n: int = 12) -> None:
    """``n`` earlier gates of ``rows``, each row's value moving ~1 % commit to commit."""
    rng = random.Random(52)
    with open_store(store) as s:
        for i in range(n):
            pts = [
                RowPoint(
                    row=r,
                    op=r.split(" ")[0],
                    value_us=10.0 * (1 + rng.uniform(-0.01, 0.01)),
                    verdict="PASS",
                    change=0.0,
                )  # fmt: skip
                for r in rows
            ]
            s.add_run(GateRun(run_key=f"seed-{i}", commit=f"old{i:02d}"), pts)


@pytest.mark.data
def test_the_gate_report_shows_each_rows_usual_noise_and_the_change_over_it(tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    out = tmp_path / "gate"
    argv = ["gate", "--baseline", str(BASELINE), "--results", str(EXAMPLE), "--out", str(out)]
    assert main(argv) == 1
    plain = (out / "report.md").read_text(encoding="utf-8")
    assert "Against history" not in plain  # no store, no section (the goldens' case)
    v = load_json_model(out / "verdict.json", GateVerdict)
    seed(store, [r.key.label() for r in v.rows][:5])
    capsys.readouterr()
    assert main([*argv[:-1], str(tmp_path / "gate2"), "--store", str(store)]) == 1
    report = (tmp_path / "gate2" / "report.md").read_text(encoding="utf-8")
    assert "### Against history" in report and "Change ÷ noise" in report
    assert "× " in report or "×|" in report.replace(" ", "")
    # the regressed rows against a ~1 % usual noise: large factors, listed first
    section = report.split("### Against history", 1)[1].split("###", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| `main/")]
    assert len(lines) == 5  # the seeded rows, each with 12 commits
    factors = [float(ln.split("|")[7].strip().rstrip("×")) for ln in lines]
    assert factors == sorted(factors, key=abs, reverse=True) and factors[0] > 10
    assert "`main/addmm`" in lines[0] and "REGRESSION" in lines[0] and "+161.3 %" in lines[0]
    # the results record no FlagTree commit: a warning line, the verdict's exit code
    err = capsys.readouterr().err
    assert "not recorded in the results store" in err and "give the commit" in err
    with open_store(store) as s:
        assert s.counts()["runs"] == 12

"""Shards of one run: which calls a shard takes, the start barrier's inputs, the skew readout, and `arena merge`'s
refusals (differing plans, the same shard or call twice, a shard still running) and what it keeps."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import tomli_w

from arenatui.cli import main
from arenatui.commands.shards import shards_label
from arenatui.kernel.errors import ArenaError, PlanError
from arenatui.load.barrier import clock_estimate, parse_instant, start_instant, start_skew_line
from arenatui.plan import Filters, Shard, in_shard, make_plan, parse_shard
from arenatui.project import load_project
from arenatui.session.live import LiveMetrics
from arenatui.store import Store
from arenatui.store.merge import merge
from arenatui.store.run_shards import ShardRecord


def _project(tmp_path: Path, seed: int = 5, name: str = "arena.toml") -> Path:
    sim = {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0}
    raw = {"project": {"name": "shards"}, "run": {"seed": seed, "trials": 2, "concurrency": 4},
           "models": [{"key": "a", "provider": "sim", "sim": sim}, {"key": "b", "provider": "sim", "sim": sim}],
           "cases": [{"id": f"q{i}", "input": f"{i}?", "expected": str(i)} for i in range(6)]}
    p = tmp_path / name
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


def _shard_dbs(tmp_path: Path, n: int, *, proj: Path | None = None, run_id: str = "r", only: range | None = None,
               prefix: str = "s") -> list[Path]:
    proj = proj or _project(tmp_path)
    dbs = []
    for k in only if only is not None else range(n):
        db = tmp_path / f"{prefix}{k}.db"
        assert main(["evaluate", "-p", str(proj), "--shard", f"{k}/{n}", "--run-id", run_id, "--db", str(db), "-q",
                     "--no-report"]) == 0
        dbs.append(db)
    return dbs


# ---- which calls a shard takes ------------------------------------------------------------------------------


def test_every_call_falls_to_exactly_one_shard_and_shards_are_balanced() -> None:
    calls = [(m, f"c{i}", t) for m in ("x", "y") for i in range(500) for t in range(3)]
    owners = [[k for k in range(4) if in_shard(7, *c, Shard(k, 4))] for c in calls]
    assert all(len(o) == 1 for o in owners)
    sizes = [sum(1 for o in owners if o == [k]) for k in range(4)]
    assert min(sizes) > 0.85 * len(calls) / 4  # 3,000 calls: a share within 15% of a quarter
    # stable: another seed deals the calls differently, the same seed the same way
    assert [in_shard(8, *c, Shard(0, 4)) for c in calls] != [in_shard(7, *c, Shard(0, 4)) for c in calls]


def test_a_shard_plan_pends_only_its_calls_and_the_console_plans_only_those(tmp_path: Path) -> None:
    project = load_project(_project(tmp_path))
    plans = [make_plan(project, Filters(shard=Shard(k, 3))) for k in range(3)]
    mine = [{(m.key, c.id, t) for m in p.models for c, t in p.pending(m.key)} for p in plans]
    assert sum(len(s) for s in mine) == len(set().union(*mine)) == plans[0].total == 2 * 6 * 2
    for p, s in zip(plans, mine, strict=True):
        assert p.shard_total() == len(s) == p.remaining
        live = LiveMetrics([m.key for m in p.models], [c.id for c in p.cases], p.trials, cells=p.shard_cells())
        assert live.planned == len(s)
    assert make_plan(project).shard_total() == 24


def test_the_shard_is_stored_with_the_filters_so_resume_keeps_it() -> None:
    f = Filters(models=("a",), shard=Shard(2, 5))
    assert Filters.from_dict(f.to_dict()) == f
    assert "shard" not in Filters().to_dict()  # an unsharded run's stored filters are as before


@pytest.mark.parametrize("value", ["4/4", "-1/3", "1", "a/b", "1/0", "1/3/2"])
def test_a_bad_shard_is_refused(value: str) -> None:
    with pytest.raises(PlanError, match="K/N"):
        parse_shard(value)


# ---- the start barrier ----------------------------------------------------------------------------------------


def test_instants_need_a_zone_and_start_in_needs_a_shared_base() -> None:
    assert parse_instant("2026-12-01T12:00:00Z", "x") == parse_instant("2026-12-01T13:00:00+01:00", "x")
    assert parse_instant("1796126400", "x") == parse_instant("2026-12-01T12:00:00Z", "x")
    with pytest.raises(ArenaError, match="no time zone"):
        parse_instant("2026-12-01T12:00:00", "--start-at")
    with pytest.raises(ArenaError, match="ISO 8601"):
        parse_instant("noon", "--start-at")
    assert start_instant(None, 30.0, "1796126400", now=1796126000.0) == 1796126430.0
    with pytest.raises(ArenaError, match="--start-base"):
        start_instant(None, 30.0, None)
    with pytest.raises(ArenaError, match="not both"):
        start_instant("1796126400", 3.0, "1796126400")
    with pytest.raises(ArenaError, match="within a week"):
        start_instant("2036-12-01T12:00:00Z", None, None, now=1796126000.0)
    assert start_instant(None, None, None) is None


def test_the_clock_estimate_is_a_figure_or_says_why_not() -> None:
    offset, error, source = clock_estimate()
    assert source
    assert (offset is None) == (error is None)


def test_the_worst_start_skew_names_its_shard() -> None:
    rec = [ShardRecord(0, 3, "h0", "finished", 100.0, 0.002, 0.0005, 0.001, "ntp"),
           ShardRecord(1, 3, "h1", "finished", 100.0, 0.010, -0.003, 0.001, "ntp"),
           ShardRecord(2, 3, "h2", "finished", 100.0, 0.001, None, None, "unsynchronised")]
    line = start_skew_line(rec)
    assert line is not None
    assert "worst start skew 14 ms" in line and "shard 1/3 on h1" in line and "1 of 3 shards' clocks" in line
    assert start_skew_line([ShardRecord(0, 2, "h", "finished", None, None, None, None, None)]) is None


def test_runs_labels() -> None:
    assert shards_label(None) == ""
    assert shards_label((4, 4, 0)) == ", 4 shards"
    assert shards_label((1, 4, 2)) == ", shard 2/4"
    assert shards_label((3, 4, 0)) == ", 3 of 4 shards"


# ---- arena merge -----------------------------------------------------------------------------------------------


def test_merge_refuses_shards_whose_plans_differ_and_names_the_difference(tmp_path: Path) -> None:
    (a,) = _shard_dbs(tmp_path, 2, only=range(0, 1))
    (b,) = _shard_dbs(tmp_path, 2, proj=_project(tmp_path, seed=6, name="other.toml"), only=range(1, 2))
    with pytest.raises(PlanError, match=r"plan\.config\.run\.seed: 5 in '.*s0\.db', 6 in '.*s1\.db'"):
        merge(tmp_path / "out.db", [a, b])
    assert not (tmp_path / "out.db").exists() or Store(tmp_path / "out.db").list_runs() == []


def test_merge_refuses_the_same_shard_or_call_twice_and_leaves_nothing_behind(tmp_path: Path) -> None:
    dbs = _shard_dbs(tmp_path, 2)
    out = tmp_path / "out.db"
    with Store(out) as store:
        store.create_run("other", None, {"project": {"name": "other"}}, {}, 0, run_id="kept")
    copy = tmp_path / "copy.db"
    copy.write_bytes(dbs[0].read_bytes())
    with pytest.raises(PlanError, match="shard 0/2 is in both"):
        merge(out, [dbs[0], copy])
    whole = tmp_path / "whole.db"
    assert main(["evaluate", "-p", str(tmp_path / "arena.toml"), "--run-id", "r", "--db", str(whole), "-q",
                 "--no-report"]) == 0
    with pytest.raises(PlanError, match="the shards overlap"):
        merge(out, [dbs[0], whole])
    with Store(out) as store:  # the refused run left no row; the other run is kept
        assert [r.run_id for r in store.list_runs()] == ["kept"]
        assert store.count_results("r") == 0


def test_merge_takes_more_shards_later_and_says_which_are_missing(tmp_path: Path) -> None:
    dbs = _shard_dbs(tmp_path, 3)
    out = tmp_path / "out.db"
    first = merge(out, dbs[:2])
    assert first.present == [0, 1] and first.missing == [2]
    with Store(out) as store:
        assert "missing: 2" in (store.get_run("r").message or "")
    later = merge(out, dbs[2:])
    assert later.present == [0, 1, 2] and later.missing == []
    with Store(out) as store:
        rec = store.get_run("r")
        assert rec.status == "finished" and rec.message is None
        assert store.count_results("r") == rec.planned == 24
        assert "shard" not in rec.filters  # the merged run is the whole run
    with pytest.raises(PlanError, match="shard 1/3 is in both the output"):
        merge(out, dbs[1:2])


def test_merge_refuses_a_running_shard_and_a_missing_run(tmp_path: Path) -> None:
    (a, b) = _shard_dbs(tmp_path, 2)
    with Store(b) as store:  # as if its machine were still at it: a fresh heartbeat from another host
        store.conn.execute("UPDATE runs SET status = 'running', pid = 1, host = 'elsewhere', heartbeat_at = ?",
                           (time.time(),))
    with pytest.raises(PlanError, match="still running"):
        merge(tmp_path / "out.db", [a, b])
    (c,) = _shard_dbs(tmp_path, 2, run_id="another", only=range(1, 2), prefix="x")
    with pytest.raises(PlanError, match="no run id is in every input"):
        merge(tmp_path / "out.db", [a, c])
    with pytest.raises(PlanError, match="holds no run 'r'"):
        merge(tmp_path / "out.db", [a, c], run="r")


def test_merge_refuses_different_shard_counts(tmp_path: Path) -> None:
    (a,) = _shard_dbs(tmp_path, 2, only=range(0, 1))
    (b,) = _shard_dbs(tmp_path, 3, only=range(1, 2), prefix="t")
    with pytest.raises(PlanError, match=r"holds shard 1/3 but .* holds shards of 2; a run's shards share one N"):
        merge(tmp_path / "out.db", [a, b])


@pytest.mark.parametrize(("argv", "expected"), [
    (["evaluate", "--shard", "2/2", "--run-id", "x"], "--shard: expected K/N"),
    (["evaluate", "--shard", "0/2"], "pass --run-id"),
    (["evaluate", "--shard", "0/2", "--run-id", "no spaces"], "--run-id: expected"),
    (["load", "--rate", "5", "--start-at", "2026-12-01T12:00:00"], "no time zone"),
    (["load", "--rate", "5", "--start-in", "30s"], "--start-base"),
    (["merge", "OUT.db", "missing.db"], "is not a file"),
])
def test_bad_shard_flags_exit_2_with_one_paragraph(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   argv: list[str], expected: str) -> None:
    proj = _project(tmp_path)
    if argv[0] == "merge":
        argv = ["merge", str(tmp_path / argv[1]), str(tmp_path / argv[2])]
    else:
        argv = [*argv, "-p", str(proj), "--db", str(tmp_path / "d.db"), "-q"]
        if argv[0] == "load":
            argv += ["-m", "a"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in " ".join(err.split()) and "Traceback" not in err


def test_a_judged_sweep_merges_its_judgments_call_for_call(tmp_path: Path) -> None:
    import tomllib

    raw = tomllib.loads((Path(__file__).resolve().parents[2] / "sample_configs" / "judged.toml").read_text())
    for m in raw["models"]:
        m["sim"].update(base_latency_s=0.0, per_token_s=0.0)
        for timing_dependent in ("serial", "rpm"):  # a call's attempts would hang on the machine's speed
            m["sim"].pop(timing_dependent, None)
    proj = tmp_path / "judged.toml"
    proj.write_text(tomli_w.dumps(raw), encoding="utf-8")
    dbs = _shard_dbs(tmp_path, 2, proj=proj)
    whole = tmp_path / "whole.db"
    assert main(["evaluate", "-p", str(proj), "--run-id", "r", "--db", str(whole), "-q", "--no-report"]) == 0
    merge(tmp_path / "out.db", dbs)
    cols = "model_key, case_id, trial, judge_key, status, score, output, attempts, input_tokens, output_tokens, cost"
    query = f"SELECT {cols} FROM judgments WHERE run_id = 'r' ORDER BY model_key, case_id, trial"
    with Store(tmp_path / "out.db") as merged, Store(whole) as one:
        judged = merged.conn.execute(query).fetchall()
        assert judged and judged == one.conn.execute(query).fetchall()
        scored = "SELECT model_key, case_id, trial, status, score FROM results ORDER BY 1, 2, 3"
        assert merged.conn.execute(scored).fetchall() == one.conn.execute(scored).fetchall()


def test_resuming_a_merged_sweep_makes_the_missing_shards_calls(tmp_path: Path) -> None:
    dbs = _shard_dbs(tmp_path, 3, only=range(0, 2))
    out = tmp_path / "out.db"
    merge(out, dbs)
    with Store(out) as store:
        before = store.count_results("r")
        assert before < 24
    assert main(["evaluate", "--resume", "r", "--db", str(out), "-q", "--no-report"]) == 0
    with Store(out) as store:
        assert store.count_results("r") == 24


def test_merge_names_the_first_case_that_differs(tmp_path: Path) -> None:
    (a,) = _shard_dbs(tmp_path, 2, only=range(0, 1))
    other = _project(tmp_path, name="other.toml")
    other.write_text(other.read_text().replace('expected = "3"', 'expected = "three"'), encoding="utf-8")
    (b,) = _shard_dbs(tmp_path, 2, proj=other, only=range(1, 2))
    with pytest.raises(PlanError, match=r"plan\.cases\['q3'\]\.expected: \"3\" in '.*s0\.db', \"three\" in"):
        merge(tmp_path / "out.db", [a, b])


# ---- issue 34 item 13: tampered shard rows are refused, one paragraph, exit 2 ------------------------------------

TAMPERING = [
    ("UPDATE results SET score = -5 WHERE rowid = (SELECT MIN(rowid) FROM results)", "score -5"),
    ("UPDATE results SET score = 1e308 WHERE rowid = (SELECT MIN(rowid) FROM results)", "score 1e+308"),
    ("UPDATE results SET passed = 1 - passed WHERE rowid = (SELECT MIN(rowid) FROM results)", "passed"),
    ("UPDATE results SET passed = 7 WHERE rowid = (SELECT MIN(rowid) FROM results)", "passed"),
    ("UPDATE results SET model_key = 'intruder' WHERE rowid = (SELECT MIN(rowid) FROM results)", "'intruder'"),
    ("UPDATE results SET case_id = 'nope' WHERE rowid = (SELECT MIN(rowid) FROM results)", "'nope'"),
    ("UPDATE results SET trial = 999999999 WHERE rowid = (SELECT MIN(rowid) FROM results)", "trial 999999999"),
    ("UPDATE results SET variant = 'v9' WHERE rowid = (SELECT MIN(rowid) FROM results)", "'v9'"),
    ("UPDATE results SET latency_ms = 'slow' WHERE rowid = (SELECT MIN(rowid) FROM results)", "latency_ms"),
    ("UPDATE results SET cost = 'x' WHERE rowid = (SELECT MIN(rowid) FROM results)", "cost"),
    ("UPDATE failed_attempts SET delay_s = 'slow'", "delay_s"),
    ("UPDATE runs SET config_json = 'not json'", "config_json"),
    ("UPDATE runs SET filters_json = '[1'", "filters_json"),
    ("UPDATE runs SET started_at = 'noon'", "started_at"),
]


@pytest.mark.parametrize(("sql", "named"), TAMPERING)
def test_merge_refuses_a_tampered_shard_naming_the_file_and_the_row(tmp_path: Path, sql: str, named: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    dbs = _shard_dbs(tmp_path, 2)
    with sqlite3.connect(dbs[1]) as conn:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        if "failed_attempts" in sql:  # make sure there is a row to tamper with
            conn.execute("INSERT INTO failed_attempts (run_id, model_key, case_id, trial, attempt, at, error_class, "
                         "message, delay_s) SELECT run_id, model_key, case_id, trial, 1, 1.0, 'transient', 'x', 1.0 "
                         "FROM results LIMIT 1")
        conn.execute(sql)
    out = tmp_path / "out.db"
    capsys.readouterr()
    assert main(["merge", str(out), *map(str, dbs), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: arena merge:") and "Traceback" not in err, err
    assert "s1.db" in " ".join(err.split()) and named in " ".join(err.split()), err
    assert len(err.strip().split("\n\n")) == 1  # one paragraph
    if out.exists():
        with Store(out) as store:  # nothing of the run was merged
            assert store.count_results("r") == 0


# ---- issue 34 item 22: a non-regular OUT is refused before it is opened --------------------------------------------

def test_merge_refuses_an_output_that_is_no_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    dbs = _shard_dbs(tmp_path, 2)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    leftovers = [Path(os.devnull + end) for end in ("-journal", "-wal")]
    already = [p.exists() for p in leftovers]  # another program's, not this test's
    for out in (Path(os.devnull), fifo, tmp_path):
        capsys.readouterr()
        assert main(["merge", str(out), *map(str, dbs), "-q"]) == 2
        err = capsys.readouterr().err
        assert "is not a regular file" in " ".join(err.split()) and "Traceback" not in err, err
    assert [p.exists() for p in leftovers] == already  # SQLite never opened /dev/null (as root it left a journal)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("pipe")) == ["pipe"]


# ---- issue 34 item 23: a reserved run id is refused ---------------------------------------------------------------

@pytest.mark.parametrize("rid", ["last", "LAST"])
def test_a_run_id_that_names_no_run_is_refused(tmp_path: Path, rid: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`--run-id last` was accepted, and the run could never be addressed afterwards ('last' means the newest)."""
    assert main(["evaluate", "-p", str(_project(tmp_path)), "--run-id", rid, "--db", str(tmp_path / "r.db"), "-q",
                 "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "reserved" in err and "Traceback" not in err
    assert not (tmp_path / "r.db").exists() or Store(tmp_path / "r.db").list_runs() == []


def test_merge_keeps_the_latest_rate_limits_each_models_provider_declared_in_any_shard(tmp_path: Path) -> None:
    import sqlite3

    dbs = _shard_dbs(tmp_path, 3)
    declared = {0: [("a", 100.0, 60), ("b", 150.0, 30)], 1: [("a", 200.0, 50)], 2: [("a", 50.0, 99)]}
    for k, rows in declared.items():
        with sqlite3.connect(dbs[k]) as c:
            c.executemany("INSERT INTO declared_limits (run_id, model_key, at, requests_limit, requests_remaining) "
                          "VALUES ('r', ?, ?, ?, 1)", rows)
    out = tmp_path / "out.db"
    merge(out, dbs[:2])
    with Store(out) as store:
        got = store.declared_limits("r")
    assert {k: (at, lim.requests_limit) for k, (at, lim) in got.items()} == {"a": (200.0, 50), "b": (150.0, 30)}
    merge(out, dbs[2:])  # a later merge of an older declaration keeps the latest
    with Store(out) as store:
        assert store.declared_limits("r")["a"][0] == 200.0

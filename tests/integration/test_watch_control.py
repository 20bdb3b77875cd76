"""Issue 38 with real separate processes: a headless sweep publishes its live state, `arena control` steers it
through the database (applied once, in order, who asked recorded), `arena watch`'s model folds the stored rows into
the same figures the store holds, sees a killed runner as not running, and merges three shards exactly."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from watched_run import (
    arena,
    live_row,
    query,
    standing_still,
    start,
    start_load,
    stop,
    wait_for,
    write_project,
)

from arenatui.kernel.errors import PlanError
from arenatui.session.watch import WatchedRun, shard_paths
from arenatui.store.live_state import STALE_S, LaneLive, LiveState

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals, process groups")


def _figures(run: WatchedRun) -> dict[str, tuple[int, int, int, int]]:
    snap = run.live.snapshot()
    return {m.key: (m.done, m.passed, m.errored, m.retries) for m in snap.models}


def _stored(dbs: list[Path]) -> dict[str, tuple[int, int, int, int]]:
    """Per model: calls stored, passed, errored, and retries as the running console counts them (every retried
    attempt, its call finished or still backing off)."""
    out: dict[str, list[int]] = {}
    for db in dbs:
        for key, n, passed, errored, retries in query(
                db, "SELECT model_key, COUNT(*), SUM(status = 'passed'), SUM(status = 'errored'), (SELECT COUNT(*) "
                    "FROM failed_attempts f WHERE f.model_key = r.model_key AND delay_s IS NOT NULL) "
                    "FROM results r GROUP BY model_key"):
            got = out.setdefault(key, [0, 0, 0, 0])
            for i, v in enumerate((n, passed, errored, retries)):
                got[i] += v
    return {k: (v[0], v[1], v[2], v[3]) for k, v in out.items()}


def test_a_running_sweep_is_steered_and_watched_through_its_database(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    db = tmp_path / "r.db"
    proc = start(project, db)
    try:
        wait_for("the first live state and results", lambda: live_row(db) is not None and
                 query(db, "SELECT COUNT(*) FROM results")[0][0] >= 2, proc=proc)
        state, pid, host, models, target, tuner = live_row(db)  # type: ignore[misc]
        assert state == "running" and pid == proc.pid and host and target == 2 and tuner == 0
        assert set(json.loads(models)) == {"m1", "m2"}

        paused = arena("control", "last", "--db", str(db), "--pause", cwd=tmp_path)
        assert paused.returncode == 0 and "applied: paused" in paused.stdout, paused.stderr
        wait_for("calls in flight to finish under pause", lambda: standing_still(db), proc=proc)

        raised = arena("control", "last", "--db", str(db), "--concurrency", "5", cwd=tmp_path)
        assert raised.returncode == 0 and "applied: concurrency 5" in raised.stdout, raised.stderr
        sources = [r[0] for r in query(db, "SELECT source FROM concurrency_changes WHERE new = 5 "
                                           "AND model_key IS NULL")]
        assert len(sources) == 1 and sources[0].startswith("control by ") and " pid " in sources[0]
        capped = arena("control", "last", "--db", str(db), "--cap", "m1=3", cwd=tmp_path)
        assert capped.returncode == 0 and "applied: m1 cap 3" in capped.stdout
        nope = arena("control", "last", "--db", str(db), "--cap", "nope=3", cwd=tmp_path)
        assert nope.returncode == 1 and "refused: no model 'nope' in this run" in nope.stdout
        # every request answered once, in the order asked, with who asked
        log = query(db, "SELECT id, action, status, user, host, pid FROM control_requests ORDER BY id")
        assert [(r[1], r[2]) for r in log] == [("pause", "applied"), ("concurrency", "applied"), ("cap", "applied"),
                                               ("cap", "refused")]
        assert all(r[3] and r[4] and r[5] for r in log)

        # the watcher's figures are the stored ones (the run stands still while paused)
        run = WatchedRun([db], "last")
        try:
            assert _figures(run) == _stored([db])
            snap = run.live.snapshot()
            assert snap.target == 5 and snap.models[0].cap == 3 and run.status_words() == "paused"
            assert run.control.model_cap("m1") == 3 and run.control.paused

            tuned = arena("control", "last", "--db", str(db), "--tune", "on", cwd=tmp_path)
            assert tuned.returncode == 0 and "applied: auto-tuner on" in tuned.stdout, tuned.stderr
            wait_for("the tuner's state published", lambda: (run.poll(), run.tuner.enabled)[1], proc=proc)
            assert run.tuner.readouts() and all(run.tuner.level(k) for k in ("m1", "m2"))

            resumed = arena("control", "last", "--db", str(db), "--resume", cwd=tmp_path)
            assert resumed.returncode == 0 and "applied: resumed" in resumed.stdout
            assert proc.wait(timeout=120) == 0
            run.poll()
            run.poll()  # a second read: the rows of the run's last batch and its end
            assert run.ended == "finished" and run.status_words() == "finished"
            assert _figures(run) == _stored([db])
            assert run.live.snapshot().done == 80 and run.live.snapshot().state == "finished"
        finally:
            run.close()
        late = arena("control", "last", "--db", str(db), "--pause", cwd=tmp_path)
        assert late.returncode == 1 and "is finished" in late.stderr and "none was sent" in late.stderr
    finally:
        stop(proc)


def test_a_killed_runner_is_shown_not_running(tmp_path: Path) -> None:
    project = write_project(tmp_path)
    db = tmp_path / "r.db"
    proc = start(project, db)
    try:
        wait_for("the first live state", lambda: live_row(db) is not None, proc=proc)
        run = WatchedRun([db], "last")
        try:
            assert run.running() and run.status_words() in ("running", "paused")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)

            def gone() -> bool:
                run.poll()
                return run.status_words().startswith("not running (last seen ")
            wait_for("the watcher to say not running", gone)
            assert run.control.cancelled  # keys no longer send anything
        finally:
            run.close()
        refused = arena("control", "last", "--db", str(db), "--concurrency", "4", cwd=tmp_path)
        assert refused.returncode == 1 and "is interrupted, last seen" in refused.stderr
        assert query(db, "SELECT COUNT(*) FROM control_requests")[0][0] == 0
    finally:
        stop(proc)


def test_staleness_is_the_heartbeat_age() -> None:
    st = LiveState("r", "sweep", None, "h", 1, "u", 1000.0, "running", 2, False, False, {"m": LaneLive(1, 0, None)})
    assert st.alive(1000.0 + STALE_S - 0.1) and not st.alive(1000.0 + STALE_S + 0.1)
    assert not LiveState("r", "sweep", None, "h", 1, "u", 1000.0, "finished", 2, False, False, {}).alive(1000.0)


def test_three_shards_are_watched_as_one_and_steered_together(tmp_path: Path) -> None:
    project = write_project(tmp_path, cases=90, latency=0.25)  # 60 calls a shard, 2 at a time: ~8 s
    dbs = [tmp_path / f"shard-{k}.db" for k in range(3)]
    procs = [start(project, db, "--shard", f"{k}/3", "--run-id", "wide") for k, db in enumerate(dbs)]
    try:
        for db, p in zip(dbs, procs, strict=True):
            wait_for("each shard's live state", lambda db=db: live_row(db) is not None, proc=p)  # type: ignore[misc]
        paused = arena("control", "wide", "--db", str(tmp_path / "shard-*.db"), "--pause", cwd=tmp_path)
        assert paused.returncode == 0 and paused.stdout.count("applied: paused") == 3, paused.stderr
        for db, p in zip(dbs, procs, strict=True):
            wait_for("each shard to stand still", lambda db=db: standing_still(db), proc=p)  # type: ignore[misc]
        assert shard_paths([str(tmp_path)]) == dbs
        run = WatchedRun(shard_paths([str(tmp_path)]), "wide")
        try:
            assert _figures(run) == _stored(dbs)
            assert run.live.planned == 180 and run.status_words() == "paused"
            lines = run.shard_lines()
            assert len(lines) == 3 and all("running" in line and "pid" in line for line in lines)
            with pytest.raises(PlanError, match="still running"):  # r says why there are no merged results yet
                run.results_db()
            assert run.send("resume") == []
            for p in procs:
                assert p.wait(timeout=120) == 0
            run.poll()
            run.poll()
            assert run.ended == "finished"
            assert _figures(run) == _stored(dbs) and run.live.snapshot().done == 180
            answered = run.take_answers()
            assert [(r.action, status) for r, status, _reply in answered] == [("resume", "applied")] * 3
            merged = run.results_db()  # r: the shards merged as `arena merge` merges them, not the first shard's
            assert merged not in dbs and _stored([merged]) == _stored(dbs)
            assert query(merged, "SELECT COUNT(*) FROM results")[0][0] == 180
        finally:
            run.close()
    finally:
        for p in procs:
            stop(p)


def test_control_that_cannot_write_the_database_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from arenatui import cli
    from arenatui.store import Store
    from arenatui.store.live_state import UPSERT_LIVE_STATE, live_state_row

    db = tmp_path / "r.db"
    with Store(db) as store:
        run_id = store.create_run("p", None, {"models": [], "cases": []}, {}, 1)
        store.conn.execute(UPSERT_LIVE_STATE, live_state_row(run_id, kind="sweep", shard=None, state="running",
                                                             target=1, paused=False, tuner=False, lanes={}))
    monkeypatch.setattr("arenatui.store.live_state.os.access", lambda *_a, **_k: False)  # root ignores modes
    assert cli.main(["control", run_id, "--db", str(db), "--pause"]) == 2
    err = capsys.readouterr().err
    words = " ".join(err.split())  # the paragraph is folded to the terminal's width
    assert "cannot be written by this process" in words and "Traceback" not in err and str(db) in words
    assert cli.main(["control", run_id, "--db", str(db), "--cap", "m1"]) == 2
    assert "expected MODEL=N" in capsys.readouterr().err


def test_a_running_load_run_is_watched_and_its_rate_changed(tmp_path: Path) -> None:
    """Item 5: arena watch on a running `arena load` reads the figures its process publishes; a rate request
    starts a new segment at the asked rate; a sweep's request is refused with why."""
    from arenatui.session.watch import WatchedLoad, open_run

    project = write_project(tmp_path, cases=5, latency=0.05)
    db = tmp_path / "load.db"
    proc = start_load(project, db, 4)
    try:
        wait_for("the load run's published figures", lambda: live_row(db) is not None and
                 query(db, "SELECT COUNT(*) FROM load_requests")[0][0] > 0, proc=proc)
        run = open_run([db], "last")
        assert isinstance(run, WatchedLoad)
        try:
            wait_for("a snapshot with requests done", lambda: run.snapshot().done > 0, proc=proc)
            snap = run.snapshot()
            assert snap.target_rate == 4.0 and run.status is None
            faster = arena("control", "last", "--db", str(db), "--rate", "8", cwd=tmp_path)
            assert faster.returncode == 0 and "applied: offered rate 8 req/s" in faster.stdout, faster.stderr
            wait_for("the new rate published", lambda: run.snapshot().target_rate == 8.0, proc=proc)
            assert query(db, "SELECT COUNT(*) FROM load_segments")[0][0] == 2
            nope = arena("control", "last", "--db", str(db), "--concurrency", "3", cwd=tmp_path)
            assert nope.returncode == 1 and "refused: a load run has no concurrency to change" in nope.stdout
            run.change_rate(2.0)  # the load screen's - key
            wait_for("the watcher's rate applied", lambda: run.snapshot().target_rate == 2.0, proc=proc)
        finally:
            run.close()
    finally:
        stop(proc)


def test_watch_given_no_database_or_an_empty_directory_says_so(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from arenatui import cli

    assert cli.main(["watch", "--db", str(tmp_path / "missing.db")]) == 2
    err = capsys.readouterr().err
    assert "no such database" in err and "missing.db" in err and "Traceback" not in err
    (tmp_path / "shards").mkdir()
    assert cli.main(["watch", "--db", str(tmp_path / "shards")]) == 2
    assert "holds no *.db file" in " ".join(capsys.readouterr().err.split())
    assert cli.main(["control", "last", "--db", str(tmp_path / "shards" / "*.db"), "--pause"]) == 2
    assert "no file matches the pattern" in " ".join(capsys.readouterr().err.split())  # wrapped to the width


def test_a_run_stopped_and_resumed_while_watched_ends_with_the_stored_figures(tmp_path: Path) -> None:
    """A resume stores a stopped call's result in place of its 'cancelled' row (same rowid): the watcher reads such
    rows again until they hold a result, so its figures end equal to the stored ones."""
    project = write_project(tmp_path, cases=20)
    db = tmp_path / "r.db"
    proc = start(project, db)
    try:
        wait_for("some results", lambda: (query(db, "SELECT COUNT(*) FROM results") or [(0,)])[0][0] >= 4, proc=proc)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        stop(proc)
    cancelled = query(db, "SELECT COUNT(*) FROM results WHERE error_class = 'cancelled'")[0][0]
    run = WatchedRun([db], "last")
    try:
        assert run.ended == "cancelled" and run.live.snapshot().state == "cancelled"
        resumed = arena("evaluate", "--resume", "last", "--db", str(db), "--quiet", "--no-report", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        run.poll()
        run.poll()
        assert run.ended == "finished" and run.live.snapshot().done == 40
        assert _figures(run) == _stored([db])
        assert cancelled > 0 and not any(sh.cancelled for sh in run.shards)  # the stop cut calls in flight
    finally:
        run.close()


def test_a_judged_run_is_watched_with_its_judge_lane(tmp_path: Path) -> None:
    """The judgments fold in as the judge calls they were: the judge lane's calls and spend, and each verdict on its
    candidate's call (judged_run's figures are by hand)."""
    from judged_run import JUDGE_COST, build

    db = tmp_path / "j.db"
    run_id, _judged = build(db)
    run = WatchedRun([db], run_id)
    try:
        snap = run.live.snapshot()
        by_key = {m.key: m for m in snap.models}
        assert [(k, m.done, m.passed, m.failed, m.errored, m.unscored) for k, m in by_key.items()] == [
            ("alpha", 11, 5, 1, 0, 5), ("beta", 11, 4, 1, 1, 5), ("judge:grader", 8, 6, 1, 1, 0)]
        assert by_key["judge:grader"].judge and snap.judge_done == snap.judge_planned == 8
        assert round(snap.judge_cost, 6) == round(9 * JUDGE_COST, 6)  # the failed verdict took two attempts
        assert (snap.passed, snap.failed, snap.errored, snap.unscored) == (9, 2, 1, 10)
    finally:
        run.close()

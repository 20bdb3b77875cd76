"""`arena watch` with Pilot, attached to a headless sweep in a process of its own: the console's screens fed from the
database show the stored figures, its keys steer the other process (the answer shown), and the run's end is said."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from textual.app import App
from watched_run import live_row, query, standing_still, start, start_load, stop, write_project

from arenatui.session.watch import WatchedRun
from arenatui.tui.watch_app import WatchApp, WatchScreen

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sys.platform == "win32", reason="process groups")]


async def _until(what: str, cond: Callable[[], object], app: App[Any] | None = None) -> None:
    """Wait for `cond`; with `app`, fail at once with the exception that ended it. An exception raised in a screen's
    refresh (a set_interval callback, on_mount) goes to Textual's App._handle_exception, which ends the app and keeps
    the exception for run_test to raise when its block is left; Pilot.pause does not raise it, so a test polling for
    a condition the dead app will never meet waited out its hang guard (120 s) instead of failing."""
    with anyio.fail_after(120.0):  # a hang guard, not a speed requirement
        for _ in range(1_000_000):  # polling another process's database: nothing here to wait on
            if app is not None and app._exception is not None:
                raise app._exception
            if cond():
                return
            await anyio.sleep(0.05)


def _messages(app: WatchApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_the_watcher_follows_and_steers_a_sweep_in_another_process(tmp_path: Path) -> None:
    project = write_project(tmp_path, cases=60)
    db = tmp_path / "r.db"
    proc = start(project, db)
    try:
        await _until("the runner's live state", lambda: live_row(db) is not None)
        run = WatchedRun([db], "last")
        app = WatchApp(run, theme="dark")
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.screen
            assert isinstance(screen, WatchScreen)
            status = screen.query_one("#status").text.plain  # type: ignore[attr-defined]
            assert "arena watch" in status and "running" in status and f"pid {proc.pid}" in status

            await pilot.press("p")
            await _until("the pause applied", lambda: any("pause: applied" in m for m in _messages(app)), app)
            await _until("calls in flight to finish", lambda: standing_still(db), app)
            await pilot.press("plus")  # 2 → 4 on the console's ladder
            await _until("the new level applied", lambda: any("concurrency 4: applied" in m for m in _messages(app)),
                         app)
            source = query(db, "SELECT source FROM concurrency_changes WHERE new = 4 AND model_key IS NULL")
            assert source and source[0][0].startswith("control by ")

            # within one refresh, the watcher's figures are the stored ones (the run stands still while paused)
            await pilot.pause(0.6)
            snap = run.live.snapshot()
            stored = query(db, "SELECT COUNT(*), SUM(status = 'passed') FROM results")[0]
            # retries as the running console counts them: every retried attempt, its call finished or backing off
            retried = query(db, "SELECT COUNT(*) FROM failed_attempts WHERE delay_s IS NOT NULL")[0][0]
            assert (snap.done, snap.passed, snap.retries) == (*stored, retried) and snap.target == 4
            assert "paused" in screen.query_one("#status").text.plain  # type: ignore[attr-defined]

            await pilot.press("p")
            await _until("the run to end", lambda: proc.poll() is not None, app)
            assert proc.returncode == 0
            await _until("the watcher to see the end", lambda: screen.sweep_ended, app)
            await pilot.pause(0.6)
            status = screen.query_one("#status").text.plain  # type: ignore[attr-defined]
            assert "finished" in status and "r results" in status
            assert run.live.snapshot().done == 120 == query(db, "SELECT COUNT(*) FROM results")[0][0]
            assert any("The run ended (finished)" in m for m in _messages(app))
            await pilot.press("q")
        run.close()
    finally:
        stop(proc)


def _shard(path: Path, *, age_s: float) -> None:
    from arenatui.store import Store
    from arenatui.store.live_state import UPSERT_LIVE_STATE, LaneLive, live_state_row

    config = {"models": [{"key": "m1", "provider": "sim"}], "cases": [{"id": "q0", "input": "x", "expected": "y"}],
              "run": {"trials": 2}}
    with Store(path) as store:
        store.create_run("sharded", None, config, {}, 2, run_id="wide")
        store.conn.execute(UPSERT_LIVE_STATE, live_state_row(
            "wide", kind="sweep", shard=f"{path.stem[-1]}/2", state="running", target=4, paused=False, tuner=False,
            lanes={"m1": LaneLive(1, 0, None)}, at=time.time() - age_s))


async def test_shards_get_a_line_each_and_a_silent_run_is_not_running(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _shard(tmp_path / "shard-0.db", age_s=600.0)
    _shard(tmp_path / "shard-1.db", age_s=900.0)
    run = WatchedRun([tmp_path / "shard-0.db", tmp_path / "shard-1.db"], "wide")
    app = WatchApp(run, theme="dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        lines = str(screen.query_one("#shards").render()).splitlines()
        assert len(lines) == 2 and lines[0].startswith("shard 0/2: not running") and "last seen 10 min ago" in lines[0]
        status = screen.query_one("#status").text.plain  # type: ignore[attr-defined]
        assert "not running (last seen 10 min ago)" in status and "nothing applies a request" in status
        await pilot.press("plus")
        assert any("not running" in m for m in _messages(app))
        assert query(tmp_path / "shard-0.db", "SELECT COUNT(*) FROM control_requests")[0][0] == 0
        await pilot.press("q")
    run.close()


async def test_a_watcher_that_cannot_write_the_database_is_read_only_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _shard(tmp_path / "run-0.db", age_s=-3600.0)  # heard from "in the future": running for the whole test
    run = WatchedRun([tmp_path / "run-0.db"], "wide")
    monkeypatch.setattr("arenatui.store.live_state.os.access", lambda *_a, **_k: False)  # root ignores modes
    app = WatchApp(run, theme="dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        assert "running" in screen.query_one("#status").text.plain  # type: ignore[attr-defined]
        await pilot.press("plus")
        await _until("the read-only notice", lambda: any("cannot be written by this process" in m
                                                          for m in _messages(app)), app)
        await pilot.pause(0.5)
        assert "read-only" in screen.query_one("#status").text.plain  # type: ignore[attr-defined]
        assert query(tmp_path / "run-0.db", "SELECT COUNT(*) FROM control_requests")[0][0] == 0
        await pilot.press("q")
    run.close()


async def test_the_load_screen_follows_a_load_run_in_another_process_and_changes_its_rate(tmp_path: Path) -> None:
    from arenatui.session.watch import WatchedLoad, open_run
    from arenatui.tui.load_app import LoadApp
    from arenatui.tui.screens.load import LoadScreen

    project = write_project(tmp_path, cases=5, latency=0.05)
    db = tmp_path / "load.db"
    proc = start_load(project, db, 4)
    try:
        await _until("the load run's figures", lambda: (row := live_row(db)) is not None and '"load"' in
                     str(query(db, "SELECT extra_json FROM live_state")[0][0]) and row[0] == "running")
        run = open_run([db], "last")
        assert isinstance(run, WatchedLoad)
        app = LoadApp(run, theme="dark")
        async with app.run_test(size=(120, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, LoadScreen)
            await _until("the offered rate shown", lambda: screen.rate == 4.0, app)
            await pilot.press("plus")  # 4 → 5 req/s on the 1-2-5 ladder
            await _until("the running process's new rate", lambda: run.snapshot().target_rate == 5.0, app)
            await _until("the screen showing it", lambda: screen.rate == 5.0, app)
            await pilot.press("q")  # stops watching; the run goes on
            await _until("the watcher to leave", lambda: screen.ended, app)
            assert proc.poll() is None
            await pilot.press("q")
        run.close()
    finally:
        stop(proc)


async def test_an_exception_in_the_watchers_refresh_fails_the_test_at_once(tmp_path: Path) -> None:
    """The screen's refresh raising ends the app: a wait on a condition the app will never meet raises that
    exception (before the helper checked the app, it waited out the 120 s guard and failed with a timeout)."""
    from judged_run import build

    db = tmp_path / "j.db"
    run_id, _judged = build(db)
    run = WatchedRun([db], run_id)

    def broken() -> None:
        raise RuntimeError("the refresh failed")

    run.poll = broken  # type: ignore[method-assign]
    app = WatchApp(run, theme="dark")
    waited: list[BaseException] = []
    with pytest.raises(RuntimeError, match="the refresh failed"):  # run_test raises the app's exception on leaving
        async with app.run_test(size=(120, 40)):
            try:
                await _until("a screen that never draws", lambda: False, app)
            except BaseException as e:  # what the wait itself raised (run_test's own raise would hide a timeout)
                waited.append(e)
                raise
    assert [type(e) for e in waited] == [RuntimeError]
    run.close()


async def test_the_watcher_shows_first_and_reads_the_stored_rows_in_a_thread(tmp_path: Path) -> None:
    """`arena watch` opens its model without the stored rows (read_now=False): the screen reads them in a thread
    and ends with the figures a model that read them at once has, the header no longer 'catching up'."""
    from judged_run import build

    db = tmp_path / "j.db"
    run_id, _judged = build(db)
    at_once = WatchedRun([db], run_id)
    later = WatchedRun([db], run_id, read_now=False)
    assert later.catching_up and later.live.snapshot().done == 0
    app = WatchApp(later, theme="dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await _until("the stored rows read", lambda: later.stored_read and not later.catching_up, app)
        await pilot.pause(0.3)
        want, got = at_once.live.snapshot(), later.live.snapshot()
        assert [(m.key, m.done, m.passed, m.failed, m.errored, m.unscored, round(m.cost, 9)) for m in got.models] == [
            (m.key, m.done, m.passed, m.failed, m.errored, m.unscored, round(m.cost, 9)) for m in want.models]
        status = app.screen.query_one("#status").text.plain  # type: ignore[attr-defined]
        assert "catching up" not in status and f"{want.done}/{want.planned}" in status
        await pilot.press("q")
    at_once.close()
    later.close()

"""`arena watch` with Pilot, attached to a headless sweep in a process of its own: the console's screens fed from the
database show the stored figures, its keys steer the other process (the answer shown), and the run's end is said."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from watched_run import live_row, query, standing_still, start, stop, write_project

from arenatui.tui.watch_app import WatchApp, WatchScreen
from arenatui.watch import WatchedRun

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sys.platform == "win32", reason="process groups")]


async def _until(what: str, cond: Callable[[], object]) -> None:
    with anyio.fail_after(120.0):  # a hang guard, not a speed requirement
        for _ in range(1_000_000):  # polling another process's database: nothing here to wait on
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
            await _until("the pause applied", lambda: any("pause: applied" in m for m in _messages(app)))
            await _until("calls in flight to finish", lambda: standing_still(db))
            await pilot.press("plus")  # 2 → 4 on the console's ladder
            await _until("the new level applied", lambda: any("concurrency 4: applied" in m for m in _messages(app)))
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
            await _until("the run to end", lambda: proc.poll() is not None)
            assert proc.returncode == 0
            await _until("the watcher to see the end", lambda: screen.sweep_ended)
            await pilot.pause(0.6)
            status = screen.query_one("#status").text.plain  # type: ignore[attr-defined]
            assert "finished" in status and "r results" in status
            assert run.live.snapshot().done == 120 == query(db, "SELECT COUNT(*) FROM results")[0][0]
            assert any("The run ended (finished)" in m for m in _messages(app))
            await pilot.press("q")
        run.close()
    finally:
        stop(proc)

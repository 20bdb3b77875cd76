"""The watcher's figures are the running console's own: a sweep with its live metrics (the ones the console and the
headless progress read) runs to its end, then a watcher opened on its database shows the same figures for every
model and every cell of the matrix, whether it folds the stored rows one by one or reads them as SQL aggregates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from watched_run import write_project

from arenatui.session.live import LiveMetrics
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.session.watch import WatchedRun
from arenatui.store import Store, watch_queries


def _figures(live: LiveMetrics) -> tuple[Any, ...]:
    snap = live.snapshot()
    models = tuple((m.key, m.done, m.passed, m.failed, m.errored, m.unscored, m.retries, m.rate_limited,
                    round(m.cost, 9), sorted(m.errors.items()), sorted(m.failures.items()), m.truncated,
                    m.output_tokens, None if m.score is None else round(m.score, 9))
                   for m in snap.models)
    cells = tuple(live.cell(r, c) for r in range(len(live.row_keys)) for c in range(len(live.case_ids)))
    return models, cells, (snap.done, snap.planned, round(snap.cost, 9), snap.retries)


@pytest.mark.parametrize("tail", [None, 0], ids=["replayed", "aggregated"])
def test_a_watcher_shows_what_the_running_console_showed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         tail: int | None) -> None:
    project = write_project(tmp_path, cases=60, latency=0.0)  # m2 fails transiently a fifth of the time: retries
    db = tmp_path / "r.db"
    sweep = Sweep(SweepOptions(project=project, db=db, concurrency=8))
    anyio.run(sweep.run)
    console = _figures(sweep.live)
    assert console[2][0] == 120 and console[2][3] > 0  # every call, and some retried
    if tail is not None:
        monkeypatch.setattr(watch_queries, "TAIL", tail)
    run = WatchedRun([db], "last")
    try:
        assert run.ended == "finished"
        assert _figures(run.live) == console
    finally:
        run.close()


@pytest.mark.anyio
@pytest.mark.parametrize("tail", [None, 0], ids=["replayed", "aggregated"])
async def test_a_watcher_at_a_pause_shows_what_the_running_console_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: int | None) -> None:
    """Mid-run: the sweep paused, its calls in flight finished and stored, the watcher opened on its database shows
    the console's own figures (the ones it is showing at that moment: a call backing off is in backoff in both),
    then again after the run goes on and ends."""
    if tail is not None:
        monkeypatch.setattr(watch_queries, "TAIL", tail)
    project = write_project(tmp_path, cases=60, latency=0.05)
    db = tmp_path / "r.db"
    sweep = Sweep(SweepOptions(project=project, db=db, concurrency=4))

    def stored() -> int:
        with Store(db, read_only=True) as s:
            return int(s.conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    async def until(cond: Callable[[], bool]) -> None:
        with anyio.fail_after(60.0):  # a hang guard, not a speed requirement
            for _ in iter(int, 1):  # figures of a running sweep to poll for: no event says they changed
                if cond():
                    return
                await anyio.sleep(0.02)

    async with anyio.create_task_group() as tg:
        tg.start_soon(sweep.run)
        await until(lambda: sweep.live.snapshot().done >= 20)
        sweep.control.pause()
        # (a call backing off stays so while paused: its next attempt waits for the resume)
        await until(lambda: (s := sweep.live.snapshot()).in_flight == 0 and stored() == s.done)
        run = WatchedRun([db], "last")
        try:
            assert _figures(run.live) == _figures(sweep.live) and run.live.snapshot().done < 120
            sweep.control.resume()
            await until(lambda: sweep.status is not None and stored() == 120)
        finally:
            run.close()
    run = WatchedRun([db], "last")
    try:
        assert _figures(run.live) == _figures(sweep.live)
    finally:
        run.close()

"""The watcher's figures are the running console's own: a sweep with its live metrics (the ones the console and the
headless progress read) runs to its end, then a watcher opened on its database shows the same figures for every
model and every cell of the matrix, whether it folds the stored rows one by one or reads them as SQL aggregates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from watched_run import write_project

from arenatui.session.live import LiveMetrics
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.session.watch import WatchedRun
from arenatui.store import watch_queries


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

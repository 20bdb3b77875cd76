"""A load run's shards watched as one: the window's figures computed again from every shard's stored requests
together (a percentile of the union, not an average of the shards' percentiles), rates and counts added, each
shard's times on its own clock; a new rate split between the shards."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from arenatui.load.live import snapshot
from arenatui.load.metrics import Samples
from arenatui.session.watch import WatchedLoad, open_run
from arenatui.store import Store
from arenatui.store.live_state import UPSERT_LIVE_STATE, live_state_row
from arenatui.store.load_queries import INSERT_LOAD_REQUEST, mark_load_run


def _shard(path: Path, *, latency_ms: float, n: int, elapsed_s: float) -> None:
    """A running load shard `elapsed_s` into its run: `n` ok requests finished in the last seconds, `latency_ms`
    each, and the figures it publishes over its own requests."""
    config = {"models": [{"key": "m1", "provider": "sim"}], "cases": [{"id": "q0", "input": "x", "expected": "y"}],
              "run": {"trials": 1}}
    with Store(path) as store:
        store.create_run("load", None, config, {}, 0, run_id="wide")
        mark_load_run(store, "wide")
        rows = [("wide", i, 0, 0, "q0", 0, elapsed_s - 5 + i / n, elapsed_s - 5 + i / n, elapsed_s - 4 + i / n, "ok",
                 None, latency_ms, 3, 4, None) for i in range(n)]
        store.conn.executemany(INSERT_LOAD_REQUEST, rows)
        own = Samples()
        published = snapshot(own, now_s=elapsed_s, total_s=60.0, segment=0, target_rate=n / 10, in_flight=2,
                             sent_rate=n / 10)
        published = dataclasses.replace(published, done=n, latency_p50_ms=latency_ms, latency_p99_ms=latency_ms)
        store.conn.execute(UPSERT_LIVE_STATE, live_state_row(
            "wide", kind="load", shard=f"{path.stem[-1]}/2", state="running", target=None, paused=False, tuner=False,
            lanes={}, extra={"load": dataclasses.asdict(published)}, at=time.time()))


def test_load_shards_merge_into_one_window(tmp_path: Path) -> None:
    # the shards started 20 s apart (no barrier): each one's requests are within the last 5 s of its own clock
    _shard(tmp_path / "load-0.db", latency_ms=100.0, n=10, elapsed_s=30.0)
    _shard(tmp_path / "load-1.db", latency_ms=300.0, n=30, elapsed_s=10.0)
    run = open_run([tmp_path / "load-0.db", tmp_path / "load-1.db"], "wide")
    assert isinstance(run, WatchedLoad)
    try:
        snap = run.snapshot()
        assert (snap.done, snap.in_flight, snap.target_rate, snap.sent_rate) == (40, 4, 4.0, 4.0)
        # the median of the union (30 of 40 requests at 300 ms), where averaging the shards' medians gives 200
        assert snap.latency_p50_ms == 300.0 and sum(snap.histogram) == 40
        assert snap.achieved_rate == 4.0  # 40 ok answers over the 10 s window
        run.change_rate(10.0)
        for db in ("load-0.db", "load-1.db"):
            with Store(tmp_path / db, read_only=True) as store:
                asked = store.conn.execute("SELECT action, value FROM control_requests").fetchall()
            assert asked == [("rate", 5.0)]
    finally:
        run.close()

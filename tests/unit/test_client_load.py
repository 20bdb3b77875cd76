"""The client CPU sampler, the sustained-overload verdict, and where it goes: live metrics, the store (migration 2),
the end-of-run warning."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import anyio.lowlevel

from arenatui.commands.evaluate import client_load_warning
from arenatui.engine.client_load import CpuSampler, OverloadTracker, sustained_overload
from arenatui.kernel.events import ClientLoadSampled
from arenatui.session.live import LiveMetrics
from arenatui.store import Store
from arenatui.store.schema import MIGRATIONS
from arenatui.store.writer import ResultWriter


class Clocks:
    def __init__(self) -> None:
        self.t = 100.0
        self.cpu = 5.0

    def advance(self, wall: float, cpu: float) -> None:
        self.t += wall
        self.cpu += cpu


def test_sample_is_cpu_over_wall_time() -> None:
    c = Clocks()
    got: list[ClientLoadSampled] = []
    s = CpuSampler(got.append, clock=lambda: c.t, cpu_clock=lambda: c.cpu, wall_clock=lambda: 0.0)
    c.advance(2.0, 1.5)
    ev = s.sample()
    assert ev is not None and ev.cpu == 0.75 and ev.interval_s == 2.0
    assert s.sample() is None  # no time has passed: nothing to say
    c.advance(0.5, 0.0)
    s.stop()  # the partial last interval is emitted once
    s.stop()
    assert [e.cpu for e in got] == [0.0]


def test_sampler_runs_beside_other_tasks_and_stops() -> None:
    # Behaviour only: the sampler emits while another task keeps working, and stop() ends run(). How much CPU it
    # sees depends on what else the machine runs (the sampler's figures are tested with fake clocks above).
    got: list[ClientLoadSampled] = []
    work_steps = 0
    ended = False

    async def go() -> None:
        nonlocal ended
        s = CpuSampler(got.append, interval_s=0.005)
        with anyio.fail_after(60):  # a hang guard, not a timing assertion
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_sampler, s)
                await work_beside(s)
        ended = True

    async def run_sampler(s: CpuSampler) -> None:
        await s.run()

    async def work_beside(s: CpuSampler) -> None:
        nonlocal work_steps
        while len(got) < 3:  # keep working until the sampler has reported beside us several times
            sum(range(1000))
            work_steps += 1
            await anyio.sleep(0.001)
        s.stop()

    anyio.run(go)
    assert ended and work_steps > 0
    assert len(got) >= 3
    assert all(e.cpu >= 0.0 and e.interval_s > 0.0 for e in got)


def test_overload_needs_a_sustained_stretch() -> None:
    tr = OverloadTracker(threshold=0.8, min_s=5.0)
    starts = [tr.add(cpu, 1.0) for cpu in (0.9, 0.9, 0.9, 0.9, 0.5, 0.9, 0.9, 0.9, 0.9, 0.9, 0.95, 0.2)]
    assert starts.count(True) == 1 and starts[9]
    assert tr.overload_s == 6.0 and not tr.overloaded and tr.peak == 0.95
    assert sustained_overload([(0.99, 1.0)] * 4).overload_s == 0.0  # a 4 s burst is not a bottleneck


def test_live_snapshot_carries_the_load_and_logs_the_start_of_overload() -> None:
    live = LiveMetrics(["m"], ["c"], 1, clock=lambda: 0.0)
    assert live.snapshot().client_cpu is None
    for i in range(5):
        live.on_event(ClientLoadSampled(0.9, 1.0, float(i), 0.0))
    snap = live.snapshot()
    assert snap.client_cpu == 0.9 and snap.client_overloaded and snap.client_overload_s == 5.0
    assert any("client CPU above 80%" in e.text for e in live.log)


def _v1_database(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(MIGRATIONS[0])
    conn.execute("INSERT INTO runs (run_id, project, config_json, filters_json, planned, started_at, status) "
                 "VALUES ('old', 'p', '{}', '{}', 1, 0.0, 'finished')")
    conn.execute("PRAGMA user_version = 1")
    conn.close()


def test_migration_2_applies_to_a_v1_database(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    _v1_database(db)
    with Store(db) as store:
        (version,) = store.conn.execute("PRAGMA user_version").fetchone()
        assert version == len(MIGRATIONS) >= 2
        assert store.get_run("old").status == "finished"  # what was there is kept
        assert store.client_load("old") == []


def test_samples_are_stored_with_the_run_and_warned_about(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    with Store(db) as store:
        run_id = store.create_run("p", None, {}, {}, 1)
    w = ResultWriter(db, run_id)
    for i, cpu in enumerate((0.3, 0.95, 0.96, 0.97, 0.98, 0.99, 0.97, 0.4)):
        w.on_event(ClientLoadSampled(cpu, 1.0, float(i), 1000.0 + i))
    w.close()
    with Store(db) as store:
        rows = store.client_load(run_id)
        assert [r[1] for r in rows][:2] == [0.3, 0.95] and len(rows) == 8
        warning = client_load_warning(store, run_id)
        assert warning is not None and "for 6s of this 8s run" in warning and "peak 99%" in warning
        other = store.create_run("p", None, {}, {}, 1)
        assert client_load_warning(store, other) is None


def test_headless_progress_line_shows_the_load_and_the_warning() -> None:
    from arenatui.commands.headless import _stats

    live = LiveMetrics(["m"], ["c"], 1, clock=lambda: 0.0)
    assert "client CPU" not in _stats(live.snapshot(), eta=False)
    live.on_event(ClientLoadSampled(0.35, 1.0, 0.0, 0.0))
    assert _stats(live.snapshot(), eta=False).endswith("  client CPU  35%")
    for i in range(5):
        live.on_event(ClientLoadSampled(0.9, 1.0, 1.0 + i, 0.0))
    assert "client-bound" in _stats(live.snapshot(), eta=False)


def test_results_from_before_migration_4_read_with_no_connect_time(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    _v1_database(db)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("INSERT INTO results (run_id, model_key, case_id, trial, status, passed, attempts, total_ms, "
                 "input_tokens, output_tokens, cost, started_at, finished_at) "
                 "VALUES ('old', 'm', 'c', 0, 'passed', 1, 1, 12.0, 1, 1, 0.0, 0.0, 0.1)")
    conn.close()
    with Store(db) as store:
        row = store.result("old", "m", "c", 0)
        assert row is not None and row["status"] == "passed" and row["connect_ms"] is None

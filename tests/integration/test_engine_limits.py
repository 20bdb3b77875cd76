"""Limits changed while a sweep runs: global concurrency up and down, per-model caps, pause/resume, cancel."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
from fake_providers import GatedProvider, ScriptedProvider, SleepyProvider, project, runner, wait_until

from arenatui.kernel.events import CallFinished, ConcurrencyChanged, RunFinished
from arenatui.plan import Resumed, make_plan
from arenatui.store import Store


def test_raising_concurrency_takes_effect_at_once() -> None:
    prov = GatedProvider()
    r, rec = runner(project(30), {"m": prov}, concurrency=2)
    turns = [0]

    def reached_seven() -> bool:
        turns[0] += 1
        return prov.in_flight == 7

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await wait_until(lambda: prov.in_flight == 2)
            await anyio.sleep(0.05)
            assert prov.in_flight == 2  # the limit holds while nothing changes
            r.set_concurrency(7)
            # counted in turns of the event loop, not seconds: no timer is involved, so a busy machine takes
            # longer per turn but never more turns (measured 2)
            await wait_until(reached_seven, step=0)
            prov.open()

    anyio.run(main)
    assert turns[0] <= 5, turns
    assert prov.max_in_flight == 7
    assert sum(1 for x in rec.results if x.status == "passed") == 30
    changes = [(e.old, e.new, e.source) for e in rec.of(ConcurrencyChanged)]
    assert changes == [(0, 2, "config"), (2, 7, "user")]


def test_lowering_lets_running_calls_finish_and_starts_none_above_the_new_level() -> None:
    prov = GatedProvider()
    r, rec = runner(project(40), {"m": prov}, concurrency=8)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await wait_until(lambda: prov.in_flight == 8)
            mark = len(prov.trace)
            r.set_concurrency(2)
            await anyio.sleep(0.05)
            assert prov.in_flight == 8  # nothing interrupted
            assert len(prov.trace) == mark  # and nothing new started
            prov.open()
            await wait_until(lambda: r.workers <= 2)
            # every start after the change happened with at most 2 in flight (itself included)
            after = [n for _, n in prov.trace[mark:]]
            assert after and max(after) <= 2

    anyio.run(main)
    res = rec.results
    assert len(res) == 40 and all(x.status == "passed" for x in res)  # the 8 held calls were not cancelled
    after = [n for _, n in prov.trace[8:]]
    assert max(after) <= 2


def test_lowering_with_real_latency_converges_to_the_new_level() -> None:
    prov = SleepyProvider(0.02)
    r, rec = runner(project(120), {"m": prov}, concurrency=10)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await wait_until(lambda: prov.in_flight == 10)
            r.set_concurrency(3)
            await wait_until(lambda: prov.in_flight <= 3)  # the 10 drain within one latency
            prov.mark()

    anyio.run(main)
    assert prov.max_in_flight == 10
    assert prov.max_since_mark <= 3
    assert prov.starts_since_mark > 20  # the run did continue at the new level
    assert len(rec.results) == 120


def test_per_model_caps_are_never_exceeded_and_can_change_mid_run() -> None:
    a, b = GatedProvider(), GatedProvider()
    p = project(40, models=[{"key": "a", "provider": "sim", "max_concurrency": 2},
                            {"key": "b", "provider": "sim", "max_concurrency": 6}])
    r, rec = runner(p, {"a": a, "b": b}, concurrency=12)
    marks: list[int] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await wait_until(lambda: a.in_flight == 2 and b.in_flight == 6)
            await anyio.sleep(0.03)
            # four workers are idle, yet the caps hold
            assert (a.max_in_flight, b.max_in_flight) == (2, 6)
            r.set_model_cap("a", 4)  # idle workers pick the new room up at once
            await wait_until(lambda: a.in_flight == 4)
            await anyio.sleep(0.03)
            assert a.max_in_flight == 4 and b.max_in_flight == 6
            assert r.model_cap("a") == 4
            r.set_model_cap("a", 1)
            marks.append(len(a.trace))
            a.open()
            b.open()

    anyio.run(main)
    assert max(n for _, n in a.trace[marks[0]:]) <= 1
    assert b.max_in_flight == 6
    assert len(rec.results) == 80
    caps = [(e.model_key, e.old, e.new) for e in rec.of(ConcurrencyChanged) if e.model_key]
    assert caps == [("a", 2, 4), ("a", 4, 1)]


def test_pause_stops_new_calls_and_resume_continues() -> None:
    prov = SleepyProvider(0.01)
    r, rec = runner(project(60), {"m": prov}, concurrency=4)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await wait_until(lambda: len(rec.results) >= 8)
            r.pause()
            await wait_until(lambda: prov.in_flight == 0)  # in-flight calls finish
            n = len(rec.results)
            prov.mark()
            await anyio.sleep(0.15)  # 15 latencies: a running engine would finish ~60 calls
            assert prov.starts_since_mark == 0
            assert len(rec.results) == n < 60
            r.resume()

    anyio.run(main)
    assert len(rec.results) == 60 and all(x.status == "passed" for x in rec.results)
    assert [e.status for e in rec.of(RunFinished)] == ["finished"]


def test_cancel_ends_in_flight_calls_as_cancelled_and_resume_reruns_them(db_path: Path) -> None:
    p = project(12)
    # the first five cases answer at once, the rest hang until the sweep is cancelled
    prov = ScriptedProvider(lambda req: 0.0 if int(req.case.id[1:]) < 5 else 60.0)
    with Store(db_path) as store:
        run_id = store.create_run(p.name, None, {}, {}, 12)
    r, rec = runner(p, {"m": prov}, concurrency=3)
    statuses: list[str] = []
    took: list[float] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            async def go() -> None:
                statuses.append(await r.run())
            tg.start_soon(go)
            await wait_until(lambda: len(rec.results) == 5 and prov.in_flight == 3)
            t = time.monotonic()
            r.cancel()
            took.append(time.monotonic() - t)

    anyio.run(main)
    assert statuses == ["cancelled"]
    assert [e.status for e in rec.of(RunFinished)] == ["cancelled"]
    cancelled = [x for x in rec.results if x.error_class == "cancelled"]
    assert len(cancelled) == 3 and all(x.status == "errored" for x in cancelled)
    finished = [x for x in rec.results if x.error_class is None]
    assert len(finished) == 5 and len(rec.results) == 8
    assert all(x.attempts == 1 and x.total_ms < 30_000 for x in cancelled)

    with Store(db_path) as store:
        store.write_results(run_id, rec.results)
        done = store.done_keys(run_id)
        assert sum(len(v) for v in done.values()) == len(finished)
        plan = make_plan(p, resume=Resumed(done=done))
        assert plan.remaining == 12 - len(finished)
        pending = {(c.id, t) for c, t in plan.pending("m")}
        assert {(x.case_id, x.trial) for x in cancelled} <= pending
        prov2 = GatedProvider()
        prov2.open()
        r2, rec2 = runner(plan, {"m": prov2}, concurrency=3)
        assert anyio.run(r2.run) == "finished"
        assert len(rec2.results) == 12 - len(finished)  # nothing finished was called again
        store.write_results(run_id, rec2.results)
        rows = store.results(run_id, ("case_id", "status", "error_class"))
        assert len(rows) == 12
        assert all(s == "passed" and ec is None for _, s, ec in rows)


def test_calls_finished_events_are_emitted_once_per_call() -> None:
    prov = SleepyProvider(0.0)
    r, rec = runner(project(25, trials=2), {"m": prov}, concurrency=6)
    anyio.run(r.run)
    keys = [(e.result.case_id, e.result.trial) for e in rec.of(CallFinished)]
    assert len(keys) == len(set(keys)) == 50

"""Repeated load runs' schedule: --every and --at (local time, across days), the wait on a fake clock (no sleeping),
and the p95 spread of a series."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from arenatui.bakeoff.series import SeriesRun, parse_at, parse_every, spread, start_times, wait_until
from arenatui.kernel.errors import ArenaError
from arenatui.load.metrics import Figures


class FakeClock:
    def __init__(self, now: float) -> None:
        self.t = now
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


def test_every_and_at_parse_or_say_what_was_expected() -> None:
    assert parse_every("4h") == 14400 and parse_every("30m") == 1800 and parse_every("2.5s") == 2.5
    assert parse_every("1d") == 86400
    for bad in ("4", "0s", "-1h", "fast"):
        with pytest.raises(ArenaError, match="--every"):
            parse_every(bad)
    assert parse_at("14:00, 09:30,14:00") == ((9, 30), (14, 0))
    for bad in ("9", "25:00", "09:60", "9h"):
        with pytest.raises(ArenaError, match="--at: expected local times of day as HH:MM"):
            parse_at(bad)


def test_every_starts_now_then_every_step() -> None:
    assert start_times(1000.0, 3, every_s=7.0) == [1000.0, 1007.0, 1014.0]


def test_at_takes_the_next_local_times_across_days() -> None:
    now = dt.datetime(2026, 3, 10, 12, 0).timestamp()  # local time: 12:00
    starts = [dt.datetime.fromtimestamp(t) for t in start_times(now, 4, at=parse_at("09:00,14:00,22:00"))]
    assert [(s.day, s.hour) for s in starts] == [(10, 14), (10, 22), (11, 9), (11, 14)]


def test_the_wait_shows_the_next_start_and_never_oversleeps() -> None:
    clock = FakeClock(100.0)
    shown: list[float] = []
    wait_until(103.5, clock, shown.append)
    assert clock.now() == pytest.approx(103.5)
    assert shown == [3.5, 2.5, 1.5, 0.5]
    assert max(clock.slept) <= 1.0
    wait_until(50.0, clock, shown.append)  # already past: no wait
    assert clock.now() == pytest.approx(103.5)


def _run(rid: str, at: float, p95: float) -> SeriesRun:
    pcts = {50.0: p95 / 2, 90.0: p95, 95.0: p95, 99.0: p95, 100.0: p95}
    return SeriesRun(rid, at, "m", Figures(0, 5.0, 10.0, 50, 5.0, 5.0, {"ok": 50}, pcts, pcts, pcts, pcts, pcts,
                                           pcts, 0.0))


def test_the_spread_names_the_slowest_and_fastest_runs_with_their_times() -> None:
    t = time.mktime((2026, 3, 10, 9, 0, 0, 0, 0, -1))
    s = spread([_run("r1", t, 200.0), _run("r2", t + 5 * 3600, 260.0), _run("r3", t + 13 * 3600, 210.0)])
    assert s is not None and s.ratio == pytest.approx(1.3)
    assert s.slowest.run_id == "r2" and s.fastest.run_id == "r1"
    assert s.words \
        == "1.30x (max/min of p95 from schedule): 260 ms in r2 at 2026-03-10 14:00, 200 ms in r1 at 2026-03-10 09:00"
    assert spread([_run("r1", t, 200.0)]) is None

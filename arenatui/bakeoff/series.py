"""Repeated load runs: when each repetition starts (`--every 4h`, or `--at 09:00,14:00` in local time across days),
the wait before it, and how a series' runs compare (the spread of p95 from schedule over the times of day).

Capacity varies with the time of day (hosted candidates show a 20-40% spread in p95, self-hosted almost none): the
same load profile at different times on different days measures that spread. The clock is passed in, so the wait
is tested with a fake one (no sleeping).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from arenatui.kernel.errors import ArenaError
from arenatui.load.metrics import Figures

_EVERY = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(s|m|h|d)\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_AT = re.compile(r"^\s*([01]?\d|2[0-3]):([0-5]\d)\s*$")
SHOW_EVERY_S = 1.0
"""While it waits, the process says the next start this often on a terminal (and sleeps no longer at a time)."""
SHOW_LOG_S = 600.0
"""Into a log (not a terminal), the next start is said once, then this often: a 4 h wait writes 24 lines."""


class Clock(Protocol):
    """What the wait needs of time: the wall clock (epoch seconds) and a sleep."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class WallClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


CLOCK: Clock = WallClock()
"""The clock `arena load --repeat` waits on (tests put a fake one here)."""


def parse_every(value: str) -> float:
    """'4h', '30m', '90s', '1d' -> seconds (above zero)."""
    m = _EVERY.match(value)
    n = float(m.group(1)) * _UNIT_S[m.group(2).lower()] if m else math.nan
    if not (math.isfinite(n) and n > 0):
        raise ArenaError(f"--every: expected a time between repetitions such as 90s, 30m, 4h or 1d, got {value!r}")
    return n


def parse_at(value: str) -> tuple[tuple[int, int], ...]:
    """'09:00,14:00' -> ((9, 0), (14, 0)): local times of day, sorted, each once."""
    out = set()
    for part in value.split(","):
        m = _AT.match(part)
        if not m:
            raise ArenaError(f"--at: expected local times of day as HH:MM separated by commas (09:00,14:00,22:00), "
                             f"got {part.strip()!r}")
        out.add((int(m.group(1)), int(m.group(2))))
    return tuple(sorted(out))


def start_times(now: float, repeat: int, *, every_s: float | None = None,
                at: Sequence[tuple[int, int]] = ()) -> list[float]:
    """The epoch seconds each of `repeat` repetitions starts at: now, then every `every_s`; or the next `repeat`
    local times of day in `at` from now on (today's that are still ahead, then tomorrow's, and so on)."""
    if at:
        out: list[float] = []
        day = dt.datetime.fromtimestamp(now).date()
        while len(out) < repeat:
            for h, mi in at:
                t = dt.datetime.combine(day, dt.time(h, mi)).timestamp()  # local time, DST included
                if t >= now and len(out) < repeat:
                    out.append(t)
            day += dt.timedelta(days=1)
        return out
    step = every_s or 0.0
    return [now + i * step for i in range(repeat)]


def wait_until(start: float, clock: Clock, show: Callable[[float], None]) -> None:
    """Sleep until `start` (epoch seconds), calling `show(seconds left)` about once a second."""
    while True:
        left = start - clock.now()
        if left <= 0:
            return
        show(left)
        clock.sleep(min(left, SHOW_EVERY_S))


def waiting_line(index: int, repeat: int, start: float, left: float) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start))
    return f"Repetition {index + 1} of {repeat} starts at {when} (local), in {_span(left)}"


def _span(s: float) -> str:
    s = max(0, math.ceil(s))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s" if m else f"{sec}s"


@dataclass(frozen=True, slots=True)
class SeriesRun:
    """One load run of a comparison: when it ran and its figures (from schedule) at the segment compared."""

    run_id: str
    started_at: float
    model: str
    figures: Figures

    @property
    def p95(self) -> float:
        return self.figures.latency_schedule.get(95.0, math.nan)


@dataclass(frozen=True, slots=True)
class Spread:
    """max/min of p95 from schedule over a series' runs, and the runs (with their times) at either end."""

    ratio: float
    slowest: SeriesRun
    fastest: SeriesRun

    @property
    def words(self) -> str:
        def at(r: SeriesRun) -> str:
            return time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started_at))

        return (f"{self.ratio:.2f}x (max/min of p95 from schedule): {self.slowest.p95:.0f} ms in "
                f"{self.slowest.run_id} at {at(self.slowest)}, {self.fastest.p95:.0f} ms in {self.fastest.run_id} "
                f"at {at(self.fastest)}")


def spread(runs: Sequence[SeriesRun]) -> Spread | None:
    """The p95 spread of runs that measured a p95 (None with fewer than two)."""
    measured = [r for r in runs if math.isfinite(r.p95) and r.p95 > 0]
    if len(measured) < 2:
        return None
    slow = max(measured, key=lambda r: r.p95)
    fast = min(measured, key=lambda r: r.p95)
    return Spread(slow.p95 / fast.p95, slow, fast)

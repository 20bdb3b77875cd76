"""Per-level observations folded from engine events: windows, evidence, best level and verdict."""

from __future__ import annotations

import pytest

from arenatui.kernel.events import CallFinished, CallResult, CallRetrying, CallStarted, ConcurrencyChanged
from arenatui.tuning.levels import Evidence, LevelTracker, Window


def _result(case: str, status: str = "passed", lat: float = 100.0, ec: str | None = None,
            attempts: int = 1) -> CallResult:
    return CallResult("m", case, 0, status, "x", 1.0, status == "passed", ec, None, attempts, lat, lat, None, 1, 1,
                      0.0, "stop", False, 0.0, 0.1)  # type: ignore[arg-type]


def _drive(tr: LevelTracker, level: int, n: int, t0: float, *, limited_every: int = 0) -> float:
    """n calls at `level`, each 0.1 s; every `limited_every`-th gets one 429 first. Returns the end time."""
    tr.on_event(ConcurrencyChanged(0, level, "m", "tuner", t0, 0.0))
    t = t0
    for i in range(n):
        case = f"c{t0}-{i}"
        tr.on_event(CallStarted("m", case, 0, 1, t))
        if limited_every and i % limited_every == 0:
            tr.on_event(CallRetrying("m", case, 0, 1, "rate_limited", 0.0, "429", t, 0.5))
            tr.on_event(CallStarted("m", case, 0, 2, t))
        t += 0.1 / level
        tr.on_event(CallFinished(_result(case, attempts=2 if limited_every and i % limited_every == 0 else 1), t))
    return t


def test_windows_close_on_evidence_and_carry_level_goodput_and_429s() -> None:
    windows: list[Window] = []
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=10, min_s=0.5, per_level=3, max_settle_s=0.0),
                      on_window=windows.append)
    t = _drive(tr, 2, 40, 100.0)
    _drive(tr, 4, 60, t, limited_every=5)
    assert windows and {w.level for w in windows} == {2, 4}
    w2 = next(w for w in windows if w.level == 2)
    assert 15 < w2.goodput < 25  # 2 in flight × 0.1 s = 20/s
    w4 = next(w for w in windows if w.level == 4)
    assert w4.rate_limited > 0 and w4.retry_after_s == 0.5
    ro = tr.readout("m")
    assert [r.level for r in ro.levels] == [2, 4]


def test_short_holds_are_not_enough_evidence() -> None:
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=10, min_s=5.0, max_settle_s=0.0))
    t = _drive(tr, 2, 16, 0.0)  # under the 20 answered calls a level needs
    tr.on_event(ConcurrencyChanged(2, 3, "m", "user", t, 0.0))
    ro = tr.readout("m")
    assert ro.levels and not ro.levels[0].measured
    assert ro.best is None and ro.verdict.text.startswith("not enough evidence:")


def test_time_with_nothing_in_flight_is_not_held() -> None:
    """The queue ran dry (or the run paused) for 5 s: those seconds are not in the level's goodput."""
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=1000, min_s=0.1, max_settle_s=0.0))
    tr.on_event(ConcurrencyChanged(0, 1, "m", "tuner", 0.0, 0.0))
    t = 0.0
    for i in range(40):
        if i == 20:
            t += 5.0  # idle
        tr.on_event(CallStarted("m", f"c{i}", 0, 1, t))
        t += 0.1
        tr.on_event(CallFinished(_result(f"c{i}"), t))
    tr.on_event(ConcurrencyChanged(1, 2, "m", "tuner", t, 0.0))
    (r,) = tr.readout("m").levels
    assert r.held_s < 4.5 and r.goodput is not None and 9 < r.goodput < 11


def test_a_hold_is_kept_under_the_level_it_was_held_at_when_the_global_limit_changes() -> None:
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=1000, min_s=0.1, max_settle_s=0.0))
    tr.on_event(ConcurrencyChanged(0, 4, None, "config", 0.0, 0.0))
    tr.on_event(ConcurrencyChanged(0, 8, "m", "user", 0.0, 0.0))  # capped at 8, held at 4 by the global
    t = 0.0
    for i in range(30):
        tr.on_event(CallStarted("m", f"c{i}", 0, 1, t))
        t += 0.025
        tr.on_event(CallFinished(_result(f"c{i}"), t))
    tr.on_event(ConcurrencyChanged(4, 8, None, "user", t, 0.0))
    assert [r.level for r in tr.readout("m").levels] == [4]


def test_a_brief_storm_of_429s_counts_as_evidence_that_a_level_is_past_the_limit() -> None:
    windows: list[Window] = []
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=10, min_s=0.5, max_settle_s=0.0), on_window=windows.append)
    t = _drive(tr, 2, 40, 0.0)
    _drive(tr, 4, 12, t, limited_every=2)  # 0.3 s at 4, half the attempts refused: closed early, as a storm
    assert any(w.level == 4 and w.seconds < 0.5 for w in windows)
    ro = tr.readout("m")
    assert [r.level for r in ro.levels] == [2, 4]
    assert ro.levels[0].measured and ro.levels[1].rate_limited >= 4
    assert ro.verdict.text == "optimum ≈ 2: 429s from 4"


def test_an_unscored_or_unjudgeable_answer_is_the_providers_answer() -> None:
    """For a level's goodput the provider answered: an llm_judge case outside the sample ('unscored'), or one
    its judge could not read (judge_error), is an answer; only the provider's own failures are not."""
    from arenatui.commands.tune_runs import _Count
    from arenatui.tuning.levels import provider_answered

    assert provider_answered(_result("a", "unscored"))
    assert provider_answered(_result("a", "errored", ec="judge_error"))
    assert provider_answered(_result("a", "errored", ec="scoring_error"))
    assert not provider_answered(_result("a", "errored", ec="rate_limited"))
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=1, min_s=0.0, per_level=1, max_settle_s=0.0))
    tr.on_event(ConcurrencyChanged(0, 2, "m", "tuner", 0.0, 0.0))
    count = _Count()
    # the first call ends the start-up (not in the level's window); then two answers and one timeout
    calls = (("passed", None), ("unscored", None), ("errored", "judge_error"), ("errored", "timeout"))
    for i, (status, ec) in enumerate(calls):
        tr.on_event(CallStarted("m", f"c{i}", 0, 1, 0.1 * i))
        ev = CallFinished(_result(f"c{i}", status, ec=ec), 0.1 * i + 0.05)
        tr.on_event(ev)
        count(ev)
    assert tr.readout("m").levels[0].answered == 2  # the unscored answer and the unjudgeable one
    assert (count.answered, count.errored) == (3, 1)


class _Engine:
    """Events as the runner emits them, to a tracker that folds every start (`counts` False) or reads the runner's
    counts of calls in flight and each ended attempt's start instead (True, as a sweep's tracker does)."""

    def __init__(self, tr: LevelTracker, counts: bool) -> None:
        self.tr = tr
        self.lane = _Lane() if counts else None
        if self.lane is not None:
            tr.read_counts({"m": self.lane})
        self.sent: dict[str, float] = {}

    def start(self, case: str, attempt: int, t: float) -> None:
        self.sent[case] = t
        if self.lane is not None:
            self.lane.start(t)
        self.tr.on_event(CallStarted("m", case, 0, attempt, t))

    def refused(self, case: str, attempt: int, t: float) -> None:
        if self.lane is not None:
            self.lane.attempt_t = self.sent[case]
        self.tr.on_event(CallRetrying("m", case, 0, attempt, "rate_limited", 0.01, "429", t, None))
        if self.lane is not None:
            self.lane.end(t)

    def finished(self, case: str, t: float, lat: float = 100.0) -> None:
        if self.lane is not None:
            self.lane.attempt_t = self.sent.get(case, t)
        self.tr.on_event(CallFinished(_result(case, lat=lat), t))
        if self.lane is not None and case in self.sent:
            self.lane.end(t)


@pytest.mark.parametrize("counts", [False, True], ids=["folded starts", "engine counts"])
def test_a_storms_refusals_after_the_level_drops_are_not_the_new_levels_evidence(counts: bool) -> None:
    """A slow 429 of an attempt sent at the level just left, and the re-refusals of calls already refused there
    (the provider still counts that storm), belong to the old level: the new one is judged by its own attempts."""
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=10, min_s=0.5, per_level=3, max_settle_s=0.0))
    e = _Engine(tr, counts)
    tr.on_event(ConcurrencyChanged(0, 16, "m", "tuner", 100.0, 0.0))
    e.start("warm", 1, 100.0)
    e.finished("warm", 100.0)  # the model is ready: windows may open
    t = 100.1
    for i in range(6):  # sent at 16: in flight, and slow to be refused
        e.start(f"late{i}", 1, t)
    for i in range(4):  # refused at 16, sleeping before a retry when the level drops
        e.start(f"sleep{i}", 1, t)
        e.refused(f"sleep{i}", 1, t)
    tr.on_event(ConcurrencyChanged(16, 8, "m", "tuner", 100.2, 0.0))
    t = 100.3
    e.start("open", 1, t)  # opens the window at 8
    e.finished("open", t)
    for i in range(6):  # the slow refusals of attempts sent at 16 arrive now
        e.refused(f"late{i}", 1, t + 0.01)
    for i in range(4):  # the sleepers retry at 8 and are refused again
        e.start(f"sleep{i}", 2, t + 0.02)
        e.refused(f"sleep{i}", 2, t + 0.03)
    for i, case in enumerate([f"late{i}" for i in range(6)] + [f"sleep{i}" for i in range(4)]):
        e.start(case, 3, t + 0.04 + i * 0.001)  # their retries, answered: the old level's calls have all ended
        e.finished(case, t + 0.0405 + i * 0.001)
    for i in range(40):  # level 8's own calls: all answered
        t += 0.0125
        e.start(f"own{i}", 1, t)
        e.finished(f"own{i}", t + 0.1)
    tr.on_event(ConcurrencyChanged(8, 8, "m", "user", t + 1.0, 0.0))  # end the hold: keep what it measured
    (level8,) = [lv for lv in tr.readout("m").levels if lv.level == 8]
    assert level8.rate_limited == 0 and level8.answered >= 40
    # a fresh call refused at 8 still counts against 8
    tr2 = LevelTracker(["m"], evidence=Evidence(min_calls=10, min_s=0.5, per_level=3, max_settle_s=0.0))
    e2 = _Engine(tr2, counts)
    tr2.on_event(ConcurrencyChanged(0, 8, "m", "tuner", 100.0, 0.0))
    e2.finished("warm", 100.0)
    e2.start("open", 1, 100.1)
    e2.finished("open", 100.1)
    e2.start("fresh", 1, 100.2)
    e2.refused("fresh", 1, 100.3)
    for i in range(40):
        e2.start(f"own{i}", 1, 100.3 + i * 0.0125)
        e2.finished(f"own{i}", 100.4 + i * 0.0125)
    tr2.on_event(ConcurrencyChanged(8, 8, "m", "user", 102.0, 0.0))
    (fresh8,) = [lv for lv in tr2.readout("m").levels if lv.level == 8]
    assert fresh8.rate_limited == 1


class _Lane:
    """The engine's counts of one model's calls, kept the way the runner keeps them (engine.lanes.Lane)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.parked: list[object] = []
        self.idle_s = 0.0
        self.idle_from = 0.0
        self.attempt_t = 0.0

    def start(self, t: float) -> None:
        if self.idle_from:
            self.idle_s += t - self.idle_from
            self.idle_from = 0.0
        self.in_flight += 1

    def end(self, t: float) -> None:
        self.in_flight -= 1
        if not self.in_flight and not self.parked:
            self.idle_from = t


def _overlapping(tr: LevelTracker, lane: _Lane | None, level: int, n: int, t0: float, idle_at: int = -1) -> float:
    """`n` uncapped calls of 0.12 s, `level` of them in flight at once (a new one starts as one ends), with 5 s of
    nothing in flight before call `idle_at`; the runner's order: the start, the end, then its counts moved."""
    events: list[tuple[int, int, int]] = []  # (time in µs: exact, so an end and the next start coincide, 1 start
    t = round(t0 * 1e6)                      # or 0 end, call)
    for i in range(n):
        if i == idle_at:
            t = max(e[0] for e in events) + 5_000_000  # every earlier call has ended
        events += [(t, 1, i), (t + 120_000, 0, i)]
        t += 120_000 // level
    for at_us, start, i in sorted(events):
        at = at_us / 1e6
        if start:
            if lane is not None:
                lane.start(at)
            tr.on_event(CallStarted("m", f"c{i}", 0, 1, at))
        else:
            tr.on_event(CallFinished(_result(f"c{i}"), at))
            if lane is not None:
                lane.end(at)
    return max(e[0] for e in events) / 1e6


def test_levels_read_from_the_engines_counts_agree_with_levels_folded_from_every_start() -> None:
    """A sweep's tracker reads the in-flight level from the runner's counts at each call's end instead of folding
    every CallStarted: the same calls give the same level, answers and goodput."""
    readouts = []
    for linked in (False, True):
        tr = LevelTracker(["m"], evidence=Evidence(min_calls=10, min_s=0.5, per_level=3, max_settle_s=0.0))
        lane = _Lane() if linked else None
        if lane is not None:
            tr.read_counts({"m": lane})
        tr.on_event(ConcurrencyChanged(0, 8, None, "config", 0.0, 0.0))
        t = _overlapping(tr, lane, 3, 120, 0.0)
        tr.on_event(ConcurrencyChanged(8, 9, None, "user", t, 0.0))
        readouts.append(tr.readout("m").levels)
    folded, read = ({r.level: r for r in levels} for levels in readouts)
    # the first window straddles the climb to 3 in flight, labelled by its usual count: the rest is at 3 either way
    assert max(read.values(), key=lambda r: r.answered).level == max(folded.values(), key=lambda r: r.answered).level
    # the event that opens the first window is not counted in it: here a call's end, not a start
    assert sum(r.answered for r in read.values()) == sum(r.answered for r in folded.values()) - 1
    assert read[3].answered >= 100 and read[3].goodput == pytest.approx(folded[3].goodput, rel=0.05)
    assert 23 < (read[3].goodput or 0) < 27  # 3 in flight × 0.12 s


def test_time_with_nothing_in_flight_is_not_held_when_read_from_the_engines_counts() -> None:
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=1000, min_s=0.1, max_settle_s=0.0))
    lane = _Lane()
    tr.read_counts({"m": lane})
    tr.on_event(ConcurrencyChanged(0, 8, None, "config", 0.0, 0.0))
    t = _overlapping(tr, lane, 2, 80, 0.0, idle_at=40)
    tr.on_event(ConcurrencyChanged(8, 9, None, "user", t, 0.0))
    (r,) = tr.readout("m").levels
    assert r.level == 2 and r.held_s < 5.0 and r.goodput is not None and 15 < r.goodput < 18  # 4.8 s busy of 9.8


@pytest.mark.parametrize("counts", [False, True], ids=["folded starts", "engine counts"])
def test_after_a_level_is_lowered_the_old_levels_calls_are_not_the_new_levels_latency(counts: bool) -> None:
    """A server that serves one call at a time, the level lowered from 8 to 1 (the tuner read the queue): the 8 calls
    sent at 8 finish one by one for 8 service times (4 s here, past a latency of settling), with latencies up to
    8 of them. Level 1 is measured from its own calls only: one service time each, not the drained queue's."""
    svc = 0.5
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=4, min_s=0.5, per_level=3, max_settle_s=3.0))
    e = _Engine(tr, counts)
    tr.on_event(ConcurrencyChanged(0, 8, "m", "tuner", 100.0, 0.0))
    for i in range(8):
        e.start(f"q{i}", 1, 100.0)
    tr.on_event(ConcurrencyChanged(8, 1, "m", "tuner", 100.0 + svc / 2, 0.0))
    t = 100.0
    for i in range(8):  # the queue drains: the i-th ends after i + 1 service times
        t += svc
        e.finished(f"q{i}", t, lat=(t - 100.0) * 1000)
    for i in range(12):  # level 1's own calls, one after another
        e.start(f"own{i}", 1, t)
        t += svc
        e.finished(f"own{i}", t, lat=svc * 1000)
    tr.on_event(ConcurrencyChanged(1, 1, "m", "user", t, 0.0))  # end the hold: keep what it measured
    (one,) = [lv for lv in tr.readout("m").levels if lv.level == 1]
    assert one.p50_ms == pytest.approx(svc * 1000) and one.answered <= 12
    assert one.goodput == pytest.approx(1 / svc, rel=0.1)

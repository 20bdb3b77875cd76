"""Per-level observations folded from engine events: windows, evidence, best level and verdict."""

from __future__ import annotations

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


def test_a_storms_refusals_after_the_level_drops_are_not_the_new_levels_evidence() -> None:
    """A slow 429 of an attempt sent at the level just left, and the re-refusals of calls already refused there
    (the provider still counts that storm), belong to the old level: the new one is judged by its own attempts."""
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=10, min_s=0.5, per_level=3, max_settle_s=0.0))
    tr.on_event(ConcurrencyChanged(0, 16, "m", "tuner", 100.0, 0.0))
    tr.on_event(CallFinished(_result("warm"), 100.0))  # the model is ready: windows may open
    t = 100.1
    for i in range(6):  # sent at 16: in flight, and slow to be refused
        tr.on_event(CallStarted("m", f"late{i}", 0, 1, t))
    for i in range(4):  # refused at 16, sleeping before a retry when the level drops
        tr.on_event(CallStarted("m", f"sleep{i}", 0, 1, t))
        tr.on_event(CallRetrying("m", f"sleep{i}", 0, 1, "rate_limited", 0.01, "429", t, None))
    tr.on_event(ConcurrencyChanged(16, 8, "m", "tuner", 100.2, 0.0))
    t = 100.3
    tr.on_event(CallStarted("m", "open", 0, 1, t))  # opens the window at 8
    tr.on_event(CallFinished(_result("open"), t))
    for i in range(6):  # the slow refusals of attempts sent at 16 arrive now
        tr.on_event(CallRetrying("m", f"late{i}", 0, 1, "rate_limited", 0.01, "429", t + 0.01, None))
    for i in range(4):  # the sleepers retry at 8 and are refused again
        tr.on_event(CallStarted("m", f"sleep{i}", 0, 2, t + 0.02))
        tr.on_event(CallRetrying("m", f"sleep{i}", 0, 2, "rate_limited", 0.01, "429", t + 0.03, None))
    for i in range(40):  # level 8's own calls: all answered
        t += 0.0125
        tr.on_event(CallStarted("m", f"own{i}", 0, 1, t))
        tr.on_event(CallFinished(_result(f"own{i}", lat=100.0), t + 0.1))
    tr.on_event(ConcurrencyChanged(8, 8, "m", "user", t + 1.0, 0.0))  # end the hold: keep what it measured
    (level8,) = [lv for lv in tr.readout("m").levels if lv.level == 8]
    assert level8.rate_limited == 0 and level8.answered >= 40
    # a fresh call refused at 8 still counts against 8
    tr2 = LevelTracker(["m"], evidence=Evidence(min_calls=10, min_s=0.5, per_level=3, max_settle_s=0.0))
    tr2.on_event(ConcurrencyChanged(0, 8, "m", "tuner", 100.0, 0.0))
    tr2.on_event(CallFinished(_result("warm"), 100.0))
    tr2.on_event(CallStarted("m", "open", 0, 1, 100.1))
    tr2.on_event(CallFinished(_result("open"), 100.1))
    tr2.on_event(CallStarted("m", "fresh", 0, 1, 100.2))
    tr2.on_event(CallRetrying("m", "fresh", 0, 1, "rate_limited", 0.01, "429", 100.3, None))
    for i in range(40):
        tr2.on_event(CallStarted("m", f"own{i}", 0, 1, 100.3 + i * 0.0125))
        tr2.on_event(CallFinished(_result(f"own{i}"), 100.4 + i * 0.0125))
    tr2.on_event(ConcurrencyChanged(8, 8, "m", "user", 102.0, 0.0))
    (fresh8,) = [lv for lv in tr2.readout("m").levels if lv.level == 8]
    assert fresh8.rate_limited == 1

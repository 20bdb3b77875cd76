"""The auto-tuner's controller as a pure object, driven by synthetic windows from a provider model."""

from __future__ import annotations

import math

from arenatui.tuning.controller import (
    ROUNDS_LEFT,
    WIDE_LEVEL,
    Climb,
    Descend,
    ModelController,
    Ramp,
    Settled,
    Tuner,
    TunerSettings,
)
from arenatui.tuning.levels import Window

LAT = 0.1


def provider_window(level: int, *, rate: float | None = None, ceiling: int | None = None, serial: bool = False,
                    transient: float = 0.0, t: float = 0.0) -> Window:
    """What 10 s at `level` gives against an ideal provider: a rate limit, a concurrency ceiling, or one slot."""
    seconds = 10.0
    if serial:
        answered, limited, lat = seconds / LAT, 0, LAT * level  # queueing: same goodput, longer latency
    else:
        capacity = level / LAT
        good = capacity
        limited = 0
        if rate is not None and capacity > rate:
            good = rate * 0.85  # refused requests eat into the limit
            limited = int((capacity - good) * seconds)
        if ceiling is not None and level > ceiling:
            good = ceiling / LAT
            limited = int((level - ceiling) / LAT * seconds)
        answered, lat = good * seconds, LAT
    answered = int(answered)
    trans = int(answered * transient)
    attempts = answered + limited + trans
    return Window("m", level, seconds, answered, attempts, limited, trans, 0, lat, 0.5 if limited else None, t)


def settle(ctl: ModelController, windows: int = 40, **provider: object) -> list[int]:
    """Feed windows at whatever level the controller chooses; the levels it stood at, in order."""
    seen = []
    for i in range(windows):
        seen.append(ctl.level)
        ctl.observe(provider_window(ctl.level, t=float(i), **provider))  # type: ignore[arg-type]
    return seen


def test_rate_limit_settles_at_littles_law_level_and_does_not_oscillate() -> None:
    ctl = ModelController("m", 1, ceiling=64, settings=TunerSettings(probe_every=1000))
    seen = settle(ctl, rate=50.0)  # 50 req/s × 0.1 s = 5 in flight
    assert seen[:5] == [1, 2, 3, 5, 8]  # ×1.5 (at least +1) while goodput grows as fast
    assert seen[-10:] == [5] * 10 or seen[-10:] == [4] * 10
    assert len(set(seen[-15:])) == 1  # settled, not oscillating


def test_ceiling_settles_on_the_ceiling() -> None:
    ctl = ModelController("m", 1, ceiling=64, settings=TunerSettings(probe_every=1000))
    seen = settle(ctl, ceiling=6)
    assert seen[-1] == 6
    assert len(set(seen[-10:])) == 1


def test_serial_local_server_settles_at_one() -> None:
    ctl = ModelController("m", 1, ceiling=64)
    seen = settle(ctl, serial=True, windows=6)
    assert seen[-1] == 1


def test_flat_from_the_start_level_tries_lower_until_a_serial_server_is_at_one() -> None:
    ctl = ModelController("m", 4, ceiling=64, settings=TunerSettings(probe_every=1000))
    seen = settle(ctl, serial=True, windows=8)
    assert seen[:3] == [4, 6, 2]  # flat from 4 up: try 2, then 1
    assert seen[-1] == 1 and set(seen[-4:]) == {1}


def test_level_independent_transients_do_not_push_the_level_down() -> None:
    ctl = ModelController("m", 1, ceiling=64, settings=TunerSettings(probe_every=1000))
    seen = settle(ctl, ceiling=8, transient=0.08)
    assert seen[-1] == 8


def test_probes_upward_rarely_and_returns_when_nothing_is_gained() -> None:
    ctl = ModelController("m", 6, ceiling=64, settings=TunerSettings(probe_every=5))
    ctl.stage = Settled()
    ctl.goodput[6] = 60.0
    seen = settle(ctl, ceiling=6, windows=30)
    assert seen.count(7) <= 30 // 5  # probes happen, rarely
    assert 7 in seen
    assert seen[-1] == 6 or seen[-2] == 6


def test_limit_that_drops_mid_run_is_followed_down_within_one_window() -> None:
    ctl = ModelController("m", 1, ceiling=64, settings=TunerSettings(probe_every=1000))
    settle(ctl, ceiling=8)
    assert ctl.level == 8
    d = ctl.observe(provider_window(8, ceiling=4))
    assert d is not None and d.new == 4
    assert "429s" in d.reason and "sustained" in d.reason and "a rate, not a level" in d.reason
    settle(ctl, ceiling=4, windows=10)
    assert ctl.level == 4


def test_never_below_one_nor_above_the_ceiling() -> None:
    ctl = ModelController("m", 1, ceiling=3)
    seen = settle(ctl, windows=10)
    assert max(seen) == 3
    ctl = ModelController("m", 2, ceiling=8)
    for i in range(5):  # nothing answered at all: halve, but never under 1
        ctl.observe(Window("m", ctl.level, 5.0, 0, 50, 50, 0, 10, None, 1.0, float(i)))
    assert ctl.level == 1


def test_windows_from_another_level_are_ignored() -> None:
    ctl = ModelController("m", 4)
    assert ctl.observe(provider_window(2)) is None
    assert ctl.level == 4


def test_decision_reasons_name_the_model_levels_and_evidence() -> None:
    ctl = ModelController("sim-limited", 4, ceiling=64)
    ctl.prev_level = 2
    ctl.goodput[2] = 17.0
    d = ctl.observe(provider_window(4))
    assert d is not None
    assert d.reason.startswith("sim-limited 4 → 6: goodput +")
    assert "0 429s" in d.reason
    assert math.isclose(ctl.goodput[4], 40.0)


# ---- the ramp (slow start) and reactions to single calls -------------------------------------------------------


def phase_of(ctl: ModelController) -> str:
    return ctl.phase  # read through a function: each call's answer can differ (mypy narrows attributes)


def ramp_of(ctl: ModelController) -> Ramp:
    assert isinstance(ctl.stage, Ramp), ctl.stage
    return ctl.stage


def ramp_batch(ctl: ModelController, latency: float = LAT, n: int | None = None) -> int:
    """Answer calls started at the current level until the controller moves (or `n` calls); the level after."""
    start = ctl.level
    for i in range(n or 4 * ctl.level + 4):
        ctl.answered(latency, since_s=latency * (1 + i / max(1, start)), fresh=True)
        if ctl.level != start:
            break
    return ctl.level


def test_ramp_doubles_per_batch_of_answers_without_errors_up_to_the_ceiling() -> None:
    ctl = ModelController("m", 2, ceiling=20)
    ctl.start_ramp()
    seen = [ctl.level]
    for _ in range(6):
        seen.append(ramp_batch(ctl))
    assert seen[:5] == [2, 4, 8, 16, 20]  # ×2 per batch: no evidence window between steps
    assert phase_of(ctl) == "climb" and ctl.careful  # at the ceiling the ramp hands over to measured windows
    # half a level's worth of fresh answers is a batch; answers of calls started before the change do not count
    ctl = ModelController("m", 8, ceiling=64)
    ctl.start_ramp()
    for _ in range(10):
        assert ctl.answered(LAT, 0.1, fresh=False) is None
    assert ctl.level == 8
    for _ in range(3):
        assert ctl.answered(LAT, 0.1, fresh=True) is None
    d = ctl.answered(LAT, 0.1, fresh=True)
    assert d is not None and d.new == 16 and d.reason.startswith("m 8 → 16: ramp: goodput ")


def test_first_429_on_the_ramp_goes_back_to_the_last_clean_level_and_settles_without_oscillation() -> None:
    ctl = ModelController("m", 2, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.start_ramp()
    for _ in range(3):
        ramp_batch(ctl)
    assert ctl.level == 16 and ramp_of(ctl).prev == 8
    d = ctl.limited(0.01)
    assert d is not None and d.new == 8 and "first 429" in d.reason and "back to 8" in d.reason
    assert phase_of(ctl) == "ramp" and ramp_of(ctl).top == 16 and ctl._avoided(16)
    # a rate limit of 100/s at 0.1 s a call: 10 in flight. One level per clean batch; 11 is refused twice
    levels = [ctl.level]
    for _ in range(10):
        if ctl.level > 10:
            ctl.limited(0.01)
        else:
            ramp_batch(ctl)
        levels.append(ctl.level)
    assert levels[:7] == [8, 9, 10, 11, 10, 11, 10]
    assert set(levels[6:]) == {10} and phase_of(ctl) == "settled"
    seen = settle(ctl, rate=100.0, windows=20)
    # one measured look at 11 (the verdict needs the level above measured or refused), then settled at 10
    assert seen[0] == 10 and seen.count(11) <= 2 and seen[-12:] == [10] * 12 and 11 in ctl.proven
    # two 429s at a settled level do not move it (a limit's drop needs a few), and a clean window forgets them
    assert ctl.limited(None) is None and ctl.limited(None) is None
    ctl.observe(provider_window(10, rate=100.0))
    assert ctl.limited(None) is None and ctl.limited(None) is None and ctl.level == 10


def test_a_storm_measured_in_a_window_backs_off_by_littles_law_then_recovers_one_level_a_latency() -> None:
    ctl = ModelController("m", 12, ceiling=64, settings=TunerSettings(probe_every=1000))
    d = ctl.observe(provider_window(12, rate=100.0))
    # refused calls eat into the limit, so what got through (85/s × 0.1 s) reads low: 8
    assert d is not None and d.new == 8 and "sustained" in d.reason and "one up per clean latency" in d.reason
    assert phase_of(ctl) == "ramp" and ramp_of(ctl).top == 12
    assert ramp_batch(ctl) == 9 and ramp_batch(ctl) == 10 and ramp_batch(ctl) == 11
    ctl.limited(None)
    assert ctl.level == 10


def test_latency_rising_on_the_ramp_means_a_queue_and_goes_to_what_the_server_serves_at_once() -> None:
    ctl = ModelController("m", 2, ceiling=64)
    ctl.start_ramp()
    d = None
    for _ in range(40):  # a serial server of 10 ms: every call waits for the level's others
        level = ctl.level
        for i in range(4 * level + 4):
            d = ctl.answered(0.01 * level, since_s=0.01 * (i + 1), fresh=True)
            if ctl.level != level:
                break
        if ctl.phase != "ramp":
            break
    assert d is not None and "the server queues" in d.reason
    assert ctl.level <= 2  # 100/s answered × the 20 ms of the lowest level seen: about 2 served at once
    seen = settle(ctl, serial=True, windows=12)
    assert seen[-1] == 1


def test_on_a_small_budget_a_queue_is_read_at_once_and_two_levels_are_measured_well() -> None:
    # a serial server of 50 ms and 60 calls: latency doubled with the level over flat goodput is a queue, read at 4
    # (two batches) without waiting for ten latencies; 4 is measured first (a queue costs latency, not goodput),
    # then the level the server serves at once: two levels measured for the verdict, not four glanced at
    ctl = ModelController("m", 2, ceiling=64)
    ctl.left = 60
    ctl.start_ramp()
    while phase_of(ctl) == "ramp":
        level = ctl.level
        for i in range(4 * level):
            ctl.answered(0.05 * level, since_s=0.05 * (i + 1), fresh=True)
            ctl.left -= 1
            if ctl.level != level or phase_of(ctl) != "ramp":
                break
    stage = ctl.stage
    # 20/s × the lowest latency seen (100 ms: 2 was queued already) = 2 served at once
    assert ctl.level == 4 and isinstance(stage, Descend) and stage.then == 2
    seen = settle(ctl, serial=True, windows=4)
    assert seen == [4, 2, 1, 1] and ctl.answered_full[4] >= 20 and ctl.answered_full[2] >= 20


def test_on_a_small_budget_one_fast_call_in_a_batch_is_not_a_queue() -> None:
    """The demo's sim-limited (96 calls, 0.4-0.95 s by prompt length, no queue): at 2 a batch whose fastest call was
    quick, then at 3 batches of ordinary calls, made the lower quartile grow by half and the tuner went down to 2
    "the server queues", naming optimum 2 (truth 3) and costing the sweep 2-3 s. A queue slows every call, so the
    batch's mean must grow too."""
    ctl = ModelController("m", 2, ceiling=64)
    ctl.left = 90
    ctl.start_ramp()
    for i, lat in enumerate((0.39, 0.81)):  # at 2: one quick call, one long one (mean 0.60)
        ctl.answered(lat, since_s=0.4 * (i + 1), fresh=True)
    assert ctl.level == 4
    ctl.stage = Ramp(prev=2, prev_low=0.39, prev_mean=0.60, rising=True)  # as after a recovery to 3 from 2
    ctl.level = 3
    for _ in range(2):  # two batches at 3 of ordinary calls: the quickest 0.62 s (+59%), the mean 0.64 s (+7%)
        for i, lat in enumerate((0.62, 0.63, 0.67)):
            ctl.answered(lat, since_s=0.6 * (i + 1), fresh=True)
            ctl.left -= 1
    assert not isinstance(ctl.stage, Descend) and ctl.level >= 3


def test_on_a_small_budget_a_first_batch_spread_like_a_queues_and_confirmed_goes_down_at_once() -> None:
    """`arena tune --budget 60` on a server that answers one call at a time, from a project's concurrency of 8: the
    first batch (calls started together) comes back in turns, 50, 100, 150, 200 ms; the next batch's calls all
    waited (250-400 ms). Nothing below 8 is measured, so no baseline: the spread is the queue's mark. Before, the
    ramp doubled to 13, spent the budget there and gave no verdict (llama-cpp-python's server did the same)."""
    ctl = ModelController("m", 8, ceiling=64)
    ctl.left = 60
    ctl.start_ramp()
    for i in range(4):
        assert ctl.answered(0.05 * (i + 1), since_s=0.05 * (i + 1), fresh=True) is None
        ctl.left -= 1
    assert phase_of(ctl) == "ramp" and ramp_of(ctl).first_fast == 0.05  # spread 2.5×: held for the next batch
    for i in range(4, 8):
        ctl.answered(0.05 * (i + 1), since_s=0.05 * (i + 1), fresh=True)
        ctl.left -= 1
    stage = ctl.stage
    # 20/s answered × the 50 ms fastest: 1 served at once; 8 measured first (a small budget: two levels, well)
    assert isinstance(stage, Descend) and stage.then == 1 and ctl.level == 8


def test_a_first_batch_that_spreads_but_whose_next_batch_did_not_wait_is_no_queue() -> None:
    # a hosted model on a small budget: answers of different lengths make the first batch spread (0.4 s to 1.2 s),
    # but the next batch's quickest calls are as quick as the first's: no call waited, the ramp goes on up
    ctl = ModelController("m", 8, ceiling=64)
    ctl.left = 60
    ctl.start_ramp()
    for lat in (0.4, 0.9, 1.0, 1.2, 0.45, 0.5, 0.95, 1.1):
        ctl.answered(lat, since_s=lat, fresh=True)
        ctl.left -= 1
    assert not isinstance(ctl.stage, Descend) and ctl.level > 8


def test_a_quick_servers_first_batch_is_not_read_for_a_queue() -> None:
    # a zero-latency simulation on a small budget: 0.1 ms, then calls the client's event loop held a few ms (a busy
    # machine): spread tenfold, but by milliseconds, which say nothing of the server
    ctl = ModelController("m", 8, ceiling=64)
    ctl.left = 60
    ctl.start_ramp()
    for lat in (0.0001, 0.002, 0.003, 0.004, 0.003, 0.004, 0.005, 0.006):
        ctl.answered(lat, since_s=0.01, fresh=True)
        ctl.left -= 1
    assert not isinstance(ctl.stage, Descend) and ctl.level > 8


def test_the_queue_baseline_is_the_median_of_ten_latencies_never_of_two() -> None:
    ctl = ModelController("m", 2, ceiling=64)
    ctl.start_ramp()
    assert ramp_batch(ctl, latency=0.1) == 4
    # 1.5 times as slow at 4 (not in proportion to the level) with only two latencies behind the baseline: no
    # judgement on latency yet
    assert ramp_batch(ctl, latency=0.15) == 8 and ctl.baseline is None
    ctl.base_pool = [0.1] * 10
    assert ctl.baseline == 0.1
    assert ramp_batch(ctl, latency=0.2, n=4) == 8  # twice as slow once: held, not ended
    assert ramp_batch(ctl, latency=0.1) == 16 and phase_of(ctl) == "ramp"


def test_limit_that_halves_is_followed_down_at_once_and_settles_below_the_level_that_erred() -> None:
    ctl = ModelController("m", 10, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.stage = Settled()
    ctl.observe(provider_window(10, rate=100.0))  # measured clean: 100/s
    assert ctl.level == 10 and 10 in ctl.verified
    for _ in range(4):
        assert ctl.limited(0.01) is None
    d = ctl.limited(0.01)  # the fifth 429 in a row (half the level) at a level that was clean: the limit dropped (to
    # 50/s: 5 in flight)
    assert d is not None and d.new == 5 and "limit dropped" in d.reason
    assert phase_of(ctl) == "ramp" and ramp_of(ctl).top == 10
    # the storm's aftermath refuses 5 on the way down: one down, not counted against 5
    d = ctl.limited(0.01)
    assert d is not None and d.new == 4 and "aftermath" in d.reason
    assert ramp_batch(ctl) == 5  # clean at 4: one up per batch of a level's worth of answers
    assert ramp_batch(ctl) == 6
    d = ctl.limited(0.01)  # 6 is over the new limit
    assert d is not None and d.new == 5 and ramp_of(ctl).strikes == {6: 1}
    assert ramp_batch(ctl) == 6
    d = ctl.limited(0.01)  # refused twice coming from below: 6 is the limit
    assert d is not None and d.new == 5 and "again" in d.reason
    assert phase_of(ctl) == "settled"
    seen = settle(ctl, rate=50.0, windows=20)
    assert seen.count(6) <= 2 and seen[-12:] == [5] * 12  # one measured look at 6 for the verdict, then 5


def test_a_recovery_ramp_never_climbs_back_to_the_level_that_erred() -> None:
    ctl = ModelController("m", 4, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.stage = Settled()
    ctl.observe(provider_window(4, ceiling=4))
    for _ in range(3):
        ctl.limited(None)
    assert ctl.level == 2 and ramp_of(ctl).top == 4
    assert ramp_batch(ctl) == 3
    assert ramp_batch(ctl) == 3  # 4 erred: the ramp stops below it and hands over to settled windows
    assert phase_of(ctl) == "settled"


def tuner_at(start: int) -> tuple[Tuner, dict[str, int], list[float]]:
    """A Tuner switched on at `start` for model "m", on a fake clock (`now[0]`); `levels` holds what it set."""
    now = [100.0]
    levels: dict[str, int] = {}
    tuner = Tuner(["m"], set_level=lambda k, n: levels.__setitem__(k, n), set_total=lambda n: None,
                  emit=lambda ev: None, caps=lambda k: levels.get(k), clock=lambda: now[0])
    tuner.enable({"m": start})
    return tuner, levels, now


def test_tuner_reads_single_calls_only_when_they_started_at_the_current_level() -> None:
    from arenatui.kernel.events import CallRetrying, CallStarted

    tuner, levels, now = tuner_at(16)
    ctl = tuner.controllers["m"]
    assert phase_of(ctl) == "ramp" and levels["m"] == 16
    # a 429 for an attempt started before the tuner set this level says nothing about it
    tuner.on_event(CallStarted("m", "c1", 0, 1, 99.0))
    tuner.on_event(CallRetrying("m", "c1", 0, 1, "rate_limited", 0.01, "429", 100.5, 0.01))
    assert ctl.level == 16 and phase_of(ctl) == "ramp"
    tuner.on_event(CallStarted("m", "c2", 0, 1, 100.2))
    tuner.on_event(CallStarted("m", "c3", 0, 1, 100.3))
    now[0] = 100.5
    tuner.on_event(CallRetrying("m", "c2", 0, 1, "rate_limited", 0.01, "429", 100.5, 0.01))
    assert levels["m"] == 8 and ramp_of(ctl).top == 16  # no clean level below on this ramp: halved, then one by one
    assert "ramp ends at the first 429" in tuner.decisions[-1].reason
    # another call started at 16, refused after the move: not held against 8
    tuner.on_event(CallRetrying("m", "c3", 0, 1, "rate_limited", 0.01, "429", 100.7, 0.01))
    assert levels["m"] == 8 and len(tuner.decisions) == 1


def test_a_dropped_limit_restarts_the_evidence_and_the_readout() -> None:
    """Issue 19: after the limit halves, the verdict must describe the new limit, not the old one's levels."""
    from arenatui.tuning.levels import LevelStats

    ctl = ModelController("m", 10, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.stage = Settled()
    ctl.observe(provider_window(10, rate=100.0))  # measured without a 429
    assert ctl.answered_full[10] > 0 and 10 in ctl.spotless
    ctl.observe(provider_window(10, rate=50.0))  # the same level now past the bound: the limit dropped
    assert ctl.limit_dropped and ctl.level < 10 and not ctl.answered_full and not ctl.proven
    # the Tuner clears the model's readout when its controller says so
    tuner = Tuner(["m"], set_level=lambda k, n: None, set_total=lambda n: None, emit=lambda ev: None,
                  caps=lambda k: None)
    tuner.tracker.models["m"].levels[10] = LevelStats(10)  # a level measured against the old limit
    tuner._apply(ctl, None)
    assert not ctl.limit_dropped and tuner.tracker.readout("m").levels == ()


def test_once_settled_the_levels_above_and_below_are_measured_for_the_verdict() -> None:
    ctl = ModelController("m", 10, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.stage = Settled()
    seen = settle(ctl, rate=100.0, windows=30)  # 100/s × 0.1 s: 10 in flight
    assert 11 in seen and 9 in seen  # one measured look each way
    assert seen[-8:] == [10] * 8 and 11 in ctl.proven


# ---- slow refusals: a 429 counts against the level it was sent at, whenever it arrives ---------------------------


def answer_all(ctl: ModelController, level: int, epochs: list[int]) -> None:
    """Attempts sent at `level` come back answered, in order."""
    for e in epochs:
        ctl.ended(level, e, False)
        ctl.answered(LAT, LAT, fresh=True)


def test_the_ramp_leaves_a_level_only_once_a_levels_worth_of_attempts_came_back() -> None:
    ctl = ModelController("m", 4, ceiling=64)
    ctl.start_ramp()
    answer_all(ctl, 4, [ctl.started() for _ in range(4)])
    assert ctl.level == 8
    answer_all(ctl, 8, [ctl.started() for _ in range(8)])
    assert ctl.level == 16
    sent = [ctl.started() for _ in range(16)]
    answer_all(ctl, 16, sent[:15])  # 15 answers, far more than the 8 a doubling needs: one attempt is still out
    assert ctl.level == 16 and ctl.batch_out == 1
    ctl.ended(16, sent[15], True)  # it comes back refused, two latencies late (a gateway slow to say no)
    d = ctl.limited(0.0, started_at=16)
    assert d is not None and d.new == 8 and "ramp ends at the first 429" in d.reason and "back to 8" in d.reason
    assert ramp_of(ctl).top == 16 and ctl._avoided(16)


def test_a_slow_429_arriving_after_the_ramp_moved_on_ends_it_below_the_level_it_was_sent_at() -> None:
    ctl = ModelController("m", 4, ceiling=64)
    ctl.start_ramp()
    answer_all(ctl, 4, [ctl.started() for _ in range(4)])
    answer_all(ctl, 8, [ctl.started() for _ in range(8)])
    batch = [ctl.started() for _ in range(32)]  # from WIDE_LEVEL up a batch is two rounds of the level
    late = ctl.started()  # sent at 16 after its batch: the ramp does not wait for it
    assert late == -1
    answer_all(ctl, 16, batch)
    assert ctl.level == 32 and phase_of(ctl) == "ramp"
    ctl.ended(16, late, True)
    d = ctl.limited(None, started_at=16)  # a refusal sent at 16 says the limit is below 16, not below 32
    assert d is not None and d.new == 8 and "(sent at 16)" in d.reason and ramp_of(ctl).top == 16
    # refusals of attempts sent at 32 arrive after the move: the storm already acted on, not held against 8
    assert ctl.limited(None, started_at=32) is None and ctl.level == 8 and ctl.aftermath == 1
    # a refusal sent at 16 on a ramp that had stepped up from a level whose batch came back: 16 is never 'clean'
    assert ctl._last_clean_below(17) == 8


def test_refusals_sent_above_a_level_are_not_held_against_its_window() -> None:
    def at_eight(aftermath: int) -> ModelController:
        ctl = ModelController("m", 8, ceiling=64)
        ctl.stage, ctl.careful = Climb(), True
        for _ in range(aftermath):
            assert ctl.limited(None, started_at=12) is None
        return ctl

    window = Window("m", 8, 1.0, 74, 80, 6, 0, 6, LAT, None, 1.0)  # 6 429s in 80 attempts: past the 5% bound
    ctl = at_eight(0)
    d = ctl.observe(window)
    assert d is not None and d.new < 8 and "429s" in d.reason  # held against 8: a back-off
    ctl = at_eight(6)  # the six were sent at 12 and came back while at 8
    d = ctl.observe(window)
    assert d is not None and d.new == 9 and "one level up" in d.reason and ctl.aftermath == 0


def test_429s_trickling_in_just_past_a_limit_step_one_level_down() -> None:
    """A gateway slow to refuse keeps the 429 share of a level just past a rate limit under the window's 5% bound
    (its refusals hold the slots they would be retried from), yet every refusal is a retry."""
    ctl = ModelController("m", 12, ceiling=64)
    ctl.stage, ctl.careful, ctl.windows_here = Settled(), True, 1
    for _ in range(2):
        for _ in range(50):
            ctl.started()
        assert ctl.limited(None, started_at=12) is None
    for _ in range(50):
        ctl.started()
    d = ctl.limited(None, started_at=12)  # one 429 every 50 attempts: 3 in 150, 2%
    assert d is not None and d.new == 11 and "3 429s in 150 attempts at 12: just past the limit" in d.reason
    assert ctl._avoided(12) and phase_of(ctl) == "settled"
    # at the limit itself a 429 now and then is under 1% of what is sent: the level stays
    for _ in range(3):
        for _ in range(130):
            ctl.started()
        assert ctl.limited(None, started_at=11) is None
    assert ctl.level == 11
    # a 429 sent at another level (a probe's, one below's) says nothing about this one
    assert ctl.limited(None, started_at=10) is None and ctl.leaks == 3


def test_a_few_429s_among_many_attempts_at_a_clean_level_are_the_edge_of_a_limit_not_a_drop() -> None:
    ctl = ModelController("m", 10, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.stage = Settled()
    ctl.observe(provider_window(10, rate=100.0))  # measured without a 429
    assert 10 in ctl.spotless
    for _ in range(3):
        for _ in range(60):
            ctl.started()
        d = ctl.limited(None)
    # 3 429s, one every 60 attempts: the edge of the limit (3 in 180, over 1%), one down; not a halving
    assert d is not None and d.new == 9 and "just past the limit" in d.reason and not ctl.limit_dropped
    ctl = ModelController("m", 10, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.stage = Settled()
    ctl.observe(provider_window(10, rate=100.0))
    for _ in range(200):
        ctl.started()
    for _ in range(4):
        ctl.limited(None)
        ctl.started()
    d = ctl.limited(None)  # half the level's worth in a row after 200 clean ones: the limit dropped
    assert d is not None and d.new == 5 and "limit dropped" in d.reason and ctl.limit_dropped
    # the same in a hold no window has judged yet: 200 sent with no 429, then a storm, is a drop too
    ctl = ModelController("m", 10, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.stage = Settled()
    for _ in range(200):
        ctl.started()
    for _ in range(4):
        ctl.limited(None)
        ctl.started()
    d = ctl.limited(None)
    assert d is not None and d.new == 5 and "limit dropped" in d.reason and ctl.limit_dropped
    # a storm right after a move (nothing sent clean before it) halves, but what was measured stands
    ctl = ModelController("m", 10, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.stage = Settled()
    ctl.answered_full[10] = 40
    ctl.started()
    for _ in range(5):
        d = ctl.limited(None)
        ctl.started()
    assert d is not None and d.new == 5 and "a storm" in d.reason and not ctl.limit_dropped
    assert ctl.answered_full == {10: 40}


def test_the_tuner_holds_a_slow_429_against_the_level_its_attempt_was_sent_at() -> None:
    from arenatui.kernel.events import CallFinished, CallResult, CallRetrying, CallStarted

    tuner, levels, now = tuner_at(8)
    ctl = tuner.controllers["m"]

    def result(case: str, lat_ms: float, attempts: int = 1) -> CallResult:
        return CallResult("m", case, 0, "passed", "x", 1.0, True, None, None, attempts, lat_ms, lat_ms, None, 1, 1,
                          0.0, "stop", False, 0.0, 0.1)  # type: ignore[arg-type]

    def step(t: float) -> float:
        now[0] = t
        return t

    t = step(100.01)
    for i in range(8):  # a level's worth sent at 8, all answered in 20 ms: on to 16
        tuner.on_event(CallStarted("m", f"a{i}", 0, 1, t))
    t = step(100.03)
    for i in range(8):
        tuner.on_event(CallFinished(result(f"a{i}", 20.0), t))
    assert levels["m"] == 16
    t = step(100.04)
    for i in range(33):  # 32 in the batch (two rounds from WIDE_LEVEL), and one more the gateway takes 60 ms to refuse
        tuner.on_event(CallStarted("m", f"b{i}", 0, 1, t))
    t = step(100.06)
    for i in range(32):
        tuner.on_event(CallFinished(result(f"b{i}", 20.0), t))
    assert levels["m"] == 32
    t = step(100.10)  # the refusal of the attempt sent at 16 arrives at 32
    tuner.on_event(CallRetrying("m", "b32", 0, 1, "rate_limited", 0.0, "429", t, 0.0))
    assert levels["m"] == 8 and "(sent at 16)" in tuner.decisions[-1].reason
    # its retry is answered: the baseline gets the answered attempt's latency, never the refused one's 60 ms
    t = step(100.11)
    tuner.on_event(CallStarted("m", "b32", 0, 2, t))
    t = step(100.13)
    tuner.on_event(CallFinished(result("b32", 20.0, attempts=2), t))
    assert ctl.base_pool and max(ctl.base_pool) == 0.02


def test_a_cap_reached_with_no_limit_on_the_way_is_not_checked_from_below() -> None:
    ctl = ModelController("m", 1, ceiling=16, settings=TunerSettings(probe_every=1000))
    seen = settle(ctl, windows=20)  # no limit: goodput grows with the level up to the project's cap
    top = seen.index(16)
    assert seen[top:] == [16] * (20 - top)  # no look at 15: it would only cost wall clock
    ctl = ModelController("m", 1, ceiling=16, settings=TunerSettings(probe_every=1000))
    ctl.limit_seen = True  # a 429 met on the way: the level reached is checked from below
    assert 15 in settle(ctl, windows=20)


def test_a_drop_first_read_as_the_edge_of_the_limit_is_a_drop_once_the_storm_goes_on_one_level_down() -> None:
    ctl = ModelController("m", 11, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.stage, ctl.careful = Settled(), True
    for _ in range(50):
        ctl.started()
    assert ctl.limited(None) is None  # a 429 now and then at the edge of the limit
    for _ in range(130):
        ctl.started()
    assert ctl.limited(None) is None
    ctl.started()
    d = ctl.limited(None)  # the limit halves here: the first two of the storm look like the edge's, 3 in 181
    assert d is not None and d.new == 10 and "just past the limit" in d.reason
    for _ in range(2):
        ctl.started()
        assert ctl.limited(None) is None
    ctl.started()
    d = ctl.limited(None)  # and they go on at 10: 5 in the last 5 sent (half the level), after 180 nearly clean
    assert d is not None and d.new == 5 and "limit dropped" in d.reason and ctl.limit_dropped


def test_429s_trickling_in_at_a_low_level_or_where_the_level_below_is_worse_do_not_step_down() -> None:
    def held(level: int) -> ModelController:
        ctl = ModelController("m", level, ceiling=64)
        ctl.stage, ctl.careful, ctl.windows_here = Settled(), True, 1
        return ctl

    def trickle(ctl: ModelController) -> list[object]:
        out: list[object] = []
        for _ in range(3):
            for _ in range(50):
                ctl.started()
            out.append(ctl.limited(None))
        return out

    assert trickle(held(4)) == [None, None, None]  # at 4 a level down is a quarter of goodput: the retries cost less
    ctl = held(12)
    ctl.goodput = {11: 400.0, 12: 500.0}  # measured: 11 answers a fifth less, so 12 is not just past a rate limit
    assert trickle(ctl) == [None, None, None] and ctl.level == 12
    ctl = held(12)
    ctl.goodput = {11: 490.0, 12: 500.0}  # as good: the limit is a rate, and 12's 429s buy nothing
    assert trickle(ctl)[-1] is not None and ctl.level == 11


def test_from_a_wide_level_the_ramp_waits_for_two_rounds_so_a_slow_refusal_in_the_second_stops_it() -> None:
    # a token bucket's burst lets the first round at a doubled level through; a gateway slow to refuse sends the
    # second round's refusals after its answers: doubling again before they are back is a storm at twice the level
    ctl = ModelController("m", 8, ceiling=64)
    ctl.start_ramp()
    assert ctl.batch_span == 8  # below WIDE_LEVEL: one round
    answer_all(ctl, 8, [ctl.started() for _ in range(8)])
    assert ctl.level == WIDE_LEVEL == 16 and ctl.batch_span == 32
    first = [ctl.started() for _ in range(16)]
    second = [ctl.started() for _ in range(16)]  # replacing the first round's calls as they finish
    assert -1 not in second and ctl.started() == -1  # the 33rd is past the span
    answer_all(ctl, 16, first + second[:15])  # every answer in but one of the second round
    assert ctl.level == 16 and ctl.batch_out == 1
    ctl.ended(16, second[15], True)  # refused, late
    d = ctl.limited(0.0, started_at=16)
    assert d is not None and d.new == 8 and "back to 8" in d.reason and ramp_of(ctl).top == 16
    # a recovery ramp (adding one) waits for one round, as before
    assert ctl.batch_span == 8


def test_no_move_up_to_a_level_the_calls_left_cannot_fill_four_times() -> None:
    # a tiny budget: 60 calls in all, 14 done on the way to 8, 46 left: 16 would be held under 3 rounds and could
    # cross a limit the few calls left cannot earn back; the ramp goes no higher than 46 // 4 = 11
    ctl = ModelController("m", 8, ceiling=64)
    ctl.start_ramp()
    ctl.left = 46
    assert ctl.affordable(16) == 11 == 46 // ROUNDS_LEFT and ctl.affordable(5) == 5
    d = None
    for _ in range(8):
        d = ctl.answered(LAT, LAT, fresh=True) or d
    assert d is not None and d.new == 11
    ctl.left = 40  # 40 // 4 = 10: nothing above 11 is worth it; the ramp ends where it is
    for _ in range(12):
        assert ctl.answered(LAT, LAT, fresh=True) is None
    assert ctl.level == 11 and phase_of(ctl) != "ramp"
    # every move up is bounded so (a climb, a probe); a move down never is
    assert ctl._move(20, "up") is None and ctl.level == 11
    d = ctl._move(3, "down")
    assert d is not None and d.new == 3
    # an unknown budget bounds nothing
    ctl.left = None
    assert ctl.affordable(64) == 64


def test_the_tuner_counts_down_the_calls_left_as_calls_end() -> None:
    from arenatui.kernel.events import CallFinished, CallResult

    levels: dict[str, int] = {}
    tuner = Tuner(["m", "n"], set_level=levels.__setitem__, set_total=lambda n: None, emit=lambda ev: None,
                  caps=lambda k: None, clock=lambda: 0.0)
    tuner.enable({"m": 2, "n": 2}, calls_left={"m": 60})
    for i in range(5):
        r = CallResult("m", f"c{i}", 0, "passed", "x", 1.0, True, None, None, 1, 20.0, 20.0, None, 1, 1, 0.0, "stop",
                       False, 0.0, 0.1)
        tuner.on_event(CallFinished(r, t=0.1 * i))
    assert tuner.controllers["m"].left == 55 and tuner.controllers["n"].left is None


def test_a_queue_at_a_wide_level_is_read_without_waiting_for_its_second_round() -> None:
    # a serial server of 5 ms: at 16 every call waits for the others (80 ms); waiting for two rounds to come back
    # before saying so would hold 16 long enough to measure it, queued
    ctl = ModelController("m", 16, ceiling=64)
    ctl.start_ramp()
    ctl.base_pool = [0.005] * 12  # the levels below answered in 5 ms
    ctl.ramp_lat_min = 0.005
    sent = [ctl.started() for _ in range(32)]
    d = None
    for i in range(16):  # two slow batches of 8 (one slow batch could be chance), the second round still out
        ctl.ended(16, sent[i], False)
        d = ctl.answered(0.08, since_s=0.005 * (i + 1), fresh=True) or d
        if i < 15:
            assert d is None and ctl.batch_out == 31 - i
    assert d is not None and "the server queues" in d.reason and d.new == 1  # 200/s × 5 ms: one served at once


def test_a_level_refused_once_and_then_clean_on_the_way_up_is_the_edge_nothing_above_it_is_tried() -> None:
    # slow 429s behind a token bucket: after the first ramp's storm the bucket refills, so 13 passes one batch after
    # refusing one; the ramp used to go on to 14 (refused), back to 13, 14 again... each look a few more retries
    ctl = ModelController("m", 2, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.start_ramp()
    for _ in range(3):
        ramp_batch(ctl)
    ctl.limited(0.0)  # the first 429, at 16: back to 8, then one level per clean batch below 16
    while ctl.level < 13:
        ramp_batch(ctl)
    d = ctl.limited(0.0)
    assert d is not None and d.new == 12 and "429 at 13" in d.reason and ramp_of(ctl).strikes == {13: 1}
    ramp_batch(ctl)  # 12 clean: 13 gets its second look
    assert ctl.level == 13
    ramp_batch(ctl)  # 13 clean this time: the edge; hold one below it, never try 14
    assert ctl.level == 12 and phase_of(ctl) == "settled"  # the ramp record (and its top) is gone


def test_a_model_left_alone_does_not_pay_for_a_look_one_level_down() -> None:
    """Once every other model has made its calls, the one still running is the wall clock: a measured level below
    its settled one would lengthen the run, and its verdict does without it (issue 36: the demo's --tune held
    sim-limited one level down for seconds while nothing else ran)."""
    def settled(alone: bool) -> ModelController:
        ctl = ModelController("m", 3, ceiling=64, settings=TunerSettings(probe_every=1000))
        ctl.stage, ctl.careful, ctl.limit_seen, ctl.alone = Settled(), True, True, alone
        ctl.proven.add(4)
        ctl.answered_full[3] = 40
        ctl.goodput[3] = 30.0
        ctl.verified.add(3)
        return ctl

    for alone, want in ((False, 2), (True, 3)):
        ctl = settled(alone)
        for i in range(3):
            ctl.observe(provider_window(3, ceiling=3, t=float(i)))
        assert ctl.level == want, (alone, ctl.level)


def test_the_tuner_marks_the_last_model_running_as_alone() -> None:
    t = Tuner(["a", "b"], set_level=lambda k, n: None, set_total=lambda n: None, emit=lambda e: None,
              caps=lambda k: None)
    t.enable({"a": 2, "b": 2}, {"a": 1, "b": 5})
    assert not t.controllers["b"].alone
    t.controllers["a"].left = 0  # what a's last CallFinished does, before it calls _others_done
    t._others_done()
    assert t.controllers["b"].alone and not t.controllers["a"].alone


def test_a_declared_rate_limit_stops_the_ramp_where_it_allows_and_a_429_past_it_is_held_as_declared() -> None:
    from arenatui.kernel.events import DeclaredLimits

    # 6,000 requests/min = 100/s at 0.1 s a call: 10 in flight
    ctl = ModelController("m", 2, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.declared = DeclaredLimits(requests_limit=6000)
    ctl.start_ramp()
    seen = [ctl.level]
    for _ in range(3):
        seen.append(ramp_batch(ctl))
    assert seen == [2, 4, 8, 10]  # no doubling to 16 into a storm
    ramp_batch(ctl)
    assert phase_of(ctl) == "climb" and not ctl.careful and ctl.climbing_fast  # a quick look at it
    ctl.observe(provider_window(10, rate=100.0))
    assert ctl.level == 11 and not ctl.climbing_fast  # the evidence must confirm it: one full window past it
    d = ctl.limited(0.01)
    assert d is not None and d.new == 10 and "as declared" in d.reason
    assert 11 in ctl.proven and phase_of(ctl) == "settled"
    assert settle(ctl, rate=100.0, windows=10)[-5:] == [10] * 5


def test_declared_limits_that_lie_lose_to_evidence() -> None:
    from arenatui.kernel.events import DeclaredLimits

    # headers saying 3,000/min (5 at once) while the provider takes 100/s (10): a full window clean above it, goodput
    # growing in proportion, so the ramp goes on as without headers
    ctl = ModelController("m", 2, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.declared = DeclaredLimits(requests_limit=3000)
    ctl.start_ramp()
    assert [ramp_batch(ctl), ramp_batch(ctl)] == [4, 5]
    ramp_batch(ctl)
    seen = settle(ctl, rate=100.0, windows=2)
    assert seen == [5, 6] and ctl.prior_wrong and ctl.prior() is None
    assert ctl.level == 12 and phase_of(ctl) == "ramp"  # the ramp goes on, doubling, as without headers
    ctl.limited(0.01)
    assert ctl.level == 6 and ramp_of(ctl).top == 12  # the first 429: back to the last clean level, then one up
    # headers saying 4 times the truth: the ramp doubles as without them and meets the limit
    ctl = ModelController("m", 2, ceiling=64)
    ctl.declared = DeclaredLimits(requests_limit=24000)
    ctl.start_ramp()
    assert [ramp_batch(ctl) for _ in range(3)] == [4, 8, 16]


def test_a_provider_serving_past_its_declared_limit_proves_the_headers_wrong_whatever_goodput_says() -> None:
    """Headers saying 3,000/min (50/s, 5 at once at 0.1 s): a full window at 6 without a 429 in which 65 requests/s
    were served is more than the headers allow (past DECLARED_MARGIN), even though its goodput looks flat against
    5's (noise): the headers are dropped and the ramp goes on. At exactly the declared rate, or with a 429, or in a
    quick window, nothing is proven."""
    from arenatui.kernel.events import DeclaredLimits
    from arenatui.tuning.controller import DECLARED_MARGIN

    def at(level: int, answered: int, limited: int = 0, quick: bool = False) -> Window:
        return Window("m", level, 10.0, answered, answered + limited, limited, 0, 0, LAT, None, 0.0, quick=quick)

    ctl = ModelController("m", 5, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.declared = DeclaredLimits(requests_limit=3000)
    ctl.base_pool.extend([LAT] * 10)
    assert ctl.prior() == 5
    assert not ctl.served_past_declared(at(6, 500))  # 50/s: what the headers allow
    assert not ctl.served_past_declared(at(6, 650, limited=1))  # a 429: the limit may be there
    assert not ctl.served_past_declared(at(6, 650, quick=True))  # a rough look proves nothing
    assert 50.0 * DECLARED_MARGIN < 650 / 10.0 and ctl.served_past_declared(at(6, 650))
    ctl.observe(at(5, 620))  # 5's goodput measured high (62/s)
    ctl.level = 6
    d = ctl.observe(at(6, 650))  # +5%: flat to the goodput rule, past the headers to this one
    assert d is not None and d.new == 12 and "evidence wins over the headers" in d.reason
    assert ctl.prior_wrong and ctl.prior() is None and phase_of(ctl) == "ramp"


def test_the_tuner_hands_a_models_declared_limits_to_its_one_controller() -> None:
    from arenatui.kernel.events import VARIANT_SEP, DeclaredLimits, LimitsDeclared

    lanes = ["m", f"m{VARIANT_SEP}terse", "other"]
    tuner = Tuner(lanes, set_level=lambda k, n: None, set_total=lambda n: None, emit=lambda ev: None,
                  caps=lambda k: 2)
    tuner.enable()
    limits = DeclaredLimits(requests_limit=600)
    tuner.on_event(LimitsDeclared("m", limits, 1.0, 0.0))
    assert sorted(tuner.controllers) == ["m", "other"]  # a model's variants are one model to the tuner
    assert [tuner.controllers[k].declared for k in ("m", "other")] == [limits, None]


def test_a_models_prompt_variants_share_one_tuned_level() -> None:
    """Issue 36 item 7: a model's prompt variants share its provider: one controller, fed by every lane's calls,
    gives one level, and every lane is capped at it; the readout and the verdict are the model's, once. Its budget
    (calls left) is the lanes' together."""
    from arenatui.kernel.events import VARIANT_SEP, CallFinished, CallResult, CallStarted

    lanes = [f"m{VARIANT_SEP}terse", f"m{VARIANT_SEP}verbose", "other"]
    caps: dict[str, int] = {}
    now = [100.0]
    tuner = Tuner(lanes, set_level=caps.__setitem__, set_total=lambda n: None, emit=lambda ev: None,
                  caps=lambda k: caps.get(k), user_caps={lanes[0]: 8, lanes[1]: 6, "other": None},
                  clock=lambda: now[0])
    tuner.enable({lanes[0]: 2, lanes[1]: 3, "other": 1}, calls_left={lanes[0]: 50, lanes[1]: 50, "other": 20})
    ctl = tuner.controllers["m"]
    assert sorted(tuner.controllers) == ["m", "other"] and ctl.left == 100 and ctl.ceiling == 6
    assert caps[lanes[0]] == caps[lanes[1]] == ctl.level == 3  # the lanes' larger start, on both

    def answer(lane: str, case: str) -> CallResult:
        return CallResult(lane, case, 0, "passed", "x", 1.0, True, None, None, 1, 20.0, 20.0, None, 1, 1,
                          0.0, "stop", False, 0.0, 0.1)  # type: ignore[arg-type]

    start, n = ctl.level, 0
    while ctl.level == start and n < 60:  # rounds of a level's worth, the two variants' calls interleaved
        now[0] += 0.01
        sent = [(lanes[(n + i) % 2], f"c{n + i}") for i in range(ctl.level)]
        for lane, case in sent:
            tuner.on_event(CallStarted(lane, case, 0, 1, now[0]))
        now[0] += 0.02
        for lane, case in sent:
            tuner.on_event(CallFinished(answer(lane, case), now[0]))
        n += len(sent)
    assert ctl.level > start and caps[lanes[0]] == caps[lanes[1]] == ctl.level  # one move, on both lanes
    assert tuner.level(lanes[1]) == tuner.level("m") == ctl.level
    assert [ro.model_key for ro in tuner.readouts()] == ["m", "other"]

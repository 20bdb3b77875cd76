"""The auto-tuner's controller as a pure object, driven by synthetic windows from a provider model."""

from __future__ import annotations

import math

from arenatui.tuning.controller import ModelController, TunerSettings
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
    ctl.phase = "settled"
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

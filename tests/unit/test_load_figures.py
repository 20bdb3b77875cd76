"""Load figures from raw samples: exact merge across shards, SLO goodput, lag, saturation, flag parsing."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from arenatui.kernel.errors import ArenaError, ConfigError
from arenatui.load.metrics import (
    OK,
    RATE_LIMITED,
    TIMEOUT,
    Figures,
    LoadRequest,
    Samples,
    Slo,
    Window,
    compute,
    mark_saturation,
    parse_slo,
)
from arenatui.load.run import parse_rates


def req(seq: int, *, sched: float, lag_ms: float = 0.0, ttft: float | None = 100.0, lat: float | None = 200.0,
        outcome: int = OK, out: int = 11, segment: int = 0, warmup: bool = False) -> LoadRequest:
    sent = sched + lag_ms / 1000.0
    fin = sent + (lat or 0.0) / 1000.0
    return LoadRequest(seq, segment, 0, "c", warmup, sched, sent, fin, outcome, ttft, lat, 5, out, None)


def test_merged_shards_give_exactly_the_single_process_figures() -> None:
    rng = random.Random(4)
    records = [req(i, sched=i * 0.01, lag_ms=rng.expovariate(0.2), ttft=rng.lognormvariate(4, 0.5),
                   lat=rng.lognormvariate(5, 0.7)) for i in range(3000)]
    whole = Samples()
    shards = [Samples() for _ in range(3)]
    for r in records:
        whole.add(r)
        shards[r.seq % 3].add(r)
    merged = Samples()
    for s in shards:
        merged.extend(s)
    w = [Window(0, 100.0, 0.0, 30.0)]
    a, b = compute(whole, w), compute(merged, w)
    assert a.latency_schedule == b.latency_schedule and a.ttft_send == b.ttft_send and a.lag == b.lag
    assert a.requests == b.requests == 3000
    # and an average of the shards' p99s is not the p99 (why the merge keeps raw samples)
    per_shard = [compute(s, w).latency_send[99.0] for s in shards]
    assert a.latency_send[99.0] == pytest.approx(np.percentile([r.latency_ms for r in records], 99))
    assert np.mean(per_shard) != a.latency_send[99.0]


def test_slo_goodput_on_a_synthetic_set() -> None:
    s = Samples()
    s.add(req(0, sched=0.0))                                 # meets everything
    s.add(req(1, sched=1.0, lag_ms=450.0))                   # ttft from schedule 550 > 500: misses
    s.add(req(2, sched=2.0, lat=6000.0))                     # latency 6 s > 5 s: misses
    s.add(req(3, sched=3.0, ttft=None))                      # no first token seen: cannot meet ttft
    s.add(req(4, sched=4.0, outcome=TIMEOUT, lat=None, ttft=None))
    s.add(req(5, sched=5.0, outcome=RATE_LIMITED, lat=3.0, ttft=None))
    s.add(req(6, sched=6.0, ttft=50.0, lat=450.0))           # meets: itl (450-50)/10 = 40 ms
    s.add(req(7, sched=7.0, ttft=50.0, lat=1050.0))          # itl 100 ms > 50: misses
    s.add(req(8, sched=8.0, warmup=True))                    # warmup: not counted at all
    f = compute(s, [Window(0, 1.0, 0.0, 10.0)], Slo(ttft_ms=500.0, latency_ms=5000.0, itl_ms=50.0))
    assert f.requests == 8
    assert f.goodput == 2
    assert f.goodput_share == pytest.approx(2 / 8)
    assert f.goodput_rate == pytest.approx(2 / 10.0)
    assert f.outcomes == {"ok": 6, "rate_limited": 1, "timeout": 1}
    assert f.share("timeout") == pytest.approx(1 / 8)


def test_lag_is_in_the_from_schedule_figures_only_and_warned() -> None:
    s = Samples()
    for i in range(100):
        s.add(req(i, sched=i * 0.1, lag_ms=300.0 if i >= 95 else 0.0))
    f = compute(s, [Window(0, 10.0, 0.0, 10.0)])
    assert f.latency_send[99.0] == pytest.approx(200.0)
    assert f.latency_schedule[99.0] == pytest.approx(500.0)
    assert f.lag_warning and any("client" in w for w in f.warnings)


def test_warmup_window_and_achieved_rate() -> None:
    s = Samples()
    for i in range(100):
        s.add(req(i, sched=i * 0.1, lat=50.0))  # 10/s for 10 s
    f = compute(s, [Window(0, 10.0, 0.0, 10.0, warmup_s=2.0)])
    assert f.requests == 80 and f.offered_rate == pytest.approx(10.0)
    assert f.achieved_rate == pytest.approx(10.0)


def _fig(offered: float, achieved: float) -> Figures:
    f = compute(Samples(), [])
    f.requests, f.offered_rate, f.achieved_rate = 10, offered, achieved
    return f


def test_saturation_is_where_achieved_stops_following_offered() -> None:
    figs = [_fig(1, 1), _fig(2, 2), _fig(4, 3.1), _fig(8, 3.2)]
    first = mark_saturation(figs)
    assert first is figs[2]
    assert [f.saturated for f in figs] == [False, False, True, True]
    assert mark_saturation([_fig(1, 1), _fig(2, 1.99)]) is None


def _saturated(outcomes: dict[str, int], *, dropped: int = 0, lag_ms: float = 0.0) -> Figures:
    f = _fig(8, 3)
    f.requests, f.outcomes, f.dropped = sum(outcomes.values()), outcomes, dropped
    f.lag = {p: lag_ms for p in f.lag}
    return f


@pytest.mark.parametrize(("outcomes", "extra", "cause"), [
    ({"ok": 60, "rate_limited": 40}, {}, "429s: the provider's rate limit refused 40% of requests"),
    ({"ok": 80, "incomplete_stream": 20}, {}, "errors: 20% of requests incomplete stream"),
    ({"ok": 85, "transient": 15}, {}, "errors: 15% of requests transient"),
    ({"ok": 100}, {"dropped": 500}, "the client: it could not send at the offered rate (500 requests dropped"),
    ({"ok": 100}, {"lag_ms": 900.0}, "the client: it could not send at the offered rate (p99 schedule lag 900 ms"),
    ({"ok": 95, "timeout": 5}, {}, "capacity: the server answered 3.00/s of 8.00/s offered, 5% timed out"),
    ({"ok": 100}, {}, "capacity: the server answered 3.00/s of 8.00/s offered"),
])
def test_the_saturation_point_names_what_limited_it(outcomes: dict[str, int], extra: dict[str, Any],
                                                     cause: str) -> None:
    sat = _saturated(outcomes, **extra)
    assert mark_saturation([_fig(1, 1), sat]) is sat
    assert sat.saturation_cause is not None and sat.saturation_cause.startswith(cause)


def test_parse_slo() -> None:
    assert parse_slo("ttft=500ms,latency=5s") == Slo(ttft_ms=500.0, latency_ms=5000.0)
    assert parse_slo("itl=0.05").itl_ms == pytest.approx(50.0)
    for bad in ("ttft", "p99=1s", "ttft=-1s", "ttft=soon", ""):
        with pytest.raises(ConfigError, match="--slo"):
            parse_slo(bad)


def test_parse_rates() -> None:
    assert parse_rates(5.0, None, None) == (5.0,)
    assert parse_rates(None, "1,2,4", None) == (1.0, 2.0, 4.0)
    assert parse_rates(None, None, "1:8:4") == pytest.approx((1.0, 2.0, 4.0, 8.0))
    for args in ((None, None, None), (1.0, "2", None), (None, "1,x", None), (None, None, "8:1:3"),
                 (None, None, "1:8"), (-1.0, None, None), (None, "0", None)):
        with pytest.raises(ArenaError):
            parse_rates(*args)


def test_a_backlog_is_not_credited_to_the_next_segment() -> None:
    s = Samples()
    for i in range(50):  # segment 0 offered 10/s, but its answers all come late, inside segment 1's window
        s.add(req(i, sched=i * 0.1, lag_ms=6000.0, segment=0))
    for i in range(50):
        s.add(req(100 + i, sched=5.0 + i * 0.1, lat=10.0, segment=1))
    w0, w1 = Window(0, 10.0, 0.0, 5.0), Window(1, 10.0, 5.0, 10.0)
    f0, f1 = compute(s, [w0], segment=0), compute(s, [w1], segment=1)
    assert f0.achieved_rate == 0.0  # nothing answered within its own window
    assert f1.achieved_rate == pytest.approx(10.0)  # not 20/s: segment 0's late answers are not its own


def test_cli_durations() -> None:
    from arenatui.load.metrics import duration

    assert duration("15m", "--duration") == 900.0
    assert duration("90s", "--duration") == 90.0
    assert duration("500ms", "--duration") == 0.5
    assert duration("2.5", "--duration") == 2.5
    assert duration("0", "--warmup", zero_ok=True) == 0.0
    for bad in ("0", "-1", "soon", "5h", "m"):
        with pytest.raises(ConfigError, match="--duration"):
            duration(bad, "--duration")

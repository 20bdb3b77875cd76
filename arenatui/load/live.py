"""Live figures of a load run for the console and the headless progress line: pure, read from raw samples.

The views call `snapshot()` a few times a second (the console from a thread worker: it is numpy work);
it looks only at the samples finished in the last `window_s` seconds, a suffix of the append-only arrays.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from arenatui.load.metrics import OK, RATE_LIMITED, TIMEOUT, Samples
from arenatui.stats.percentiles import or_nan, percentiles

WINDOW_S = 10.0
HISTOGRAM_EDGES_MS = (10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)
"""Upper edges of the latency histogram's bars (the last bar holds everything slower)."""


@dataclass(frozen=True, slots=True)
class LoadSnapshot:
    elapsed_s: float
    total_s: float
    segment: int
    target_rate: float
    """The rate being offered now (requests/s)."""
    sent_rate: float
    """Requests sent per second over the window: below the target when the in-flight cap or the client's own
    CPU holds requests back (their lag says by how much)."""
    achieved_rate: float
    """Ok answers finished per second over the window."""
    in_flight: int
    done: int
    lag_p50_ms: float
    lag_p99_ms: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    latency_p50_ms: float
    latency_p99_ms: float
    latency_sched_p99_ms: float
    error_share: float
    rate_limited_share: float
    timeout_share: float
    histogram: tuple[int, ...]
    """Requests finished in the window per latency bar (from schedule), HISTOGRAM_EDGES_MS + one."""
    client_cpu: float | None = None
    rate_held_s: float | None = None
    """Seconds the current target rate has been offered (its segment began, or `+`/`-` changed it); None: since
    the start of the run."""
    window_s: float = WINDOW_S

    @property
    def settled(self) -> bool:
        """True when the window's rates can be read against the target: a few seconds of answers are in and the
        window holds only the current rate (just after a change it still averages the rate before, so a run keeping
        up would look behind)."""
        held = self.elapsed_s if self.rate_held_s is None else self.rate_held_s
        return self.elapsed_s >= 5.0 and held >= min(self.window_s, self.elapsed_s) - 1e-9


def _pct(v: npt.NDArray[Any], p: float) -> float:
    return or_nan(percentiles(v, (p,))[0])


def snapshot(samples: Samples, *, now_s: float, total_s: float, segment: int, target_rate: float, in_flight: int,
             sent_rate: float, client_cpu: float | None = None, window_s: float = WINDOW_S,
             rate_held_s: float | None = None) -> LoadSnapshot:
    """Figures over the requests finished in the last `window_s` seconds (less at the start of the run)."""
    lo = now_s - window_s
    stop = len(samples.out_tokens)  # the column appended last: every other column is at least this long
    start = bisect.bisect_left(samples.finished, lo, 0, stop)
    span = max(1e-9, min(window_s, now_s))
    c = samples.columns(start, stop)
    outcome = c["outcome"]
    n = int(outcome.size)
    ok = outcome == OK
    lag = (c["sent"] - c["scheduled"]) * 1000.0
    lat, ttft = c["latency"], c["ttft"]
    sched_lat = (lat + lag)[ok]
    finite = sched_lat[np.isfinite(sched_lat)]
    hist = np.bincount(np.searchsorted(np.asarray(HISTOGRAM_EDGES_MS), finite), minlength=len(HISTOGRAM_EDGES_MS) + 1)
    return LoadSnapshot(
        elapsed_s=now_s, total_s=total_s, segment=segment, target_rate=target_rate, sent_rate=sent_rate,
        achieved_rate=float(ok.sum()) / span, in_flight=in_flight, done=len(samples),
        lag_p50_ms=_pct(lag, 50), lag_p99_ms=_pct(lag, 99),
        ttft_p50_ms=_pct(ttft[ok], 50), ttft_p99_ms=_pct(ttft[ok], 99),
        latency_p50_ms=_pct(lat[ok], 50), latency_p99_ms=_pct(lat[ok], 99),
        latency_sched_p99_ms=_pct(sched_lat, 99),
        error_share=float((~ok & (outcome != RATE_LIMITED) & (outcome != TIMEOUT)).sum()) / n if n else 0.0,
        rate_limited_share=float((outcome == RATE_LIMITED).sum()) / n if n else 0.0,
        timeout_share=float((outcome == TIMEOUT).sum()) / n if n else 0.0,
        histogram=tuple(int(x) for x in hist), client_cpu=client_cpu, rate_held_s=rate_held_s, window_s=window_s,
    )

"""The figures of a load run, from raw per-request samples: rates, percentiles, error shares, SLO goodput.

Percentiles are only ever computed from the raw samples (shards append theirs to one `Samples`), so a
merged figure is exact: never an average of per-shard percentiles. A sample costs 57 bytes in typed
arrays, so a 15-minute run at 1,200 requests/s (about a million requests) keeps ~60 MB.

Latency is given two ways: from *send* (when the request went out) and from *schedule* (when it was
due: what a user arriving then waited). The difference is the schedule lag: the client, its in-flight
cap or its event loop falling behind. Figures that hide it would be coordinated omission.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from arenatui.kernel.errors import ArenaError, ConfigError
from arenatui.kernel.events import RunStatus
from arenatui.kernel.units import plural
from arenatui.stats.percentiles import or_nan, percentile_interval
from arenatui.stats.percentiles import percentiles as stats_percentiles

OUTCOMES = ("ok", "rate_limited", "timeout", "transient", "terminal", "cancelled", "incomplete_stream")
OK, RATE_LIMITED, TIMEOUT, TRANSIENT, TERMINAL, CANCELLED, INCOMPLETE_STREAM = range(7)
PERCENTILES = (50.0, 90.0, 95.0, 99.0, 100.0)
LAG_WARN_MS = 50.0
"""p99 schedule lag above this: the client (its cap, its CPU), not the provider, set the pace."""
DROP_LATE_S = 1.0
"""A request the client reaches more than this late (its in-flight cap full, its CPU behind) is dropped unsent and
counted: held instead, a rate far past capacity queued without bound (23 GB at 100,000/s) and the run never ended."""
SATURATION_SHARE = 0.95
"""A segment whose achieved rate is below this share of its offered rate is past saturation."""

Floats = npt.NDArray[np.float64]


class LoadRequest(NamedTuple):
    """How one request of a load run ended: the row the store keeps. Times in seconds from the run's start."""

    seq: int
    """Index in the run's whole schedule (every shard numbers the same schedule)."""
    segment: int
    shard: int
    case_id: str
    warmup: bool
    scheduled_s: float
    sent_s: float
    finished_s: float
    outcome: int
    """Index into OUTCOMES."""
    ttft_ms: float | None
    """From send to the first token (streamed answers)."""
    latency_ms: float | None
    """From send to the last byte."""
    input_tokens: int
    output_tokens: int
    error_message: str | None


@dataclass(frozen=True, slots=True)
class Slo:
    """Every term a request must meet to count as goodput; times from schedule (what a user waited)."""

    ttft_ms: float | None = None
    latency_ms: float | None = None
    itl_ms: float | None = None

    def describe(self) -> str:
        terms = [f"{k}<={v:g}ms" for k, v in (("ttft", self.ttft_ms), ("latency", self.latency_ms),
                                               ("itl", self.itl_ms)) if v is not None]
        return ", ".join(terms) or "none"


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[-+]?\d+)?)\s*(ms|s)?\s*$", re.IGNORECASE)


def parse_seconds(value: str, *, where: str, default_unit: str = "s") -> float:
    """'500ms', '5s', '2.5' (default unit) -> seconds, finite and above zero."""
    m = _DURATION.match(value)
    if not m:
        raise ConfigError(where, None, f"a duration such as 500ms or 5s, got {value!r}")
    n = float(m.group(1)) * (1e-3 if (m.group(2) or default_unit).lower() == "ms" else 1.0)
    if not (math.isfinite(n) and n > 0):
        raise ConfigError(where, None, f"a duration above zero, got {value!r}")
    return n


MAX_DURATION_S = 7 * 24 * 3600.0
"""The longest --duration, --warmup or --start-in (a week, as a trace's offsets and the start barrier): 1e308 s
passed, then overflowed counting the requests it planned."""


def duration(value: str, flag: str, *, zero_ok: bool = False) -> float:
    """A duration flag's value in seconds: `90`, `90s`, `500ms`, `5m` (minutes); `0` alone when `zero_ok`."""
    v = value.strip().lower()
    if zero_ok and v in ("0", "0s", "0ms", "0.0"):
        return 0.0
    seconds = parse_seconds(v[:-1], where=flag) * 60.0 if v.endswith("m") and not v.endswith("ms") else \
        parse_seconds(v, where=flag)
    if seconds > MAX_DURATION_S:
        raise ArenaError(f"{flag}: expected a duration of at most 7 days (604800s), got {value!r}")
    return seconds


def parse_slo(value: str, *, where: str = "--slo") -> Slo:
    """`ttft=500ms,latency=5s,itl=50ms` (any subset, at least one term)."""
    terms: dict[str, float] = {}
    for part in value.split(","):
        if not part.strip():
            continue
        key, eq, raw = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in ("ttft", "latency", "itl"):
            raise ConfigError(where, None, f"terms ttft=, latency= or itl= with a duration (ttft=500ms,latency=5s), "
                                           f"got {part.strip()!r}")
        terms[key] = parse_seconds(raw, where=f"{where} {key}") * 1000.0
    if not terms:
        raise ConfigError(where, None, "at least one term, e.g. ttft=500ms,latency=5s")
    return Slo(terms.get("ttft"), terms.get("latency"), terms.get("itl"))


class Samples:
    """Raw per-request samples in typed arrays (append-only, in finish order); `extend` merges shards."""

    __slots__ = ("finished", "latency", "out_tokens", "outcome", "scheduled", "segment", "sent", "ttft", "warmup")

    def __init__(self) -> None:
        self.segment = array("i")
        self.warmup = array("b")
        self.outcome = array("b")
        self.scheduled = array("d")
        self.sent = array("d")
        self.finished = array("d")
        self.ttft = array("d")
        self.latency = array("d")
        self.out_tokens = array("i")

    def __len__(self) -> int:
        return len(self.segment)

    def add(self, r: LoadRequest) -> None:
        self.segment.append(r.segment)
        self.warmup.append(r.warmup)
        self.outcome.append(r.outcome)
        self.scheduled.append(r.scheduled_s)
        self.sent.append(r.sent_s)
        self.finished.append(r.finished_s)
        self.ttft.append(math.nan if r.ttft_ms is None else r.ttft_ms)
        self.latency.append(math.nan if r.latency_ms is None else r.latency_ms)
        self.out_tokens.append(r.output_tokens)

    def extend(self, other: Samples) -> None:
        for name in self.__slots__:
            getattr(self, name).extend(getattr(other, name))

    def columns(self, start: int = 0, stop: int | None = None) -> dict[str, npt.NDArray[Any]]:
        """Copies as numpy arrays of samples [start, stop) (default: all; `add` fills `out_tokens` last, so its
        length is a stop every column has reached even while another thread appends)."""
        stop = len(self.out_tokens) if stop is None else stop
        return {name: np.array(getattr(self, name)[start:stop]) for name in self.__slots__}


def percentiles(values: Floats) -> dict[float, float]:
    """p50/p90/p95/p99/max over the finite values (NaN for none)."""
    return {p: or_nan(q) for p, q in zip(PERCENTILES, stats_percentiles(values, PERCENTILES), strict=True)}


@dataclass(frozen=True, slots=True)
class Window:
    """A stretch of the run measured as one: a segment after its warmup."""

    segment: int
    rate: float
    """The offered rate asked for (requests/s); for a trace, its mean."""
    start_s: float
    end_s: float
    warmup_s: float = 0.0
    dropped: int = 0
    """Requests of this segment the client never sent: due more than DROP_LATE_S before it could send them (its
    in-flight cap full, or its own CPU behind). Counted, never held: memory stays bounded at any rate."""

    @property
    def measured_s(self) -> float:
        return max(0.0, self.end_s - self.start_s - self.warmup_s)


@dataclass(slots=True)
class Figures:
    """One segment's (or the whole run's) figures. Latency percentiles in ms, keyed by percentile."""

    segment: int | None
    target_rate: float
    measured_s: float
    requests: int
    offered_rate: float
    achieved_rate: float
    outcomes: dict[str, int]
    ttft_send: dict[float, float]
    ttft_schedule: dict[float, float]
    latency_send: dict[float, float]
    latency_schedule: dict[float, float]
    itl: dict[float, float]
    lag: dict[float, float]
    output_tokens_per_s: float
    goodput: int | None = None
    goodput_share: float | None = None
    dropped: int = 0
    """Requests due in these windows that the client dropped unsent (Window.dropped): part of the offered rate."""
    saturation_cause: str | None = None
    """On the saturation point (mark_saturation): what limited it, in words (see `saturation_cause`)."""
    goodput_rate: float | None = None
    saturated: bool = False
    warnings: list[str] = field(default_factory=list)
    answered: int = 0
    """Answered requests the latency percentiles are over (their n)."""
    p95_interval: tuple[float, float] = (math.nan, math.nan)
    """A distribution-free 95% interval for p95 latency from schedule (stats.percentiles.percentile_interval): NaN
    on a side too few answered requests leave unknown."""

    def share(self, outcome: str) -> float:
        return self.outcomes.get(outcome, 0) / self.requests if self.requests else 0.0

    @property
    def error_share(self) -> float:
        """Every outcome but ok, rate limits and timeouts (shown beside them)."""
        return (self.share("transient") + self.share("terminal") + self.share("cancelled")
                + self.share("incomplete_stream"))

    @property
    def lag_warning(self) -> bool:
        return self.lag[99.0] > LAG_WARN_MS


def compute(samples: Samples, windows: Sequence[Window], slo: Slo | None = None, *,
            segment: int | None = None) -> Figures:
    """Figures over the given windows together: requests *scheduled* in a window (after its warmup) for
    latencies, outcomes and goodput; ok answers to the segment's own requests *finished* in its window for
    the achieved rate. So a backlog that drains after the window is not credited to the segment, nor to
    the next one (whose window would otherwise count more answers than it was offered)."""
    c = samples.columns()
    sched, fin = c["scheduled"], c["finished"]
    in_sched = np.zeros(len(samples), dtype=bool)
    in_fin = np.zeros(len(samples), dtype=bool)
    measured = 0.0
    for w in windows:
        lo, hi = w.start_s + w.warmup_s, w.end_s
        measured += w.measured_s
        mine = c["segment"] == w.segment
        in_sched |= (sched >= lo) & (sched < hi) & mine
        in_fin |= (fin >= lo) & (fin < hi) & mine
    in_sched &= c["warmup"] == 0
    outcome = c["outcome"]
    ok = outcome == OK
    n = int(in_sched.sum())
    lag = (c["sent"] - sched) * 1000.0
    ttft, lat = c["ttft"], c["latency"]
    out_tok = c["out_tokens"].astype(np.float64)
    sel = in_sched & ok
    with np.errstate(invalid="ignore", divide="ignore"):
        itl = np.where(out_tok > 1, (lat - ttft) / (out_tok - 1), np.nan)
    counts = np.bincount(outcome[in_sched].astype(np.int64), minlength=len(OUTCOMES))
    dropped = sum(w.dropped for w in windows)
    fig = Figures(
        segment=segment,
        target_rate=(sum(w.rate * w.measured_s for w in windows) / measured) if measured else 0.0,
        measured_s=measured,
        requests=n,
        offered_rate=(n + dropped) / measured if measured else 0.0,
        achieved_rate=float((in_fin & ok).sum()) / measured if measured else 0.0,
        outcomes={name: int(counts[i]) for i, name in enumerate(OUTCOMES) if counts[i]},
        ttft_send=percentiles(ttft[sel]),
        ttft_schedule=percentiles((ttft + lag)[sel]),
        latency_send=percentiles(lat[sel]),
        latency_schedule=percentiles((lat + lag)[sel]),
        itl=percentiles(itl[sel]),
        lag=percentiles(lag[in_sched]),
        output_tokens_per_s=float(out_tok[in_fin & ok].sum()) / measured if measured else 0.0,
        dropped=dropped,
        answered=int(sel.sum()),
        p95_interval=percentile_interval((lat + lag)[sel], 95.0),
    )
    if slo is not None:
        good = sel.copy()
        if slo.ttft_ms is not None:
            good &= (ttft + lag) <= slo.ttft_ms  # NaN (no first token seen) never meets a ttft term
        if slo.latency_ms is not None:
            good &= (lat + lag) <= slo.latency_ms
        if slo.itl_ms is not None:
            good &= ~(itl > slo.itl_ms)  # a one-token answer has no inter-token gap to miss
        g = int(good.sum())
        fig.goodput = g
        fig.goodput_share = g / n if n else 0.0
        fig.goodput_rate = g / measured if measured else 0.0
    if dropped:
        fig.warnings.append(f"{plural(dropped, 'request')} ({dropped / (n + dropped):.1%} of those offered) "
                            f"{'was' if dropped == 1 else 'were'} dropped unsent: due more than {DROP_LATE_S:g} s "
                            "before the client could send them (its in-flight cap was full or its CPU behind): the "
                            "offered rate counts them, the percentiles cannot")
    if fig.lag_warning:
        fig.warnings.append(f"p99 schedule lag {fig.lag[99.0]:.0f} ms is above {LAG_WARN_MS:.0f} ms: the client "
                            "(its in-flight cap or its own CPU), not the provider, set the pace; read the "
                            "from-schedule latencies")
    return fig


def per_segment(samples: Samples, windows: Sequence[Window], slo: Slo | None = None) -> list[Figures]:
    """One Figures per segment, saturation marked: the first segment (by rate) whose achieved rate stops
    following its offered rate, and every faster one after it."""
    figs = [compute(samples, [w], slo, segment=w.segment) for w in windows]
    mark_saturation(figs)
    return figs


@dataclass(slots=True)
class LoadOutcome:
    """A load run's figures: the whole run's, each segment's, where it saturated, and what to warn about."""

    status: RunStatus
    run: Figures
    segments: list[Figures]
    saturation: Figures | None
    warnings: list[str]
    notes: list[str] = field(default_factory=list)
    """What a reader should know beside the figures (a merged run's worst start skew)."""


CAUSE_SHARE = 0.10
"""A kind of failure this common among a saturated segment's requests is named as what limited it."""


def saturation_cause(f: Figures) -> str:
    """What kept a segment's achieved rate below its offered rate, by the first that holds: the provider's rate limit
    (429s), failures (errors, cut streams), the client (it sent late or dropped requests), else the server's
    capacity (it answered what it got, no faster; its timeouts are that too)."""
    def words(name: str) -> str:
        return f"{f.share(name):.0%} of requests {name.replace('_', ' ')}"

    if f.share("rate_limited") >= CAUSE_SHARE:
        return f"429s: the provider's rate limit refused {f.share('rate_limited'):.0%} of requests"
    failing = [n for n in ("incomplete_stream", "transient", "terminal") if f.share(n) >= CAUSE_SHARE]
    if failing:
        return "errors: " + ", ".join(words(n) for n in failing) + " (a stream cut without its end marker is " \
            "incomplete_stream)" * ("incomplete_stream" in failing)
    if f.dropped or f.lag_warning:
        late = (f"{plural(f.dropped, 'request')} dropped unsent" if f.dropped
                else f"p99 schedule lag {f.lag[99.0]:.0f} ms")
        return f"the client: it could not send at the offered rate ({late}); raise --max-in-flight or --processes"
    timeouts = f", {f.share('timeout'):.0%} timed out" if f.share("timeout") else ""
    return f"capacity: the server answered {f.achieved_rate:.2f}/s of {f.offered_rate:.2f}/s offered{timeouts}"


def mark_saturation(figs: Iterable[Figures]) -> Figures | None:
    """Mark segments past saturation; return the first (the saturation point), None if the run never got there, with
    its limiting cause (`saturation_cause`)."""
    first: Figures | None = None
    for f in sorted(figs, key=lambda f: f.offered_rate):
        if f.requests and f.achieved_rate < SATURATION_SHARE * f.offered_rate:
            f.saturated = True
            if first is None:
                first = f
        elif first is not None:
            f.saturated = True  # faster than a saturated segment: past the point even if a lucky window kept up
    if first is not None:
        first.saturation_cause = saturation_cause(first)
    return first

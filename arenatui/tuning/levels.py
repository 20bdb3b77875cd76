"""Per-model level observations folded from engine events: what each concurrency level gave, with evidence.

A model's *level* is its concurrency: its cap when it has one (the tuner always sets one), else the mean
number of its calls in flight or backing off (both hold a worker) over the hold, rounded (round-robin
decides an uncapped model's share of the global limit, so the global figure would be the wrong label).
A *hold* is the time a model spends at one configured level; it is cut into *windows* once each has
enough evidence (at least `min_calls` attempts ended and `min_s` seconds, and at least `per_level`
attempts per unit of level, so a wide level is measured over several latencies). The start of a hold is
left out (`_settle`): calls started at the old level are still finishing, so counting them would credit
the new level with the old one's goodput.

Pure and synchronous like `live.py`: O(1) per event, no clock of its own (event times only), no UI imports.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from arenatui.engine.events import CallFinished, CallResult, CallRetrying, CallStarted, ConcurrencyChanged, Event

LATENCY_SAMPLES = 512
"""Most recent answered latencies kept per (model, level) for percentiles."""


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    from arenatui.live import percentile as _p  # one implementation of percentiles (live.py imports no UI)

    return _p(sorted_values, q)


def provider_answered(r: CallResult) -> bool:
    """Whether the provider answered the call: passed, failed or unscored (an llm_judge case not judged, or not
    yet), and also an answer only its scoring failed on (scoring_error, judge_error). A level's goodput is the
    provider's answers; what a scorer or a judge made of them says nothing about the concurrency."""
    return r.status != "errored" or r.error_class in ("scoring_error", "judge_error")


@dataclass(frozen=True, slots=True)
class Evidence:
    """How much a window (or a level) needs before its figures count."""

    min_calls: int = 8
    min_s: float = 0.5
    per_level: float = 3.0
    """Attempts ended per unit of level: a level of 8 needs 24, so it is measured over several latencies."""
    max_settle_s: float = 3.0

    def needed(self, level: int) -> int:
        return max(self.min_calls, math.ceil(self.per_level * level))


@dataclass(frozen=True, slots=True)
class Window:
    """One measured stretch at one level: what the controller decides on."""

    model_key: str
    level: int
    seconds: float
    answered: int
    """Calls that got an answer (passed or failed on score): the goodput's numerator."""
    attempts: int
    """Attempts that ended (answered, refused, failed)."""
    rate_limited: int
    transient: int
    """Transient failures and timeouts."""
    given_up: int
    """Calls that ended errored in the window."""
    mean_latency_s: float | None
    """Mean latency of the answered calls."""
    retry_after_s: float | None
    """The longest retry-after a provider asked for in the window."""
    t: float
    """When the window closed (monotonic seconds)."""
    quick: bool = False
    """Closed on its attempts alone (a climb's rough look), without `min_s` of evidence."""

    @property
    def goodput(self) -> float:
        return self.answered / self.seconds if self.seconds > 0 else 0.0

    @property
    def limited_share(self) -> float:
        return self.rate_limited / self.attempts if self.attempts else 0.0

    @property
    def transient_share(self) -> float:
        return self.transient / self.attempts if self.attempts else 0.0


@dataclass(slots=True)
class LevelStats:
    """Everything measured at one level of one model, over all its windows."""

    level: int
    seconds: float = 0.0
    answered: int = 0
    attempts: int = 0
    rate_limited: int = 0
    transient: int = 0
    retries: int = 0
    given_up: int = 0
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))

    def add(self, w: _Acc) -> None:
        self.seconds += w.seconds
        self.answered += w.answered
        self.attempts += w.attempts
        self.rate_limited += w.rate_limited
        self.transient += w.transient
        self.retries += w.retries
        self.given_up += w.given_up
        self.latencies.extend(w.latencies)


@dataclass(frozen=True, slots=True)
class LevelReadout:
    """One row of a model's readout: a level and what it gave."""

    level: int
    seconds: float
    answered: int
    goodput: float
    """Answered calls per second."""
    limited_share: float
    """429s per attempt."""
    transient_share: float
    retries_per_s: float
    given_up: int
    p50_ms: float | None
    p95_ms: float | None
    enough: bool
    """Held long enough for the figures to mean something; else 'not enough evidence yet'."""
    best: bool = False


@dataclass(frozen=True, slots=True)
class ModelReadout:
    model_key: str
    levels: tuple[LevelReadout, ...]
    best: int | None
    verdict: str


@dataclass(slots=True)
class _Acc:
    """The window being filled."""

    start: float
    seconds: float = 0.0
    answered: int = 0
    attempts: int = 0
    rate_limited: int = 0
    transient: int = 0
    retries: int = 0
    given_up: int = 0
    lat_sum: float = 0.0
    retry_after: float | None = None
    area: float = 0.0
    """Integral of calls in flight over the window (for an uncapped model's level)."""
    latencies: list[float] = field(default_factory=list)


@dataclass(slots=True)
class _Model:
    key: str
    cap: int | None = None
    in_flight: int = 0
    last_t: float | None = None
    hold_start: float | None = None
    settle_until: float = 0.0
    acc: _Acc | None = None
    latency_ewma: float | None = None
    ready_t: float | None = None
    """When the model's first attempt ended (answered or refused): before it, the run is still starting
    (processes, first connections) and nothing measured is typical."""
    retry_after: float | None = None
    """The longest retry-after of the last window: a provider's own word on how long its limit needs."""
    backoff: dict[tuple[str, int], float] = field(default_factory=dict)
    """Calls sleeping before a retry → when they wake (monotonic seconds)."""
    levels: dict[int, LevelStats] = field(default_factory=dict)
    quick: bool = False
    """Windows need only their attempts, not `min_s`: set while a tuner climbs far below any limit, where a
    rough figure is enough to take the next step."""


STORM_SHARE = 0.15
"""429s per attempt past which a window closes as soon as it has `min_calls` attempts."""
RETRY_AFTER_SETTLE_S = 10.0
"""Longest wait, after a level change, for a provider's retry-after to pass before measuring."""
FLAT = 0.05
"""Goodput within this share of the best counts as the same: the lowest such level is the optimum."""
ERROR_SHARE = 0.05
"""429 (or rising transient) share per attempt above which a level counts as past the limit."""


class LevelTracker:
    """Fold events into per-model, per-level figures; call `on_window` with each window as it closes."""

    def __init__(self, model_keys: Sequence[str], *, evidence: Evidence | None = None,
                 on_window: Callable[[Window], None] | None = None) -> None:
        self.evidence = evidence or Evidence()
        self.models = {k: _Model(k) for k in model_keys}
        self.target = 0
        self.on_window = on_window
        self.windows = 0

    # ---- folding -------------------------------------------------------------------------------

    def on_event(self, ev: Event) -> None:
        tp = type(ev)
        if tp is CallFinished:
            self._finished(ev)  # type: ignore[arg-type]
        elif tp is CallStarted:
            self._started(ev)  # type: ignore[arg-type]
        elif tp is CallRetrying:
            self._retrying(ev)  # type: ignore[arg-type]
        elif tp is ConcurrencyChanged:
            self._changed(ev)  # type: ignore[arg-type]

    def _started(self, ev: CallStarted) -> None:
        m = self.models.get(ev.model_key)
        if m is None:
            return
        self._advance(m, ev.t)
        m.in_flight += 1
        if m.backoff:
            m.backoff.pop((ev.case_id, ev.trial), None)

    def _level(self, m: _Model) -> int | None:
        """The configured level, or None when the model is uncapped (then measured from in-flight)."""
        if m.cap is None:
            return None
        return min(m.cap, self.target) if self.target else m.cap

    def _advance(self, m: _Model, t: float) -> _Acc | None:
        """Integrate in-flight up to t; start the window once the hold has settled. The window being filled."""
        if m.last_t is not None and m.acc is not None and t > m.last_t:
            # calls sleeping before a retry still hold their worker: they are part of the level the user set
            m.acc.area += (m.in_flight + len(m.backoff)) * (t - max(m.last_t, m.acc.start))
        m.last_t = t
        if m.hold_start is None:
            m.hold_start = t
            m.settle_until = t + self._settle(m, t)
        if m.acc is None and m.ready_t is not None and t >= m.settle_until:
            # The first event after the settling opens the window and is not counted in it: counting it would
            # put n events in n - 1 intervals (+6% on a window of 16 calls). Starting at settle_until instead
            # is no cure: a serial server's completions are periodic, and settle_until (a latency after a
            # change made at a completion) falls just before the next one.
            m.acc = _Acc(start=t)
            return None
        return m.acc

    def _settle(self, m: _Model, t: float) -> float:
        """Left out at the start of a hold: a latency (calls from the old level finishing), and, after 429s, as
        long as the provider asked to wait (its limit is still refilling from the storm) and until the calls
        sleeping before a retry wake (they hold the model's slots while they sleep, so the new level would
        be measured with fewer calls than it has)."""
        lat = min(self.evidence.max_settle_s, m.latency_ewma or 0.0)
        asked = m.retry_after or 0.0
        sleepers = max(m.backoff.values(), default=t) - t
        return max(lat, min(RETRY_AFTER_SETTLE_S, max(asked, sleepers)))

    def _finished(self, ev: CallFinished) -> None:
        r = ev.result
        m = self.models.get(r.model_key)
        if m is None:
            return
        acc = self._advance(m, ev.t)
        key = (r.case_id, r.trial)
        if key in m.backoff:
            del m.backoff[key]
        elif r.attempts > 0:
            m.in_flight -= 1
        if r.error_class == "cancelled":
            return
        if m.ready_t is None:
            m.ready_t = ev.t
        answered = provider_answered(r)
        if answered and r.latency_ms is not None:
            lat_s = r.latency_ms / 1000.0
            m.latency_ewma = lat_s if m.latency_ewma is None else 0.8 * m.latency_ewma + 0.2 * lat_s
        if acc is None:
            return
        acc.attempts += 1
        if answered:
            acc.answered += 1
            if r.latency_ms is not None:
                acc.lat_sum += r.latency_ms
                acc.latencies.append(r.latency_ms)
        else:
            acc.given_up += 1
            if r.error_class == "rate_limited":
                acc.rate_limited += 1
            elif r.error_class in ("transient", "timeout", "incomplete_stream"):
                acc.transient += 1
        self._maybe_close(m, ev.t)

    def _retrying(self, ev: CallRetrying) -> None:
        m = self.models.get(ev.model_key)
        if m is None:
            return
        acc = self._advance(m, ev.t)
        m.in_flight -= 1
        m.backoff[(ev.case_id, ev.trial)] = ev.t + ev.delay
        if m.ready_t is None:
            m.ready_t = ev.t
        if acc is None:
            return
        acc.attempts += 1
        acc.retries += 1
        if ev.reason == "rate_limited":
            acc.rate_limited += 1
            ra = getattr(ev, "retry_after", None)
            if ra is not None and (acc.retry_after is None or ra > acc.retry_after):
                acc.retry_after = ra
        elif ev.reason in ("transient", "timeout", "incomplete_stream"):
            acc.transient += 1
        self._maybe_close(m, ev.t)

    def _changed(self, ev: ConcurrencyChanged) -> None:
        # each hold ends under the level it was held at, so the new level is set only after
        if ev.model_key is None:
            for m in self.models.values():
                if m.cap is None or m.cap > min(ev.old, ev.new):
                    self._end_hold(m, ev.t)
            self.target = ev.new
            return
        model = self.models.get(ev.model_key)
        if model is not None:
            self._end_hold(model, ev.t)
            model.cap = ev.new or None

    def _end_hold(self, m: _Model, t: float) -> None:
        """The level changes: keep what the current window measured (too short or not) under its level."""
        acc = self._advance(m, t)
        if acc is not None:
            self._close(m, t, report=False)
        m.hold_start = t
        m.settle_until = t + self._settle(m, t)
        m.acc = None

    def _maybe_close(self, m: _Model, t: float) -> None:
        acc = m.acc
        assert acc is not None
        seconds = t - acc.start
        level = self._level(m) or max(1, round(acc.area / seconds)) if seconds > 0 else 1
        need = self.evidence.needed(level)
        if (acc.attempts >= need and seconds >= self.evidence.min_s) or (m.quick and acc.attempts >= 2 * need):
            self._close(m, t, report=True)
        elif acc.attempts >= self.evidence.min_calls and acc.rate_limited > STORM_SHARE * acc.attempts \
                and (acc.answered >= level or acc.attempts >= need):
            # a storm needs no more evidence: every further attempt at this level is another 429. A level's worth of
            # answers first (about one latency), else the goodput that sets the next level is a guess
            self._close(m, t, report=True)

    def _close(self, m: _Model, t: float, *, report: bool) -> None:
        acc = m.acc
        assert acc is not None
        acc.seconds = max(0.0, t - acc.start)
        m.acc = None
        m.retry_after = acc.retry_after
        if acc.seconds <= 0 or (acc.attempts == 0 and acc.seconds < self.evidence.min_s):
            if report:
                m.acc = _Acc(start=t)
            return
        level = self._level(m)
        if level is None:
            level = max(1, round(acc.area / acc.seconds))
        stats = m.levels.get(level)
        if stats is None:
            stats = m.levels[level] = LevelStats(level)
        stats.add(acc)
        if report:
            m.acc = _Acc(start=t)
            self.windows += 1
            if self.on_window is not None:
                self.on_window(Window(
                    m.key, level, acc.seconds, acc.answered, acc.attempts, acc.rate_limited, acc.transient,
                    acc.given_up, (acc.lat_sum / acc.answered / 1000.0) if acc.answered else None, acc.retry_after,
                    t, acc.seconds < self.evidence.min_s))

    # ---- reading -------------------------------------------------------------------------------

    def set_quick(self, model_key: str, quick: bool) -> None:
        m = self.models.get(model_key)
        if m is not None:
            m.quick = quick

    def readout(self, model_key: str) -> ModelReadout:
        return readout_of(model_key, list(self.models[model_key].levels.values()), self.evidence)

    def readouts(self) -> list[ModelReadout]:
        return [self.readout(k) for k in self.models]


def readout_of(model_key: str, stats: Sequence[LevelStats], evidence: Evidence) -> ModelReadout:
    """A model's levels as rows, the best marked, and the verdict in one line."""
    rows = []
    for s in sorted(stats, key=lambda s: s.level):
        lat = sorted(s.latencies)
        # a storm of 429s is evidence enough that a level is past the limit, however briefly it was held
        enough = (s.attempts >= evidence.needed(s.level) and s.seconds >= evidence.min_s) or (
            s.attempts >= evidence.min_calls and s.rate_limited > STORM_SHARE * s.attempts)
        rows.append(LevelReadout(
            s.level, s.seconds, s.answered, s.answered / s.seconds if s.seconds > 0 else 0.0,
            s.rate_limited / s.attempts if s.attempts else 0.0, s.transient / s.attempts if s.attempts else 0.0,
            s.retries / s.seconds if s.seconds > 0 else 0.0, s.given_up, percentile(lat, 0.5),
            percentile(lat, 0.95), enough))
    best = best_level(rows)
    rows = [dataclasses.replace(r, best=True) if r.level == best else r for r in rows]
    return ModelReadout(model_key, tuple(rows), best, verdict(rows, best))


def _errors(r: LevelReadout, base_transient: float) -> float:
    """The share of attempts a level loses to its own load: 429s, and transients above the quietest level's."""
    return r.limited_share + max(0.0, r.transient_share - base_transient)


def best_level(rows: Sequence[LevelReadout]) -> int | None:
    """The lowest level within FLAT of the highest goodput among levels with enough evidence and few errors."""
    good = [r for r in rows if r.enough]
    if not good:
        return None
    base = min(r.transient_share for r in good)
    clean = [r for r in good if _errors(r, base) <= ERROR_SHARE] or good
    top = max(r.goodput for r in clean)
    return min(r.level for r in clean if r.goodput >= top * (1 - FLAT))


def verdict(rows: Sequence[LevelReadout], best: int | None) -> str:
    """'optimum ≈ 5: goodput flat above 5, 429s from 6', 'still rising: try higher', or why nothing yet."""
    good = [r for r in rows if r.enough]
    if best is None:
        return "not enough evidence yet: hold a level longer" if rows else "no level held yet"
    base = min(r.transient_share for r in good)
    above = [r for r in good if r.level > best]
    first_limited = min((r.level for r in good if r.limited_share > ERROR_SHARE), default=None)
    first_transient = min((r.level for r in good if r.transient_share - base > ERROR_SHARE), default=None)
    if not above:
        return f"still rising at {best}: try higher"
    top = next(r for r in good if r.level == best).goodput
    parts = []
    clean_above = [r for r in above if _errors(r, base) <= ERROR_SHARE]
    if clean_above:
        parts.append(f"goodput {'flat' if all(r.goodput >= top * (1 - FLAT) for r in clean_above) else 'lower'} "
                     f"above {best}")
    if first_limited is not None:
        parts.append(f"429s from {first_limited}")
    if first_transient is not None:
        parts.append(f"errors from {first_transient}")
    if not parts:
        parts.append(f"nothing gained above {best}")
    return f"optimum ≈ {best}: " + ", ".join(parts)


def readout_rows(readouts: Mapping[str, ModelReadout]) -> list[tuple[object, ...]]:
    """Rows for the store's tuning_levels table (run id prepended by the caller)."""
    out: list[tuple[object, ...]] = []
    for key, ro in readouts.items():
        for r in ro.levels:
            out.append((key, r.level, r.seconds, r.answered, r.goodput, r.limited_share, r.transient_share,
                        r.retries_per_s, r.given_up, r.p50_ms, r.p95_ms, int(r.enough), int(r.best), ro.verdict))
    return out

"""Per-model level observations folded from engine events: what each concurrency level gave, with evidence.

A model's *level* is its concurrency: its cap when it has one (the tuner always sets one), else the number
of its calls in flight or backing off (both count against a cap) it spent most of the window at (round-robin
decides an uncapped model's share of the global limit, so the global figure would be the wrong label).
A *hold* is the time a model spends at one configured level; it is cut into *windows* once each has
enough evidence (at least `min_calls` attempts ended and `min_s` seconds, and at least `per_level`
attempts per unit of level, so a wide level is measured over several latencies). The start of a hold is
left out (`_settle`, `_drained`): calls started at the old level are still finishing, so counting them would credit
the new level with the old one's goodput and latencies; after a level lowered, until the model's calls fit it.

Pure and synchronous like `live.py`: O(1) per event, no clock of its own (event times only), no UI imports.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from typing import Protocol

from arenatui.kernel.events import (
    VARIANT_SEP,
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    ConcurrencyChanged,
    DeclaredLimits,
    Event,
    LimitsDeclared,
    StepFinished,
)
from arenatui.stats.percentiles import percentile
from arenatui.tuning.evidence import CLEAN_SHARE, LevelEvidence, Verdict, verdict
from arenatui.tuning.evidence import declared_level as declared_level  # where it was first defined

LATENCY_SAMPLES = 512
"""Most recent answered latencies kept per (model, level) for percentiles."""


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
    interrupted: int = 0
    """Of `transient`, streams cut with no finish reason: a server with one slot stops a stream when another
    request arrives (llama-cpp-python), so these are the level's own doing, like 429s, never background."""

    @property
    def interrupted_share(self) -> float:
        return self.interrupted / self.attempts if self.attempts else 0.0

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
    latency_n: int = 0
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))

    def add(self, w: _Acc) -> None:
        self.seconds += w.seconds
        self.answered += w.answered
        self.attempts += w.attempts
        self.rate_limited += w.rate_limited
        self.transient += w.transient
        self.retries += w.retries
        self.given_up += w.given_up
        self.latency_n += len(w.latencies)
        self.latencies.extend(w.latencies)

    def evidence(self) -> LevelEvidence:
        lat = sorted(self.latencies)
        return LevelEvidence(self.level, self.seconds, self.answered, self.attempts, self.rate_limited, self.transient,
                             self.retries, self.given_up, self.latency_n, percentile(lat, 50), percentile(lat, 95))


@dataclass(frozen=True, slots=True)
class ModelReadout:
    """A model's levels and its verdict (the recommendation inside it), as every view prints them."""

    model_key: str
    levels: tuple[LevelEvidence, ...]
    verdict: Verdict
    declared: DeclaredLimits | None = None
    """The rate limits the model's provider declared last in this run (LimitsDeclared), when it declared any."""

    @property
    def best(self) -> int | None:
        """The level the verdict names (marked '◀ best'), None when it names none."""
        return self.verdict.level if self.verdict.kind in ("optimum", "rising", "capped") else None


@dataclass(slots=True)
class _Acc:
    """The window being filled."""

    start: float
    seconds: float = 0.0
    answered: int = 0
    attempts: int = 0
    rate_limited: int = 0
    transient: int = 0
    interrupted: int = 0
    """Of `transient`, incomplete streams (Window.interrupted)."""
    retries: int = 0
    given_up: int = 0
    retry_after: float | None = None
    busy_s: list[float] = field(default_factory=lambda: [0.0] * 65)
    """Seconds at each count of calls in flight or backing off (an uncapped model's level is the usual one)."""
    usual: int = 1
    """The key of busy_s with the most seconds (ties: the higher count), kept as busy_s grows: an O(1) `_usual`."""
    usual_s: float = 0.0
    idle: float = 0.0
    """Time in the window with none of the model's calls in flight or backing off: not held (the queue ran dry,
    the run was paused), so not in the goodput's interval."""
    latencies: list[float] = field(default_factory=list)


class Counts(Protocol):
    """What the engine counts of one model's calls (engine.lanes.Lane), read by the tracker instead of folding every
    CallStarted: its calls in flight and backing off now, and how long it has had none of either."""

    @property
    def in_flight(self) -> int: ...

    @property
    def parked(self) -> Sized: ...

    @property
    def idle_s(self) -> float:
        """Seconds with no call in flight or backing off, up to `idle_from`."""
        ...

    @property
    def idle_from(self) -> float:
        """Since when the model has had none (monotonic seconds), 0.0 while it has some."""
        ...

    @property
    def attempt_t(self) -> float:
        """When the attempt whose end the event being folded reports began (monotonic seconds)."""
        ...


@dataclass(slots=True)
class _Model:
    key: str
    cap: int | None = None
    counts: Counts | None = None
    """The engine's counts of this model's calls, when the tracker reads them (`read_counts`): then a CallStarted
    only records the hold its attempt was sent in, and the level is sampled from the counts at each event folded."""
    idle_seen: float = 0.0
    """The counts' idle seconds at the last event folded."""
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
    backoff: dict[tuple[str, str, int], float] = field(default_factory=dict)
    """Calls sleeping before a retry → when they wake (monotonic seconds)."""
    levels: dict[int, LevelStats] = field(default_factory=dict)
    quick: bool = False
    """Windows need only their attempts, not `min_s`: set while a tuner climbs far below any limit, where a
    rough figure is enough to take the next step."""
    hold: int = 0
    """Which hold this is (counts level changes)."""
    sent: dict[tuple[str, str, int], int] = field(default_factory=dict)
    """Attempts in flight → the hold they were sent in."""
    debt: set[tuple[str, str, int]] = field(default_factory=set)
    """Calls refused under an earlier hold and not ended yet: a provider still counts that storm against its limit,
    so their refusals now are the old level's debt, not evidence against this one."""
    declared: DeclaredLimits | None = None
    """The rate limits its provider declared last (LimitsDeclared): a prior, never evidence."""
    lanes: list[str] = field(default_factory=list)
    """Its lanes: the model, or each of its prompt variants (they share its provider, and so its figures)."""
    lane_counts: dict[str, Counts] = field(default_factory=dict)
    """Each lane's own counts, where the model has several (`counts` is then their sum)."""


class _JointCounts:
    """A model's lanes (its prompt variants) counted as one model: calls in flight and backing off summed; idle while
    every lane is, for as long as the least idle of them (exact when the variants run side by side, as the scheduler
    interleaves them: idle together at a pause and at the run's end)."""

    __slots__ = ("lanes",)

    def __init__(self, lanes: Sequence[Counts]) -> None:
        self.lanes = tuple(lanes)

    # Read at every event of the model's calls: plain loops, no generator per read (a model with prompt variants
    # paid ~3 µs a call for them)

    @property
    def in_flight(self) -> int:
        n = 0
        for c in self.lanes:
            n += c.in_flight
        return n

    @property
    def parked(self) -> Sized:
        n = 0
        for c in self.lanes:
            n += len(c.parked)
        return range(n)

    @property
    def idle_s(self) -> float:
        least = math.inf
        for c in self.lanes:
            if c.idle_s < least:
                least = c.idle_s
        return least

    @property
    def idle_from(self) -> float:
        latest = 0.0
        for c in self.lanes:
            f = c.idle_from
            if not f:
                return 0.0  # a lane has calls: the model is not idle
            if f > latest:
                latest = f
        return latest

    @property
    def attempt_t(self) -> float:
        return max(c.attempt_t for c in self.lanes)


def _usual(acc: _Acc) -> int:
    """An uncapped model's level over a window: the count of its calls in flight (or backing off) it spent the most
    time at. Not the mean: after the global limit rises, the mean of a window straddling the climb (3 for a while,
    then 4) is labelled 3 and credits 3 with 4's 429s."""
    return acc.usual  # the argmax of busy_s by (seconds, count), kept up to date in LevelTracker._advance


STORM_SHARE = 0.15
"""429s per attempt past which a window closes as soon as it has `min_calls` attempts."""
RETRY_AFTER_SETTLE_S = 10.0
"""Longest wait, after a level change, for a provider's retry-after to pass before measuring."""
ERROR_SHARE = CLEAN_SHARE
"""429 (or rising transient) share per attempt above which a window counts as past the limit (the tuner's rule,
the same bound as the verdict's)."""



_SCORING_ONLY = ("scoring_error", "judge_error")
_TRANSIENT = ("transient", "timeout", "incomplete_stream")


class LevelTracker:
    """Fold events into per-model, per-level figures; call `on_window` with each window as it closes."""

    def __init__(self, model_keys: Sequence[str], *, evidence: Evidence | None = None,
                 on_window: Callable[[Window], None] | None = None) -> None:
        self.evidence = evidence or Evidence()
        by_model: dict[str, _Model] = {}
        self.models: dict[str, _Model] = {}
        """By lane key and by model key alike: a model's prompt variants (lanes `model · variant`) fold into one
        model's figures, as they share its provider and the auto-tuner gives them one level."""
        for k in model_keys:
            m = by_model.get(base := k.partition(VARIANT_SEP)[0])
            if m is None:
                m = by_model[base] = _Model(base)
            m.lanes.append(k)
            self.models[k] = m
        for base, m in by_model.items():
            self.models.setdefault(base, m)
        self._unique = list(by_model.values())
        self.target = 0
        self.on_window = on_window
        self.windows = 0
        self.watch: Callable[[Event], None] | None = None
        """Called with each event after it is folded (the auto-tuner while it is on): one sink, not two, on the
        engine's path when it is off."""
        self._min_calls = self.evidence.min_calls
        self._min_s = self.evidence.min_s
        self._needed: dict[int, int] = {}

    # ---- folding -------------------------------------------------------------------------------

    def on_event(self, ev: Event) -> None:
        # The engine's sink, twice per call: the common events are folded inline (a call per event saved is
        # about 2% of the engine's own cost per call at zero latency; benchmarks/engine_overhead.py).
        tp = type(ev)
        if tp is CallFinished:
            self._finished(ev)  # type: ignore[arg-type]
        elif tp is CallStarted:
            st: CallStarted = ev  # type: ignore[assignment]  # narrowed by the type test (no cast(): a call)
            m = self.models.get(st.model_key)
            if m is not None and m.counts is None:  # with the engine's counts to read, a start is not folded
                self._advance(m, st.t)
                m.in_flight += 1
                key = (st.model_key, st.case_id, st.trial)  # the lane too: a model's variants share its figures
                m.sent[key] = m.hold
                if m.backoff:
                    m.backoff.pop(key, None)
        elif tp is CallRetrying:
            self._retrying(ev)  # type: ignore[arg-type]
        elif tp is ConcurrencyChanged:
            self._changed(ev)  # type: ignore[arg-type]
        elif tp is StepFinished:  # an answer followed by a repair turn or an escalation: its attempt ended
            sf: StepFinished = ev  # type: ignore[assignment]
            m = self.models.get(sf.result.model_key)  # (a call's last step comes in its CallFinished)
            if m is not None and m.counts is None:
                self._advance(m, sf.t)
                m.in_flight -= 1
        elif tp is LimitsDeclared:  # rare: a stated limit changed, or a second passed
            ld: LimitsDeclared = ev  # type: ignore[assignment]
            for lane, lm in self.models.items():
                if lane == ld.model_key or lane.startswith(ld.model_key + VARIANT_SEP):
                    lm.declared = ld.limits
        if self.watch is not None:
            self.watch(ev)

    def _level(self, m: _Model) -> int | None:
        """The configured level, or None when the model is uncapped (then measured from in-flight)."""
        if m.cap is None:
            return None
        return min(m.cap, self.target) if self.target else m.cap

    def _advance(self, m: _Model, t: float) -> _Acc | None:
        """Integrate in-flight up to t; start the window once the hold has settled. The window being filled."""
        acc = m.acc
        last = m.last_t
        m.last_t = t
        c = m.counts
        gap = 0.0
        if c is not None and (c.idle_from or c.idle_s != m.idle_seen):
            # the engine's counts: the seconds it had no call since the last event are not held
            idle = c.idle_s + (t - c.idle_from if c.idle_from else 0.0)
            gap = idle - m.idle_seen
            m.idle_seen = idle
        if acc is not None:  # the usual case: a window open (so the hold has begun)
            if last is not None and t > last:
                dt = t - (last if last > acc.start else acc.start)
                if c is None:
                    # calls sleeping before a retry still hold their worker: they are part of the level the user set
                    busy = m.in_flight + len(m.backoff) if m.backoff else m.in_flight
                else:  # sampled at the event: the calls in flight (this one still among them) and backing off
                    busy = c.in_flight + len(c.parked)
                    acc.idle += gap
                    dt = dt - gap if dt > gap else 0.0
                if busy > 0:  # (inline in _finished too, for its usual case: change both)
                    busy_s = acc.busy_s
                    if busy >= len(busy_s):  # indexed by count (a list: cheaper than a dict, twice per call)
                        busy_s.extend([0.0] * (busy + 1 - len(busy_s)))
                    held = busy_s[busy] = busy_s[busy] + dt
                    if held > acc.usual_s or (held == acc.usual_s and busy > acc.usual):
                        acc.usual, acc.usual_s = busy, held
                else:
                    acc.idle += dt
            return acc
        if m.hold_start is None:
            m.hold_start = t
            m.settle_until = t + self._settle(m, t)
        if m.ready_t is not None and t >= m.settle_until and self._drained(m):
            # The first event after the settling opens the window and is not counted in it: counting it would
            # put n events in n - 1 intervals (+6% on a window of 16 calls). Starting at settle_until instead
            # is no cure: a serial server's completions are periodic, and settle_until (a latency after a
            # change made at a completion) falls just before the next one.
            m.acc = _Acc(start=t)
        return None

    def _drained(self, m: _Model) -> bool:
        """Whether the model's calls now fit its level: after a level lowered, the calls started at the old one
        (more than the new level) still finish for as long as they take (a server that queues them serves them one
        after another: 32 of them at 0.5 s each is 16 s, far past a latency of settling), and their latencies and
        answers are the old level's. Sampled at an event that ends an attempt, so that attempt is still counted."""
        level = self._level(m)
        if level is None:
            return True
        c = m.counts
        busy = c.in_flight + len(c.parked) if c is not None else m.in_flight + len(m.backoff)
        return busy <= level

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
        t, acc, c, last = ev.t, m.acc, m.counts, m.last_t
        if acc is not None and c is not None and last is not None and t > last and not c.idle_from \
                and c.idle_s == m.idle_seen:
            # _advance's usual case inline (a call less per call, ~1k of the engine's instructions): a window open,
            # the engine's counts read, no idle time since the last event
            m.last_t = t
            dt = t - (last if last > acc.start else acc.start)
            busy = c.in_flight + len(c.parked)
            if busy > 0:
                busy_s = acc.busy_s
                if busy >= len(busy_s):
                    busy_s.extend([0.0] * (busy + 1 - len(busy_s)))
                held = busy_s[busy] = busy_s[busy] + dt
                if held > acc.usual_s or (held == acc.usual_s and busy > acc.usual):
                    acc.usual, acc.usual_s = busy, held
            else:
                acc.idle += dt
        else:
            acc = self._advance(m, t)
        err = r.error_class
        earlier = False
        if m.counts is None or m.backoff or m.debt or err == "rate_limited":  # else nothing to settle: the hot path
            key = (r.model_key, r.case_id, r.trial)
            if m.backoff and key in m.backoff:
                del m.backoff[key]
            elif r.attempts > 0:
                m.in_flight -= 1
            earlier = self._earlier(m, key)
            if m.debt:
                earlier = key in m.debt or earlier
                m.debt.discard(key)
        if err == "cancelled":
            return
        if m.ready_t is None:
            m.ready_t = ev.t
        answered = r.status != "errored" or err in _SCORING_ONLY  # provider_answered(r), inline: the hot path
        lat = r.latency_ms
        if answered and lat is not None:
            lat_s = lat / 1000.0
            m.latency_ewma = lat_s if m.latency_ewma is None else 0.8 * m.latency_ewma + 0.2 * lat_s
        if acc is None:
            return
        acc.attempts += 1
        if answered:
            acc.answered += 1
            if lat is not None:
                acc.latencies.append(lat)
        else:
            if err == "rate_limited" and earlier:
                acc.attempts -= 1  # the debt of an earlier hold (see _Model.debt): not this level's evidence
                return
            acc.given_up += 1
            if err == "rate_limited":
                acc.rate_limited += 1
            elif err in _TRANSIENT:
                acc.transient += 1
                if err == "incomplete_stream":
                    acc.interrupted += 1
        # both ways of closing need min_calls attempts, and either min_s held, 429s or a quick climb (_maybe_close):
        # tested here, as most calls close nothing (a call per call saved: benchmarks/engine_overhead.py)
        if acc.attempts >= self._min_calls and (acc.rate_limited or m.quick
                                                or ev.t - acc.start - acc.idle >= self._min_s):
            self._maybe_close(m, ev.t)

    @staticmethod
    def _earlier(m: _Model, key: tuple[str, str, int]) -> bool:
        """Whether the attempt of call `key` (lane, case, trial) that just ended was sent in an earlier hold than this
        one."""
        c = m.counts
        if c is None:
            return m.sent.pop(key, m.hold) != m.hold
        lane = m.lane_counts.get(key[0], c) if m.lane_counts else c  # the lane that reported it (a variant's)
        return m.hold > 0 and m.hold_start is not None and lane.attempt_t < m.hold_start

    def _retrying(self, ev: CallRetrying) -> None:
        m = self.models.get(ev.model_key)
        if m is None:
            return
        acc = self._advance(m, ev.t)
        m.in_flight -= 1
        key = (ev.model_key, ev.case_id, ev.trial)
        m.backoff[key] = ev.t + ev.delay
        if m.ready_t is None:
            m.ready_t = ev.t
        earlier = self._earlier(m, key) or key in m.debt
        if earlier and ev.reason == "rate_limited":
            m.debt.add(key)  # refused again: still the earlier hold's debt
            return
        if acc is None:
            return
        acc.attempts += 1
        acc.retries += 1
        if ev.reason == "rate_limited":
            acc.rate_limited += 1
            ra = getattr(ev, "retry_after", None)
            if ra is not None and (acc.retry_after is None or ra > acc.retry_after):
                acc.retry_after = ra
        elif ev.reason in _TRANSIENT:
            acc.transient += 1
            if ev.reason == "incomplete_stream":
                acc.interrupted += 1
        if acc.attempts >= self._min_calls:
            self._maybe_close(m, ev.t)

    def _changed(self, ev: ConcurrencyChanged) -> None:
        # each hold ends under the level it was held at, so the new level is set only after
        if ev.model_key is None:
            for m in self._unique:
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
        m.hold += 1
        m.debt = set(m.backoff)  # sleeping after a refusal at the level just left

    def _maybe_close(self, m: _Model, t: float) -> None:
        """Close the window when it has the evidence (called once it has min_calls attempts: needed() is at least
        min_calls)."""
        acc = m.acc
        assert acc is not None
        seconds = t - acc.start - acc.idle
        if seconds > 0:
            cap = m.cap
            level = (min(cap, self.target) if self.target else cap) if cap is not None else acc.usual  # _level, _usual
        else:
            level = 1
        need = self._needed.get(level)
        if need is None:
            need = self._needed[level] = self.evidence.needed(level)
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
        acc.seconds = max(0.0, t - acc.start - acc.idle)
        m.acc = None
        m.retry_after = acc.retry_after
        if acc.seconds <= 0 or (acc.attempts == 0 and acc.seconds < self.evidence.min_s):
            if report:
                m.acc = _Acc(start=t)
            return
        level = self._level(m)
        if level is None:
            level = _usual(acc)
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
                    acc.given_up, (sum(acc.latencies) / acc.answered / 1000.0) if acc.answered else None,
                    acc.retry_after, t, acc.seconds < self.evidence.min_s, acc.interrupted))

    def read_counts(self, counts: Mapping[str, Counts]) -> None:
        """Read each model's in-flight level and idle time from the engine's counts (`Runner.lanes`) instead of
        folding every CallStarted: a call less and no integration per start (benchmarks/engine_against.py)."""
        for m in self._unique:
            mine = [counts[lane] for lane in m.lanes if lane in counts]
            m.lane_counts = {lane: counts[lane] for lane in m.lanes if lane in counts} if len(mine) > 1 else {}
            m.counts = mine[0] if len(mine) == 1 else _JointCounts(mine) if mine else None

    # ---- reading -------------------------------------------------------------------------------

    def forget(self, model_key: str) -> None:
        """Drop a model's levels (its provider's limit changed: they describe a limit that is gone)."""
        m = self.models.get(model_key)
        if m is not None:
            m.levels.clear()

    def set_quick(self, model_key: str, quick: bool) -> None:
        m = self.models.get(model_key)
        if m is not None:
            m.quick = quick

    def readout(self, model_key: str, cap: int | None = None) -> ModelReadout:
        m = self.models[model_key]
        return readout_of(m.key, [s.evidence() for s in m.levels.values()], cap,
                          shared=cap is None and len(self._unique) > 1, declared=m.declared)

    def declared(self, model_key: str) -> DeclaredLimits | None:
        """The rate limits the model's provider declared last, None when it declared none."""
        m = self.models.get(model_key)
        return None if m is None else m.declared

    def readouts(self, caps: Mapping[str, int | None] | None = None) -> list[ModelReadout]:
        """Each model's (a model's prompt variants are one)."""
        return [self.readout(m.key, (caps or {}).get(m.key)) for m in self._unique]


def readout_of(model_key: str, levels: Sequence[LevelEvidence], cap: int | None = None, *,
               shared: bool = False, declared: DeclaredLimits | None = None) -> ModelReadout:
    """A model's levels in order and its one verdict (`shared`: uncapped beside other models, so its levels were the
    share of the global slots it was given; `declared`: the rate limits its provider stated)."""
    rows = tuple(sorted(levels, key=lambda r: r.level))
    return ModelReadout(model_key, rows, verdict(rows, cap, shared=shared, declared=declared), declared)


def stored_evidence(row: Sequence[object]) -> tuple[str, LevelEvidence, int | None]:
    """One stored tuning_levels row (as `Store.tuning_levels` reads it) → (model key, evidence, cap). Rows stored
    before the counts were (schema < 14) have them estimated from the stored shares: attempts = answered / (1 -
    429 share - transient share); a level with nothing answered then proves nothing (its attempts are unknown)."""
    key, level, seconds, answered, _g, limited, transient_share, retries_s, given_up, p50, p95 = row[:11]
    attempts, rate_limited, transient, retries, latencies, cap = (tuple(row[14:20]) + (None,) * 6)[:6]
    n = int(answered)  # type: ignore[call-overload]
    held = float(seconds)  # type: ignore[arg-type]
    if attempts is None:
        lim, tr = float(limited), float(transient_share)  # type: ignore[arg-type]
        attempts = round(n / (1 - lim - tr)) if n and lim + tr < 1 else 0
        rate_limited, transient = round(lim * attempts), round(tr * attempts)
        retries, latencies = round(float(retries_s) * held), n  # type: ignore[arg-type]
    ev = LevelEvidence(int(level), held, n, int(attempts), int(rate_limited), int(transient),  # type: ignore[call-overload]
                       int(retries), int(given_up), int(latencies),  # type: ignore[call-overload]
                       None if p50 is None else float(p50), None if p95 is None else float(p95))  # type: ignore[arg-type]
    return str(key), ev, None if cap is None else int(cap)  # type: ignore[call-overload]


def readouts_from_rows(rows: Sequence[Sequence[object]], declared: Mapping[str, DeclaredLimits] | None = None
                       ) -> list[ModelReadout]:
    """Stored tuning_levels rows → each model's readout, its verdict re-derived by today's rules (with the rate limits
    each model's provider declared in the run, `declared`, as the live verdict had them)."""
    said = declared or {}
    by_model: dict[str, list[LevelEvidence]] = {}
    caps: dict[str, int | None] = {}
    for r in rows:
        key, ev, cap = stored_evidence(r)
        by_model.setdefault(key, []).append(ev)
        caps[key] = cap
    return [readout_of(key, evs, caps[key], shared=caps[key] is None and len(by_model) > 1,
                       declared=said.get(key) or said.get(key.partition(VARIANT_SEP)[0]))
            for key, evs in by_model.items()]


def readout_rows(readouts: Mapping[str, ModelReadout], caps: Mapping[str, int | None] | None = None
                 ) -> list[tuple[object, ...]]:
    """Rows for the store's tuning_levels table (run id prepended by the caller): the counts the verdict is
    derived from, so a stored run's verdict is re-derived by the rules of the day when it is read."""
    out: list[tuple[object, ...]] = []
    for key, ro in readouts.items():
        cap = (caps or {}).get(key)
        for r in ro.levels:
            out.append((key, r.level, r.held_s, r.answered, r.goodput or 0.0, r.limited_share or 0.0,
                        r.transient_share or 0.0, r.retries_per_s or 0.0, r.given_up, r.p50_ms, r.p95_ms,
                        int(r.measured), int(r.level == ro.best), ro.verdict.text, r.attempts, r.rate_limited,
                        r.transient, r.retries, r.latencies, cap))
    return out

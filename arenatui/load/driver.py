"""The open-loop driver: requests fire at their scheduled times whatever happened to earlier ones.

One dispatcher task walks the schedule (arrivals.py, generated lazily) and starts one task per request when it is
due; an in-flight cap (`--max-in-flight`, DEFAULT_MAX_IN_FLIGHT when not given) makes the dispatcher wait, and
that wait is measured (the schedule lag), never hidden. A request the dispatcher reaches more than DROP_LATE_S
late (counted from when the dispatcher began, for a process that started after its schedule's zero) is dropped
unsent and counted in its segment (Window.dropped): so requests in flight and waiting are bounded
whatever the rate (100,000/s against a server that serves 100/s keeps at most the cap in flight and nothing
queued), and the run ends on time. The dispatcher yields to the event loop every DISPATCH_BATCH requests even
when behind, so the requests it started run and Ctrl-C lands within a second. A load run does not retry: a 429
or a timeout is a result of the offered load.

Segments: `--rates` / `--rate-sweep` plan one segment per rate back to back; a rate change mid-run
(`+`/`-` in the console) ends the current segment at that moment and starts a new one at the new
rate until the planned segment's end. Every shard of a sharded run walks the same schedule (same seed,
same segments) and sends only the requests whose schedule index falls to it.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import anyio

from arenatui.config.schema import Case, Defaults, ModelConfig
from arenatui.kernel.errors import IncompleteStream, ProviderError, RateLimited, TerminalError
from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.load.arrivals import Arrival, TraceRow, arrival_times, segment_rng
from arenatui.load.metrics import (
    CANCELLED,
    DROP_LATE_S,
    INCOMPLETE_STREAM,
    OK,
    RATE_LIMITED,
    TERMINAL,
    TIMEOUT,
    TRANSIENT,
    LoadRequest,
    Window,
)
from arenatui.providers.base import Provider, Request, build_messages

MESSAGE_LIMIT = 2000
DEFAULT_MAX_IN_FLIGHT = MAX_CONCURRENCY
"""Requests in flight at once when `--max-in-flight` is not given: the bound on a load run's memory (each costs a
task and a connection's buffers: about 20 KB, see benchmarks/load_rates.py)."""
DISPATCH_BATCH = 64
"""Requests the dispatcher starts (or drops) between checkpoints when it is behind schedule."""
DROP_BATCH = 4096
"""Late requests counted (and a checkpoint taken) at once while the dispatcher skips through a backlog."""
DROPS_REPORTED_EVERY_S = 0.5
"""How often a segment's growing drop count is handed on (stored), besides at the segment's end."""


@dataclass(frozen=True, slots=True)
class LoadPlan:
    """What a load run offers: everything a shard needs to walk the same schedule as every other."""

    model: ModelConfig
    cases: tuple[Case, ...]
    defaults: Defaults
    arrival: Arrival
    rates: tuple[float, ...]
    """One planned segment per rate (a trace has one segment at its mean rate)."""
    duration_s: float
    """Each planned segment's length."""
    warmup_s: float = 0.0
    """At the start of every segment: requests due then are sent and stored but left out of the figures."""
    max_in_flight: int | None = None
    timeout_s: float = 60.0
    seed: int = 0

    @property
    def total_s(self) -> float:
        return self.duration_s * len(self.rates)

    def planned_requests(self) -> int:
        if self.arrival.kind == "trace":
            return self.arrival.planned_trace_requests
        return int(sum(math.ceil(r * self.duration_s) for r in self.rates))


@dataclass(frozen=True, slots=True)
class SegmentStarted:
    """A segment began (or, the same index again, was cut short by a rate change: its end moved)."""

    window: Window
    source: str
    """'plan' or 'user'."""


class OpenLoopDriver:
    """Runs one plan (or one shard of it) against one provider. `change_rate` steers it; `cancel` stops it."""

    def __init__(self, plan: LoadPlan, provider: Provider, *, on_request: Callable[[LoadRequest], None],
                 on_segment: Callable[[SegmentStarted], None] = lambda s: None, shard: int = 0, shards: int = 1,
                 t0: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.plan = plan
        self.provider = provider
        self.on_request = on_request
        self.on_segment = on_segment
        self.shard, self.shards = shard, shards
        self.t0 = t0
        self._clock = clock
        self._own_timeout = bool(getattr(provider, "enforces_timeout", False))
        m = plan.model
        self._max_tokens = m.max_tokens or plan.defaults.max_tokens
        self._temperature = m.temperature if m.temperature is not None else plan.defaults.temperature
        self._messages = {c.id: build_messages(m, plan.defaults, c) for c in plan.cases}
        self._cases = {c.id: c for c in plan.cases}
        # Cases are drawn in a seeded shuffled order that every segment starts afresh: in file order, a sorted file
        # gave each segment its own slice of it (with --rates 1,2 the 1/s segment saw only the cap-* cases).
        self._order = list(plan.cases)
        random.Random(plan.seed).shuffle(self._order)
        self._limiter = anyio.CapacityLimiter(plan.max_in_flight or DEFAULT_MAX_IN_FLIGHT)
        self._source = "plan"
        self._drops_told_at = 0.0
        self._pending: tuple[float, float] | None = None
        self._wake = anyio.Event()
        self.windows: list[Window] = []
        self.rate = plan.rates[0] if plan.rates else 0.0
        self.in_flight = 0
        self.sent = 0
        self.dropped = 0
        """Requests dropped unsent over the whole run (each segment's are in its window)."""
        self.cancelled = False
        self._scope: anyio.CancelScope | None = None

    # ---- control ---------------------------------------------------------------------------------

    def now_s(self) -> float:
        """Seconds since the run's start (its schedule's zero)."""
        return self._clock() - self.t0 if self.t0 is not None else 0.0

    def change_rate(self, rate: float, at_s: float | None = None) -> None:
        """From `at_s` (default: now) offer `rate` until the current planned segment ends."""
        if self.plan.arrival.kind == "trace":
            raise ValueError("a trace sets its own times; its rate cannot be changed")
        self._pending = (self.now_s() if at_s is None else at_s, float(rate))
        self._wake.set()

    def cancel(self) -> None:
        self.cancelled = True
        if self._scope is not None:
            self._scope.cancel()

    # ---- running ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Walk the whole schedule, then wait for every request in flight."""
        if self.t0 is None:
            self.t0 = self._clock()
        with anyio.CancelScope() as scope:
            self._scope = scope
            async with anyio.create_task_group() as tg:
                await self._dispatch(tg)
        if self.cancelled and self.windows and self.now_s() < self.windows[-1].end_s:
            self._cut(self.now_s())  # a stopped segment was offered load until the stop, not its planned end
        elif self.windows:
            self._tell_drops(force=True)

    def _begin(self, segment: int, rate: float, start: float, end: float, source: str) -> None:
        if self.windows:
            self._tell_drops(force=True)
        self.rate = rate
        w = Window(segment, rate, start, end, self.plan.warmup_s)
        self.windows.append(w)
        self._source = source
        self.on_segment(SegmentStarted(w, source))

    def _cut(self, at: float) -> None:
        w = self.windows[-1]
        w = Window(w.segment, w.rate, w.start_s, max(w.start_s, at), w.warmup_s, w.dropped)
        self.windows[-1] = w
        self._source = "cut"
        self.on_segment(SegmentStarted(w, "cut"))

    def _drop(self, n: int) -> int:
        """`n` requests due were too late to send: count them in their segment's window. Returns 0 (the count
        of drops left to add)."""
        self.dropped += n
        w = self.windows[-1]
        self.windows[-1] = Window(w.segment, w.rate, w.start_s, w.end_s, w.warmup_s, w.dropped + n)
        self._tell_drops()
        return 0

    def _tell_drops(self, *, force: bool = False) -> None:
        """Hand the current segment's drop count on (to be stored) now and then, and always at its end."""
        now = self._clock()
        w = self.windows[-1]
        if w.dropped and (force or now - self._drops_told_at >= DROPS_REPORTED_EVERY_S):
            self._drops_told_at = now
            self.on_segment(SegmentStarted(w, self._source))

    async def _dispatch(self, tg: anyio.abc.TaskGroup) -> None:
        plan = self.plan
        # Lateness that drops a request counts from when this dispatcher began, if that was after the request's due
        # time: a machine that reached a start barrier late sends the backlog (its lag shows it) instead of dropping
        # it; only falling further behind once running drops.
        began = self.now_s()
        seq = 0
        segment = 0
        trace = plan.arrival.kind == "trace"
        if trace:
            end = plan.arrival.trace_duration_s + 1e-9
            n_trace = plan.arrival.planned_trace_requests
            rate = n_trace / end if end > 1e-6 else float(n_trace)
            planned = [(rate, 0.0, end)]
        else:
            planned = [(r, i * plan.duration_s, (i + 1) * plan.duration_s) for i, r in enumerate(plan.rates)]
        trace_case: list[str | None] = [None]  # the case the trace row just read names
        order = self._order
        for rate, start, end in planned:
            source = "plan"
            while True:
                self._begin(segment, rate, start, end, source)
                first = seq  # this segment's first request: its cases start the shuffled order again
                if trace:  # its rows as they are read (a big file is streamed), each naming its case or not
                    times: Iterator[float] = _offsets(plan.arrival.rows(), trace_case)
                else:
                    times = arrival_times(plan.arrival, rate, end - start, segment_rng(plan.seed, segment))
                change = None
                behind = 0
                drops = 0  # dropped and not yet counted in the window: the drop path stays a few operations
                for off in times:
                    due = start + off
                    now = self.now_s()
                    if due > now:
                        behind = 0  # the wait below sleeps: the loop gets its turn
                        if drops:
                            drops = self._drop(drops)
                    change = await self._wait_until(due)
                    if change is not None:
                        break
                    mine = seq % self.shards == self.shard
                    n = seq
                    seq += 1
                    if not mine:
                        continue
                    if now - max(due, began) > DROP_LATE_S:
                        drops += 1
                        if drops >= DROP_BATCH:  # still a checkpoint now and then: Ctrl-C, and requests finishing
                            drops = self._drop(drops)
                            await anyio.lowlevel.checkpoint()
                        continue
                    if drops:
                        drops = self._drop(drops)
                    behind += 1
                    if behind >= DISPATCH_BATCH:  # behind schedule, nothing awaited: let requests and Ctrl-C run
                        behind = 0
                        await anyio.lowlevel.checkpoint()
                        if self.now_s() - max(due, began) > DROP_LATE_S:
                            drops = self._drop(1)
                            continue
                    case_id = trace_case[0] if trace else None
                    if case_id not in self._cases:
                        case_id = None
                    if case_id is None:
                        case_id = order[(n - first) % len(order)].id
                    if self._limiter.available_tokens < 1:  # the cap is full: wait, measured as lag, then check
                        await self._limiter.acquire_on_behalf_of(n)
                        if self.now_s() - max(due, began) > DROP_LATE_S:
                            self._limiter.release_on_behalf_of(n)
                            drops = self._drop(1)
                            continue
                    else:
                        self._limiter.acquire_on_behalf_of_nowait(n)  # released by the request's own task
                    self.in_flight += 1
                    self.sent += 1
                    tg.start_soon(self._one, n, segment, case_id, off < plan.warmup_s, due)
                if drops:
                    self._drop(drops)
                if change is None:
                    change = await self._wait_until(end)  # idle until the planned boundary (or a change)
                segment += 1
                if change is None:
                    break
                at, rate = change
                start = min(max(at, start), end)
                self._cut(start)
                source = "user"
                if start >= end:
                    break

    async def _wait_until(self, due: float) -> tuple[float, float] | None:
        """Sleep until `due` (seconds from t0); return a pending rate change due no later, instead."""
        assert self.t0 is not None
        while True:
            p = self._pending
            if p is not None and p[0] <= due:
                self._pending = None
                return p
            delay = self.t0 + due - self._clock()
            if delay <= 0:
                return None
            with anyio.move_on_after(delay):
                await self._wake.wait()
            if self._wake.is_set():
                self._wake = anyio.Event()

    async def _one(self, seq: int, segment: int, case_id: str, warmup: bool, due: float) -> None:
        assert self.t0 is not None
        t0 = self.t0
        case = self._cases[case_id]
        request = Request(self.plan.model, case, seq, 1, self._messages[case_id], self._max_tokens,
                          self._temperature, self.plan.timeout_s)
        sent = self._clock()
        outcome, message = OK, None
        ttft_ms: float | None = None
        in_tok = out_tok = 0
        try:
            try:
                if self._own_timeout:
                    comp = await self.provider.complete(request)
                else:
                    with anyio.fail_after(self.plan.timeout_s):
                        comp = await self.provider.complete(request)
            except TimeoutError:
                outcome, message = TIMEOUT, f"no complete answer within {self.plan.timeout_s:g}s"
            except RateLimited as e:
                outcome, message = RATE_LIMITED, e.message
            except TerminalError as e:
                outcome, message = TERMINAL, e.message
            except IncompleteStream as e:  # a stream cut without its end marker is no answer, whatever arrived
                outcome, message = INCOMPLETE_STREAM, e.message
                in_tok, out_tok = getattr(e, "input_tokens", 0), getattr(e, "output_tokens", 0)
            except ProviderError as e:
                outcome, message = TRANSIENT, e.message
            except anyio.get_cancelled_exc_class():
                now = self._clock()
                self.on_request(LoadRequest(seq, segment, self.shard, case_id, warmup, due, sent - t0, now - t0,
                                            CANCELLED, None, None, 0, 0, "the load run was stopped"))
                raise
            except Exception as e:  # a provider bug must not end the run: record it
                outcome, message = TERMINAL, f"provider raised {type(e).__name__}: {e}"
            else:
                in_tok, out_tok = comp.input_tokens, comp.output_tokens
                if comp.ttft_s is not None:
                    ttft_ms = ((comp.connect_s or 0.0) + comp.ttft_s) * 1000.0
            now = self._clock()
            self.on_request(LoadRequest(seq, segment, self.shard, case_id, warmup, due, sent - t0, now - t0,
                                        outcome, ttft_ms, (now - sent) * 1000.0, in_tok, out_tok,
                                        message[:MESSAGE_LIMIT] if message else None))
        finally:
            self.in_flight -= 1
            self._limiter.release_on_behalf_of(seq)


def _offsets(rows: Iterator[TraceRow], case: list[str | None]) -> Iterator[float]:
    """A trace's offsets, leaving in `case[0]` the case id the row just yielded names (or None)."""
    for r in rows:
        case[0] = r.case_id
        yield r.offset_s

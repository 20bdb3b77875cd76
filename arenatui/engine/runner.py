"""The worker pool that runs a plan: limits, retries, timeouts, and the events that report them.

Design (see shared/DESIGN.md, measured limits): long-lived workers pull the next call from
per-model lazy iterators, round-robin across models that have room under their cap. The global
concurrency limit *is* the number of workers: raising it spawns workers at once, lowering it lets
surplus workers retire after the call they hold, so no call is interrupted and none starts above
the new level. That keeps a limiter acquire off the hot path for the common case.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import anyio
from aiolimiter import AsyncLimiter
from anyio.abc import TaskGroup

from arenatui.config.schema import Case, ModelConfig
from arenatui.engine.events import (
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    ConcurrencyChanged,
    ErrorClass,
    Event,
    RunFinished,
    RunPaused,
    RunResumed,
    RunStatus,
)
from arenatui.engine.retry import RetryPolicy
from arenatui.errors import ProviderError, RateLimited, TerminalError
from arenatui.plan import Plan
from arenatui.providers.base import Provider, Request, build_messages, estimate_tokens
from arenatui.scoring import ScorerSet

Sink = Callable[[Event], None]
MESSAGE_LIMIT = 2000


@dataclass(slots=True)
class _ModelLane:
    model: ModelConfig
    calls: Iterator[tuple[Case, int]]
    provider: Provider
    own_timeout: bool
    """The provider ends attempts at timeout_s itself (no cancel scope per attempt needed)."""
    cap: int | None
    max_tokens: int
    temperature: float
    rpm: AsyncLimiter | None
    tpm: AsyncLimiter | None
    in_flight: int = 0
    exhausted: bool = False


class Runner:
    """Runs one plan once. Steer it with `set_concurrency`, `set_model_cap`, `pause`, `resume`, `cancel`."""

    def __init__(
        self,
        plan: Plan,
        providers: Mapping[str, Provider],
        *,
        sinks: Sequence[Sink] = (),
        concurrency: int | None = None,
        policy: RetryPolicy | None = None,
        timeout_s: float | None = None,
        rng: random.Random | None = None,
    ) -> None:
        run = plan.project.run
        self.plan = plan
        self.policy = policy or RetryPolicy(run.max_attempts, run.backoff_base_s, run.backoff_cap_s,
                                            run.retry_budget_s)
        self.timeout_s = timeout_s if timeout_s is not None else run.timeout_s
        self._rng = rng or random.Random(run.seed)
        self._sinks = tuple(sinks)
        self._scorers = ScorerSet(plan.project.scorers)
        defaults = self._defaults = plan.project.defaults
        self._lanes: list[_ModelLane] = []
        for m in plan.models:
            self._lanes.append(_ModelLane(
                model=m,
                calls=plan.pending(m.key),
                provider=providers[m.key],
                own_timeout=bool(getattr(providers[m.key], "enforces_timeout", False)),
                cap=m.max_concurrency,
                max_tokens=m.max_tokens or defaults.max_tokens,
                temperature=m.temperature if m.temperature is not None else defaults.temperature,
                rpm=AsyncLimiter(m.rpm, 60.0) if m.rpm else None,
                tpm=AsyncLimiter(m.tpm, 60.0) if m.tpm else None,
            ))
        self._by_key = {lane.model.key: lane for lane in self._lanes}
        self._rr = 0
        self.target = max(1, concurrency if concurrency is not None else run.concurrency)
        self.workers = 0
        self.in_flight = 0
        self.paused = False
        self.cancelled = False
        self._wake = anyio.Event()
        self._tg: TaskGroup | None = None
        self._started = False

    # ---- control -------------------------------------------------------------------------------

    def set_concurrency(self, n: int, source: str = "user") -> None:
        """Change the global limit. Raising starts calls at once; lowering lets running calls finish."""
        n = max(1, int(n))
        old, self.target = self.target, n
        if old != n:
            self.emit(ConcurrencyChanged(old, n, None, source, time.monotonic(), time.time()))
        self._spawn()
        self._notify()

    def set_model_cap(self, model_key: str, cap: int | None, source: str = "user") -> None:
        lane = self._by_key[model_key]
        old = lane.cap
        lane.cap = None if cap is None else max(1, int(cap))
        if old != lane.cap:
            self.emit(ConcurrencyChanged(old or 0, lane.cap or 0, model_key, source, time.monotonic(), time.time()))
        self._notify()

    def model_cap(self, model_key: str) -> int | None:
        return self._by_key[model_key].cap

    def pause(self) -> None:
        if not self.paused:
            self.paused = True
            self.emit(RunPaused(time.monotonic()))

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self.emit(RunResumed(time.monotonic()))
            self._notify()

    def cancel(self) -> None:
        """Stop now: calls in flight end as 'cancelled' (resume runs them again); finished ones stay."""
        self.cancelled = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    # ---- running -------------------------------------------------------------------------------

    async def run(self) -> RunStatus:
        if self._started:
            raise RuntimeError("a Runner runs once")
        self._started = True
        self.emit(ConcurrencyChanged(0, self.target, None, "config", time.monotonic(), time.time()))
        status: RunStatus = "finished"
        message: str | None = None
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self._spawn()
        except BaseException as e:
            status = "cancelled" if isinstance(e, anyio.get_cancelled_exc_class()) or self.cancelled else "failed"
            message = None if status == "cancelled" else f"{type(e).__name__}: {e}"
            self.emit(RunFinished(status, time.monotonic(), message))
            raise
        finally:
            self._tg = None
        if self.cancelled:
            status = "cancelled"
        self.emit(RunFinished(status, time.monotonic(), message))
        return status

    def _spawn(self) -> None:
        tg = self._tg
        if tg is None or self.cancelled:
            return
        while self.workers < self.target:
            self.workers += 1
            tg.start_soon(self._worker)

    def _notify(self) -> None:
        self._wake.set()
        self._wake = anyio.Event()

    def _next_call(self) -> tuple[_ModelLane, Case, int] | None:
        lanes = self._lanes
        n = len(lanes)
        for i in range(n):
            idx = (self._rr + i) % n
            lane = lanes[idx]
            if lane.exhausted or (lane.cap is not None and lane.in_flight >= lane.cap):
                continue
            item = next(lane.calls, None)
            if item is None:
                lane.exhausted = True
                continue
            self._rr = idx + 1
            return lane, item[0], item[1]
        return None

    async def _worker(self) -> None:
        try:
            while True:
                if self.workers > self.target:
                    return
                if self.paused:
                    await self._wake.wait()
                    continue
                nxt = self._next_call()
                if nxt is None:
                    if all(lane.exhausted for lane in self._lanes):
                        return
                    await self._wake.wait()  # every lane with work is at its cap
                    continue
                lane, case, trial = nxt
                lane.in_flight += 1
                self.in_flight += 1
                try:
                    await self._call(lane, case, trial)
                finally:
                    lane.in_flight -= 1
                    self.in_flight -= 1
                    if lane.cap is not None:
                        self._notify()
        finally:
            self.workers -= 1

    def emit(self, ev: Event) -> None:
        """Hand one event to every sink, in order (also for run-level events from beside the engine)."""
        for sink in self._sinks:
            sink(ev)

    async def _call(self, lane: _ModelLane, case: Case, trial: int) -> None:
        model = lane.model
        mkey = model.key
        policy = self.policy
        started_wall = time.time()
        t0 = time.monotonic()
        attempt = 0
        in_tok = out_tok = 0
        err_class: ErrorClass = "transient"
        err_msg = ""
        latency: float | None = None
        connect_ms: float | None = None
        try:
            while True:
                if lane.rpm is not None:
                    await lane.rpm.acquire()
                if lane.tpm is not None:
                    need = estimate_tokens(case.prompt_text()) + lane.max_tokens
                    await lane.tpm.acquire(min(need, model.tpm or need))
                attempt += 1  # counts attempts started: a call cancelled while waiting on a limiter made none
                ta = time.monotonic()
                self.emit(CallStarted(mkey, case.id, trial, attempt, ta))
                retry_after: float | None = None
                http_status: int | None = None
                # Positional construction on the hot path: keyword arguments cost 2.5 µs more per CallResult.
                request = Request(model, case, trial, attempt, build_messages(model, self._defaults, case),
                                  lane.max_tokens, lane.temperature, self.timeout_s)
                try:
                    if lane.own_timeout:
                        comp = await lane.provider.complete(request)
                    else:
                        with anyio.fail_after(self.timeout_s):
                            comp = await lane.provider.complete(request)
                except TimeoutError:
                    latency, connect_ms = (time.monotonic() - ta) * 1000.0, None
                    err_class, err_msg = "timeout", f"no complete answer within {self.timeout_s:g}s"
                except RateLimited as e:
                    latency, connect_ms = _attempt_times(e, ta)
                    err_class, err_msg, retry_after = "rate_limited", e.message, e.retry_after
                    http_status = e.http_status
                    in_tok += getattr(e, "input_tokens", 0)
                    out_tok += getattr(e, "output_tokens", 0)
                except ProviderError as e:
                    latency, connect_ms = _attempt_times(e, ta)
                    err_class = "terminal" if isinstance(e, TerminalError) else "transient"
                    err_msg, http_status = e.message, e.http_status
                    in_tok += getattr(e, "input_tokens", 0)
                    out_tok += getattr(e, "output_tokens", 0)
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception as e:  # a provider bug must not take the sweep down: record it, never retry
                    latency, connect_ms = (time.monotonic() - ta) * 1000.0, None
                    err_class, err_msg = "terminal", f"provider raised {type(e).__name__}: {e}"
                else:
                    now = time.monotonic()
                    in_tok += comp.input_tokens
                    out_tok += comp.output_tokens
                    sc = self._scorers.score(comp.text, case)
                    ttft = comp.ttft_s
                    wire_s = comp.latency_s  # HTTP providers time the wire themselves (connecting left out)
                    connect_s = comp.connect_s
                    self.emit(CallFinished(CallResult(
                        mkey, case.id, trial,  # model_key, case_id, trial
                        "passed" if sc.passed else "failed", comp.text, sc.value, sc.passed,  # status .. passed
                        None, None, attempt,  # error_class, error_message, attempts
                        wire_s * 1000.0 if wire_s is not None else (now - ta) * 1000.0,  # latency_ms
                        (now - t0) * 1000.0,  # total_ms
                        ttft * 1000.0 if ttft is not None else None,  # ttft_ms
                        in_tok, out_tok, model.cost(in_tok, out_tok),  # input_tokens, output_tokens, cost
                        comp.finish_reason, comp.tokens_estimated,
                        started_wall, started_wall + (now - t0),  # started_at, finished_at (epoch)
                        connect_s * 1000.0 if connect_s is not None else None,  # connect_ms
                    ), now))
                    return
                # the attempt failed: retry or record
                if err_class == "terminal" or attempt >= policy.max_attempts:
                    break
                delay = policy.delay(attempt, retry_after, self._rng)
                elapsed = time.monotonic() - t0
                if elapsed + delay > policy.budget_s:
                    asked = f"retry-after {retry_after:g}s" if retry_after is not None else f"backoff {delay:.1f}s"
                    err_msg = (f"{err_msg} ({asked} exceeds the {policy.budget_s - elapsed:.0f}s left of this "
                               f"call's {policy.budget_s:g}s budget; not retried)")
                    break
                self.emit(CallRetrying(mkey, case.id, trial, attempt, err_class, delay, err_msg[:MESSAGE_LIMIT],
                                        time.monotonic(), retry_after, http_status))
                await anyio.sleep(delay)
        except anyio.get_cancelled_exc_class():
            now = time.monotonic()
            self.emit(CallFinished(self._errored(lane, case, trial, "cancelled", "the sweep was stopped",
                                                  attempt, latency, t0, now, started_wall, in_tok, out_tok,
                                                  connect_ms), now))
            raise
        now = time.monotonic()
        self.emit(CallFinished(self._errored(lane, case, trial, err_class, err_msg, attempt, latency, t0, now,
                                              started_wall, in_tok, out_tok, connect_ms), now))

    def _errored(self, lane: _ModelLane, case: Case, trial: int, err_class: ErrorClass, msg: str, attempts: int,
                 latency: float | None, t0: float, now: float, started_wall: float, in_tok: int,
                 out_tok: int, connect_ms: float | None) -> CallResult:
        return CallResult(
            model_key=lane.model.key, case_id=case.id, trial=trial, status="errored", output=None, score=None,
            passed=False, error_class=err_class, error_message=msg[:MESSAGE_LIMIT], attempts=attempts,
            latency_ms=latency, total_ms=(now - t0) * 1000.0, ttft_ms=None, input_tokens=in_tok,
            output_tokens=out_tok, cost=lane.model.cost(in_tok, out_tok), finish_reason=None,
            tokens_estimated=False, started_at=started_wall, finished_at=started_wall + (now - t0),
            connect_ms=connect_ms,
        )


def _attempt_times(e: ProviderError, ta: float) -> tuple[float, float | None]:
    """latency_ms and connect_ms of a failed attempt: from the wire where the provider timed it (an HTTP
    refusal), else the whole attempt."""
    if e.latency_s is None:
        return (time.monotonic() - ta) * 1000.0, None
    return e.latency_s * 1000.0, e.connect_s * 1000.0 if e.connect_s is not None else None

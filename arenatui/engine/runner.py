"""The worker pool that runs a plan: the workers, the control surface, and retry-or-park.

Design (see shared/DESIGN.md, measured limits): long-lived workers pull the next call from the scheduler
(`lanes.Scheduler`: per-lane lazy iterators, round-robin across lanes with room under their cap). The global
concurrency limit *is* the number of workers: raising it spawns workers at once, lowering it lets
surplus workers retire after the call they hold, so no call is interrupted and none starts above
the new level. That keeps a limiter acquire off the hot path for the common case. Never more workers
start than there are calls left to make (a million-worker pool for 144 calls took 42 s and 3.5 GB).

A call's attempt is `attempt.attempt`; an attempt that failed is retried (the call parked, holding no worker) or
ends the call; an answer is scored here and handed to what follows it (`followups`: repairs, escalations, chained
cases, judging).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence

import anyio
from anyio.abc import TaskGroup

from arenatui.engine.attempt import Failure, StatedLimits, attempt, begin, limits
from arenatui.engine.call import MESSAGE_LIMIT, Call, Results, sealed_output
from arenatui.engine.control import Controls
from arenatui.engine.followups import JUDGE_QUEUED, Answered, follow_ups
from arenatui.engine.lanes import Escalation, Lane, Scheduler, apply_seeds, bucket_level, calls_to_make, lanes_of, roots
from arenatui.engine.retry import RetryPolicy
from arenatui.engine.scored import SCORE_ON_LOOP_S, Scoring
from arenatui.kernel.events import (
    DEADLINE,
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    ConcurrencyChanged,
    Event,
    RunFinished,
    RunStatus,
)
from arenatui.kernel.limits import concurrency_bounded
from arenatui.plan import Plan
from arenatui.providers.base import Provider
from arenatui.scoring import Score, ScoringSlow

__all__ = ["MESSAGE_LIMIT", "Runner", "Sink", "bucket_level", "sealed_output"]

Sink = Callable[[Event], None]


class Runner(Controls):
    """Runs one plan once. Steer it with `set_concurrency`, `set_model_cap`, `pause`, `resume`, `cancel`."""

    def __init__(
        self,
        plan: Plan,
        providers: Mapping[str, Provider],
        *,
        sinks: Sequence[Sink] = (),
        started_sinks: Sequence[Sink] | None = None,
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
        self.started_sinks = self._sinks if started_sinks is None else tuple(started_sinks)
        """The sinks that hear CallStarted, one per attempt (all by default): the store keeps nothing of it, and the
        level tracker reads the lanes' counts instead while no auto-tuner watches."""
        self._scoring = Scoring(plan.project)
        self._defaults = plan.project.defaults
        self._results = Results(run.keep_sealed_outputs)
        chained = any(c.depends_on for c in plan.cases)
        lanes, escalations = lanes_of(plan, providers, {
            m.key: roots(plan.pending(m.key)) if chained else plan.pending(m.key) for m in plan.models})
        self._lanes = lanes
        self._by_key = {lane.key: lane for lane in lanes}
        self._seeds: dict[str, tuple[float, float]] = {}
        asked = concurrency if concurrency is not None else run.concurrency
        self.target = concurrency_bounded(asked)
        self._asked = None if asked == self.target else asked
        sched = self._sched = Scheduler(lanes, self.target, plan.trials, run.max_concurrency_per_case, escalations)
        sched.unstarted = calls_to_make(plan)
        self._judging, self._steps, self._chained = follow_ups(plan, lanes, escalations, self._results, self.emit)
        """Judging; repair turns and escalations (None when the project has neither: the hot path then never looks);
        a chained project's episodes (None without chains)."""
        sched.unstarted += self._judging.queued_at_start
        if self._steps is not None:
            sched.steps = self._steps.between
        self._answered = Answered(self._results, self._judging, self._steps, self.emit)
        self.workers = 0
        self.in_flight = 0
        self.paused = False
        self.cancelled = False
        self._wake = anyio.Event()
        self._tg: TaskGroup | None = None
        self._started = False
        self._stated = StatedLimits()

    # ---- running -------------------------------------------------------------------------------

    def seed_rate_limits(self, levels: dict[str, tuple[float, float]]) -> None:
        """Before `run`: per model key, (rpm, tpm) capacity already used in the last minute (a resumed run's stored
        calls, `bucket_level`). A fresh limiter allows a whole minute's worth at once: a resume would send that
        burst to a gateway that has just seen the earlier session's calls."""
        self._seeds = dict(levels)

    async def run(self) -> RunStatus:
        if self._started:
            raise RuntimeError("a Runner runs once")
        self._started = True
        await apply_seeds(self._lanes, self._seeds)
        self.emit(ConcurrencyChanged(0, self.target, None, "config", time.monotonic(), time.time(), self._asked))
        self._end_at_start()
        status: RunStatus = "finished"
        message: str | None = None
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self._spawn()
        except BaseException as e:
            status = "cancelled" if isinstance(e, anyio.get_cancelled_exc_class()) or self.cancelled else "failed"
            message = None if status == "cancelled" else f"{type(e).__name__}: {e}"
            self._cancel_parked()
            self.emit(RunFinished(status, time.monotonic(), message))
            raise
        finally:
            self._tg = None
        if self.cancelled:
            status = "cancelled"
            self._cancel_parked()
        self.emit(RunFinished(status, time.monotonic(), message))
        return status

    def _end_at_start(self) -> None:
        """What a resumed run decides before any call: answers that cannot be judged, chained calls that cannot be
        reached, and calls whose last step was stored but not their result."""
        for follow_up in (self._judging, self._chained, self._steps):
            for ev in follow_up.at_start() if follow_up is not None else ():
                if type(ev) is CallFinished:
                    self._sched.unstarted -= 1
                self.emit(ev)

    def _cancel_parked(self) -> None:
        """Calls stopped while backing off end as 'cancelled', like the ones in flight: resume runs them again."""
        now = time.monotonic()
        for call in self._sched.unpark_all():
            self._finish(self._results.errored(call, "cancelled", "the sweep was stopped", now), call, now)

    def _spawn(self) -> None:
        tg = self._tg
        if tg is None or self.cancelled:
            return
        # a worker per call that could be running now, never more: the rest of the pool is spawned when a
        # raised limit can use it
        sched = self._sched
        want = min(self.target, max(1, sched.unstarted + sched.parked_n))  # one, to end a run with none to do
        while self.workers < want:
            self.workers += 1
            tg.start_soon(self._worker)

    def _notify(self) -> None:
        self._wake.set()
        self._wake = anyio.Event()

    async def _worker(self) -> None:
        sched = self._sched
        try:
            while True:
                if self.workers > self.target:
                    return
                if self.paused:
                    await self._wake.wait()
                    continue
                call = sched.next_call(time.monotonic() if sched.parked_n else 0.0)
                if call is None:
                    if sched.all_done():
                        return
                    await self._idle()
                    continue
                lane = call.lane
                esc = sched.escalating(lane, call.case, call.trial) if sched.escalations and call.job is None else None
                at_provider = lane.at_provider if esc is None else esc.at_provider  # whose provider it asks
                if lane.idle_from:  # the lane had nothing in flight or backing off since then (the level tracker)
                    lane.idle_s += time.monotonic() - lane.idle_from
                    lane.idle_from = 0.0
                lane.in_flight += 1
                at_provider[0] += 1
                self.in_flight += 1
                try:
                    await self._call(call, esc)
                finally:
                    lane.in_flight -= 1
                    at_provider[0] -= 1
                    self.in_flight -= 1
                    if not lane.in_flight and not lane.parked:
                        lane.idle_from = time.monotonic()
                    if sched.per_case is not None and call.job is None:
                        sched.case_ended(lane, call.case, call.trial)
                    if lane.cap is not None or lane.parked or lane.deferred or esc is not None or lane.escalations:
                        self._notify()
        finally:
            self.workers -= 1

    async def _idle(self) -> None:
        """Wait for a change (a call ended, a limit moved) or for the next parked call that could start to be due."""
        wake = self._wake
        due = self._sched.next_due()
        if due is None:
            await wake.wait()  # every lane with work is at its cap, or backing off with its share in use
            return
        with anyio.move_on_after(max(0.0, due - time.monotonic())):
            await wake.wait()

    @property
    def lanes(self) -> Mapping[str, Lane]:
        """The lanes by key: their counts of calls in flight, backing off and idle time (read by the level tracker)."""
        return self._by_key

    def _emit_started(self, ev: CallStarted) -> None:
        for sink in self.started_sinks:
            sink(ev)

    def emit(self, ev: Event) -> None:
        """Hand one event to every sink, in order (also for run-level events from beside the engine)."""
        for sink in self._sinks:
            sink(ev)
        if self._chained is not None and type(ev) is CallFinished:
            lane, unreachable = self._chained.after(ev.result)
            if lane is None:
                return
            for case, why in unreachable:  # a chained call that is not made: its parent did not pass
                self._sched.unstarted -= 1
                self.emit(self._chained.unreachable(lane, case, ev.result.trial, why))
            if lane.ready:
                self._spawn()
                self._notify()

    async def _call(self, call: Call, esc: Escalation | None) -> None:
        """Attempts of one call until it ends (one CallFinished, or JudgeFinished for a judge call) or backs off
        (parked, to go on when due). An escalation step (`esc`) asks the target, under the target's limits."""
        steps = self._steps
        fu = steps.of(call) if steps is not None and call.job is None else None
        if not call.attempt:
            call.started_wall = time.time()
            call.t0 = time.monotonic()
        try:
            target = call.lane if esc is None else esc
            if target.rpm is not None or target.tpm is not None:
                await limits(call, target)
            request = begin(call, target, fu, self._defaults, self.timeout_s,
                            self._emit_started if self.started_sinks else None)
            out = await attempt(target, request, self.timeout_s, call.ta)
            if out.limits is not None and (said := self._stated.event(target.model.base_key, out.limits)) is not None:
                self.emit(said)  # the provider stated its rate limits (headers): rare to pass on
            if not isinstance(out, Failure):  # scored here while quick (off the loop when slow), then ended
                now = time.monotonic()
                sc: Score | str | None = None
                if call.job is None:  # ScorerSet.for_case, inline: the case's scorer, else the project's first
                    named, scorers = call.case.scorer, self._scoring.scorers
                    scorer = scorers.default if named is None else scorers.by_name[named]
                else:
                    scorer = None
                if scorer is not None and scorer.cfg.kind != "llm_judge":  # a judge scores llm_judge answers later
                    try:
                        if scorer.blocking:  # a process or the user's code: never on the event loop
                            raise ScoringSlow(f"scorer {scorer.cfg.name!r} runs off the event loop")
                        sc = scorer.verdict(out.text, call.case, SCORE_ON_LOOP_S)  # not .score: a call less
                    except Exception as e:  # slow, or no verdict at all: off the hot path
                        sc = await self._scoring.after(e, out.text, call.case)
                queued = self._answered.after(call, out, fu, request.messages, sc, now)
                if queued:  # a next step or a judge call: one more call to make
                    self._sched.unstarted += 1
                    if queued is JUDGE_QUEUED:
                        self._spawn()
                        self._notify()
                    elif self.workers > self.target or self.paused:  # this worker may retire: wake one that stays
                        self._notify()
                return
            call.lane.attempt_t = call.ta
            call.in_tok += out.input_tokens
            call.out_tok += out.output_tokens
            call.latency, call.connect_ms = out.latency, out.connect_ms
            if self._retried(call, out):
                return
        except anyio.get_cancelled_exc_class():
            now = time.monotonic()
            self._finish(self._results.errored(call, "cancelled", "the sweep was stopped", now), call, now)
            raise
        now = time.monotonic()
        r = self._results.errored(call, out.error_class, out.message, now, out.http_status)
        if out.detail is not None:
            r = r._replace(score_detail=self._results.message(call.case, out.detail))
        if out.timed_out_stream:  # hung or slow, for timeout_s's evidence (tuning/budgets.py)
            r = r._replace(finish_reason=DEADLINE, ttft_ms=out.first_ms)
        self._finish(r, call, now, out.retry_after, out.retry_source)

    def _retried(self, call: Call, f: Failure) -> bool:
        """Retry the failed attempt `f` (the call parked until due, holding no worker) when its class may not repeat
        and the policy allows; False when the call ends with it (its message then says why it was not retried)."""
        policy = self.policy
        delay = policy.wait(f.error_class, call.attempt, f.retry_after, self._rng)
        if delay is None:
            return False
        elapsed = time.monotonic() - call.t0
        if elapsed + delay <= policy.budget_s:
            case = call.case
            self.emit(CallRetrying(call.lane.key, case.id, call.trial, call.attempt, f.error_class, delay,
                                   self._results.message(case, f.message), time.monotonic(), f.retry_after,
                                   f.http_status, f.retry_source, f.first_ms, f.timed_out_stream))
            self._sched.park(call, time.monotonic() + delay)
            self._notify()  # idle workers wait for the earliest due call: this one may be earlier
            return True
        f.message = policy.over_budget(f.message, delay, elapsed, f.retry_after, f.retry_source)
        return False

    def _finish(self, r: CallResult, call: Call, now: float, retry_after: float | None = None,
                retry_source: str | None = None) -> None:
        """Report a call that ended without an answer: CallFinished, or for a judge call the JudgeFinished that
        leaves its candidate judge_error (the judge's own error class is in the message) or, if cancelled, unscored."""
        if call.job is None:
            if self._steps is not None:
                r = self._steps.ended(r)
            self.emit(CallFinished(r, now, None, retry_after, retry_source))
            return
        self.emit(self._judging.failed(r, call.job, now))

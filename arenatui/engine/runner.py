"""The worker pool that runs a plan: limits, retries, timeouts, and the events that report them.

Design (see shared/DESIGN.md, measured limits): long-lived workers pull the next call from
per-model lazy iterators, round-robin across models that have room under their cap. The global
concurrency limit *is* the number of workers: raising it spawns workers at once, lowering it lets
surplus workers retire after the call they hold, so no call is interrupted and none starts above
the new level. That keeps a limiter acquire off the hot path for the common case. Never more workers
start than there are calls left to make (a million-worker pool for 144 calls took 42 s and 3.5 GB).

A call backing off between attempts holds no worker: it is parked in its model's heap of calls due
at a time, and the worker goes on with other work (one model told to wait 120 s used to hold every
worker asleep while healthy models stood still). A due call goes before a new one of its model. A
model's parked and in-flight calls together stay within its cap (or the global limit), so a model that is backing
off does not keep opening new calls against its provider; its cap still means calls in flight at the
provider, which parked calls are not.

An llm_judge case's answer is stored at once as 'unscored' and, when the case is in its scorer's sample, queued
for its judge: each judge model is a lane of its own (``judge:<key>``, plan.judge_lane) that shares the workers,
the judge model's provider, rate limiters and cap (a model that also answers has one count of calls at its provider),
and has retries, parking and timeouts like any model. A judge call ends in one JudgeFinished, the verdict on the
candidate. Judge lanes take work as candidates answer,
so they are never exhausted while a candidate call is still running.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import anyio
from anyio.abc import TaskGroup

from arenatui.config.schema import Case, ScorerConfig
from arenatui.engine.attempt import Failure, attempt
from arenatui.engine.call import MESSAGE_LIMIT, Call, Results, sealed_output
from arenatui.engine.events import (
    DEADLINE,
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    ConcurrencyChanged,
    Event,
    RunFinished,
    RunPaused,
    RunResumed,
    RunStatus,
)
from arenatui.engine.followups import Chained, Judging, NextStep, Steps
from arenatui.engine.lanes import Escalation, Lane, Scheduler, lanes_of
from arenatui.engine.retry import RetryPolicy
from arenatui.limits import MAX_CONCURRENCY
from arenatui.plan import Plan
from arenatui.providers.base import Completion, JudgeTask, Provider, Request, build_messages, estimate_tokens
from arenatui.scoring import REGEX_TIMEOUT_S, Score, ScorerSet, ScoringError, ScoringSlow, verdict
from arenatui.scoring.judge import judge_messages
from arenatui.threads import in_daemon_thread

__all__ = ["MESSAGE_LIMIT", "Runner", "Sink", "bucket_level", "sealed_output"]

Sink = Callable[[Event], None]
SCORE_ON_LOOP_S = 0.02
"""How long a regex scorer may hold the event loop; one that needs longer runs again in a thread, with up
to REGEX_TIMEOUT_S, so in-flight calls keep being timed and Ctrl-C keeps working."""


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
        self._scorers = ScorerSet(plan.project.scorers, plan.project.path.parent)
        # code_exec and user functions run in threads; this many at once, so a slow scorer cannot take every
        # thread the engine's other work needs (anyio's default pool has 40)
        self._slow_scoring = anyio.CapacityLimiter(max(1, os.cpu_count() or 1))
        self._defaults = plan.project.defaults
        self._results = Results(run.keep_sealed_outputs)
        chained = any(c.depends_on for c in plan.cases)
        lanes, escalations = lanes_of(plan, providers, {
            m.key: _roots(plan.pending(m.key)) if chained else plan.pending(m.key) for m in plan.models})
        self._lanes = lanes
        self._by_key = {lane.key: lane for lane in lanes}
        self._seeds: dict[str, tuple[float, float]] = {}
        asked = concurrency if concurrency is not None else run.concurrency
        self.target = _bounded(asked)
        self._asked = None if asked == self.target else asked
        sched = self._sched = Scheduler(lanes, self.target, plan.trials, run.max_concurrency_per_case, escalations)
        sched.unstarted = _calls_to_make(plan)
        self._judging = Judging(plan, self._by_key, self._results)
        self._judging.resumed(plan)
        sched.unstarted += self._judging.queued_at_start
        repair = run.repair if run.repair is not None and run.repair.attempts > 0 else None
        self._steps = Steps(repair, escalations, lanes, self._defaults, self.emit) \
            if repair is not None or escalations else None
        """Repair turns and escalations; None when the project has neither: the hot path then never looks."""
        if self._steps is not None:
            sched.steps = self._steps.between
            if plan.steps:
                self._steps.resumed(plan)
        self._chained = Chained(plan, self._by_key) if chained else None
        """A chained project's episodes: a dependent case is queued (lane.ready) once its parents passed."""
        if self._chained is not None:
            self._chained.resumed(plan)
        self.workers = 0
        self.in_flight = 0
        self.paused = False
        self.cancelled = False
        self._wake = anyio.Event()
        self._tg: TaskGroup | None = None
        self._started = False

    # ---- control -------------------------------------------------------------------------------

    def set_concurrency(self, n: int, source: str = "user") -> None:
        """Change the global limit. Raising starts calls at once; lowering lets running calls finish.

        Out of bounds (below 1, above limits.MAX_CONCURRENCY) it is set to the nearest bound, and the
        ConcurrencyChanged event says what was asked."""
        asked = int(n)
        n = _bounded(asked)
        old, self.target = self.target, n
        self._sched.target = n
        if old != n or asked != n:
            self.emit(ConcurrencyChanged(old, n, None, source, time.monotonic(), time.time(),
                                         None if asked == n else asked))
        self._spawn()
        self._notify()
    def set_model_cap(self, model_key: str, cap: int | None, source: str = "user") -> None:
        """Cap one model's calls in flight at its provider (None: no cap), bounded like set_concurrency."""
        lane = self._by_key[model_key]
        old = lane.cap
        asked = None if cap is None else int(cap)
        lane.cap = None if asked is None else _bounded(asked)
        if old != lane.cap or asked != lane.cap:
            self.emit(ConcurrencyChanged(old or 0, lane.cap or 0, model_key, source, time.monotonic(), time.time(),
                                         None if asked == lane.cap else asked))
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

    def seed_rate_limits(self, levels: dict[str, tuple[float, float]]) -> None:
        """Before `run`: per model key, (rpm, tpm) capacity already used in the last minute (a resumed run's stored
        calls, `bucket_level`). A fresh limiter allows a whole minute's worth at once: a resume would send that
        burst to a gateway that has just seen the earlier session's calls."""
        self._seeds = dict(levels)

    async def _apply_seeds(self) -> None:
        done: set[str] = set()
        for lane in self._lanes:
            key = lane.model.key
            rpm_used, tpm_used = self._seeds.get(key, (0.0, 0.0))
            if key in done or not (rpm_used or tpm_used):
                continue
            done.add(key)  # a model that is both a candidate and a judge has one set of limiters
            if lane.rpm is not None and rpm_used > 0:
                await lane.rpm.acquire(min(rpm_used, lane.rpm.max_rate))  # an empty bucket: immediate
            if lane.tpm is not None and tpm_used > 0:
                await lane.tpm.acquire(min(tpm_used, lane.tpm.max_rate))

    async def run(self) -> RunStatus:
        if self._started:
            raise RuntimeError("a Runner runs once")
        self._started = True
        await self._apply_seeds()
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
        judging = self._judging
        for lane, job, why in judging.unjudgeable:
            now = time.monotonic()
            call = judging.unjudgeable_call(lane, job)
            call.t0, call.started_wall = now, time.time()
            self._finish(self._results.errored(call, "judge_error", why, now), call, now)
        judging.unjudgeable.clear()
        if self._chained is not None:
            for lane, case, trial, why in self._chained.unreachable_at_start:
                self._unreachable(lane, case, trial, why)
            self._chained.unreachable_at_start.clear()
        if self._steps is not None:
            for r in self._steps.final_at_start:  # a chain whose last step was stored but not its result: it ends now
                self._sched.unstarted -= 1
                now = time.monotonic()
                self.emit(CallStarted(r.model_key, r.case_id, r.trial, r.attempts, now))  # watchers see it start, end
                self.emit(CallFinished(r, now))
            self._steps.final_at_start.clear()

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
                esc = sched.escalating(lane, call.case, call.trial) \
                    if self._steps is not None and call.job is None else None
                at_provider = lane.at_provider if esc is None else esc.at_provider  # whose provider it asks
                lane.in_flight += 1
                at_provider[0] += 1
                self.in_flight += 1
                try:
                    await self._call(call, esc)
                finally:
                    lane.in_flight -= 1
                    at_provider[0] -= 1
                    self.in_flight -= 1
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

    def emit(self, ev: Event) -> None:
        """Hand one event to every sink, in order (also for run-level events from beside the engine)."""
        for sink in self._sinks:
            sink(ev)
        if self._chained is not None and type(ev) is CallFinished:
            lane, unreachable = self._chained.after(ev.result)
            if lane is None:
                return
            for case, why in unreachable:
                self._unreachable(lane, case, ev.result.trial, why)
            if lane.ready:
                self._spawn()
                self._notify()

    def _unreachable(self, lane: Lane, case: Case, trial: int, why: str) -> None:
        """Store a chained call that is not made: its parent did not pass (coverage as not run, never wrong)."""
        self._sched.unstarted -= 1
        now = time.monotonic()
        self.emit(CallFinished(self._results.result(lane, case, trial, verdict.unreachable(why), None, 0, now, now,
                                                    now, time.time(), 0, 0), now))

    async def _call(self, call: Call, esc: Escalation | None) -> None:
        """Attempts of one call until it ends (one CallFinished, or JudgeFinished for a judge call) or backs off
        (parked, to go on when due). An escalation step (`esc`) asks the target, under the target's limits."""
        steps = self._steps
        fu = steps.of(call) if steps is not None and call.job is None else None
        if not call.attempt:
            call.started_wall = time.time()
            call.t0 = time.monotonic()
        try:
            request = await self._start(call, call.lane if esc is None else esc, fu)
            out = await attempt(call.lane if esc is None else esc, request, self.timeout_s, call.ta)
            if not isinstance(out, Failure):
                await self._answered(call, out, fu, request)
                return
            call.in_tok += out.input_tokens
            call.out_tok += out.output_tokens
            call.err_class, call.err_msg, call.latency, call.connect_ms = \
                out.error_class, out.message, out.latency, out.connect_ms
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
        self._finish(r, call, now)

    async def _start(self, call: Call, target: Lane | Escalation, fu: NextStep | None) -> Request:
        """Wait for the target's rate limiters, then start an attempt (CallStarted): its request."""
        model, case, job = target.model, call.case, call.job
        if target.rpm is not None:
            await target.rpm.acquire()
        if job is not None:
            messages = judge_messages(model, job.scorer, job.case, job.output)
        if target.tpm is not None:
            prompt = case.prompt_text() if job is None else messages[-1]["content"]
            need = estimate_tokens(prompt) + target.max_tokens
            await target.tpm.acquire(min(need, model.tpm or need))
        attempt = call.attempt = call.attempt + 1  # counts attempts started: none while waiting on a limiter
        ta = call.ta = time.monotonic()
        self.emit(CallStarted(call.lane.key, case.id, call.trial, attempt, ta))
        # Positional construction on the hot path: keyword arguments cost 2.5 µs more per CallResult.
        if job is not None:
            lane = call.lane
            return Request(model, case, call.trial, attempt, messages, lane.max_tokens, lane.temperature,
                           self.timeout_s, JudgeTask(job.output, case.expected, job.scorer.scale_range()))
        if fu is None:
            return Request(model, case, call.trial, attempt, build_messages(model, self._defaults, case),
                           target.max_tokens, target.temperature, self.timeout_s)
        return Request(model, case, call.trial, attempt, fu.messages, target.max_tokens, target.temperature,
                       self.timeout_s, None, fu.step if fu.kind == "repair" else 0)

    async def _answered(self, call: Call, comp: Completion, fu: NextStep | None, request: Request) -> None:
        """The attempt got an answer: score it (or queue it for its judge) and end the call, or queue its next step."""
        now = time.monotonic()
        call.in_tok += comp.input_tokens
        call.out_tok += comp.output_tokens
        if call.job is not None:
            self.emit(self._judging.judged_by(call, comp, call.ta, now))
            return
        case = call.case
        scorer = self._scorers.for_case(case)
        judged: tuple[ScorerConfig, str] | None = None
        sc: Score | str | None = None
        if scorer.cfg.kind == "llm_judge":  # stored unscored now; its judge (if sampled) scores it later
            judged = self._judging.judged.get(case.id)
        else:
            try:
                if scorer.blocking:  # a process or the user's code: never on the event loop
                    raise ScoringSlow(f"scorer {scorer.cfg.name!r} runs off the event loop")
                sc = scorer.verdict(comp.text, case, SCORE_ON_LOOP_S)  # not .score: a call less
            except Exception as e:  # slow, or no verdict at all: off the hot path
                sc = await self._score_after(e, comp.text, case)
        r = self._results.result(call.lane, case, call.trial, verdict.answered(
            sc, comp.text, comp.finish_reason, case.language, judged is not None), comp, call.attempt, call.ta,
            call.t0, now, call.started_wall, call.in_tok, call.out_tok)
        steps = self._steps
        if steps is not None and (fu is not None or r.status == "failed"):
            if fu is not None and fu.target is not None:  # the target's prices
                r = r._replace(cost=fu.target.model.cost(call.in_tok, call.out_tok) + (comp.cost or 0.0))
            done = steps.after(call, r, fu, request.messages, now)
            if type(done) is not CallFinished:  # its next step is queued on the lane
                self._sched.unstarted += 1
                if self.workers > self.target or self.paused:  # this worker may retire: wake one that stays
                    self._notify()
                return
            self.emit(done)
        else:
            self.emit(CallFinished(r, now))
        if judged is not None:  # a candidate answered a judged case: its judge lane has one more call to make
            self._judging.after(call, comp, judged)
            self._sched.unstarted += 1
            self._spawn()
            self._notify()

    def _retried(self, call: Call, f: Failure) -> bool:
        """Retry the failed attempt `f` (the call parked until due, holding no worker) when its class may not repeat
        and the policy allows; False when the call ends with it (its message then says why it was not retried)."""
        policy = self.policy
        if f.error_class not in _RETRIED or call.attempt >= policy.max_attempts:
            return False
        delay = policy.delay(call.attempt, f.retry_after, self._rng)
        elapsed = time.monotonic() - call.t0
        if elapsed + delay <= policy.budget_s:
            case = call.case
            self.emit(CallRetrying(call.lane.key, case.id, call.trial, call.attempt, f.error_class, delay,
                                   self._results.message(case, f.message), time.monotonic(), f.retry_after,
                                   f.http_status, f.retry_source, f.first_ms, f.timed_out_stream))
            self._sched.park(call, time.monotonic() + delay)
            self._notify()  # idle workers wait for the earliest due call: this one may be earlier
            return True
        asked = f"{f.retry_source or 'retry-after'} {f.retry_after:g}s" if f.retry_after is not None \
            else f"backoff {delay:.1f}s"
        f.message = (f"{f.message} ({asked} exceeds the {policy.budget_s - elapsed:.0f}s left of this "
                     f"call's {policy.budget_s:g}s budget; not retried)")
        return False

    def _finish(self, r: CallResult, call: Call, now: float) -> None:
        """Report a call that ended without an answer: CallFinished, or for a judge call the JudgeFinished that
        leaves its candidate judge_error (the judge's own error class is in the message) or, if cancelled, unscored."""
        if call.job is None:
            if self._steps is not None:
                r = self._steps.ended(r)
            self.emit(CallFinished(r, now))
            return
        self.emit(self._judging.failed(r, call.job, now))

    async def _score_after(self, e: Exception, output: str, case: Case) -> Score | str:
        """The verdict after scoring on the loop raised `e`, or why there is none (a message): one call's
        scoring error, never the sweep's end.

        A regex that needs longer than SCORE_ON_LOOP_S is run again in a thread (its matcher lets go of the
        GIL) for up to REGEX_TIMEOUT_S, so a pathological pattern neither blocks the loop nor hangs the sweep."""
        scorers = self._scorers
        try:
            if isinstance(e, ScoringSlow):
                async with self._slow_scoring:
                    return await in_daemon_thread(scorers.score, output, case, REGEX_TIMEOUT_S)
            raise e
        except ScoringError as err:
            return str(err)
        except Exception as err:  # a scorer bug: this call's error, not the sweep's end
            return f"scorer {scorers.for_case(case).cfg.name!r} raised {type(err).__name__}: {err}"


_RETRIED = frozenset(("rate_limited", "transient", "timeout", "incomplete_stream"))
"""Error classes a later attempt may not repeat: terminal ones ('terminal', 'solver_error') never sleep."""




def _roots(calls: Iterator[tuple[Case, int]]) -> Iterator[tuple[Case, int]]:
    """A chained project's calls of cases that depend on none: the others are queued as their parents pass."""
    return ((c, t) for c, t in calls if not c.depends_on)


def _bounded(n: int) -> int:
    """A concurrency level or cap within [1, MAX_CONCURRENCY]."""
    return min(max(1, n), MAX_CONCURRENCY)


def _calls_to_make(plan: Plan) -> int:
    """The plan's calls not yet stored, counted exactly (`done` may hold keys of cases a filter left out)."""
    case_ids = {c.id for c in plan.cases}
    if plan.shard is not None:  # a shard's calls (counted once by the plan), less those of its own it has stored
        return plan.shard_total() - sum(1 for m in plan.models for cid, t in plan.done.get(m.key, ())
                                        if cid in case_ids and 0 <= t < plan.trials and plan.mine(m.key, cid, t))
    n = 0
    for m in plan.models:
        done = plan.done.get(m.key, ())
        n += len(plan.cases) * plan.trials - sum(1 for cid, t in done if cid in case_ids and 0 <= t < plan.trials)
    return n


def bucket_level(events: Iterable[tuple[float, float]], now: float, per_s: float) -> float:
    """What a leaky bucket draining `per_s` a second holds at `now` after `events` (time, amount), in time order:
    the capacity a rate limiter must start with to continue where an earlier session left off."""
    level, last = 0.0, None
    for t, amount in events:
        if last is not None:
            level = max(0.0, level - (t - last) * per_s)
        level += amount
        last = t
    if last is not None:
        level = max(0.0, level - (now - last) * per_s)
    return level

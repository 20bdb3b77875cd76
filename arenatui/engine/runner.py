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

import dataclasses
import hashlib
import heapq
import itertools
import os
import random
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import anyio
from anyio.abc import TaskGroup

from arenatui.config.schema import Case, ModelConfig, Repair, ScorerConfig
from arenatui.engine.chains import Chains
from arenatui.engine.judging import JudgeJob
from arenatui.engine.retry import RetryPolicy
from arenatui.engine.sealed import MIN_RUN, SealedScrubber
from arenatui.kernel.errors import ArenaError, IncompleteStream, ProviderError, RateLimited, TerminalError
from arenatui.kernel.events import (
    DEADLINE,
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    ConcurrencyChanged,
    ErrorClass,
    Event,
    JudgeFinished,
    RunFinished,
    RunPaused,
    RunResumed,
    RunStatus,
    StepFinished,
)
from arenatui.kernel.events import lane_key as lane_of
from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.kernel.threads import in_daemon_thread
from arenatui.plan import Plan, judge_trial
from arenatui.providers.base import Completion, JudgeTask, Provider, Request, build_messages, estimate_tokens
from arenatui.scoring import REGEX_TIMEOUT_S, Score, ScorerSet, ScoringError, ScoringSlow, verdict
from arenatui.scoring.judge import judge_messages

if TYPE_CHECKING:
    from aiolimiter import AsyncLimiter

Sink = Callable[[Event], None]
MESSAGE_LIMIT = 2000
SCORE_ON_LOOP_S = 0.02
"""How long a regex scorer may hold the event loop; one that needs longer runs again in a thread, with up
to REGEX_TIMEOUT_S, so in-flight calls keep being timed and Ctrl-C keeps working."""



def _limiter(per_minute: float | None) -> AsyncLimiter | None:
    """A client-side rate limiter, or None. `aiolimiter` is imported only when a model sets rpm or tpm: its
    package reads its own version through importlib.metadata on import, ~20 ms of every sweep's start-up."""
    if not per_minute:
        return None
    from aiolimiter import AsyncLimiter

    return AsyncLimiter(per_minute, 60.0)

@dataclass(slots=True)
class _Parked:
    """A call backing off between attempts, with what its attempts so far have added up to."""

    case: Case
    trial: int
    attempt: int
    t0: float
    started_wall: float
    in_tok: int
    out_tok: int
    err_class: ErrorClass
    err_msg: str
    latency: float | None
    connect_ms: float | None
    job: JudgeJob | None = None


@dataclass(slots=True)
class _ModelLane:
    key: str
    """The model's key, or ``judge:<key>`` for a judge lane."""
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
    at_provider: list[int] = field(default_factory=lambda: [0])
    """Calls in flight at this model's provider from every lane of the model (one list shared by a model that is
    both a candidate and a judge): what its cap bounds."""
    exhausted: bool = False
    parked: list[tuple[float, int, _Parked]] = field(default_factory=list)
    """Heap of (due time, sequence, call) backing off: they hold no worker until due."""
    jobs: deque[JudgeJob] | None = None
    """A judge lane's answers to judge, in the order they came (None for a model's own lane)."""
    ready: deque[tuple[Case, int]] = field(default_factory=deque)
    """Chained cases whose parents passed in that trial, their inputs filled in: they go before new calls."""
    deferred: deque[tuple[Case, int]] = field(default_factory=deque)
    """Calls taken from `calls` while their case had max_concurrency_per_case trials under way: they go first
    once it has room."""
    escalations: deque[tuple[Case, int]] = field(default_factory=deque)
    """Calls whose next step is an escalation: they go to the target's provider, so they wait for room under the
    target's cap, not this lane's."""


class _FollowUp(NamedTuple):
    """A call that goes on after an answer ([run] repair, escalate_to): what its steps so far spent, and its next.
    A NamedTuple, built positionally: one is made per step (a slotted dataclass cost a third more)."""

    step: int
    """The next step's number (1 after the first answer)."""
    kind: str
    """The next step: 'repair' (the same model, one more turn) or 'escalation' (the target, asked afresh)."""
    messages: tuple[dict[str, str], ...]
    """What the next step sends."""
    answered_by: str
    """The model that answers the next step (the project's key: the lane's model, or an escalation's target)."""
    repairs: int
    first_passed: bool
    attempts: int
    """Attempts of the steps so far beyond one each: their rate-limit retries."""
    in_tok: int
    out_tok: int
    cost: float
    total_ms: float
    started_at: float
    target: _Escalation | None = None
    """The model an escalation step asks."""


@dataclass(frozen=True, slots=True)
class _Escalation:
    model: ModelConfig
    """The target, with the lane's prompt variant."""
    provider: Provider
    own_timeout: bool
    max_tokens: int
    temperature: float
    rpm: AsyncLimiter | None
    tpm: AsyncLimiter | None
    """The target's client-side limiters (shared with its own lane when it is a candidate too)."""
    at_provider: list[int]
    """Calls in flight at the target's provider, shared with its own lanes: escalations are counted here, not on
    the candidate's provider."""
    target_lane: _ModelLane | None
    """The target's own lane when it is a candidate too: its cap as set now (the console can move it)."""

    def has_room(self) -> bool:
        cap = self.model.max_concurrency if self.target_lane is None else self.target_lane.cap
        return cap is None or self.at_provider[0] < cap


def sealed_output(text: str) -> str:
    """What is stored of a sealed case's output: its SHA-256 and length, enough to tell whether answers changed
    between runs without keeping a held-out answer anywhere it could leak from."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"[sealed output: sha256 {digest}, {len(text)} characters]"


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
        self._keep_sealed = run.keep_sealed_outputs
        defaults = self._defaults = plan.project.defaults
        self._lanes: list[_ModelLane] = []
        rate_limits: dict[str, tuple[AsyncLimiter | None, AsyncLimiter | None]] = {}
        at_provider: dict[str, list[int]] = {}
        chained = any(c.depends_on for c in plan.cases)
        self._chains = Chains(plan.cases) if chained else None
        """A chained project's episodes: a dependent case is queued (lane.ready) once its parents passed."""
        lanes: list[tuple[str, ModelConfig, Iterator[tuple[Case, int]], deque[JudgeJob] | None]] = [
            (m.key, m, _roots(plan.pending(m.key)) if chained else plan.pending(m.key), None) for m in plan.models]
        lanes += [(j.key, j.model, iter(()), deque()) for j in plan.judges]
        for key, m, calls, jobs in lanes:
            # a model that is both a candidate and a judge has one provider and one set of rate limits
            rpm, tpm = rate_limits.setdefault(m.base_key, (_limiter(m.rpm), _limiter(m.tpm)))
            self._lanes.append(_ModelLane(
                key=key,
                model=m,
                calls=calls,
                provider=providers[m.key],
                own_timeout=bool(getattr(providers[m.key], "enforces_timeout", False)),
                cap=m.max_concurrency,
                max_tokens=m.max_tokens or defaults.max_tokens,
                temperature=m.temperature if m.temperature is not None else defaults.temperature,
                rpm=rpm,
                tpm=tpm,
                jobs=jobs,
                at_provider=at_provider.setdefault(m.base_key, [0]),
            ))
        self._by_key = {lane.key: lane for lane in self._lanes}
        self._seeds: dict[str, tuple[float, float]] = {}
        self._per_case = run.max_concurrency_per_case
        self._case_busy: dict[tuple[str, str], int] = {}
        """(lane, case id) -> trials under way, from first attempt to final end (backing off included)."""
        self._model_index = {m.key: i for i, m in enumerate(plan.models)}
        self._judged = plan.judged_cases()
        """Case id → (its llm_judge scorer, its judge lane) for the cases that are judged."""
        self._rr = 0
        self._cases_by_id: dict[str, Case] | None = None
        asked = concurrency if concurrency is not None else run.concurrency
        self.target = _bounded(asked)
        self._asked = None if asked == self.target else asked
        self._unstarted = _calls_to_make(plan)
        """Calls not yet taken from the lanes (judge jobs queued included): with the parked ones, the most workers
        that could be busy."""
        self._unjudgeable: list[tuple[_ModelLane, JudgeJob, str]] = []
        """Resumed answers that cannot be judged (a sealed case's answer that was not kept): reported at start."""
        self._backlog(plan)
        self._repair: Repair | None = run.repair if run.repair is not None and run.repair.attempts > 0 else None
        self._escalations: dict[str, _Escalation] = {}
        for lane in self._lanes:
            target = plan.escalations.get(lane.model.base_key) if lane.jobs is None else None
            if target is not None:
                tp = providers[target.key]
                self._escalations[lane.key] = _Escalation(
                    dataclasses.replace(target, variant=lane.model.variant), tp,
                    bool(getattr(tp, "enforces_timeout", False)), target.max_tokens or defaults.max_tokens,
                    target.temperature if target.temperature is not None else defaults.temperature,
                    *rate_limits.setdefault(target.key, (_limiter(target.rpm), _limiter(target.tpm))),
                    at_provider.setdefault(target.base_key, [0]),
                    # the target's own lane, when it is a candidate too: under this lane's variant if it has one
                    self._by_key.get(lane_of(target.key, lane.model.variant.name if lane.model.variant else None))
                    or self._by_key.get(target.key))
        self._follow: dict[tuple[str, str, int], _FollowUp] | None = \
            {} if self._repair is not None or self._escalations else None
        """Calls between steps (a repair turn or an escalation next), by (lane, case id, trial); None when the
        project has neither: the hot path then never looks."""
        self._answerer = {lane.key: lane.model.base_key for lane in self._lanes}
        """The model that answers a lane's calls (the project's key, its variant left out), as its steps name it."""
        self._final_at_start: list[CallResult] = []
        if self._follow is not None and plan.steps:
            self._steps_resumed(plan)
        self._unreachable_at_start: list[tuple[_ModelLane, Case, int, str]] = []
        if self._chains is not None:
            self._chains_started(plan, self._chains)
        self._parked_n = 0
        self._seq = itertools.count()
        self._scrubbers: dict[str, SealedScrubber] = {}
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
        for lane, job, why in self._unjudgeable:
            now = time.monotonic()
            self._finish(lane, self._errored(lane, job.case, judge_trial(job.model_index, job.trial, self.plan.trials),
                                             "judge_error", why, 0, None, now, now, time.time(), 0, 0, None), job, now)
        self._unjudgeable.clear()
        for lane, case, trial, why in self._unreachable_at_start:
            self._unreachable(lane, case, trial, why)
        self._unreachable_at_start.clear()
        for r in self._final_at_start:  # a chain whose last step was stored but not its result: it ends now
            self._unstarted -= 1
            now = time.monotonic()
            self.emit(CallStarted(r.model_key, r.case_id, r.trial, r.attempts, now))  # watchers see it start and end
            self.emit(CallFinished(r, now))
        self._final_at_start.clear()
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

    def _cancel_parked(self) -> None:
        """Calls stopped while backing off end as 'cancelled', like the ones in flight: resume runs them again."""
        now = time.monotonic()
        for lane in self._lanes:
            for _due, _seq, p in sorted(lane.parked):
                self._finish(lane, self._errored(lane, p.case, p.trial, "cancelled", "the sweep was stopped",
                                                 p.attempt, p.latency, p.t0, now, p.started_wall, p.in_tok,
                                                 p.out_tok, p.connect_ms), p.job, now)
            lane.parked.clear()
        self._parked_n = 0

    def _spawn(self) -> None:
        tg = self._tg
        if tg is None or self.cancelled:
            return
        # a worker per call that could be running now, never more: the rest of the pool is spawned when a
        # raised limit can use it
        want = min(self.target, max(1, self._unstarted + self._parked_n))  # one, to end a run with none to do
        while self.workers < want:
            self.workers += 1
            tg.start_soon(self._worker)

    def _notify(self) -> None:
        self._wake.set()
        self._wake = anyio.Event()

    def _backlog(self, plan: Plan) -> None:
        """Queue what a resumed run left to judge (stored answers awaiting their judge) before any new work."""
        cases = {c.id: c for c in plan.cases}
        for a in plan.awaiting:
            case = cases.get(a.case_id)
            judged = self._judged.get(a.case_id)
            if case is None or judged is None or a.model_key not in self._model_index:
                continue  # outside this plan (a filter), or no longer judged: left as stored
            scorer, lane_key = judged
            lane = self._by_key[lane_key]
            job = JudgeJob(a.model_key, self._model_index[a.model_key], case, a.trial, a.output, a.finish_reason,
                            scorer)
            if case.sealed and not self._keep_sealed:
                self._unjudgeable.append((lane, job, "the answer to this sealed case was not kept (keep_sealed_outputs "
                                                     "= false), so the judge cannot see it after the interruption"))
                continue
            assert lane.jobs is not None
            lane.jobs.append(job)
            self._unstarted += 1

    def _enqueue(self, job: JudgeJob, lane_key: str) -> None:
        """A candidate answered a judged case: its judge lane has one more call to make."""
        jobs = self._by_key[lane_key].jobs
        assert jobs is not None
        jobs.append(job)
        self._unstarted += 1
        self._spawn()
        self._notify()

    def _next_call(self) -> tuple[_ModelLane, Case, int, _Parked | None, JudgeJob | None] | None:
        lanes = self._lanes
        n = len(lanes)
        now = time.monotonic() if self._parked_n else 0.0
        for i in range(n):
            idx = (self._rr + i) % n
            lane = lanes[idx]
            if lane.escalations and self._escalations[lane.key].has_room():  # under the target's cap, not the lane's
                case, trial = lane.escalations.popleft()
                self._unstarted -= 1
                self._rr = idx + 1
                if self._per_case is not None:
                    self._case_busy[(lane.key, case.id)] = self._case_busy.get((lane.key, case.id), 0) + 1
                return lane, case, trial, None, None
            if lane.cap is not None and lane.at_provider[0] >= lane.cap:
                continue
            parked = lane.parked
            if parked:
                if parked[0][0] <= now and (not self._escalations or self._parked_startable(lane, parked[0][2])):
                    # a retry that is due goes first (an escalation's, when its target has room)
                    p = heapq.heappop(parked)[2]
                    self._parked_n -= 1
                    self._rr = idx + 1
                    return lane, p.case, p.trial, p, p.job
                room = self.target if lane.cap is None else min(self.target, lane.cap)
                if lane.in_flight + len(parked) >= room:
                    # backing off: no new calls for this model beyond its cap (or the pool): a capped model that is
                    # being refused must not keep opening new calls while its refused ones wait, each refusal
                    # pushing the provider's window further out
                    continue
            jobs = lane.jobs
            if jobs is not None:  # a judge lane: the answers queued so far
                if not jobs:
                    continue
                job = jobs.popleft()
                self._unstarted -= 1
                self._rr = idx + 1
                return lane, job.case, judge_trial(job.model_index, job.trial, self.plan.trials), None, job
            if lane.ready:
                case, trial = lane.ready.popleft()
                self._unstarted -= 1
                self._rr = idx + 1
                if self._per_case is not None:  # counted like any call of its case (its end is)
                    self._case_busy[(lane.key, case.id)] = self._case_busy.get((lane.key, case.id), 0) + 1
                return lane, case, trial, None, None
            if lane.exhausted:
                continue
            item = next(lane.calls, None) if self._per_case is None else self._next_for_case(lane)
            if item is None:
                lane.exhausted = self._per_case is None or not lane.deferred
                continue
            self._unstarted -= 1
            self._rr = idx + 1
            return lane, item[0], item[1], None, None
        return None

    def _next_for_case(self, lane: _ModelLane) -> tuple[Case, int] | None:
        """The lane's next call whose case has room under max_concurrency_per_case (counted as under way), or None;
        calls passed over wait in the lane's `deferred`, ahead of new ones."""
        limit = self._per_case
        assert limit is not None
        busy = self._case_busy
        item: tuple[Case, int] | None = None
        for i, (case, trial) in enumerate(lane.deferred):
            if busy.get((lane.key, case.id), 0) < limit:
                item = (case, trial)
                del lane.deferred[i]
                break
        while item is None:
            nxt = next(lane.calls, None)
            if nxt is None:
                return None
            if busy.get((lane.key, nxt[0].id), 0) < limit:
                item = nxt
            else:
                lane.deferred.append(nxt)
        key = (lane.key, item[0].id)
        busy[key] = busy.get(key, 0) + 1
        return item

    def _case_ended(self, lane: _ModelLane, case: Case, trial: int) -> None:
        """A call of a per-case-limited lane returned from its worker: its case has room again unless it backs off."""
        if any(p.case.id == case.id and p.trial == trial for _d, _s, p in lane.parked):
            return
        key = (lane.key, case.id)
        busy = self._case_busy
        busy[key] -= 1
        if not busy[key]:
            del busy[key]

    def _all_done(self) -> bool:
        """Nothing left to start: no call backing off, every model's calls taken, every judge queue empty (a
        running candidate may still queue a judge call: its worker then takes it, or spawns one)."""
        return not self._parked_n and all((lane.exhausted and not lane.ready and not lane.escalations)
                                          if lane.jobs is None else not lane.jobs
                                          for lane in self._lanes)

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
                    if self._all_done():
                        return
                    await self._idle()
                    continue
                lane, case, trial, parked, job = nxt
                esc = self._escalating(lane, case, trial) if self._escalations and job is None else None
                at_provider = lane.at_provider if esc is None else esc.at_provider  # whose provider it asks
                lane.in_flight += 1
                at_provider[0] += 1
                self.in_flight += 1
                try:
                    await self._call(lane, case, trial, parked, job)
                finally:
                    lane.in_flight -= 1
                    at_provider[0] -= 1
                    self.in_flight -= 1
                    if self._per_case is not None and job is None:
                        self._case_ended(lane, case, trial)
                    if lane.cap is not None or lane.parked or lane.deferred or esc is not None or lane.escalations:
                        self._notify()
        finally:
            self.workers -= 1

    def _escalating(self, lane: _ModelLane, case: Case, trial: int) -> _Escalation | None:
        """The target a call's next step escalates to, or None (its step is the lane's own)."""
        assert self._follow is not None
        fu = self._follow.get((lane.key, case.id, trial))
        return None if fu is None else fu.target

    def _parked_startable(self, lane: _ModelLane, p: _Parked) -> bool:
        """A due retry may start: an escalation's only with room under its target's cap."""
        esc = self._escalating(lane, p.case, p.trial) if p.job is None else None
        return esc is None or esc.has_room()

    async def _idle(self) -> None:
        """Wait for a change (a call ended, a limit moved) or for the next parked call that could start to be due."""
        wake = self._wake
        due = min((lane.parked[0][0] for lane in self._lanes
                   if lane.parked and (lane.cap is None or lane.at_provider[0] < lane.cap)), default=None)
        if due is None:
            await wake.wait()  # every lane with work is at its cap, or backing off with its share in use
            return
        with anyio.move_on_after(max(0.0, due - time.monotonic())):
            await wake.wait()

    def emit(self, ev: Event) -> None:
        """Hand one event to every sink, in order (also for run-level events from beside the engine)."""
        for sink in self._sinks:
            sink(ev)
        if self._chains is not None and type(ev) is CallFinished:
            self._chained(ev.result)

    def _chains_started(self, plan: Plan, chains: Chains) -> None:
        """Each model's dependents that a resumed run can decide at once (their parents are stored), and those
        whose parent a filter left out (unreachable)."""
        for lane in self._lanes:
            if lane.jobs is not None:
                continue
            done = plan.done.get(lane.key, set())
            pending = [(c.id, t) for c in plan.cases if c.depends_on for t in range(plan.trials)
                       if (c.id, t) not in done]
            for case, trial, why in chains.start(lane.key, plan.chain_outcomes.get(lane.key, ()), pending):
                if why is None:
                    lane.ready.append((case, trial))
                else:
                    self._unreachable_at_start.append((lane, case, trial, why))

    def _chained(self, r: CallResult) -> None:
        """A call of a case others depend on ended: queue the dependents it made ready, record those it made
        unreachable. A cancelled call decides nothing (resume runs it again)."""
        chains = self._chains
        assert chains is not None
        lane = self._by_key.get(r.model_key)
        if r.error_class == "cancelled" or lane is None or lane.jobs is not None or r.case_id not in chains.involved:
            return
        for case, why in chains.finished(lane.key, r.case_id, r.trial, (r.status == "passed", r.output)):
            if why is None:
                lane.ready.append((case, r.trial))
            else:
                self._unreachable(lane, case, r.trial, why)
        if lane.ready:
            self._spawn()
            self._notify()

    def _unreachable(self, lane: _ModelLane, case: Case, trial: int, why: str) -> None:
        """Store a chained call that is not made: its parent did not pass (coverage as not run, never wrong)."""
        self._unstarted -= 1
        now = time.monotonic()
        self.emit(CallFinished(self._result(lane, case, trial, verdict.unreachable(why), None, 0, now, now, now,
                                            time.time(), 0, 0), now))

    async def _call(self, lane: _ModelLane, case: Case, trial: int, parked: _Parked | None,
                    job: JudgeJob | None = None) -> None:
        """Attempts of one call until it ends (one CallFinished, or JudgeFinished for a judge call `job`) or backs
        off (parked, to go on when due)."""
        model = lane.model
        mkey = lane.key
        policy = self.policy
        provider, own_timeout, max_tokens, temperature = lane.provider, lane.own_timeout, lane.max_tokens, \
            lane.temperature
        rpm, tpm = lane.rpm, lane.tpm
        fu = self._follow.get((mkey, case.id, trial)) if self._follow is not None and job is None else None
        if fu is not None and fu.target is not None:  # an escalation: the target model answers, under its limits
            esc = fu.target
            model, provider, own_timeout, max_tokens, temperature = esc.model, esc.provider, esc.own_timeout, \
                esc.max_tokens, esc.temperature
            rpm, tpm = esc.rpm, esc.tpm
        latency: float | None
        connect_ms: float | None
        if parked is None:
            started_wall = time.time()
            t0 = time.monotonic()
            attempt = 0
            in_tok = out_tok = 0
            err_class: ErrorClass = "transient"
            err_msg = ""
            latency = connect_ms = None
        else:
            p = parked
            started_wall, t0, attempt, in_tok, out_tok = p.started_wall, p.t0, p.attempt, p.in_tok, p.out_tok
            err_class, err_msg, latency, connect_ms = p.err_class, p.err_msg, p.latency, p.connect_ms
        http_status: int | None = None
        err_detail: str | None = None
        timed_out_stream, first_ms = False, None
        try:
            if rpm is not None:
                await rpm.acquire()
            if job is not None:
                messages = judge_messages(model, job.scorer, job.case, job.output)
            if tpm is not None:
                prompt = case.prompt_text() if job is None else messages[-1]["content"]
                need = estimate_tokens(prompt) + max_tokens
                await tpm.acquire(min(need, model.tpm or need))
            attempt += 1  # counts attempts started: a call cancelled while waiting on a limiter made none
            ta = time.monotonic()
            self.emit(CallStarted(mkey, case.id, trial, attempt, ta))
            retry_after: float | None = None
            retry_source: str | None = None
            http_status = None
            # Positional construction on the hot path: keyword arguments cost 2.5 µs more per CallResult.
            if job is not None:
                request = Request(model, case, trial, attempt, messages, lane.max_tokens, lane.temperature,
                                  self.timeout_s, JudgeTask(job.output, case.expected, job.scorer.scale_range()))
            elif fu is None:
                request = Request(model, case, trial, attempt, build_messages(model, self._defaults, case),
                                  max_tokens, temperature, self.timeout_s)
            else:
                request = Request(model, case, trial, attempt, fu.messages, max_tokens, temperature, self.timeout_s,
                                  None, fu.step if fu.kind == "repair" else 0)
            try:
                if own_timeout:
                    comp = await provider.complete(request)
                else:
                    with anyio.fail_after(self.timeout_s):
                        comp = await provider.complete(request)
            except TimeoutError as e:
                latency, connect_ms = (time.monotonic() - ta) * 1000.0, None
                err_class, err_msg = "timeout", f"no complete answer within {self.timeout_s:g}s"
                first = getattr(e, "first_token", None)  # a streamed attempt: had its first token come?
                if first is not None:
                    first_s = getattr(e, "first_token_s", None)
                    timed_out_stream, first_ms = True, None if first_s is None else first_s * 1000.0
                    err_msg += f" (its first token came after {first_s:.1f}s)" if first_s is not None \
                        else " (no token came: probably hung)"
            except RateLimited as e:
                latency, connect_ms = _attempt_times(e, ta)
                err_class, err_msg, retry_after = "rate_limited", e.message, e.retry_after
                retry_source = e.retry_after_source
                http_status = e.http_status
                in_tok += getattr(e, "input_tokens", 0)
                out_tok += getattr(e, "output_tokens", 0)
            except ProviderError as e:
                latency, connect_ms = _attempt_times(e, ta)
                # a terminal error's class is its own: 'terminal', or 'solver_error' (its traceback kept as detail)
                err_class = e.error_class if isinstance(e, TerminalError) else \
                    "incomplete_stream" if isinstance(e, IncompleteStream) else "transient"  # type: ignore[assignment]
                err_msg, http_status = e.message, e.http_status
                err_detail = getattr(e, "detail", None)
                in_tok += getattr(e, "input_tokens", 0)
                out_tok += getattr(e, "output_tokens", 0)
            except (anyio.get_cancelled_exc_class(), ArenaError):  # ArenaError: a misuse that must stop the run
                raise
            except Exception as e:  # a provider bug must not take the sweep down: record it, never retry
                latency, connect_ms = (time.monotonic() - ta) * 1000.0, None
                err_class, err_msg = "terminal", f"provider raised {type(e).__name__}: {e}"
            else:
                now = time.monotonic()
                in_tok += comp.input_tokens
                out_tok += comp.output_tokens
                if job is not None:
                    self._judged_by(lane, job, comp, attempt, ta, t0, now, started_wall, in_tok, out_tok)
                    return
                scorer = self._scorers.for_case(case)
                judged: tuple[ScorerConfig, str] | None = None
                sc: Score | str | None = None
                if scorer.cfg.kind == "llm_judge":  # stored unscored now; its judge (if sampled) scores it later
                    judged = self._judged.get(case.id)
                else:
                    try:
                        if scorer.blocking:  # a process or the user's code: never on the event loop
                            raise ScoringSlow(f"scorer {scorer.cfg.name!r} runs off the event loop")
                        sc = scorer.verdict(comp.text, case, SCORE_ON_LOOP_S)  # not .score: a call less
                    except Exception as e:  # slow, or no verdict at all: off the hot path
                        sc = await self._score_after(e, comp.text, case)
                r = self._result(lane, case, trial, verdict.answered(sc, comp.text, comp.finish_reason, case.language,
                                                                     judged is not None),
                                 comp, attempt, ta, t0, now, started_wall, in_tok, out_tok)
                if self._follow is not None and (fu is not None or r.status == "failed"):
                    if fu is not None and fu.target is not None:  # the target's prices
                        r = r._replace(cost=model.cost(in_tok, out_tok) + (comp.cost or 0.0))
                    done = self._followed(lane, case, trial, r, fu, request.messages, now)
                    if done is None:
                        return
                    self.emit(done)
                else:
                    self.emit(CallFinished(r, now))
                if judged is not None:
                    self._enqueue(JudgeJob(mkey, self._model_index[mkey], case, trial, comp.text, comp.finish_reason,
                                            judged[0]), judged[1])
                return
            # the attempt failed: retry (parked until due, holding no worker) or record
            if err_class in _RETRIED and attempt < policy.max_attempts:
                delay = policy.delay(attempt, retry_after, self._rng)
                elapsed = time.monotonic() - t0
                if elapsed + delay <= policy.budget_s:
                    self.emit(CallRetrying(mkey, case.id, trial, attempt, err_class, delay,
                                            self._message(case, err_msg), time.monotonic(), retry_after,
                                            http_status, retry_source, first_ms, timed_out_stream))
                    heapq.heappush(lane.parked, (time.monotonic() + delay, next(self._seq), _Parked(
                        case, trial, attempt, t0, started_wall, in_tok, out_tok, err_class, err_msg, latency,
                        connect_ms, job)))
                    self._parked_n += 1
                    self._notify()  # idle workers wait for the earliest due call: this one may be earlier
                    return
                asked = f"{retry_source or 'retry-after'} {retry_after:g}s" if retry_after is not None \
                    else f"backoff {delay:.1f}s"
                err_msg = (f"{err_msg} ({asked} exceeds the {policy.budget_s - elapsed:.0f}s left of this "
                           f"call's {policy.budget_s:g}s budget; not retried)")
        except anyio.get_cancelled_exc_class():
            now = time.monotonic()
            self._finish(lane, self._errored(lane, case, trial, "cancelled", "the sweep was stopped", attempt, latency,
                                             t0, now, started_wall, in_tok, out_tok, connect_ms), job, now)
            raise
        now = time.monotonic()
        r = self._errored(lane, case, trial, err_class, err_msg, attempt, latency, t0, now, started_wall, in_tok,
                          out_tok, connect_ms, http_status)
        if err_detail is not None:
            r = r._replace(score_detail=self._message(case, err_detail))
        if timed_out_stream:  # hung or slow, for timeout_s's evidence (tuning/budgets.py)
            r = r._replace(finish_reason=DEADLINE, ttft_ms=first_ms)
        self._finish(lane, r, job, now)

    def _finish(self, lane: _ModelLane, r: CallResult, job: JudgeJob | None, now: float) -> None:
        """Report a call that ended without an answer: CallFinished, or for a judge call the JudgeFinished that
        leaves its candidate judge_error (the judge's own error class is in the message) or, if cancelled, unscored."""
        if job is None:
            if self._follow is not None:
                fu = self._follow.pop((lane.key, r.case_id, r.trial), None)
                if fu is not None and r.error_class != "cancelled":  # a cancelled step: resume goes on from the steps
                    r = _merged(r, fu)
            self.emit(CallFinished(r, now))
            return
        if r.error_class not in ("cancelled", "judge_error"):
            r = r._replace(error_class="judge_error", failure_mode="judge_error",
                           error_message=self._message(job.case, f"the judge's call failed ({r.error_class}): "
                                                                 f"{r.error_message}"))
        elif r.error_class == "judge_error":
            r = r._replace(failure_mode="judge_error")
        self.emit(JudgeFinished(r, job.model_key, job.case.id, job.trial, now))

    def _judged_by(self, lane: _ModelLane, job: JudgeJob, comp: Completion, attempt: int, ta: float, t0: float,
                   now: float, started_wall: float, in_tok: int, out_tok: int) -> None:
        """The judge answered: read its verdict on the candidate (JudgeFinished either way; unreadable is a
        judge_error, never a 0)."""
        case = job.case
        v = verdict.from_judge(job.scorer, comp.text, job.output, job.finish_reason, case.language,
                               comp.finish_reason)  # the judge's own finish: cut at its limit, none is read
        r = self._result(lane, case, judge_trial(job.model_index, job.trial, self.plan.trials), v, comp, attempt, ta,
                         t0, now, started_wall, in_tok, out_tok)
        self.emit(JudgeFinished(r, job.model_key, case.id, job.trial, now))

    def _result(self, lane: _ModelLane, case: Case, trial: int, v: verdict.Verdict, comp: Completion | None,
                attempts: int, ta: float, t0: float, now: float, started_wall: float, in_tok: int, out_tok: int,
                latency_ms: float | None = None, connect_ms: float | None = None,
                http_status: int | None = None) -> CallResult:
        """The one CallResult builder, for every way a call ends: with an answer `comp` (its output, a sealed case's
        only as a digest, and its times: HTTP providers time the wire themselves, connecting left out), or without
        one (the last attempt's `latency_ms` and `connect_ms`). Positional on the hot path: keyword arguments cost
        2.5 µs more per CallResult."""
        msg = v.error_message
        detail = v.detail
        extra_cost = 0.0
        if comp is None:
            output: str | None = None
            ttft_ms: float | None = None
            finish_reason: str | None = None
            estimated = False
        else:
            output = sealed_output(comp.text) if case.sealed and not self._keep_sealed else comp.text
            wire_s, ttft, connect_s = comp.latency_s, comp.ttft_s, comp.connect_s
            latency_ms = wire_s * 1000.0 if wire_s is not None else (now - ta) * 1000.0
            ttft_ms = ttft * 1000.0 if ttft is not None else None
            connect_ms = connect_s * 1000.0 if connect_s is not None else None
            finish_reason, estimated = comp.finish_reason, comp.tokens_estimated
            extra_cost = comp.cost or 0.0  # what a solver says it spent beyond tokens
        return CallResult(
            lane.key, case.id, trial, v.status, output, v.score, v.passed, v.error_class,
            None if msg is None else self._message(case, msg), attempts, latency_ms, (now - t0) * 1000.0, ttft_ms,
            in_tok, out_tok, lane.model.cost(in_tok, out_tok) + extra_cost, finish_reason, estimated, started_wall,
            started_wall + (now - t0), connect_ms, v.failure_mode,
            None if detail is None else self._message(case, detail), http_status)

    def _followed(self, lane: _ModelLane, case: Case, trial: int, r: CallResult, fu: _FollowUp | None,
                  sent: tuple[dict[str, str], ...], now: float) -> CallFinished | None:
        """An answer of a call with repairs or an escalation configured: the call's CallFinished (a call of more than
        one step carries its last step in it), or None when a next step (a repair turn, an escalation) is queued on
        the lane, the answer emitted as one of its steps."""
        nxt = self._step_after(lane, case, r, fu, sent)
        if fu is None:
            if nxt is None:
                return CallFinished(r, now)  # failed in a way nothing follows up: an ordinary call
            self.emit(StepFinished(r, 0, "answer", self._answerer[lane.key], now))
        elif nxt is None:
            assert self._follow is not None
            del self._follow[(lane.key, case.id, trial)]
            return CallFinished(_merged(r, fu), now, StepFinished(r, fu.step, fu.kind, fu.answered_by, now))
        else:
            self.emit(StepFinished(r, fu.step, fu.kind, fu.answered_by, now))
        assert self._follow is not None
        self._follow[(lane.key, case.id, trial)] = nxt
        (lane.ready if nxt.target is None else lane.escalations).append((case, trial))
        self._unstarted += 1
        if self.workers > self.target or self.paused:  # this worker may retire: wake one that stays
            self._notify()
        return None

    def _step_after(self, lane: _ModelLane, case: Case, r: CallResult, fu: _FollowUp | None,
                    sent: tuple[dict[str, str], ...]) -> _FollowUp | None:
        """What follows answer `r` of a call of `case` (its steps so far `fu`, the answer to `sent`): a repair turn to
        the same model with the scorer's word on it, an escalation to the lane's target, or nothing (None)."""
        if r.status != "failed":
            return None
        rep = self._repair
        if fu is None:
            repair = rep is not None and r.failure_mode in rep.on  # (a repair has attempts >= 1)
            if not repair and lane.key not in self._escalations:
                return None  # decided before any figure is added up: the common failed answer costs a lookup
            step, repairs, first, started = 1, 0, r.passed, r.started_at
            attempts, in_tok, out_tok, cost, total_ms = \
                r.attempts - 1, r.input_tokens, r.output_tokens, r.cost, r.total_ms
        else:
            if fu.kind == "escalation":
                return None
            repairs = fu.repairs
            repair = rep is not None and repairs < rep.attempts and r.failure_mode in rep.on
            if not repair and lane.key not in self._escalations:
                return None
            step, first, started = fu.step + 1, fu.first_passed, fu.started_at
            attempts, in_tok, out_tok, cost, total_ms = \
                fu.attempts + r.attempts - 1, fu.in_tok + r.input_tokens, fu.out_tok + r.output_tokens, \
                fu.cost + r.cost, fu.total_ms + r.total_ms
        if repair:
            assert rep is not None
            error = r.score_detail or r.error_message or str(r.failure_mode).replace("_", " ")
            msgs = (*sent, {"role": "assistant", "content": r.output or ""},
                    {"role": "user", "content": rep.text(error)})
            return _FollowUp(step, "repair", msgs, self._answerer[lane.key], repairs + 1, first, attempts, in_tok,
                             out_tok, cost, total_ms, started)
        esc = self._escalations[lane.key]
        return _FollowUp(step, "escalation", build_messages(esc.model, self._defaults, case), esc.model.key, repairs,
                         first, attempts, in_tok, out_tok, cost, total_ms, started, esc)

    def plan_case(self, case_id: str) -> Case:
        """A case of the plan by id (as written: an escalation asks it afresh)."""
        cases = self._cases_by_id
        if cases is None:
            cases = self._cases_by_id = {c.id: c for c in self.plan.cases}
        return cases[case_id]

    def _steps_resumed(self, plan: Plan) -> None:
        """A resumed run's calls that stopped between steps: their chains rebuilt from the stored steps, so each goes
        on with its next step (or, when its last step was stored but not its result, ends with it)."""
        assert self._follow is not None
        for lane in self._lanes:
            by_call: dict[tuple[str, int], list[tuple[int, str, CallResult]]] = {}
            for cid, trial, step, kind, _model, r in plan.steps.get(lane.key, ()):
                by_call.setdefault((cid, trial), []).append((step, kind, r))
            for (cid, trial), steps in by_call.items():
                if cid not in {c.id for c in plan.cases} or (cid, trial) in plan.done.get(lane.key, ()):
                    continue
                case = self.plan_case(cid)
                fu: _FollowUp | None = None
                sent = build_messages(lane.model, self._defaults, case)
                last: CallResult | None = None
                for _step, _kind, r in sorted(steps, key=lambda s: s[0]):
                    last = r
                    nxt = self._step_after(lane, case, r, fu, sent)
                    if nxt is None:
                        break
                    fu, sent = nxt, nxt.messages
                if last is None:
                    continue
                if fu is not None and fu.step > max(s[0] for s in steps):
                    self._follow[(lane.key, cid, trial)] = fu  # its next step is taken from the lane as usual
                elif fu is not None:  # ends at start, never taken from the lane (`_unstarted` counted it)
                    self._final_at_start.append(_merged(last, fu))
                    plan.done.setdefault(lane.key, set()).add((cid, trial))

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

    def _message(self, case: Case, msg: str) -> str:
        """An error message as stored and shown: bounded, and for a sealed case without the case's texts (a
        provider's error body may quote the prompt)."""
        if not case.sealed:
            return msg[:MESSAGE_LIMIT]
        scrubber = self._scrubbers.get(case.id)
        if scrubber is None:
            if len(self._scrubbers) >= 16:  # the few cases retrying now; an index per sealed case would pile up
                del self._scrubbers[next(iter(self._scrubbers))]
            scrubber = self._scrubbers[case.id] = SealedScrubber(case)
        # scrubbed before the cut, with a margin, so no run of case text straddles the cut unnoticed
        return scrubber.scrub(msg[:MESSAGE_LIMIT + MIN_RUN])[:MESSAGE_LIMIT]

    def _errored(self, lane: _ModelLane, case: Case, trial: int, err_class: ErrorClass, msg: str, attempts: int,
                 latency: float | None, t0: float, now: float, started_wall: float, in_tok: int,
                 out_tok: int, connect_ms: float | None, http_status: int | None = None) -> CallResult:
        return self._result(lane, case, trial, verdict.ended(err_class, msg), None, attempts, now, t0, now,
                            started_wall, in_tok, out_tok, latency, connect_ms, http_status)


def _merged(r: CallResult, fu: _FollowUp) -> CallResult:
    """The last step `r` of a call (after steps `fu`) as its one stored result: the spend of every step, the
    rate-limit retries of every step as its attempts beyond one (repairs are counted apart), how its first answer
    ended, and the model it was escalated to. Built positionally: `_replace` with these nine fields cost twice as much.
    """
    (key, case_id, trial, status, output, score, passed, error_class, error_message, attempts, latency_ms, total_ms,
     ttft_ms, in_tok, out_tok, cost, finish_reason, estimated, _started, finished_at, connect_ms, failure_mode,
     detail, http_status, _repairs, _escalated_to, _first_passed) = r  # every field: a new one fails here, loudly
    return CallResult(key, case_id, trial, status, output, score, passed, error_class, error_message,
                      attempts + fu.attempts, latency_ms, total_ms + fu.total_ms, ttft_ms, in_tok + fu.in_tok,
                      out_tok + fu.out_tok, cost + fu.cost, finish_reason, estimated, fu.started_at, finished_at,
                      connect_ms, failure_mode, detail, http_status, fu.repairs,
                      None if fu.target is None else fu.answered_by, fu.first_passed)


_RETRIED = frozenset(("rate_limited", "transient", "timeout", "incomplete_stream"))
"""Error classes a later attempt may not repeat: terminal ones ('terminal', 'solver_error') never sleep."""




def _attempt_times(e: ProviderError, ta: float) -> tuple[float, float | None]:
    """latency_ms and connect_ms of a failed attempt: from the wire where the provider timed it (an HTTP
    refusal), else the whole attempt."""
    if e.latency_s is None:
        return (time.monotonic() - ta) * 1000.0, None
    return e.latency_s * 1000.0, e.connect_s * 1000.0 if e.connect_s is not None else None


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

"""Lanes (a model's, a model · variant's, a judge's) with their queues, and the scheduler that picks the next call.

A lane's work, in the order it is taken: an escalation step whose target has room, a retry that is due, a judge
lane's queued answers, chained cases made ready (and repair steps), calls deferred for max_concurrency_per_case,
then new calls from the plan. The scheduler is pure (no clock of its own, no anyio): the runner asks it for the
next call at a time and tells it when calls end or back off.

A call backing off between attempts holds no worker: it is parked in its lane's heap of calls due
at a time, and the worker goes on with other work (one model told to wait 120 s used to hold every
worker asleep while healthy models stood still). A due call goes before a new one of its model. A
model's parked and in-flight calls together stay within its cap (or the global limit), so a model that is backing
off does not keep opening new calls against its provider; its cap still means calls in flight at the
provider, which parked calls are not.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from arenatui.config.schema import Case, ModelConfig
from arenatui.engine.call import Call
from arenatui.engine.judging import JudgeJob
from arenatui.kernel.events import lane_key as lane_of
from arenatui.plan import Plan, judge_trial
from arenatui.providers.base import Provider

if TYPE_CHECKING:
    from aiolimiter import AsyncLimiter

    from arenatui.engine.followups import NextStep


def limiter(per_minute: float | None) -> AsyncLimiter | None:
    """A client-side rate limiter, or None. `aiolimiter` is imported only when a model sets rpm or tpm: its
    package reads its own version through importlib.metadata on import, ~20 ms of every sweep's start-up."""
    if not per_minute:
        return None
    from aiolimiter import AsyncLimiter

    return AsyncLimiter(per_minute, 60.0)


@dataclass(slots=True)
class Lane:
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
    parked: list[tuple[float, int, Call]] = field(default_factory=list)
    """Heap of (due time, sequence, call) backing off: they hold no worker until due."""
    jobs: deque[JudgeJob] | None = None
    """A judge lane's answers to judge, in the order they came (None for a model's own lane)."""
    ready: deque[tuple[Case, int]] = field(default_factory=deque)
    """Chained cases whose parents passed in that trial, their inputs filled in, and repair steps: they go before
    new calls."""
    deferred: deque[tuple[Case, int]] = field(default_factory=deque)
    """Calls taken from `calls` while their case had max_concurrency_per_case trials under way: they go first
    once it has room."""
    escalations: deque[tuple[Case, int]] = field(default_factory=deque)
    """Calls whose next step is an escalation: they go to the target's provider, so they wait for room under the
    target's cap, not this lane's."""
    idle_s: float = 0.0
    """Seconds the lane had no call in flight or backing off (up to `idle_from`), for the level tracker."""
    idle_from: float = 0.0
    """Since when the lane has had none (monotonic seconds), 0.0 while it has some or has not started."""
    attempt_t: float = 0.0
    """When the attempt whose end is being reported began (set just before its event is emitted): the level tracker
    tells by it an attempt sent before a level change from one sent after."""


@dataclass(frozen=True, slots=True)
class Escalation:
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
    target_lane: Lane | None
    """The target's own lane when it is a candidate too: its cap as set now (the console can move it)."""

    def has_room(self) -> bool:
        cap = self.model.max_concurrency if self.target_lane is None else self.target_lane.cap
        return cap is None or self.at_provider[0] < cap


_Limits = dict[str, tuple["AsyncLimiter | None", "AsyncLimiter | None"]]


def lanes_of(plan: Plan, providers: Mapping[str, Provider], calls: Mapping[str, Iterator[tuple[Case, int]]]
             ) -> tuple[list[Lane], dict[str, Escalation]]:
    """A lane per model (× variant) with its `calls`, one per judge model, and each lane's escalation target."""
    defaults = plan.project.defaults
    rate_limits: _Limits = {}
    at_provider: dict[str, list[int]] = {}
    lanes: list[Lane] = []
    specs: list[tuple[str, ModelConfig, Iterator[tuple[Case, int]], deque[JudgeJob] | None]] = [
        (m.key, m, calls[m.key], None) for m in plan.models]
    specs += [(j.key, j.model, iter(()), deque()) for j in plan.judges]
    for key, m, todo, jobs in specs:
        # a model that is both a candidate and a judge has one provider and one set of rate limits
        rpm, tpm = rate_limits.setdefault(m.base_key, (limiter(m.rpm), limiter(m.tpm)))
        lanes.append(Lane(
            key=key, model=m, calls=todo, provider=providers[m.key],
            own_timeout=bool(getattr(providers[m.key], "enforces_timeout", False)), cap=m.max_concurrency,
            max_tokens=m.max_tokens or defaults.max_tokens,
            temperature=m.temperature if m.temperature is not None else defaults.temperature,
            rpm=rpm, tpm=tpm, jobs=jobs, at_provider=at_provider.setdefault(m.base_key, [0])))
    by_key = {lane.key: lane for lane in lanes}
    escalations: dict[str, Escalation] = {}
    for lane in lanes:
        target = plan.escalations.get(lane.model.base_key) if lane.jobs is None else None
        if target is None:
            continue
        tp = providers[target.key]
        variant = lane.model.variant
        escalations[lane.key] = Escalation(
            dataclasses.replace(target, variant=variant), tp, bool(getattr(tp, "enforces_timeout", False)),
            target.max_tokens or defaults.max_tokens,
            target.temperature if target.temperature is not None else defaults.temperature,
            *rate_limits.setdefault(target.key, (limiter(target.rpm), limiter(target.tpm))),
            at_provider.setdefault(target.base_key, [0]),
            # the target's own lane, when it is a candidate too: under this lane's variant if it has one
            by_key.get(lane_of(target.key, variant.name if variant else None)) or by_key.get(target.key))
    return lanes, escalations


class Scheduler:
    """Which call a free worker makes next, round-robin across lanes with room; and the calls backing off."""

    def __init__(self, lanes: list[Lane], target: int, trials: int, per_case: int | None,
                 escalations: Mapping[str, Escalation]) -> None:
        self.lanes = lanes
        self.target = target
        """The global concurrency limit (the runner's)."""
        self.trials = trials
        self.per_case = per_case
        self.escalations = escalations
        self.steps: Mapping[tuple[str, str, int], NextStep] | None = None
        """The calls between steps (followups.Steps), when the project has repairs or escalations."""
        self.unstarted = 0
        """Calls not yet taken from the lanes (judge jobs queued included): with the parked ones, the most workers
        that could be busy."""
        self.parked_n = 0
        self.case_busy: dict[tuple[str, str], int] = {}
        """(lane, case id) -> trials under way, from first attempt to final end (backing off included)."""
        self._rr = 0
        self._seq = itertools.count()

    def next_call(self, now: float) -> Call | None:
        """The next call to make at `now` (monotonic seconds; only compared with parked calls' due times), or
        None when no lane with room has work."""
        lanes = self.lanes
        n = len(lanes)
        for i in range(n):
            idx = (self._rr + i) % n
            lane = lanes[idx]
            if lane.escalations and self.escalations[lane.key].has_room():  # under the target's cap, not the lane's
                case, trial = lane.escalations.popleft()
                self.unstarted -= 1
                self._rr = idx + 1
                if self.per_case is not None:
                    self._busy(lane, case)
                return Call(lane, case, trial)
            if lane.cap is not None and lane.at_provider[0] >= lane.cap:
                continue
            parked = lane.parked
            if parked:
                if parked[0][0] <= now and (not self.escalations or self.startable(parked[0][2])):
                    # a retry that is due goes first (an escalation's, when its target has room)
                    self.parked_n -= 1
                    self._rr = idx + 1
                    return heapq.heappop(parked)[2]
                room = self.target if lane.cap is None else min(self.target, lane.cap)
                if lane.in_flight + len(parked) >= room:
                    # backing off: no new calls for this model beyond its cap (or the pool): a capped model that is
                    # being refused must not keep opening new calls while its refused ones wait, each refusal
                    # pushing the provider's window further out
                    continue
            if lane.jobs is None and self.per_case is None and not lane.ready:  # the common case, inline
                item = None if lane.exhausted else next(lane.calls, None)
                if item is None:
                    lane.exhausted = True
                    continue
                self.unstarted -= 1
                self._rr = idx + 1
                return Call(lane, item[0], item[1])
            call = self._new_call(lane)
            if call is not None:
                self._rr = idx + 1
                return call
        return None

    def _new_call(self, lane: Lane) -> Call | None:
        """The lane's next call that is not a retry: a judge job, a ready step or chained case, a new call."""
        jobs = lane.jobs
        if jobs is not None:  # a judge lane: the answers queued so far
            if not jobs:
                return None
            job = jobs.popleft()
            self.unstarted -= 1
            return Call(lane, job.case, judge_trial(job.model_index, job.trial, self.trials), job)
        if lane.ready:
            case, trial = lane.ready.popleft()
            self.unstarted -= 1
            if self.per_case is not None:  # counted like any call of its case (its end is)
                self._busy(lane, case)
            return Call(lane, case, trial)
        if lane.exhausted:
            return None
        item = next(lane.calls, None) if self.per_case is None else self._next_for_case(lane)
        if item is None:
            lane.exhausted = self.per_case is None or not lane.deferred
            return None
        self.unstarted -= 1
        return Call(lane, item[0], item[1])

    def _busy(self, lane: Lane, case: Case) -> None:
        key = (lane.key, case.id)
        self.case_busy[key] = self.case_busy.get(key, 0) + 1

    def _next_for_case(self, lane: Lane) -> tuple[Case, int] | None:
        """The lane's next call whose case has room under max_concurrency_per_case (counted as under way), or None;
        calls passed over wait in the lane's `deferred`, ahead of new ones."""
        limit = self.per_case
        assert limit is not None
        busy = self.case_busy
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
        self._busy(lane, item[0])
        return item

    def escalating(self, lane: Lane, case: Case, trial: int) -> Escalation | None:
        """The target a call's next step escalates to, or None (its step is the lane's own)."""
        steps = self.steps
        fu = None if steps is None else steps.get((lane.key, case.id, trial))
        return None if fu is None else fu.target

    def startable(self, call: Call) -> bool:
        """A due retry may start: an escalation's only with room under its target's cap."""
        esc = self.escalating(call.lane, call.case, call.trial) if call.job is None else None
        return esc is None or esc.has_room()

    def park(self, call: Call, due: float) -> None:
        """`call` backs off until `due`, holding no worker."""
        heapq.heappush(call.lane.parked, (due, next(self._seq), call))
        self.parked_n += 1

    def unpark_all(self) -> list[Call]:
        """Every call backing off, each lane's in due order, taken off their lanes (the run stopped)."""
        out = [c for lane in self.lanes for _due, _seq, c in sorted(lane.parked, key=lambda p: p[:2])]
        for lane in self.lanes:
            lane.parked.clear()
        self.parked_n = 0
        return out

    def case_ended(self, lane: Lane, case: Case, trial: int) -> None:
        """A call of a per-case-limited lane returned from its worker: its case has room again unless it backs off."""
        if any(p.case.id == case.id and p.trial == trial for _d, _s, p in lane.parked):
            return
        key = (lane.key, case.id)
        busy = self.case_busy
        busy[key] -= 1
        if not busy[key]:
            del busy[key]

    def next_due(self) -> float | None:
        """When the earliest parked call that could start (its lane below its cap) is due, None if there is none."""
        return min((lane.parked[0][0] for lane in self.lanes
                    if lane.parked and (lane.cap is None or lane.at_provider[0] < lane.cap)), default=None)

    def all_done(self) -> bool:
        """Nothing left to start: no call backing off, every model's calls taken, every judge queue empty (a
        running candidate may still queue a judge call: its worker then takes it, or spawns one)."""
        return not self.parked_n and all((lane.exhausted and not lane.ready and not lane.escalations)
                                         if lane.jobs is None else not lane.jobs
                                         for lane in self.lanes)


async def apply_seeds(lanes: Sequence[Lane], seeds: Mapping[str, tuple[float, float]]) -> None:
    """Start each model's rate limiters with the capacity already used in the last minute (`seeds`, per model
    key: rpm, tpm; a resumed run's stored calls, `bucket_level`)."""
    done: set[str] = set()
    for lane in lanes:
        key = lane.model.key
        rpm_used, tpm_used = seeds.get(key, (0.0, 0.0))
        if key in done or not (rpm_used or tpm_used):
            continue
        done.add(key)  # a model that is both a candidate and a judge has one set of limiters
        if lane.rpm is not None and rpm_used > 0:
            await lane.rpm.acquire(min(rpm_used, lane.rpm.max_rate))  # an empty bucket: immediate
        if lane.tpm is not None and tpm_used > 0:
            await lane.tpm.acquire(min(tpm_used, lane.tpm.max_rate))


def roots(calls: Iterator[tuple[Case, int]]) -> Iterator[tuple[Case, int]]:
    """A chained project's calls of cases that depend on none: the others are queued as their parents pass."""
    return ((c, t) for c, t in calls if not c.depends_on)


def calls_to_make(plan: Plan) -> int:
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

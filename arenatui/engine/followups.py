"""What follows a call's end, each behaviour owning its state: repair turns and escalations (`Steps`), chained cases
(`Chained`) and judging (`Judging`). Each is picked up from a resumed run's stored state (`resumed`) and told how a
call ended (`after`); the runner queues what they decide and emits their events.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, Protocol

from arenatui.config.schema import Case, Defaults, Repair, ScorerConfig
from arenatui.engine.call import Call, Results
from arenatui.engine.chains import Chains
from arenatui.engine.judging import JudgeJob
from arenatui.engine.lanes import Escalation, Lane
from arenatui.kernel.events import (
    CallFinished,
    CallResult,
    CallStarted,
    Event,
    JudgeFinished,
    StepFinished,
    build_tuple,
)
from arenatui.plan import Plan, judge_trial
from arenatui.providers.base import Completion, build_messages
from arenatui.scoring import Score, verdict

Final = CallFinished
"""The call has ended: its one CallFinished."""


class FollowUp(Protocol):
    """A post-answer behaviour: picks up a resumed run's stored state, says what that ends before any call, then
    hears how calls ended (each its own `after`)."""

    def resumed(self, plan: Plan) -> None: ...

    def at_start(self) -> list[Event]:
        """What the resumed state ends before any call is made (a CallFinished per call of the plan it ends)."""
        ...


class NextStep(NamedTuple):
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
    target: Escalation | None = None
    """The model an escalation step asks."""


Next = NextStep
"""The call goes on: its next step, queued on its lane."""


def merged(r: CallResult, fu: NextStep) -> CallResult:
    """The last step `r` of a call (after steps `fu`) as its one stored result: the spend of every step, the
    rate-limit retries of every step as its attempts beyond one (repairs are counted apart), how its first answer
    ended, and the model it was escalated to. Built positionally: `_replace` with these nine fields cost twice as much.
    """
    (key, case_id, trial, status, output, score, passed, error_class, error_message, attempts, latency_ms, total_ms,
     ttft_ms, in_tok, out_tok, cost, finish_reason, estimated, _started, finished_at, connect_ms, failure_mode,
     detail, http_status, _repairs, _escalated_to, _first_passed, reasoning_tokens, answer_ttft_ms,
     reasoning) = r  # every field: a new one fails here, loudly
    return build_tuple(CallResult, (
        key, case_id, trial, status, output, score, passed, error_class, error_message, attempts + fu.attempts,
        latency_ms, total_ms + fu.total_ms, ttft_ms, in_tok + fu.in_tok, out_tok + fu.out_tok, cost + fu.cost,
        finish_reason, estimated, fu.started_at, finished_at, connect_ms, failure_mode, detail, http_status,
        fu.repairs, None if fu.target is None else fu.answered_by, fu.first_passed, reasoning_tokens, answer_ttft_ms,
        reasoning))


class Steps:
    """Repair turns and escalations: the calls between steps, by (lane, case id, trial)."""

    def __init__(self, repair: Repair | None, escalations: Mapping[str, Escalation], lanes: Sequence[Lane],
                 defaults: Defaults, emit: Callable[[Event], None]) -> None:
        self.repair = repair
        self.escalations = escalations
        self.defaults = defaults
        self.emit = emit
        self.between: dict[tuple[str, str, int], NextStep] = {}
        self.answerer = {lane.key: lane.model.base_key for lane in lanes}
        """The model that answers a lane's calls (the project's key, its variant left out), as its steps name it."""
        self.final_at_start: list[CallResult] = []
        """Calls whose last step was stored but not their result (a resumed run): they end at the start."""
        self._lanes = lanes

    def of(self, call: Call) -> NextStep | None:
        """The step `call` is at (None: its first)."""
        return self.between.get((call.lane.key, call.case.id, call.trial))

    def after(self, call: Call, r: CallResult, fu: NextStep | None, sent: tuple[dict[str, str], ...], now: float
              ) -> Final | Next:
        """An answer `r` of a call with repairs or an escalation configured (at step `fu`, the answer to `sent`): its
        CallFinished (a call of more than one step carries its last step in it), or the next step, queued on the
        lane, the answer emitted as one of its steps."""
        lane, case, trial = call.lane, call.case, call.trial
        nxt = self.step_after(lane, case, r, fu, sent)
        if fu is None:
            if nxt is None:
                return build_tuple(CallFinished, (r, now, None, None, None))  # nothing follows up: an ordinary call
            self.emit(build_tuple(StepFinished, (r, 0, "answer", self.answerer[lane.key], now)))
        elif nxt is None:
            del self.between[(lane.key, case.id, trial)]
            return build_tuple(CallFinished, (merged(r, fu), now,
                                              build_tuple(StepFinished, (r, fu.step, fu.kind, fu.answered_by, now)),
                                              None, None))
        else:
            self.emit(build_tuple(StepFinished, (r, fu.step, fu.kind, fu.answered_by, now)))
        self.between[(lane.key, case.id, trial)] = nxt
        (lane.ready if nxt.target is None else lane.escalations).append((case, trial))
        return nxt

    def ended(self, r: CallResult) -> CallResult:
        """A call that ended without an answer: its result with its earlier steps' spend in it (a cancelled step
        keeps only its own: resume goes on from the stored steps)."""
        fu = self.between.pop((r.model_key, r.case_id, r.trial), None)
        return r if fu is None or r.error_class == "cancelled" else merged(r, fu)

    def step_after(self, lane: Lane, case: Case, r: CallResult, fu: NextStep | None,
                   sent: tuple[dict[str, str], ...]) -> NextStep | None:
        """What follows answer `r` of a call of `case` (its steps so far `fu`, the answer to `sent`): a repair turn to
        the same model with the scorer's word on it, an escalation to the lane's target, or nothing (None)."""
        if r.status != "failed":
            return None
        rep = self.repair
        if fu is None:
            repair = rep is not None and r.failure_mode in rep.on  # (a repair has attempts >= 1)
            if not repair and lane.key not in self.escalations:
                return None  # decided before any figure is added up: the common failed answer costs a lookup
            step, repairs, first, started = 1, 0, r.passed, r.started_at
            attempts, in_tok, out_tok, cost, total_ms = \
                r.attempts - 1, r.input_tokens, r.output_tokens, r.cost, r.total_ms
        else:
            if fu.kind == "escalation":
                return None
            repairs = fu.repairs
            repair = rep is not None and repairs < rep.attempts and r.failure_mode in rep.on
            if not repair and lane.key not in self.escalations:
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
            return build_tuple(NextStep, (step, "repair", msgs, self.answerer[lane.key], repairs + 1, first, attempts,
                                          in_tok, out_tok, cost, total_ms, started, None))
        esc = self.escalations[lane.key]
        return NextStep(step, "escalation", build_messages(esc.model, self.defaults, case), esc.model.key, repairs,
                        first, attempts, in_tok, out_tok, cost, total_ms, started, esc)

    def resumed(self, plan: Plan) -> None:
        """A resumed run's calls that stopped between steps: their chains rebuilt from the stored steps, so each goes
        on with its next step (or, when its last step was stored but not its result, ends with it)."""
        cases = {c.id: c for c in plan.cases}
        for lane in self._lanes:
            by_call: dict[tuple[str, int], list[tuple[int, str, CallResult]]] = {}
            for cid, trial, step, kind, _model, r in plan.steps.get(lane.key, ()):
                by_call.setdefault((cid, trial), []).append((step, kind, r))
            for (cid, trial), steps in by_call.items():
                if cid not in cases or (cid, trial) in plan.done.get(lane.key, ()):
                    continue
                self._resume_call(plan, lane, cases[cid], trial, steps)

    def _resume_call(self, plan: Plan, lane: Lane, case: Case, trial: int, steps: list[tuple[int, str, CallResult]]
                     ) -> None:
        fu: NextStep | None = None
        sent = build_messages(lane.model, self.defaults, case)
        last: CallResult | None = None
        for _step, _kind, r in sorted(steps, key=lambda s: s[0]):
            last = r
            nxt = self.step_after(lane, case, r, fu, sent)
            if nxt is None:
                break
            fu, sent = nxt, nxt.messages
        if last is None:
            return
        if fu is not None and fu.step > max(s[0] for s in steps):
            self.between[(lane.key, case.id, trial)] = fu  # its next step is taken from the lane as usual
        elif fu is not None:  # ends at start, never taken from the lane (the count of calls to make has it)
            self.final_at_start.append(merged(last, fu))
            plan.done.setdefault(lane.key, set()).add((case.id, trial))

    def at_start(self) -> list[Event]:
        """Calls whose last step was stored but not their result end now (watchers see each start and end)."""
        out: list[Event] = []
        for r in self.final_at_start:
            now = time.monotonic()
            out += (CallStarted(r.model_key, r.case_id, r.trial, r.attempts, now), CallFinished(r, now))
        self.final_at_start.clear()
        return out


class Chained:
    """Chained cases: a dependent is queued on its lane (`ready`) once its parents passed, or ends unreachable."""

    def __init__(self, plan: Plan, by_key: Mapping[str, Lane], results: Results) -> None:
        self.chains = Chains(plan.cases)
        self.by_key = by_key
        self.results = results
        self.unreachable_at_start: list[tuple[Lane, Case, int, str]] = []

    def resumed(self, plan: Plan) -> None:
        """Each model's dependents that a resumed run can decide at once (their parents are stored), and those
        whose parent a filter left out (unreachable)."""
        for lane in self.by_key.values():
            if lane.jobs is not None:
                continue
            done = plan.done.get(lane.key, set())
            pending = [(c.id, t) for c in plan.cases if c.depends_on for t in range(plan.trials)
                       if (c.id, t) not in done]
            for case, trial, why in self.chains.start(lane.key, plan.chain_outcomes.get(lane.key, ()), pending):
                if why is None:
                    lane.ready.append((case, trial))
                else:
                    self.unreachable_at_start.append((lane, case, trial, why))

    def at_start(self) -> list[Event]:
        out: list[Event] = [self.unreachable(*u) for u in self.unreachable_at_start]
        self.unreachable_at_start.clear()
        return out

    def unreachable(self, lane: Lane, case: Case, trial: int, why: str) -> CallFinished:
        """A chained call that is not made: its parent did not pass (coverage as not run, never wrong)."""
        now = time.monotonic()
        return CallFinished(self.results.result(lane, case, trial, verdict.unreachable(why), None, 0, now, now, now,
                                                time.time(), 0, 0), now)

    def after(self, r: CallResult) -> tuple[Lane | None, list[tuple[Case, str]]]:
        """A call of a case others depend on ended: its lane (the dependents it made ready are queued there), and
        those it made unreachable. A cancelled call decides nothing (resume runs it again). An unreachable call was
        decided with its whole chain below it (Chains.finished/start): fed back, it would reopen the episode that
        decision ended and decide a dependent twice (43/40 done, issue 37)."""
        chains = self.chains
        lane = self.by_key.get(r.model_key)
        if r.error_class in ("cancelled", "unreachable") or lane is None or lane.jobs is not None \
                or r.case_id not in chains.involved:
            return None, []
        unreachable: list[tuple[Case, str]] = []
        for case, why in chains.finished(lane.key, r.case_id, r.trial, (r.status == "passed", r.output)):
            if why is None:
                lane.ready.append((case, r.trial))
            else:
                unreachable.append((case, why))
        return lane, unreachable


class Judging:
    """llm_judge cases: an answer is stored at once as 'unscored' and, when the case is in its scorer's sample,
    queued for its judge. Each judge model is a lane of its own (``judge:<key>``, plan.judge_lane) that shares the
    workers, the judge model's provider, rate limiters and cap (a model that also answers has one count of calls at
    its provider), and has retries, parking and timeouts like any model. A judge call ends in one JudgeFinished, the
    verdict on the candidate. Judge lanes take work as candidates answer, so they are never exhausted while a
    candidate call is still running."""

    def __init__(self, plan: Plan, by_key: Mapping[str, Lane], results: Results) -> None:
        self.judged = plan.judged_cases()
        """Case id → (its llm_judge scorer, its judge lane) for the cases that are judged."""
        self.model_index = {m.key: i for i, m in enumerate(plan.models)}
        self.by_key = by_key
        self.results = results
        self.trials = plan.trials
        self.unjudgeable: list[tuple[Lane, JudgeJob, str]] = []
        """Resumed answers that cannot be judged (a sealed case's answer that was not kept): reported at start."""
        self.queued_at_start = 0

    def resumed(self, plan: Plan) -> None:
        """Queue what a resumed run left to judge (stored answers awaiting their judge) before any new work."""
        cases = {c.id: c for c in plan.cases}
        for a in plan.awaiting:
            case = cases.get(a.case_id)
            judged = self.judged.get(a.case_id)
            if case is None or judged is None or a.model_key not in self.model_index:
                continue  # outside this plan (a filter), or no longer judged: left as stored
            scorer, lane_key = judged
            lane = self.by_key[lane_key]
            job = JudgeJob(a.model_key, self.model_index[a.model_key], case, a.trial, a.output, a.finish_reason,
                           scorer)
            if case.sealed and not self.results.keep_sealed:
                self.unjudgeable.append((lane, job, "the answer to this sealed case was not kept (keep_sealed_outputs "
                                                    "= false), so the judge cannot see it after the interruption"))
                continue
            assert lane.jobs is not None
            lane.jobs.append(job)
            self.queued_at_start += 1

    def at_start(self) -> list[Event]:
        """Resumed answers that cannot be judged end judge_error at once (their judge is never asked)."""
        out: list[Event] = []
        for lane, job, why in self.unjudgeable:
            now = time.monotonic()
            call = Call(lane, job.case, judge_trial(job.model_index, job.trial, self.trials), job)
            call.t0, call.started_wall = now, time.time()
            out.append(self.failed(self.results.errored(call, "judge_error", why, now), job, now))
        self.unjudgeable.clear()
        return out

    def after(self, call: Call, comp: Completion, judged: tuple[ScorerConfig, str]) -> None:
        """A candidate answered a judged case: its judge lane has one more call to make."""
        mkey = call.lane.key
        jobs = self.by_key[judged[1]].jobs
        assert jobs is not None
        jobs.append(JudgeJob(mkey, self.model_index[mkey], call.case, call.trial, comp.text, comp.finish_reason,
                             judged[0]))

    def judged_by(self, call: Call, comp: Completion, ta: float, now: float) -> JudgeFinished:
        """The judge answered: its verdict on the candidate (unreadable is a judge_error, never a 0)."""
        job = call.job
        assert job is not None
        case = job.case
        v = verdict.from_judge(job.scorer, comp.text, job.output, job.finish_reason, case.language,
                               comp.finish_reason)  # the judge's own finish: cut at its limit, none is read
        r = self.results.result(call.lane, case, call.trial, v, comp, call.attempt, ta, call.t0, now,
                                call.started_wall, call.in_tok, call.out_tok)
        return JudgeFinished(r, job.model_key, case.id, job.trial, now)

    def failed(self, r: CallResult, job: JudgeJob, now: float) -> JudgeFinished:
        """A judge call that ended without an answer: its candidate judge_error (the judge's own error class is in
        the message) or, if cancelled, unscored."""
        if r.error_class not in ("cancelled", "judge_error"):
            r = r._replace(error_class="judge_error", failure_mode="judge_error",
                           error_message=self.results.message(job.case, f"the judge's call failed ({r.error_class}): "
                                                                        f"{r.error_message}"))
        elif r.error_class == "judge_error":
            r = r._replace(failure_mode="judge_error")
        return JudgeFinished(r, job.model_key, job.case.id, job.trial, now)


NOTHING_QUEUED, STEP_QUEUED, JUDGE_QUEUED = 0, 1, 2
"""What an answer left queued on a lane (`Answered.after`): the runner counts it and wakes a worker for it."""


class Answered:
    """An answer's end: its result, then the call's CallFinished, a judge's call on it, or the call's next step."""

    def __init__(self, results: Results, judging: Judging, steps: Steps | None, emit: Callable[[Event], None]) -> None:
        self.results = results
        self.judging = judging
        self.steps = steps
        self.emit = emit

    def after(self, call: Call, comp: Completion, fu: NextStep | None, sent: tuple[dict[str, str], ...],
              sc: Score | str | None, now: float) -> int:
        """The attempt of `call` (at step `fu`, sending `sent`) got answer `comp`, scored `sc` (None when a judge gives
        it): what it left queued."""
        call.lane.attempt_t = call.ta
        call.in_tok += comp.input_tokens
        call.out_tok += comp.output_tokens
        if call.job is not None:
            self.emit(self.judging.judged_by(call, comp, call.ta, now))
            return NOTHING_QUEUED
        case = call.case
        judged = self.judging.judged.get(case.id) if sc is None else None  # stored unscored now: judged later
        r = self.results.result(call.lane, case, call.trial, verdict.answered(
            sc, comp.text, comp.finish_reason, case.language, judged is not None), comp, call.attempt, call.ta,
            call.t0, now, call.started_wall, call.in_tok, call.out_tok)
        steps = self.steps
        if steps is not None and (fu is not None or r.status == "failed"):
            if fu is not None and fu.target is not None:  # the target's prices
                r = r._replace(cost=fu.target.model.cost(call.in_tok, call.out_tok) + (comp.cost or 0.0))
            done = steps.after(call, r, fu, sent, now)
            if type(done) is not CallFinished:  # its next step is queued on the lane
                return STEP_QUEUED
            self.emit(done)
        else:
            self.emit(build_tuple(CallFinished, (r, now, None, None, None)))
        if judged is None:
            return NOTHING_QUEUED
        self.judging.after(call, comp, judged)  # a candidate answered a judged case: its judge lane has one more
        return JUDGE_QUEUED


def follow_ups(plan: Plan, lanes: Sequence[Lane], escalations: Mapping[str, Escalation], results: Results,
               emit: Callable[[Event], None]) -> tuple[Judging, Steps | None, Chained | None]:
    """The run's follow-ups, each picked up from a resumed run's stored state: judging; repair turns and
    escalations when the project has either; chained cases when it has any."""
    run = plan.project.run
    by_key = {lane.key: lane for lane in lanes}
    judging = Judging(plan, by_key, results)
    judging.resumed(plan)
    repair = run.repair if run.repair is not None and run.repair.attempts > 0 else None
    steps = Steps(repair, escalations, lanes, plan.project.defaults, emit) if repair is not None or escalations \
        else None
    if steps is not None and plan.steps:
        steps.resumed(plan)
    chained = Chained(plan, by_key, results) if any(c.depends_on for c in plan.cases) else None
    if chained is not None:
        chained.resumed(plan)
    return judging, steps, chained

"""The engine's vocabulary: small immutable past-tense events, the contract with everything that watches.

Times are ``time.monotonic()`` seconds (``t``) unless a field says epoch.

The per-call events (and `CallResult`) are NamedTuples rather than frozen dataclasses: just as
immutable, but a frozen dataclass of 21 fields costs 4.7 µs to build against 0.5 µs, and at
30,000 calls/s that difference alone is a fifth of the engine's budget. Rare events stay dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

Status = Literal["passed", "failed", "errored", "unscored", "unreachable"]
"""unscored: the model answered (the output is kept) and an llm_judge scorer has not scored it: its failure_mode says
why, 'unjudged' (the case is outside the scorer's sample: it never will be) or 'awaiting_judge' (a JudgeFinished
will score it; resume judges what an interrupted run left). An unscored call is answered: coverage, not quality.
unreachable: a chained case (``depends_on``) not run because a parent did not pass in that trial: coverage as not
run, never a wrong answer (error class and failure mode 'unreachable', the parent named in its message)."""
ErrorClass = Literal["rate_limited", "timeout", "transient", "terminal", "cancelled", "scoring_error", "judge_error",
                     "solver_error", "unreachable", "incomplete_stream"]
"""scoring_error: the model answered (the output is kept) but the scorer could not judge it. judge_error: the same
for an llm_judge scorer: its judge's call failed or its answer held no readable verdict (never a silent 0).
solver_error: a python solver raised (its traceback is the call's score_detail) or its worker process died."""
RunStatus = Literal["finished", "cancelled", "failed"]
VARIANT_SEP = " · "
"""A lane of a model asked with prompt variants is keyed ``<model key> · <variant>`` (the console's row); results
store the two apart (model_key, variant). No model key or variant name holds it."""


def split_lane(key: str) -> tuple[str, str]:
    """(model key, variant) of a lane key; the variant is '' for a model without variants."""
    model, _, variant = key.partition(VARIANT_SEP)
    return model, variant


def lane_key(model_key: str, variant: str | None) -> str:
    """The lane key of a stored (model_key, variant)."""
    return f"{model_key}{VARIANT_SEP}{variant}" if variant else model_key


JUDGE_LANE_PREFIX = "judge:"
"""The engine's lane of a judge model is keyed ``judge:<model key>`` (its results carry that model_key); no model
key may start with it."""


build_tuple = tuple.__new__
"""`build_tuple(Cls, (every field,))` builds a NamedTuple on the engine's hot path (one or more per call): a
NamedTuple's own __new__ is a Python function, a frame that parses every argument and default, and costs about three
times as much (CallResult: 0.41 against 0.13 µs; 1.8k of the engine's instructions per call). Every field must be
given, defaults too: tests/unit/test_hot_tuples.py checks that each builder makes whole tuples."""


class CallResult(NamedTuple):
    """How one call (model × case × trial) ended: the row the store keeps."""

    model_key: str
    case_id: str
    trial: int
    status: Status
    output: str | None
    score: float | None
    passed: bool
    error_class: ErrorClass | None
    error_message: str | None
    attempts: int
    latency_ms: float | None
    """The last attempt, request to last byte."""
    total_ms: float
    """The whole call: every attempt and every backoff sleep."""
    ttft_ms: float | None
    input_tokens: int
    output_tokens: int
    """Tokens of every attempt that reported usage, retries included."""
    cost: float
    finish_reason: str | None
    tokens_estimated: bool
    started_at: float
    """Epoch seconds."""
    finished_at: float
    """Epoch seconds."""
    connect_ms: float | None = None
    """The last attempt, from its start until its request was on the wire (connecting, TLS, this client's
    own queueing), where the provider can tell: time that is in total_ms but not in latency_ms."""
    failure_mode: str | None = None
    """What a result that did not pass looked like (arenatui.scoring.failure_modes): 'none' when it passed."""
    score_detail: str | None = None
    """The scorer's own word on the answer: the JSON path that failed, the code's verdict."""
    http_status: int | None = None
    """The HTTP status of the call's last attempt when it failed with one (a 429, a 503): the failed attempt
    that ended an errored call keeps it like the retried ones do."""
    repairs: int = 0
    """Repair turns the call took ([run] repair): follow-ups to the same model, apart from `attempts` (retries)."""
    escalated_to: str | None = None
    """The model the case was sent on to after this one still failed it (escalate_to); its answer is this row's."""
    first_passed: bool | None = None
    """Whether the first answer passed, when repairs or an escalation followed it (None: `passed` says)."""
    reasoning_tokens: int | None = None
    """The answer's reasoning tokens (part of output_tokens), when it showed reasoning or reported them."""
    answer_ttft_ms: float | None = None
    """A streamed answer's first answer token (after any reasoning); ttft_ms is the first token of any kind."""
    reasoning: ReasoningKept | None = None
    """An answer that reasoned: its reasoning and whether reasoning_tokens is estimated (the store's `reasoning`
    and `reasoning_estimated` columns, `store.db.result_row`). One field, not two: a NamedTuple of more than 30
    fields costs 2,200 instructions more to build (CPython 3.11, callgrind: 5.1k at 30 fields, 7.4k at 31)."""


class ReasoningKept(NamedTuple):
    """What a call's result keeps of a reasoning model's thinking."""

    text: str | None
    """The reasoning, capped (None: not shown by the server, or a sealed case's)."""
    estimated: bool
    """The reasoning tokens are arenatui's estimate: the server reported none."""


class DeclaredLimits(NamedTuple):
    """What a provider says of its rate limits in a response's headers (``x-ratelimit-*`` on OpenAI-compatible
    APIs, ``anthropic-ratelimit-*`` on Anthropic's): each None when not stated. Limits are per minute as the
    providers state them; resets are seconds from the response."""

    requests_limit: int | None = None
    requests_remaining: int | None = None
    requests_reset_s: float | None = None
    tokens_limit: int | None = None
    """Tokens per minute (Anthropic: input + output where it states them apart)."""
    tokens_remaining: int | None = None
    tokens_reset_s: float | None = None

    def describe(self) -> str:
        """One line for people: 'declares 500 requests/min (412 left), 30,000 tokens/min (29,100 left)'."""
        parts = []
        for limit, left, what in ((self.requests_limit, self.requests_remaining, "requests/min"),
                                  (self.tokens_limit, self.tokens_remaining, "tokens/min")):
            if limit is not None:
                parts.append(f"{limit:,} {what}" + (f" ({left:,} left)" if left is not None else ""))
            elif left is not None:
                parts.append(f"{left:,} {what.split('/')[0]} left")
        return "declares " + ", ".join(parts) if parts else "declares no limits"


class LimitsDeclared(NamedTuple):
    """A model's provider declared its rate limits in a response's headers: sent when a stated limit changes, and
    otherwise at most once a second per model (remaining headroom moves with every answer)."""

    model_key: str
    limits: DeclaredLimits
    t: float
    at: float
    """Epoch seconds."""


class AwaitingJudge(NamedTuple):
    """A stored answer that an interrupted run left unscored: resume judges it without calling its model again."""

    model_key: str
    case_id: str
    trial: int
    output: str
    finish_reason: str | None


class OpenStep(NamedTuple):
    """A stored step of a call with repairs or an escalation whose result is not stored yet (or was cancelled):
    resume goes on from it rather than asking the model again."""

    case_id: str
    trial: int
    step: int
    kind: str
    """'answer', 'repair' or 'escalation'."""
    answered_by: str
    """The model that answered this step (the escalation's target after an escalation)."""
    result: CallResult
    """The step as stored."""


class CallStarted(NamedTuple):
    model_key: str
    case_id: str
    trial: int
    attempt: int
    t: float


DEADLINE = "deadline"
"""finish_reason of a streamed attempt that its timeout ended (its ttft_ms: the first token, None if none came)."""


class CallRetrying(NamedTuple):
    model_key: str
    case_id: str
    trial: int
    attempt: int
    """The attempt that failed (1-based)."""
    reason: ErrorClass
    delay: float
    """Seconds the call now sleeps before its next attempt."""
    message: str
    t: float
    retry_after: float | None = None
    """Seconds the provider asked to wait (a 429's retry-after), when it said."""
    http_status: int | None = None
    """The HTTP status of the failed attempt, where there was one."""
    retry_after_source: str | None = None
    """The header that gave `retry_after` (``retry-after``, ``llm_provider-retry-after``, ...), when one did."""
    first_token_ms: float | None = None
    """A timed-out streamed attempt's first token, ms after the request went out; None when none came."""
    streamed_timeout: bool = False
    """A timeout of a streamed attempt: `first_token_ms` then tells hung (None) from slow."""


class CallFinished(NamedTuple):
    result: CallResult
    t: float
    step: StepFinished | None = None
    """A call with repairs or an escalation that took more than one step: its last step, with that step's own
    answer and spend (`result` is the call's: every step's spend). Its earlier steps came as StepFinished; the last
    one travels here, so a repaired call costs one event per request like any other."""
    retry_after: float | None = None
    """An errored call's last attempt: the wait the provider asked for (not slept: no retry followed)."""
    retry_after_source: str | None = None


class JudgeFinished(NamedTuple):
    """A judge call ended, and with it the scoring of one candidate call (model_key, case_id, trial).

    `result` is the judge call itself, as its lane sees it: model_key is the lane ``judge:<judge model key>``,
    case_id the candidate's case, trial ``candidate model index × trials + candidate trial`` (plan.judge_trial), so
    every judge call has its own cell; output is the judge's answer, cost its spend (apart from the candidate's).
    Its status/score/passed are the verdict on the candidate: passed or failed, or errored with error_class
    'judge_error' (unreadable verdict, or the judge call failed: error_message says how) which is also the
    candidate's new state, with failure_mode and score_detail ("judge 4 on 1-5"). A judge call stopped with the
    sweep has error_class 'cancelled': the candidate stays unscored/awaiting_judge and resume judges it.
    """

    result: CallResult
    model_key: str
    """The candidate's model."""
    case_id: str
    trial: int
    """The candidate's trial."""
    t: float


class StepFinished(NamedTuple):
    """One answer of a call that went on to a repair turn or an escalation ([run] repair, escalate_to): stored as the
    call's step, so a resumed run continues the chain where it stopped. `result` is that answer as scored (its
    model_key the lane's). The call's last step is not emitted on its own: it rides in its CallFinished (`step`),
    whose result's spend is that of every step."""

    result: CallResult
    step: int
    """0 for the first answer, then 1, 2, ... for each repair turn or escalation after it."""
    kind: str
    """'answer', 'repair' or 'escalation': what this step was."""
    model: str
    """The model that answered this step (the escalation target's key for an escalation)."""
    t: float


@dataclass(frozen=True, slots=True)
class ConcurrencyChanged:
    old: int
    new: int
    model_key: str | None
    """None for the global limit, else the model whose cap changed."""
    source: str
    """Who changed it: 'config', 'user', 'tuner'."""
    t: float
    at: float
    """Epoch seconds."""
    requested: int | None = None
    """What was asked for, when it was out of bounds (below 1 or above limits.MAX_CONCURRENCY) and `new` is
    the nearest bound instead; None when `new` is what was asked."""


@dataclass(frozen=True, slots=True)
class RunPaused:
    t: float


@dataclass(frozen=True, slots=True)
class RunResumed:
    t: float


@dataclass(frozen=True, slots=True)
class RunFinished:
    status: RunStatus
    t: float
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ClientLoadSampled:
    """How busy this process (the client: engine, HTTP, store, views) was over the last interval."""

    cpu: float
    """CPU time over wall time: the fraction of one core (above 1.0 when several threads are busy)."""
    interval_s: float
    t: float
    at: float
    """Epoch seconds."""


@dataclass(frozen=True, slots=True)
class TunerDecided:
    """The auto-tuner changed a model's level (old → new), or switched on, off or was suspended (old = new = 0)."""

    model_key: str | None
    old: int
    new: int
    reason: str
    """One line for people: 'sim-limited 4 → 5: goodput +18%, 0 429s'."""
    t: float


Event = (CallStarted | CallRetrying | CallFinished | JudgeFinished | StepFinished | ConcurrencyChanged | RunPaused
         | RunResumed | RunFinished | ClientLoadSampled | TunerDecided | LimitsDeclared)

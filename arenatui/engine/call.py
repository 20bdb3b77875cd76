"""One call under way (its attempts so far, backing off or not) and the one builder of how a call ended (CallResult)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from arenatui.engine.sealed import MIN_RUN, SealedScrubber
from arenatui.kernel.events import CallResult, ErrorClass, ReasoningKept, build_tuple
from arenatui.scoring import verdict

if TYPE_CHECKING:
    from arenatui.config.schema import Case
    from arenatui.engine.judging import JudgeJob
    from arenatui.engine.lanes import Lane
    from arenatui.providers.base import Completion

MESSAGE_LIMIT = 2000


class Call:
    """A call of one lane (model × case × trial, or a judge's call on an answer `job`) from its first attempt to its
    end, with what its attempts so far have added up to. The same object goes back on its lane while it backs off.
    Slotted, built positionally: one is made per call."""

    __slots__ = ("attempt", "case", "connect_ms", "in_tok", "job", "lane", "latency", "out_tok", "started_wall", "t0",
                 "ta", "trial")

    def __init__(self, lane: Lane, case: Case, trial: int, job: JudgeJob | None = None) -> None:
        self.lane = lane
        self.case = case
        self.trial = trial
        self.job = job
        """A judge call: the candidate's answer it judges (None for a model's own call)."""
        self.attempt = 0
        """Attempts started (a call cancelled while waiting on a limiter made none)."""
        self.t0 = 0.0
        """When the first attempt began (monotonic seconds; set by the runner as it does)."""
        self.started_wall = 0.0
        self.in_tok = 0
        self.out_tok = 0
        self.latency: float | None = None
        """The last failed attempt's latency and connect time (ms): what a call stopped while backing off keeps."""
        self.connect_ms: float | None = None
        self.ta = 0.0
        """When the attempt under way began (monotonic seconds)."""


def sealed_output(text: str) -> str:
    """What is stored of a sealed case's output: its SHA-256 and length, enough to tell whether answers changed
    between runs without keeping a held-out answer anywhere it could leak from."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"[sealed output: sha256 {digest}, {len(text)} characters]"


class Results:
    """Builds the CallResult of every way a call ends, its messages bounded and a sealed case's texts kept out."""

    def __init__(self, keep_sealed: bool) -> None:
        self.keep_sealed = keep_sealed
        self._scrubbers: dict[str, SealedScrubber] = {}

    def message(self, case: Case, msg: str) -> str:
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

    def result(self, lane: Lane, case: Case, trial: int, v: verdict.Verdict, comp: Completion | None,
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
            output = sealed_output(comp.text) if case.sealed and not self.keep_sealed else comp.text
            wire_s, ttft, connect_s = comp.latency_s, comp.ttft_s, comp.connect_s
            latency_ms = wire_s * 1000.0 if wire_s is not None else (now - ta) * 1000.0
            ttft_ms = ttft * 1000.0 if ttft is not None else None
            connect_ms = connect_s * 1000.0 if connect_s is not None else None
            finish_reason, estimated = comp.finish_reason, comp.tokens_estimated
            extra_cost = comp.cost or 0.0  # what a solver says it spent beyond tokens
            answer_s = comp.answer_ttft_s
            if answer_s is not None or comp.reasoning_tokens is not None:  # a streamed answer, or one that reasoned
                return build_tuple(CallResult, (
                    lane.key, case.id, trial, v.status, output, v.score, v.passed, v.error_class,
                    None if msg is None else self.message(case, msg), attempts, latency_ms, (now - t0) * 1000.0,
                    ttft_ms, in_tok, out_tok, lane.model.cost(in_tok, out_tok) + extra_cost, finish_reason, estimated,
                    started_wall, started_wall + (now - t0), connect_ms, v.failure_mode,
                    None if detail is None else self.message(case, detail), http_status, 0, None, None,
                    comp.reasoning_tokens, None if answer_s is None else answer_s * 1000.0,
                    None if comp.reasoning is None and not comp.reasoning_estimated else ReasoningKept(
                        None if case.sealed and not self.keep_sealed else comp.reasoning, comp.reasoning_estimated)))
        return build_tuple(CallResult, (
            lane.key, case.id, trial, v.status, output, v.score, v.passed, v.error_class,
            None if msg is None else self.message(case, msg), attempts, latency_ms, (now - t0) * 1000.0, ttft_ms,
            in_tok, out_tok, lane.model.cost(in_tok, out_tok) + extra_cost, finish_reason, estimated, started_wall,
            started_wall + (now - t0), connect_ms, v.failure_mode,
            None if detail is None else self.message(case, detail), http_status, 0, None, None, None, None, None))

    def errored(self, call: Call, err_class: ErrorClass, msg: str, now: float,
                http_status: int | None = None) -> CallResult:
        """How `call` ended without an answer (with its last attempt's figures)."""
        return self.result(call.lane, call.case, call.trial, verdict.ended(err_class, msg), None, call.attempt, now,
                           call.t0, now, call.started_wall, call.in_tok, call.out_tok, call.latency, call.connect_ms,
                           http_status)

"""One attempt of one call: started (rate limiters, CallStarted, its request), then the provider's answer or how the
attempt failed (read from what the error declares)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, cast

import anyio

from arenatui.kernel.errors import ArenaError, AttemptTimedOut, ProviderError
from arenatui.kernel.events import CallStarted, DeclaredLimits, ErrorClass, LimitsDeclared, build_tuple
from arenatui.providers.base import Completion, JudgeTask, Provider, Request, build_messages, estimate_tokens
from arenatui.scoring.judge import judge_messages

if TYPE_CHECKING:
    from arenatui.config.schema import Defaults
    from arenatui.engine.call import Call
    from arenatui.engine.followups import NextStep
    from arenatui.engine.lanes import Escalation, Lane

Answer = Completion
"""An attempt that got an answer: the provider's completion, as it came."""


class Target(Protocol):
    """Whom an attempt asks: a lane's model, or an escalation's target."""

    @property
    def provider(self) -> Provider: ...

    @property
    def own_timeout(self) -> bool:
        """The provider ends attempts at timeout_s itself (no cancel scope per attempt needed)."""
        ...


class Failure:
    """How one attempt failed: its error class and message, what the provider said about waiting, the usage it
    consumed, and its times (latency and connect_ms, ms)."""

    __slots__ = ("connect_ms", "detail", "error_class", "first_ms", "http_status", "input_tokens", "latency", "limits",
                 "message", "output_tokens", "retry_after", "retry_source", "timed_out_stream")

    def __init__(self, error_class: ErrorClass, message: str, latency: float, connect_ms: float | None = None
                 ) -> None:
        self.error_class = error_class
        self.message = message
        self.latency = latency
        self.connect_ms = connect_ms
        self.retry_after: float | None = None
        self.retry_source: str | None = None
        self.http_status: int | None = None
        self.input_tokens = 0
        self.output_tokens = 0
        self.detail: str | None = None
        self.limits: DeclaredLimits | None = None
        """The rate limits the refusal's headers declared, when it sent any."""
        self.timed_out_stream = False
        """A streamed attempt its timeout ended: `first_ms` says when its first token came (None: none came)."""
        self.first_ms: float | None = None

    @classmethod
    def of(cls, e: Exception, ta: float, timeout_s: float) -> Failure:
        """The failure of an attempt begun at `ta` that raised `e`. A provider's error declares its own class,
        retry-after, status, usage and detail (errors.ProviderError); a timeout says whether a streamed answer had
        begun; anything else is a provider bug, recorded as terminal and never retried."""
        if isinstance(e, ProviderError):
            if e.latency_s is None:  # from the wire where the provider timed it (an HTTP refusal), else the attempt
                f = cls(cast(ErrorClass, e.error_class), e.message, (time.monotonic() - ta) * 1000.0)
            else:
                f = cls(cast(ErrorClass, e.error_class), e.message, e.latency_s * 1000.0,
                        None if e.connect_s is None else e.connect_s * 1000.0)
            f.retry_after, f.retry_source, f.http_status = e.retry_after, e.retry_after_source, e.http_status
            f.input_tokens, f.output_tokens, f.detail, f.limits = e.input_tokens, e.output_tokens, e.detail, e.limits
            return f
        latency = (time.monotonic() - ta) * 1000.0
        if not isinstance(e, TimeoutError):
            return cls("terminal", f"provider raised {type(e).__name__}: {e}", latency)
        f = cls("timeout", f"no complete answer within {timeout_s:g}s", latency)
        if isinstance(e, AttemptTimedOut) and e.first_token is not None:  # streamed: had its first token come?
            first_s = e.first_token_s
            f.timed_out_stream, f.first_ms = True, None if first_s is None else first_s * 1000.0
            f.message += f" (its first token came after {first_s:.1f}s)" if first_s is not None \
                else " (no token came: probably hung)"
        return f


async def attempt(target: Target, request: Request, timeout_s: float, ta: float) -> Answer | Failure:
    """Ask `target` once (the attempt began at `ta`): its answer, or how the attempt failed. A cancellation, and
    an ArenaError (a misuse that must stop the run), go through."""
    try:
        if target.own_timeout:
            return await target.provider.complete(request)
        with anyio.fail_after(timeout_s):
            return await target.provider.complete(request)
    except (anyio.get_cancelled_exc_class(), ArenaError):
        raise
    except Exception as e:  # a provider bug must not take the sweep down either: recorded, never retried
        return Failure.of(e, ta, timeout_s)


async def limits(call: Call, target: Lane | Escalation) -> None:
    """Wait for the target's client-side rate limiters (rpm, then tpm for the prompt and the answer's budget)."""
    model, case, job = target.model, call.case, call.job
    if target.rpm is not None:
        await target.rpm.acquire()
    if target.tpm is not None:
        prompt = case.prompt_text() if job is None else \
            judge_messages(model, job.scorer, job.case, job.output)[-1]["content"]
        need = estimate_tokens(prompt) + target.max_tokens
        await target.tpm.acquire(min(need, model.tpm or need))


def begin(call: Call, target: Lane | Escalation, fu: NextStep | None, defaults: Defaults, timeout_s: float,
          started: Callable[[CallStarted], None] | None) -> Request:
    """Start an attempt of `call` (counted, reported to `started` when someone listens, timed from now): its
    request."""
    model, case, job = target.model, call.case, call.job
    n = call.attempt = call.attempt + 1  # counts attempts started: none while waiting on a limiter
    ta = call.ta = time.monotonic()
    if started is not None:
        started(CallStarted(call.lane.key, case.id, call.trial, n, ta))
    # Positional construction on the hot path: keyword arguments cost 2.5 µs more per CallResult.
    if job is not None:
        lane = call.lane
        return Request(model, case, call.trial, n, judge_messages(model, job.scorer, job.case, job.output),
                       lane.max_tokens, lane.temperature, timeout_s,
                       JudgeTask(job.output, case.expected, job.scorer.scale_range()))
    if fu is None:
        return build_tuple(Request, (model, case, call.trial, n, build_messages(model, defaults, case),
                                     target.max_tokens, target.temperature, timeout_s, None, 0))
    return build_tuple(Request, (model, case, call.trial, n, fu.messages, target.max_tokens, target.temperature,
                                 timeout_s, None, fu.step if fu.kind == "repair" else 0))


class StatedLimits:
    """What providers stated of their rate limits (headers), passed on as LimitsDeclared when a stated limit changed,
    else at most once a second per model: what is left moves with every answer, and an event per answer would cost
    the hot path."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, DeclaredLimits]] = {}

    def event(self, model_key: str, limits: DeclaredLimits) -> LimitsDeclared | None:
        now = time.monotonic()
        last = self._last.get(model_key)
        if last is not None and now - last[0] < 1.0 and last[1][0] == limits[0] and last[1][3] == limits[3]:
            return None
        self._last[model_key] = (now, limits)
        return LimitsDeclared(model_key, limits, now, time.time())

"""The provider contract: what one attempt asks for, what it returns, and how providers are built.

Providers never retry and never sleep on an error: they raise RateLimited, TransientError or
TerminalError (arenatui.kernel.errors) and the engine decides.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple, Protocol

from arenatui.config.schema import Case, Defaults, ModelConfig
from arenatui.kernel.events import DeclaredLimits

__all__ = ["REASONING_CHARS", "Completion", "DeclaredLimits", "JudgeTask", "Provider", "Request", "build_messages",
           "estimate_tokens"]


class JudgeTask(NamedTuple):
    """What a judge call judges: set on the Request of a judge call. Real providers ignore it (the rubric in the
    messages is what they read); the simulated judge reads it to give a verdict it can know is right or wrong."""

    output: str
    """The candidate's answer."""
    expected: str | None
    scale: tuple[int, int] | None
    """The numeric verdict range, or None for pass/fail."""


class Request(NamedTuple):
    """One attempt's request. NamedTuple (immutable, cheap to build): one is made per attempt."""

    model: ModelConfig
    case: Case
    trial: int
    attempt: int
    messages: tuple[dict[str, str], ...]
    """Chat messages, system prompt first when there is one."""
    max_tokens: int
    temperature: float
    timeout_s: float
    judge: JudgeTask | None = None
    """Set on a judge call (llm_judge): which answer it judges."""
    turn: int = 0
    """0 for a call's first answer, n for its n-th follow-up (a repair turn, [run] repair)."""

    @property
    def system(self) -> str | None:
        return self.messages[0]["content"] if self.messages and self.messages[0]["role"] == "system" else None


class Completion(NamedTuple):
    text: str
    input_tokens: int
    output_tokens: int
    finish_reason: str = "stop"
    ttft_s: float | None = None
    """Seconds from sending the request to the first content token (streaming only)."""
    tokens_estimated: bool = False
    """True when the server reported no usage and the counts are our estimate."""
    latency_s: float | None = None
    """Seconds from the request going onto the wire to its last byte, where the provider can tell; None
    and the engine times the whole attempt."""
    connect_s: float | None = None
    """Seconds from the attempt's start until its request was on the wire: opening a connection (TCP,
    TLS) and waiting for this client's own event loop. Not part of the latency: it is not the provider's."""
    cost: float | None = None
    """Spend the provider reports itself (a python solver's own calls), added to what the model's prices give."""
    reasoning: str | None = None
    """What a reasoning model thought before answering (``reasoning_content``, ``reasoning``, Anthropic thinking
    blocks), apart from the answer: never scored, kept (capped at REASONING_CHARS) for the call detail."""
    reasoning_tokens: int | None = None
    """Reasoning tokens of the answer (part of `output_tokens`): as the server reported them, or estimated from the
    reasoning text (`reasoning_estimated`); None when the answer showed no reasoning at all."""
    reasoning_estimated: bool = False
    answer_ttft_s: float | None = None
    """Seconds from sending the request to the first token of the answer itself (streaming only): after the
    reasoning, where `ttft_s` is the first token of any kind."""
    limits: DeclaredLimits | None = None
    """The rate limits the provider declared in this response's headers, when it sent any."""


REASONING_CHARS = 16_000
"""Most characters of a call's reasoning kept for its detail: enough to read how it went, bounded per row."""




class Provider(Protocol):
    """Implementations may set ``enforces_timeout = True`` when they end every attempt at
    ``request.timeout_s`` themselves (raising TimeoutError); the engine then skips its own cancel scope.
    They may also have a ``prepare()`` method, which a sweep calls in its event loop before the first call
    (open sessions there, not in the first calls' latencies); what it raises is left for the calls to report. What
    it returns, if not None, is awaited before the first call (`prepared`)."""

    async def complete(self, request: Request) -> Completion:
        """Perform one attempt. Raise a ProviderError subclass on failure."""
        ...

    async def aclose(self) -> None:
        ...


def build_messages(model: ModelConfig, defaults: Defaults, case: Case) -> tuple[dict[str, str], ...]:
    system = model.system if model.system is not None else defaults.system
    given = case.input
    variant = model.variant
    if variant is not None:  # a prompt variant's lane: its template and system prompt
        given = variant.applied(given)
        if variant.system is not None:
            system = variant.system
    msgs: list[dict[str, str]] = []
    if isinstance(given, str):
        if system:
            msgs.append({"role": "system", "content": system})
        msgs.append({"role": "user", "content": given})
    else:
        if system and not any(m["role"] == "system" for m in given):
            msgs.append({"role": "system", "content": system})
        # copies: a chat case's dicts are shared by every model and trial, and a solver editing its request's
        # messages in place changed every later prompt (a dict copy per message: only chat cases pay it)
        msgs.extend([m.copy() for m in given])
    return tuple(msgs)


MAX_TOKENS_PER_CALL = 100_000_000
"""The most tokens one call's prompt or answer is believed to hold: a count above it is a server's or a solver's
bug (10**30 stopped the results writer once: SQLite holds 64-bit integers), so it is estimated instead."""


def usage_count(value: object) -> int | None:
    """A token count as a provider or a solver reported it, or None (then estimated, and the result marked so)
    when it is missing or no sane count: not a whole non-negative number of at most MAX_TOKENS_PER_CALL (a bool,
    a string, NaN, infinity, a negative or absurd number). The one check of usage at the provider boundary."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy's integers and floats are Real
        return None
    number = float(value)
    if not (0 <= number <= MAX_TOKENS_PER_CALL):  # False for NaN too
        return None
    return int(number)


MAX_ANSWER_CHARS = 4_000_000
"""The most characters of one response kept by default ([run] max_answer_chars): about 4 MB of text, far past any
answer a benchmark scores; a 200 MB answer was stored whole (800 MB RSS in evaluate, 1.4 GB in a CSV export)."""
ANSWER_CAP = "answer_cap"
"""The finish_reason of an answer cut at the cap (its failure mode: truncated)."""


def cut_answer(kept: str, real_chars: int, cap: int) -> str:
    """An answer cut at `cap` characters, marked at its end with its real size (what a reader of the stored answer
    and the scorer see)."""
    return f"{kept[:cap]}\n[arenatui: answer cut at {cap:,} of its {real_chars:,} characters ([run] max_answer_chars)]"


def capped(comp: Completion, cap: int) -> Completion:
    """A whole answer (a non-streamed body, a solver's return) held to `cap` characters, as StreamReader.add_text
    holds a stream's."""
    if len(comp.text) <= cap:
        return comp
    return comp._replace(text=cut_answer(comp.text, len(comp.text), cap), finish_reason=ANSWER_CAP)


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters a token) for when a server reports none."""
    return max(1, (len(text) + 3) // 4)


async def prepared(provider: object) -> None:
    """Run a provider's ``prepare()`` (see Provider) and await what it returns: before a run's first call. What it
    raises is left for the calls to report (each reaches the same error)."""
    prepare = getattr(provider, "prepare", None)
    if prepare is None:
        return
    try:
        ready = prepare()
        if ready is not None:
            await ready
    except Exception:
        pass

"""Simulated models: deterministic, offline, and shaped like real providers.

`SimCore` holds the behaviour (rate limit with retry-after, concurrency ceiling, latency that grows
with output tokens, transient failures, accuracy by stratum) with no clock or event loop of its
own, so the in-process `SimProvider` and the mock HTTP server share it exactly.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import math
import re
import time
from collections.abc import Awaitable, Callable
from statistics import NormalDist
from typing import NamedTuple

import anyio
import sniffio

from arenatui.config.schema import ModelConfig, SimSettings
from arenatui.kernel.errors import RateLimited, TransientError
from arenatui.kernel.events import DeclaredLimits, build_tuple
from arenatui.providers.base import REASONING_CHARS, Completion, JudgeTask, Request, estimate_tokens

_NORMAL = NormalDist()
_CHOICE_RE = re.compile(r"^[A-Za-z]$")
_NUM_RE = re.compile(r"^[-+]?\d+(?:\.\d+)?$")


_GOLDEN = 0.6180339887498949
_U32 = 2.3283064365386963e-10  # 2**-32


_blake2b = hashlib.blake2b


def draw(seed: int, key: str, case_id: str, trial: int) -> int:
    """256 deterministic bits for one (seed, model, case, trial): the same in any process (SimCore.outcome has a
    copy inline)."""
    digest = _blake2b(f"{seed}|{key}|{case_id}|{trial}".encode(), digest_size=32).digest()
    return int.from_bytes(digest, "little")


def uniform(bits: int, i: int) -> float:
    """The i-th (0-7) uniform in (0, 1) of a `draw`."""
    return (((bits >> (32 * i)) & 0xFFFFFFFF) + 0.5) * _U32


def uniforms(seed: int, key: str, case_id: str, trial: int) -> list[float]:
    """All eight uniforms of a `draw` (for tests and tools; the hot path takes only what it needs)."""
    bits = draw(seed, key, case_id, trial)
    return [uniform(bits, i) for i in range(8)]


def _per_attempt(u: float, attempt: int) -> float:
    """A distinct, deterministic uniform for each attempt from one base uniform (golden-ratio rotation)."""
    return (u + attempt * _GOLDEN) % 1.0 or 0.5


class SimOutcome(NamedTuple):
    text: str
    latency_s: float
    ttft_s: float
    input_tokens: int
    output_tokens: int
    finish_reason: str
    transient: bool
    correct: bool
    reasoning_tokens: int = 0
    """Of `output_tokens`: those spent reasoning before the answer (sim.reasoning_tokens, cut by max_tokens)."""
    reasoning_s: float = 0.0
    """Seconds from the first (reasoning) token to the first answer token."""


def reasoning_text(tokens: int) -> str:
    """A simulated reasoning of about `tokens` tokens (a word a token)."""
    return "think " * tokens


class SimCore:
    """The state and decisions of one simulated model. Times are seconds on any monotonic clock."""

    def __init__(self, key: str, settings: SimSettings, seed: int = 0) -> None:
        self.key = key
        self.s = settings
        self.seed = seed
        self._draw_prefix = f"{seed}|{key}|"
        """What `draw` hashes before the case and trial: the same for every call of this model."""
        self.rate = settings.rpm / 60.0 if settings.rpm else 0.0
        self.burst = settings.burst if settings.burst is not None else max(1.0, self.rate)
        self.level = self.burst
        self.last_refill: float | None = None
        self.in_flight = 0
        self.served = 0
        self.refused = 0
        self.tokens_used = 0.0
        """Tokens of the answers so far not yet refilled at a stated tokens/min (`spend_tokens`)."""
        self._tokens_t: float | None = None

    def admit(self, now: float) -> float | None:
        """Take a request in (None) or refuse it with the seconds to wait before trying again."""
        s = self.s
        if s.max_concurrent is not None and self.in_flight >= s.max_concurrent:
            self.refused += 1
            return max(0.05, s.base_latency_s)
        if self.rate:
            if self.last_refill is None:
                self.last_refill = now
            self.level = min(self.burst, self.level + (now - self.last_refill) * self.rate)
            self.last_refill = now
            if self.level >= 1.0:
                self.level -= 1.0
            else:
                # Providers count refused requests against the limit too, so hammering digs the hole deeper.
                self.level -= s.reject_cost
                self.refused += 1
                return (1.0 - self.level) / self.rate
        self.in_flight += 1
        self.served += 1
        return None

    def release(self) -> None:
        self.in_flight -= 1

    def spend_tokens(self, tokens: int, tpm: float | None, now: float | None = None) -> None:
        """An answer's tokens (input and output) against a stated tokens/min: what `declared` states as left, as a
        hosted API's remaining-tokens count falls with use and refills at the stated rate. Nothing is refused for
        it (the sim's true limit is requests/min)."""
        if tpm:
            self.tokens_used = self._tokens_left_over(tpm, time.monotonic() if now is None else now) + tokens

    def _tokens_left_over(self, tpm: float, now: float) -> float:
        """`tokens_used` refilled at `tpm` up to `now` (and `now` kept as the last refill)."""
        last, self._tokens_t = self._tokens_t, now
        if last is None:
            return self.tokens_used
        return max(0.0, self.tokens_used - max(0.0, now - last) * tpm / 60.0)

    def declared(self, declare: bool, rpm: float | None, tpm: float | None,
                 now: float | None = None) -> DeclaredLimits | None:
        """The rate limits an answer states (None: it states none): `rpm` (else the true ``rpm``, when `declare`),
        with what is left of it (the bucket's headroom at that rate: full for a lie without a true rpm) and when
        the bucket is full again; `tpm` as stated, with what is left of it after the answers' tokens
        (`spend_tokens`) and when it is whole again."""
        if not (declare or rpm is not None or tpm is not None):
            return None
        rpm = rpm if rpm is not None else self.s.rpm
        left: int | None = None
        reset_s: float | None = None
        if rpm is not None:
            left, reset_s = math.floor(rpm), 0.0
            if self.rate:
                level = max(0.0, self.level)
                left = math.floor(rpm * min(1.0, level / self.burst))
                reset_s = max(0.0, (self.burst - level) / self.rate)
        if tpm is None:
            return DeclaredLimits(None if rpm is None else math.floor(rpm), left, reset_s)
        used = self.tokens_used = self._tokens_left_over(tpm, time.monotonic() if now is None else now)
        return DeclaredLimits(None if rpm is None else math.floor(rpm), left, reset_s, math.floor(tpm),
                              math.floor(max(0.0, tpm - used)), used * 60.0 / tpm if tpm > 0 else 0.0)

    def accuracy_for(self, stratum: str | None, tags: tuple[str, ...]) -> float:
        sa = self.s.strata_accuracy
        if stratum is not None and stratum in sa:
            return sa[stratum]
        for t in tags:
            if t in sa:
                return sa[t]
        return self.s.accuracy

    def outcome(self, case_id: str, trial: int, attempt: int, expected: str | None, stratum: str | None,
                tags: tuple[str, ...], prompt: str, max_tokens: int, turn: int = 0) -> SimOutcome:
        # Once per simulated attempt, a fifth of the engine benchmark's cost per call: the uniforms are read from
        # the draw inline and only where a knob needs them (`uniform` and `_per_attempt` say what each one is).
        s = self.s
        # a follow-up turn (a repair) draws its answer afresh
        # draw(self.seed, self.key, case id, trial), inline with its prefix made once (a call and two formattings less)
        bits = int.from_bytes(_blake2b(f"{self._draw_prefix}{case_id if not turn else f'{case_id}#turn {turn}'}|{trial}"
                                       .encode(), digest_size=32).digest(), "little")
        # uniforms 0-1 belong to the (case, trial): the answer; 2-5 to the attempt: length, jitter, failure, TTFT
        again = attempt > 1
        # a model without per-stratum accuracies (the usual one) needs no lookup
        correct = ((bits & 0xFFFFFFFF) + 0.5) * _U32 < (self.accuracy_for(stratum, tags) if s.strata_accuracy
                                                         else s.accuracy)
        mean = s.wrong_tokens if (s.wrong_tokens is not None and not correct) else s.output_tokens
        if s.exact_timing:
            tokens = mean
        else:
            u = (((bits >> 64) & 0xFFFFFFFF) + 0.5) * _U32
            tokens = max(1, round(mean * (0.5 + (_per_attempt(u, attempt) if again else u))))
        finish = "stop"
        thought = s.reasoning_tokens
        if thought:  # reasoning counts against max_tokens before the answer does
            if thought >= max_tokens:
                thought, tokens, finish = max_tokens, 0, "length"
            elif tokens > max_tokens - thought:
                tokens, finish = max_tokens - thought, "length"
        elif tokens > max_tokens:
            tokens, finish = max_tokens, "length"
        if s.jitter:
            u = (((bits >> 96) & 0xFFFFFFFF) + 0.5) * _U32
            factor = math.exp(s.jitter * _NORMAL.inv_cdf(_per_attempt(u, attempt) if again else u))
        else:
            factor = 1.0
        latency = (s.base_latency_s + tokens * s.per_token_s) * factor
        reasoning_s = 0.0
        if thought:
            per = s.per_token_s if s.reasoning_per_token_s is None else s.reasoning_per_token_s
            reasoning_s = thought * per * factor
            latency += reasoning_s
        ttft = 0.0
        if s.base_latency_s:
            if s.exact_timing:
                ttft = min(latency - reasoning_s, s.base_latency_s * factor)
            else:
                u = (((bits >> 160) & 0xFFFFFFFF) + 0.5) * _U32
                ttft = min(latency - reasoning_s, s.base_latency_s * factor * (0.8 + 0.4 * (
                    _per_attempt(u, attempt) if again else u)))
        transient = False
        if s.transient_rate > 0:
            u = (((bits >> 128) & 0xFFFFFFFF) + 0.5) * _U32
            transient = (_per_attempt(u, attempt) if again else u) < s.transient_rate
        text = expected if (correct and expected is not None) else _answer(expected, correct, uniform(bits, 1),
                                                                            case_id)
        if finish == "length" and len(text) > 8:
            text = text[: max(1, len(text) // 2)]
        # positional (fields: text, latency_s, ttft_s, input_tokens, output_tokens, finish_reason, transient,
        # correct)
        if thought:
            if not tokens:  # cut while reasoning: no answer at all
                text = ""
            return SimOutcome(text, latency, ttft, estimate_tokens(prompt), tokens + thought, finish, transient,
                              correct and tokens > 0, thought, reasoning_s)
        return build_tuple(SimOutcome, (text, latency, ttft, estimate_tokens(prompt), tokens, finish, transient,
                                        correct, 0, 0.0))


def _answer(expected: str | None, correct: bool, u: float, case_id: str) -> str:
    if expected is None:
        return f'{{"case": "{case_id}", "answer": "simulated"}}' if correct else "simulated answer, not JSON {"
    if correct:
        return expected
    labels, n = _wrong_kind(expected)
    if labels:
        return labels[int(u * len(labels)) % len(labels)]
    if n is not None:
        wrong = n + 1 + int(u * 9)
        return str(int(wrong)) if wrong.is_integer() else f"{wrong:g}"
    return "I am not sure."


@functools.lru_cache(maxsize=4096)
def _wrong_kind(expected: str) -> tuple[str, float | None]:
    """How a wrong answer to `expected` is drawn: another choice letter (the other labels), another number (the
    expected one), or neither. Once per expected answer, not per simulated call: two regular expressions a wrong
    answer were 3% of the engine benchmark's cost per call."""
    e = expected.strip()
    if _CHOICE_RE.match(e):
        return "".join(c for c in "ABCD" if c != e.upper()), None
    if _NUM_RE.match(e):
        return "", float(e)
    return "", None


def judge_answer(task: JudgeTask, right: bool, u: float) -> str:
    """A simulated judge's answer: the true verdict when `right` (drawn with the judge's accuracy), else a flipped
    one (u < 0.5) or none it could read. True means the answer holds the expected text (no expected: passes)."""
    norm = " ".join(task.output.split()).casefold()
    truth = task.expected is None or " ".join(task.expected.split()).casefold() in norm
    if not right:
        if u >= 0.5:
            return "I cannot grade this answer without more context."
        truth = not truth
    if task.scale is None:
        return f"The answer {'meets' if truth else 'does not meet'} the rubric.\nVERDICT: {'PASS' if truth else 'FAIL'}"
    lo, hi = task.scale
    return f"Reasoning: compared with the reference.\nVERDICT: {hi if truth else lo}"


class SimProvider:
    """A simulated model served in process, on the engine's own event loop."""

    enforces_timeout = True
    """It ends an attempt at `request.timeout_s` itself, so the engine needs no cancel scope per call."""

    def __init__(self, model: ModelConfig, seed: int = 0) -> None:
        self.model = model
        settings = model.sim
        if model.variant is not None and model.variant.name in settings.prompt_accuracy:  # this lane's variant
            settings = dataclasses.replace(settings, accuracy=settings.prompt_accuracy[model.variant.name])
        self.core = SimCore(model.key, settings, seed)
        """Answers this lane's calls (its variant's accuracy, its draws)."""
        self.limits = self.core
        """Admits the calls (rate limit, concurrency ceiling, stated limits): the model's, shared by its lanes."""
        self._serial = anyio.Lock() if model.sim.serial else None
        self._sleep: Callable[[float], Awaitable[None]] | None = None

    def share_limits(self, first: SimProvider) -> None:
        """Serve under `first`'s limits (its rate bucket, concurrency ceiling and single slot): a model's prompt
        variants are lanes of one model, and a provider limits the model, not each prompt (as the mock server
        does over HTTP)."""
        self.limits = first.limits
        self._serial = first._serial

    def _pick_sleep(self) -> Callable[[float], Awaitable[None]]:
        # On asyncio, call asyncio.sleep directly: anyio.sleep looks the backend up on every call,
        # which is a tenth of this provider's cost at zero latency. Other backends keep anyio.sleep.
        self._sleep = asyncio.sleep if sniffio.current_async_library() == "asyncio" else anyio.sleep
        return self._sleep

    async def complete(self, request: Request) -> Completion:
        core = self.core
        t0 = time.monotonic()
        limits = self.limits
        if limits.rate or limits.s.max_concurrent is not None:
            retry_after = limits.admit(t0)
            if retry_after is not None:
                raise RateLimited(f"simulated 429 from {self.model.key}: rate limit reached", retry_after=retry_after)
        else:  # admit(), inline for a model with no limit to refuse at (a call less per call)
            limits.in_flight += 1
            limits.served += 1
        try:
            case = request.case
            if request.judge is not None:
                prompt = request.messages[-1]["content"]
            elif request.turn:  # a repair turn reads the whole conversation, as the mock server counts it
                prompt = "\n".join([m["content"] for m in request.messages])
            else:
                prompt = case.input if type(case.input) is str else case.prompt_text()
            out = core.outcome(case.id, request.trial, request.attempt, case.expected, case.stratum, case.tags,
                               prompt, request.max_tokens, request.turn)
            wait = out.latency_s / 2 if out.transient else out.latency_s
            timeout = request.timeout_s
            queued = 0.0
            if self._serial is not None:
                # local-GPU mode: wait in line; the line counts against the timeout like a real server's queue
                with anyio.move_on_after(timeout):
                    async with self._serial:
                        queued = time.monotonic() - t0
                        await anyio.sleep(min(wait, timeout - queued))
                if time.monotonic() - t0 >= timeout or queued + wait > timeout:
                    raise TimeoutError
            elif wait > timeout:
                await anyio.sleep(timeout)
                raise TimeoutError
            else:
                await (self._sleep or self._pick_sleep())(wait)
            if out.transient:
                raise TransientError(f"simulated 503 from {self.model.key}: overloaded, try again")
            text = out.text
            if request.judge is not None:  # a judge call: a verdict on the candidate's answer
                text = judge_answer(request.judge, out.correct,
                                    uniform(draw(core.seed, core.key, case.id, request.trial), 1))
            if out.reasoning_tokens:
                return Completion(text, out.input_tokens, out.output_tokens, out.finish_reason, queued + out.ttft_s,
                                  reasoning=reasoning_text(out.reasoning_tokens)[:REASONING_CHARS],
                                  reasoning_tokens=out.reasoning_tokens,
                                  answer_ttft_s=queued + out.ttft_s + out.reasoning_s)
            return build_tuple(Completion, (text, out.input_tokens, out.output_tokens, out.finish_reason,
                                            queued + out.ttft_s, False, None, None, None, None, None, False, None,
                                            None))
        finally:
            limits.in_flight -= 1  # release(), inline

    async def aclose(self) -> None:
        return None


class DeclaringSimProvider(SimProvider):
    """A simulated model whose every answer and refusal states its rate limits (``sim.declare_limits``,
    ``declared_rpm``, ``declared_tpm``), as a hosted API's headers do; apart from SimProvider so that a model that
    declares nothing pays nothing for it."""

    async def complete(self, request: Request) -> Completion:
        s = self.core.s
        limits = self.limits
        try:
            comp = await super().complete(request)
        except RateLimited as e:
            e.limits = limits.declared(s.declare_limits, s.declared_rpm, s.declared_tpm)
            raise
        limits.spend_tokens(comp.input_tokens + comp.output_tokens, s.declared_tpm)
        return comp._replace(limits=limits.declared(s.declare_limits, s.declared_rpm, s.declared_tpm))

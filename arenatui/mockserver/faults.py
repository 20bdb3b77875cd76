"""Which fault (if any) a mock-served request gets, and how a 429 words its retry-after."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from email.utils import formatdate

from arenatui.config.schema import MockFaults

HTTP_TYPES: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "the request is malformed"),
    401: ("authentication_error", "invalid API key"),
    403: ("permission_error", "this key may not use this model"),
    404: ("not_found_error", "no such model"),
    408: ("request_timeout", "the request took too long to arrive"),
    409: ("conflict", "a conflicting request is in progress"),
    422: ("invalid_request_error", "the request could not be processed"),
    429: ("rate_limit_error", "rate limit reached, slow down"),
    500: ("api_error", "internal server error"),
    503: ("service_unavailable", "the service is overloaded, try again"),
    529: ("overloaded_error", "overloaded"),
}


class FaultPicker:
    """Draws faults at the configured rate from a seeded generator (deterministic for one request order)."""

    def __init__(self, cfg: MockFaults, rng: random.Random) -> None:
        self.cfg = cfg
        self.rng = rng

    def pick(self) -> str | None:
        cfg = self.cfg
        if not cfg.faults or cfg.rate <= 0.0:
            return None
        if cfg.rate < 1.0 and self.rng.random() >= cfg.rate:
            return None
        return cfg.faults[self.rng.randrange(len(cfg.faults))]


def retry_after_headers(delay_s: float, form: str, now: float) -> dict[str, str]:
    """The headers of a 429 asking for ``delay_s``; seconds and dates round up, so no form asks for less."""
    secs = str(max(0, math.ceil(delay_s)))
    ms = str(max(0, math.ceil(delay_s * 1000.0)))
    if form == "ms":
        return {"retry-after-ms": ms}
    if form == "seconds":
        return {"Retry-After": secs}
    if form == "date":
        # HTTP dates have whole seconds: name the first whole second at or after the asked-for moment.
        return {"Retry-After": formatdate(math.ceil(now + delay_s), usegmt=True)}
    if form == "llm_provider":  # LiteLLM's proxy: its own header, no Retry-After
        return {"llm_provider-retry-after": secs}
    if form == "openai_reset":
        return {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": f"{int(ms)}ms",
                "x-ratelimit-remaining-tokens": "1000", "x-ratelimit-reset-tokens": "6m0s"}
    if form == "anthropic_reset":
        at = datetime.fromtimestamp(math.ceil(now + delay_s), UTC).isoformat().replace("+00:00", "Z")
        return {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": at}
    if form == "none":
        return {}
    return {"retry-after-ms": ms, "Retry-After": secs}


def declared_headers(wire: str, rpm: float | None, requests_left: float | None, reset_s: float,
                     tpm: float | None, now: float, tokens_left: float | None = None,
                     tokens_reset_s: float = 0.0) -> dict[str, str]:
    """Rate-limit headers as a provider declares them on every response: OpenAI's ``x-ratelimit-*`` (resets as
    durations) or Anthropic's ``anthropic-ratelimit-*`` (resets as RFC 3339 times). Tokens left default to the
    whole `tpm`."""
    out: dict[str, str] = {}
    left = None if requests_left is None else str(max(0, math.floor(requests_left)))
    tokens = None if tpm is None else str(max(0, math.floor(tpm if tokens_left is None else tokens_left)))
    if wire == "anthropic":
        at = datetime.fromtimestamp(now + reset_s, UTC).isoformat().replace("+00:00", "Z")
        if rpm is not None:
            out["anthropic-ratelimit-requests-limit"] = str(math.floor(rpm))
            out["anthropic-ratelimit-requests-reset"] = at
            if left is not None:
                out["anthropic-ratelimit-requests-remaining"] = left
        if tpm is not None and tokens is not None:
            out["anthropic-ratelimit-tokens-limit"] = str(math.floor(tpm))
            out["anthropic-ratelimit-tokens-remaining"] = tokens
            out["anthropic-ratelimit-tokens-reset"] = datetime.fromtimestamp(now + tokens_reset_s, UTC).isoformat() \
                .replace("+00:00", "Z")
        return out
    if rpm is not None:
        out["x-ratelimit-limit-requests"] = str(math.floor(rpm))
        out["x-ratelimit-reset-requests"] = f"{max(0, math.ceil(reset_s * 1000))}ms"
        if left is not None:
            out["x-ratelimit-remaining-requests"] = left
    if tpm is not None and tokens is not None:
        out["x-ratelimit-limit-tokens"] = str(math.floor(tpm))
        out["x-ratelimit-remaining-tokens"] = tokens
        out["x-ratelimit-reset-tokens"] = f"{max(0, math.ceil(tokens_reset_s * 1000))}ms"
    return out


class Stall:
    """The whole server stops answering once: every request arriving in [after_s, after_s + for_s) after the
    first request waits until the stall ends (a GC pause, a failover). What an open-loop client must show in
    its from-schedule latencies, and a closed-loop one hides (coordinated omission)."""

    def __init__(self, after_s: float, for_s: float) -> None:
        self.after_s = after_s
        self.for_s = for_s
        self._first: float | None = None

    def wait_s(self, now: float) -> float:
        """Seconds a request arriving at `now` (a loop clock) waits before it is served."""
        if self._first is None:
            self._first = now
        start = self._first + self.after_s
        return start + self.for_s - now if start <= now < start + self.for_s else 0.0

"""The one retry policy: exponential backoff with full jitter, never earlier than a provider's retry-after."""

from __future__ import annotations

import random
from dataclasses import dataclass

RETRIED = frozenset(("rate_limited", "transient", "timeout", "incomplete_stream"))
"""Error classes a later attempt may not repeat: terminal ones ('terminal', 'solver_error') never sleep."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 5
    base_s: float = 0.5
    cap_s: float = 30.0
    budget_s: float = 600.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Full jitter: uniform in [0, min(cap, base·2^(attempt-1))] after the attempt-th failure."""
        ceiling = min(self.cap_s, self.base_s * (2.0 ** min(attempt - 1, 60)))
        return rng.uniform(0.0, ceiling)

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        d = self.backoff(attempt, rng)
        if retry_after is not None and retry_after > d:
            return retry_after
        return d

    def wait(self, error_class: str, attempt: int, retry_after: float | None, rng: random.Random) -> float | None:
        """The wait before the attempt after the attempt-th, which failed with `error_class`; None when the call ends
        with it (a class the next attempt would repeat, or its last attempt). The call's budget is checked apart."""
        if error_class not in RETRIED or attempt >= self.max_attempts:
            return None
        return self.delay(attempt, retry_after, rng)

    def over_budget(self, message: str, delay: float, elapsed: float, retry_after: float | None,
                    retry_source: str | None) -> str:
        """A failed attempt's message when the wait before the next (`delay`, after `elapsed` seconds of the call)
        would pass the call's retry budget: what was asked, and that it was not retried."""
        asked = f"{retry_source or 'retry-after'} {retry_after:g}s" if retry_after is not None \
            else f"backoff {delay:.1f}s"
        return (f"{message} ({asked} exceeds the {self.budget_s - elapsed:.0f}s left of this "
                f"call's {self.budget_s:g}s budget; not retried)")

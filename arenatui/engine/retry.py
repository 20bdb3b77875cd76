"""The one retry policy: exponential backoff with full jitter, never earlier than a provider's retry-after."""

from __future__ import annotations

import random
from dataclasses import dataclass


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

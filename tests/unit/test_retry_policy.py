"""RetryPolicy on its own: full jitter bounds and distribution, retry-after as a floor."""

from __future__ import annotations

import random

import pytest

from arenatui.engine import RetryPolicy


@pytest.mark.parametrize("attempt", [1, 2, 3, 5, 8, 70])
def test_full_jitter_is_uniform_between_zero_and_the_capped_exponential(attempt: int) -> None:
    p = RetryPolicy(base_s=0.5, cap_s=6.0)
    ceiling = min(6.0, 0.5 * 2 ** (attempt - 1))
    rng = random.Random(attempt)
    xs = sorted(p.backoff(attempt, rng) for _ in range(4000))
    assert xs[0] >= 0.0 and xs[-1] <= ceiling
    # uniform: quantiles sit at q·ceiling (4000 draws: standard error of a quantile < 1% of the range)
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):
        assert abs(xs[int(q * len(xs))] / ceiling - q) < 0.04, q
    assert xs[-1] > 0.97 * ceiling and xs[0] < 0.03 * ceiling


def test_delay_never_undercuts_retry_after() -> None:
    p = RetryPolicy(base_s=0.5, cap_s=30.0)
    rng = random.Random(0)
    for attempt in range(1, 8):
        for ra in (0.0, 0.3, 2.0, 45.0):
            assert p.delay(attempt, ra, rng) >= ra
    # a retry-after above the whole backoff range is used exactly, not more
    assert p.delay(1, 45.0, rng) == 45.0
    # and without one the delay is the jittered backoff
    assert 0.0 <= p.delay(3, None, rng) <= 2.0

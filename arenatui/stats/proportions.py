"""The Wilson score interval of a share k/n, the one every figure that puts an interval on a count uses (a level's
429 share, a judge's agreement, a failure mode's share of calls). Pure: no numpy, since the tuner imports it on
the engine's start path."""

from __future__ import annotations

import math

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of k/n; None when n is 0. Unlike the normal one it stays within [0, 1] and is honest
    at small n (10 of 10 gives 0.72–1.00, not 1.00–1.00); its ends are exactly 0 and 1 at k = 0 and k = n."""
    if n <= 0:
        return None
    p = k / n
    d = 1.0 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (0.0 if k == 0 else max(0.0, c - h)), (1.0 if k == n else min(1.0, c + h))

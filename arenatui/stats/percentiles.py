"""The one percentile of every figure: linear interpolation between the two nearest ranks (numpy's default method),
over the finite values only, p from 0 to 100; none when there is no finite value.

Two faces of the one definition: `percentile` on an already sorted sequence in pure Python (the live metrics and
the tuner keep their latencies sorted as they fold events, and must not import numpy on the engine's start path),
and `percentiles` on an array with numpy (a stored run's or a load run's samples, hundreds of thousands of them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """The p-th percentile (0-100) of values sorted ascending, all finite; None for none."""
    if not sorted_values:
        return None
    k = (len(sorted_values) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def percentiles(values: Any, ps: Sequence[float]) -> list[float | None]:
    """The ps-th percentiles (0-100) of the finite values of an array (in any order); None for each when there
    are none."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return [None] * len(ps)
    return [float(x) for x in np.percentile(v, ps)]


def or_nan(value: float | None) -> float:
    """A percentile where "none" is written NaN (the load figures' arrays and tables)."""
    return math.nan if value is None else value


def percentile_interval(values: Any, p: float, level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the p-th percentile (0-100) of the finite values: the order statistics whose
    ranks bracket n·p/100 by the normal approximation to the binomial count below it, rounded outward (it covered
    an exponential's p95 96-98% of the time at 120-1,000 values). A bound whose rank falls outside 1..n is NaN: so
    few values say nothing about that side (a p95 needs 73 for both, `min_for_interval`)."""
    import numpy as np

    v = np.sort(np.asarray(values, dtype=np.float64))
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return math.nan, math.nan
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    q = p / 100.0
    half = z * math.sqrt(n * q * (1 - q))
    lo = math.floor(n * q - half)  # 1-based ranks
    hi = math.ceil(n * q + half)
    return (float(v[lo - 1]) if 1 <= lo <= n else math.nan, float(v[hi - 1]) if 1 <= hi <= n else math.nan)


def min_for_interval(p: float, level: float = 0.95) -> int:
    """The fewest values for which percentile_interval has both bounds (p95 at 95%: 73)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    q = p / 100.0
    n = 1
    while not (math.floor(n * q - z * math.sqrt(n * q * (1 - q))) >= 1
               and math.ceil(n * q + z * math.sqrt(n * q * (1 - q))) <= n):
        n += 1
    return n

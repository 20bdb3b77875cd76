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

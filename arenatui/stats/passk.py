"""pass@k with the unbiased estimator, and trial-to-trial consistency."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from arenatui.stats.items import Ints


def pass_at_k_case(n: int, c: int, k: int) -> float:
    """1 − C(n−c, k) / C(n, k): the chance that k of a case's n trials, drawn without replacement, include a pass."""
    if not 0 < k <= n:
        raise ValueError(f"pass@k needs 0 < k <= n trials, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_ks(answered: Ints, passed: Ints, ks: Sequence[int]) -> dict[int, float]:
    """Mean pass@k over one case set for every k: the cases with at least K answered trials, K the largest k
    any case supports. k values no case supports are left out (an empty dict when no case was answered).

    Over one set the curve is non-decreasing in k by construction (each case's pass@k is); computing each k over
    its own set (the cases with at least k trials) made it fall: @1 0.71 @2 0.88 @3 0.50 (issue 26). Computed once
    per distinct (n, c) pair: a run has few, however many cases it has.
    """
    return pass_at_curve(answered, passed, ks)[0]


def pass_at_curve(answered: Ints, passed: Ints, ks: Sequence[int]) -> tuple[dict[int, float], int]:
    """(pass@k for the supported k, the number of cases the curve is computed over)."""
    n = np.asarray(answered, dtype=np.int64)
    c = np.asarray(passed, dtype=np.int64)
    supported = [k for k in ks if k >= 1 and (n >= k).any()]
    if not supported:
        return {}, 0
    top_k = max(supported)
    keep = n >= top_k
    top = int(n.max(initial=0)) + 1
    codes, counts = np.unique(n[keep] * top + c[keep], return_counts=True)
    ns, cs = codes // top, codes % top
    out = {}
    for k in supported:
        values = np.array([pass_at_k_case(int(nn), int(cc), k) for nn, cc in zip(ns, cs, strict=True)])
        out[k] = float(values @ counts / counts.sum())
    return out, int(keep.sum())


def pass_at_k(answered: Ints, passed: Ints, k: int) -> float:
    """Mean pass@k over the cases with at least k answered trials; NaN when there are none."""
    return pass_at_ks(answered, passed, (k,)).get(k, float("nan"))


def consistency(answered: Ints, passed: Ints) -> float:
    """Share of cases with two or more answered trials where every trial agreed (all passed or none); NaN if none."""
    n = np.asarray(answered, dtype=np.int64)
    c = np.asarray(passed, dtype=np.int64)
    keep = n >= 2
    if not keep.any():
        return float("nan")
    agree = (c[keep] == 0) | (c[keep] == n[keep])
    return float(agree.mean())

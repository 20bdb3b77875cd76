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
    """Mean pass@k over the cases with at least k answered trials, for each k; NaN where there are none.

    Computed once per distinct (n, c) pair: a run has few, however many cases it has.
    """
    n = np.asarray(answered, dtype=np.int64)
    c = np.asarray(passed, dtype=np.int64)
    top = int(n.max(initial=0)) + 1
    codes, counts = np.unique(n * top + c, return_counts=True)
    ns, cs = codes // top, codes % top
    out = {}
    for k in ks:
        keep = ns >= k
        if not keep.any():
            out[k] = float("nan")
            continue
        values = np.array([pass_at_k_case(int(nn), int(cc), k) for nn, cc in zip(ns[keep], cs[keep], strict=True)])
        out[k] = float(values @ counts[keep] / counts[keep].sum())
    return out


def pass_at_k(answered: Ints, passed: Ints, k: int) -> float:
    """Mean pass@k over the cases with at least k answered trials; NaN when there are none."""
    return pass_at_ks(answered, passed, (k,))[k]


def consistency(answered: Ints, passed: Ints) -> float:
    """Share of cases with two or more answered trials where every trial agreed (all passed or none); NaN if none."""
    n = np.asarray(answered, dtype=np.int64)
    c = np.asarray(passed, dtype=np.int64)
    keep = n >= 2
    if not keep.any():
        return float("nan")
    agree = (c[keep] == 0) | (c[keep] == n[keep])
    return float(agree.mean())

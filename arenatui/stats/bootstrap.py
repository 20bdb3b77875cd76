"""Bootstrap confidence intervals over items, exact and fast when scores take few distinct values.

Resampling n items with replacement is the same as drawing multinomial counts over the distinct
values (or distinct (a, b) pairs when paired), so for 0/1 scores or trial averages the work is
per distinct value, not per item (DESIGN.md: ≈ 23 ms instead of ≈ 0.65 s for 10 pairs × 1,000 items).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]
_DISTINCT_LIMIT = 64
_CHUNK = 2_000_000  # cells of the (resamples × items) matrix per chunk in the general path


@dataclass(frozen=True, slots=True)
class Interval:
    estimate: float
    low: float
    high: float
    n: int


def resampled_means(values: Floats, n_resamples: int, rng: np.random.Generator) -> Floats:
    """Means of n_resamples bootstrap resamples of `values` (1-D): the paired path passes a − b here."""
    n = len(values)
    distinct, counts = np.unique(values, return_counts=True)
    # A multinomial draw costs about twice an index draw per category (measured: ~85 ns a binomial against ~37 ns
    # an index), so counts win whenever categories are well under half the items, not only for 0/1 scores.
    if len(distinct) <= max(_DISTINCT_LIMIT, n // 4):
        draws = rng.multinomial(n, counts / n, size=n_resamples)
        return np.asarray(draws @ distinct / n, dtype=np.float64)
    out = np.empty(n_resamples)
    rows = max(1, _CHUNK // n)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = values[idx].mean(axis=1)
    return out


def resampled_cluster_means(values: Floats, clusters: NDArray[np.int64], n_resamples: int,
                            rng: np.random.Generator) -> Floats:
    """Means of n_resamples cluster-bootstrap resamples: draw clusters (not items) with replacement, keep each
    drawn cluster's items together; the mean is over the items drawn (a ratio: clusters may differ in size)."""
    codes, inverse = np.unique(clusters, return_inverse=True)
    g = codes.size
    sums = np.bincount(inverse, weights=values, minlength=g)
    sizes = np.bincount(inverse, minlength=g).astype(np.float64)
    out = np.empty(n_resamples)
    rows = max(1, _CHUNK // g)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        counts = rng.multinomial(g, np.full(g, 1 / g), size=stop - start)
        out[start:stop] = (counts @ sums) / (counts @ sizes)
    return out


def clustered_se(values: Floats, clusters: NDArray[np.int64]) -> float:
    """The cluster-robust standard error of the mean (CR1 small-sample factor G/(G−1), as Inspect AI's
    stderr(cluster=...)): residuals summed within each cluster before squaring."""
    codes, inverse = np.unique(clusters, return_inverse=True)
    g, n = codes.size, values.size
    if g < 2:
        return float("nan")
    resid = np.bincount(inverse, weights=values - values.mean(), minlength=g)
    return float(np.sqrt(g / (g - 1) * np.sum(resid ** 2)) / n)


def mean_ci(values: Floats | list[float], *, n_resamples: int = 10_000, level: float = 0.95,
            seed: int = 0, clusters: NDArray[np.int64] | None = None) -> Interval:
    """Mean with a percentile-bootstrap interval (over clusters when given). NaN bounds when there is nothing to
    resample."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    est = float(v.mean())
    if v.size == 1:
        return Interval(est, est, est, 1)
    rng = np.random.default_rng(seed)
    if clusters is not None and np.unique(clusters).size < 2:  # one cluster: no interval to draw
        return Interval(est, float("nan"), float("nan"), int(v.size))
    means = resampled_means(v, n_resamples, rng) if clusters is None else \
        resampled_cluster_means(v, clusters, n_resamples, rng)
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return Interval(est, float(lo), float(hi), int(v.size))


@dataclass(frozen=True, slots=True)
class PairedComparison:
    diff: Interval
    """Mean of a − b over items, with its interval."""
    p_a_better: float
    """Share of resamples where a's mean exceeded b's."""

    @property
    def decided(self) -> bool:
        """The interval excludes zero: the ordering is established at this level."""
        return self.diff.low > 0 or self.diff.high < 0


def paired_bootstrap(a: Floats | list[float], b: Floats | list[float], *, n_resamples: int = 10_000,
                     level: float = 0.95, seed: int = 0) -> PairedComparison:
    """Resample items, keeping each item's pair of scores together."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError("paired scores need the same items in the same order")
    d = x - y
    if d.size == 0:
        nan = float("nan")
        return PairedComparison(Interval(nan, nan, nan, 0), nan)
    means = resampled_means(d, n_resamples, np.random.default_rng(seed))
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return PairedComparison(Interval(float(d.mean()), float(lo), float(hi), int(d.size)),
                            float(np.mean(means > 0)))

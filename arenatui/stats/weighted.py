"""Stratified figures: a score reweighted to production frequency, and the stratum-matched sealed gap.

Both resample within each stratum (a stratified bootstrap): a stratum's share is fixed by the weights, not by how
many of its cases the file happened to hold. In a clustered run both are instead a t interval on the clustered SE of
the same linear estimate (each case's influence summed within its cluster), with clusters − strata degrees of
freedom: the intervals of a clustered run rest on clusters, never on cases (issue 35).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from arenatui.stats.bootstrap import Interval, cluster_t_interval, resampled_means
from arenatui.stats.items import Bools, Floats, Ints

_NAN = float("nan")


def _interval(est: float, draws: Floats, n: int, level: float) -> Interval:
    """NaN bounds when a stratum had a single case: its spread is unknown, so no interval is claimed."""
    a = (1 - level) / 2
    lo, hi = np.quantile(draws, [a, 1 - a])
    return Interval(est, float(lo), float(hi), n)


def _stratum_draws(v: Floats, n_resamples: int, rng: np.random.Generator) -> Floats:
    return np.full(n_resamples, np.nan) if v.size == 1 else resampled_means(v, n_resamples, rng)


def _clustered(est: float, influence: Floats, keep: Bools, clusters: Ints, n: int, level: float,
               strata: Sequence[str]) -> Interval:
    """The t interval on the stratified clustered SE (clusters − strata df); each stratum's clusters get their own
    small-sample factor when clusters nest in strata (at 5 clusters over 2 strata one factor for all covered 90.7%)."""
    codes = np.unique(np.asarray(strata, dtype=object)[keep], return_inverse=True)[1].astype(np.int64)
    c = clusters[keep]
    nested = all(np.unique(codes[c == k]).size == 1 for k in np.unique(c))
    lo, hi, _se, g = cluster_t_interval(est, influence[keep], c, level, df_less=int(np.unique(codes).size) - 1,
                                        strata=codes if nested else None)
    return Interval(est, lo, hi, n, g)


def reweighted(scores: Floats, strata: Sequence[str | None], mask: Bools, weights: Mapping[str, float], *,
               n_resamples: int = 2_000, level: float = 0.95, seed: int = 0,
               clusters: Ints | None = None) -> Interval | None:
    """Σ weight_s · mean_s over the scored cases of `mask`, with a stratified-bootstrap interval.

    None when a weighted stratum has no scored case here (its share cannot be filled) or there are no weights.
    Weights are normalised over the strata they name."""
    total = sum(weights.values())
    if not weights or total <= 0:
        return None
    rng = np.random.default_rng(seed)
    strata_arr = np.array([s if s is not None else "" for s in strata], dtype=object)
    est = 0.0
    draws = np.zeros(n_resamples)
    n = 0
    influence = np.zeros(scores.shape)
    keep = np.zeros(scores.shape, bool)
    for s, w in weights.items():
        here = mask & (strata_arr == s) & ~np.isnan(scores)
        v = scores[here]
        if v.size == 0:
            return None
        est += w / total * float(v.mean())
        influence[here] = w / total * (v - v.mean()) / v.size
        keep |= here
        if clusters is None:
            draws += w / total * _stratum_draws(v, n_resamples, rng)
        n += int(v.size)
    if clusters is not None:
        return _clustered(est, influence, keep, clusters, n, level, list(strata_arr))
    return _interval(est, draws, n, level)


@dataclass(frozen=True, slots=True)
class SealedGap:
    """Working − sealed quality within the strata both splits have, weighted by the sealed cases' mix."""

    gap: Interval
    strata: tuple[str, ...]
    """The strata matched ('' for cases without one)."""
    left_out: int
    """Scored cases (either split) in a stratum the other split lacks."""

    @property
    def outside(self) -> bool:
        """The interval excludes zero: the gap is more than noise (never when a side had one case: no interval)."""
        return self.gap.n > 1 and (self.gap.low > 0 or self.gap.high < 0)


def sealed_gap(scores: Floats, strata: Sequence[str | None], working: Bools, sealed: Bools, *,
               n_resamples: int = 2_000, level: float = 0.95, seed: int = 0,
               clusters: Ints | None = None) -> SealedGap | None:
    """None when no stratum has scored cases in both splits."""
    rng = np.random.default_rng(seed)
    keys = np.array([s if s is not None else "" for s in strata], dtype=object)
    scored = ~np.isnan(scores)
    names = list(dict.fromkeys(keys[(working | sealed) & scored]))
    matched = [s for s in names if (working & scored & (keys == s)).any() and (sealed & scored & (keys == s)).any()]
    if not matched:
        return None
    n_sealed = sum(int((sealed & scored & (keys == s)).sum()) for s in matched)
    est, draws, n = 0.0, np.zeros(n_resamples), 0
    influence = np.zeros(scores.shape)
    keep = np.zeros(scores.shape, bool)
    for s in matched:
        in_w, in_s = working & scored & (keys == s), sealed & scored & (keys == s)
        w_cases, s_cases = scores[in_w], scores[in_s]
        share = s_cases.size / n_sealed
        est += share * (float(w_cases.mean()) - float(s_cases.mean()))
        influence[in_w] = share * (w_cases - w_cases.mean()) / w_cases.size
        influence[in_s] = -share * (s_cases - s_cases.mean()) / s_cases.size
        keep |= in_w | in_s
        if clusters is None:
            draws += share * (_stratum_draws(w_cases, n_resamples, rng) - _stratum_draws(s_cases, n_resamples, rng))
        n += int(w_cases.size + s_cases.size)
    left_out = int(((working | sealed) & scored).sum()) - n
    if clusters is not None:
        return SealedGap(_clustered(est, influence, keep, clusters, n, level, list(keys)), tuple(matched), left_out)
    return SealedGap(_interval(est, draws, n, level), tuple(matched), left_out)

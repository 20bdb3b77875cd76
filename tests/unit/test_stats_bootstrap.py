"""The paired bootstrap against scipy, textbook standard errors, and its coverage of a known difference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps  # test-only dependency: never imported by arenatui

from arenatui.stats import mean_ci, paired_differences
from arenatui.stats.bootstrap import resampled_means


def _trial_averages(rng: np.random.Generator, p: np.ndarray, trials: int) -> np.ndarray:
    return rng.binomial(trials, p) / trials


def test_paired_interval_matches_scipy_bootstrap_percentile() -> None:
    rng = np.random.default_rng(3)
    n = 300
    difficulty = rng.uniform(0.2, 0.95, n)
    a = _trial_averages(rng, np.clip(difficulty + 0.05, 0, 1), 3)
    b = _trial_averages(rng, difficulty, 3)
    ours = paired_differences(a, b, n_resamples=20_000, seed=1)
    ref = sps.bootstrap((a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True, vectorized=True,
                        n_resamples=20_000, method="percentile", confidence_level=0.95,
                        random_state=np.random.default_rng(2))
    step = 1 / (3 * n)  # one resampled mean moves in steps of 1/(3n)
    assert ours.diff.estimate == pytest.approx(float(np.mean(a - b)))
    assert ours.diff.low == pytest.approx(ref.confidence_interval.low, abs=3 * step)
    assert ours.diff.high == pytest.approx(ref.confidence_interval.high, abs=3 * step)
    assert float(ours.differences.std(ddof=1)) == pytest.approx(ref.standard_error, rel=0.05)


def test_mean_ci_matches_scipy_for_binary_scores() -> None:
    rng = np.random.default_rng(4)
    v = (rng.random(400) < 0.7).astype(float)
    ours = mean_ci(v, n_resamples=20_000, seed=5)
    ref = sps.bootstrap((v,), np.mean, n_resamples=20_000, method="percentile",
                        random_state=np.random.default_rng(6)).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=2 / 400)
    assert ours.high == pytest.approx(ref.high, abs=2 / 400)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_bootstrap_standard_error_is_the_textbook_one(p: float) -> None:
    # The bootstrap SE of a mean is the plug-in sd / sqrt(n) (ddof = 0); for 0/1 scores sqrt(p̂(1 − p̂) / n).
    n = 500
    v = np.zeros(n)
    v[: int(p * n)] = 1.0
    means = resampled_means(v, 40_000, np.random.default_rng(7))
    assert float(means.std()) == pytest.approx(math.sqrt(p * (1 - p) / n), rel=0.03)
    d = paired_differences(v, np.zeros(n), n_resamples=40_000, seed=8)
    assert float(d.differences.std()) == pytest.approx(math.sqrt(p * (1 - p) / n), rel=0.03)


def test_interval_covers_a_known_difference_about_95_percent_of_the_time() -> None:
    """1,000 simulated evaluations (seeds) with a true difference of 0.05: coverage within 93-97%."""
    n_cases, trials, seeds = 150, 3, 1000
    pa, pb = 0.75, 0.70
    covered = 0
    for seed in range(seeds):
        rng = np.random.default_rng(10_000 + seed)
        # correlated items: a shared per-case difficulty, as real benchmarks have
        shift = rng.normal(0.0, 0.15, n_cases)
        a = _trial_averages(rng, np.clip(pa + shift, 0, 1), trials)
        b = _trial_averages(rng, np.clip(pb + shift, 0, 1), trials)
        r = paired_differences(a, b, n_resamples=2_000, seed=seed)
        covered += r.diff.low <= TRUE_DIFF <= r.diff.high
    assert 0.93 <= covered / seeds <= 0.97, covered / seeds


def _true_diff() -> float:
    """E[clip(pa + s) − clip(pb + s)] with s ~ N(0, 0.15), by a large Monte Carlo (deterministic)."""
    s = np.random.default_rng(0).normal(0.0, 0.15, 4_000_000)
    return float(np.mean(np.clip(0.75 + s, 0, 1) - np.clip(0.70 + s, 0, 1)))


TRUE_DIFF = _true_diff()


def test_paired_interval_is_narrower_than_unpaired_on_correlated_items() -> None:
    rng = np.random.default_rng(11)
    n = 400
    # a case one model finds hard the other mostly does too: both see the same draw against their ability
    difficulty = rng.uniform(0.0, 1.0, n)
    a = (difficulty < 0.7).astype(float)
    b = (difficulty < 0.6).astype(float)
    flip = rng.random(n) < 0.1
    b[flip] = 1 - b[flip]
    paired = paired_differences(a, b, seed=1)
    ia, ib = mean_ci(a, seed=2), mean_ci(b, seed=3)
    # unpaired: resample the two models' cases independently
    rng2 = np.random.default_rng(4)
    unpaired = resampled_means(a, 10_000, rng2) - resampled_means(b, 10_000, rng2)
    lo, hi = np.quantile(unpaired, [0.025, 0.975])
    assert paired.diff.high - paired.diff.low < 0.75 * (hi - lo)
    assert ia.n == ib.n == paired.n == n

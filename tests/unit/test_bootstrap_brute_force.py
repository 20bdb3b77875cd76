"""mean_ci and paired_bootstrap against a brute-force numpy reference (index resampling)."""

from __future__ import annotations

import numpy as np
import pytest

from arenatui.stats import mean_ci, paired_bootstrap
from arenatui.stats.bootstrap import resampled_means

B = 20_000


def brute_means(values: np.ndarray, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(n, len(values)))
    return values[idx].mean(axis=1)


@pytest.mark.parametrize("values", [
    np.array([0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1], dtype=float),  # few distinct values: multinomial shortcut
    np.array([0, 1 / 3, 2 / 3, 1, 1, 2 / 3, 0, 1, 1, 1 / 3, 1, 1, 2 / 3, 0, 1], dtype=float),  # trial averages
])
def test_multinomial_shortcut_matches_index_resampling_in_distribution(values: np.ndarray) -> None:
    fast = resampled_means(values, B, np.random.default_rng(1))
    slow = brute_means(values, B, 2)
    qs = [0.025, 0.1, 0.25, 0.5, 0.75, 0.9, 0.975]
    # one resampled mean moves in steps of 1/(3n); quantiles of 20,000 draws agree within a step or two
    step = 1 / (3 * len(values))
    assert np.allclose(np.quantile(fast, qs), np.quantile(slow, qs), atol=2 * step)
    assert fast.mean() == pytest.approx(values.mean(), abs=0.01)
    assert fast.std() == pytest.approx(slow.std(), rel=0.05)
    assert fast.std() == pytest.approx(values.std() / np.sqrt(len(values)), rel=0.05)


def test_general_path_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    values = rng.normal(0.5, 0.2, size=200)  # > 64 distinct: the chunked path
    ci = mean_ci(values, n_resamples=B, seed=3)
    ref = np.quantile(brute_means(values, B, 4), [0.025, 0.975])
    assert ci.estimate == pytest.approx(values.mean())
    assert ci.low == pytest.approx(ref[0], abs=0.004) and ci.high == pytest.approx(ref[1], abs=0.004)
    assert ci.low < ci.estimate < ci.high and ci.n == 200


def test_mean_ci_edges() -> None:
    empty = mean_ci([])
    assert empty.n == 0 and np.isnan(empty.estimate)
    one = mean_ci([0.7])
    assert (one.estimate, one.low, one.high, one.n) == (0.7, 0.7, 0.7, 1)
    same = mean_ci([1.0] * 10)
    assert (same.low, same.high) == (1.0, 1.0)
    assert mean_ci([0, 1] * 20, seed=5) == mean_ci([0, 1] * 20, seed=5)  # seeded: reproducible


def test_paired_bootstrap_against_brute_force() -> None:
    rng = np.random.default_rng(9)
    a = (rng.random(60) < 0.75).astype(float)
    b = np.where(rng.random(60) < 0.8, a, 1 - a)  # correlated with a, slightly worse on average
    res = paired_bootstrap(a, b, n_resamples=B, seed=1)
    d = a - b
    ref = brute_means(d, B, 7)
    lo, hi = np.quantile(ref, [0.025, 0.975])
    step = 1 / len(d)
    assert res.diff.estimate == pytest.approx(d.mean())
    assert res.diff.low == pytest.approx(lo, abs=2 * step) and res.diff.high == pytest.approx(hi, abs=2 * step)
    assert res.p_a_better == pytest.approx(float(np.mean(ref > 0)), abs=0.03)


def test_paired_bootstrap_decides_clear_differences_only() -> None:
    a = [1.0] * 45 + [0.0] * 5
    b = [1.0] * 20 + [0.0] * 30
    clear = paired_bootstrap(a, b)
    assert clear.decided and clear.diff.low > 0 and clear.p_a_better > 0.99
    same = paired_bootstrap(a, list(reversed(a)))
    assert not same.decided
    with pytest.raises(ValueError):
        paired_bootstrap([1.0, 0.0], [1.0])

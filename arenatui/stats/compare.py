"""Paired comparisons: two models over the cases both answered, all pairs with Holm, and two runs.

Each case's trials are averaged first, so a case is one item whatever the trial count; the bootstrap
resamples cases keeping each case's pair of scores together (the multinomial path of `bootstrap`).
The verdicts are worded for a decision: an interval that spans zero never reads as "equal".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from arenatui.stats.bootstrap import Interval, resampled_means
from arenatui.stats.items import Bools, Floats, RunResults

N_RESAMPLES = 10_000
"""For one comparison: its interval and the histogram of resampled differences."""
MATRIX_RESAMPLES = 2_000
"""For every pair at once (190 pairs for 20 models in under 5 s on 1,000,000 calls): interval endpoints from
2,000 resamples move by about 2% of the interval's width between seeds (measured), and the Holm decisions
use the z p-value below, which needs no tail counts."""
LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class Comparison:
    """A − B over the cases both answered."""

    a: str
    b: str
    diff: Interval
    """Mean of a − b over shared cases, with its percentile-bootstrap interval."""
    p_a_better: float
    """Share of resamples where A's mean exceeded B's."""
    p_value: float
    """Two-sided p-value for "no difference": 2·(1 − Φ(|mean| / bootstrap SE)).

    Not counted from resample tails: Holm over 190 pairs asks for p below 0.05/190 ≈ 0.00026, finer than a
    few thousand resamples can count."""
    level: float
    only_a: int
    """Cases A answered and B did not (left out of the comparison)."""
    only_b: int
    differences: Floats
    """The resampled mean differences, for a histogram (empty when n < 2)."""
    cases_needed: int | None
    """Cases that would resolve the observed difference at this level (SE ∝ 1/√n); None if decided or zero."""

    @property
    def n(self) -> int:
        return self.diff.n

    @property
    def decided(self) -> bool:
        """The interval excludes zero: the ordering is established at this level."""
        return self.diff.n > 1 and (self.diff.low > 0 or self.diff.high < 0)

    @property
    def better(self) -> str | None:
        if not self.decided:
            return None
        return self.a if self.diff.estimate > 0 else self.b

    @property
    def verdict(self) -> str:
        return verdict_text(self.a, self.b, self.diff, self.level, self.cases_needed)

    @property
    def coverage_note(self) -> str | None:
        """Said beside the verdict when the two models have scores for different cases (one errored, or was not
        judged, where the other was)."""
        if not (self.only_a or self.only_b):
            return None
        return (f"compared over the {self.n} cases both have scores for ({self.a} also has {self.only_a} that "
                f"{self.b} does not, {self.b} {self.only_b} that {self.a} does not)")


def _pct(level: float) -> str:
    return f"{level * 100:g}%"


def verdict_text(a: str, b: str, diff: Interval, level: float = LEVEL, cases_needed: int | None = None) -> str:
    """The decision in words, as the issue states it."""
    if diff.n == 0:
        return f"no cases that both {a} and {b} answered: nothing to compare"
    decided = diff.n > 1 and (diff.low > 0 or diff.high < 0)
    if decided:
        if diff.estimate > 0:
            return (f"{a} is better by {diff.estimate:.3f} ({_pct(level)} CI {diff.low:.3f} to "
                    f"{diff.high:.3f})")
        return f"{b} is better by {-diff.estimate:.3f} ({_pct(level)} CI {-diff.high:.3f} to {-diff.low:.3f})"
    text = f"no ordering established on this evidence ({diff.n} case{'s' if diff.n != 1 else ''})"
    if cases_needed is not None:
        text += f"; about {cases_needed} cases would resolve a difference of {abs(diff.estimate):.3f}"
    elif diff.n > 1 and diff.estimate == 0:
        text += "; the observed difference is zero, so no number of cases would resolve it"
    return text


def cases_needed(n: int, estimate: float, standard_error: float, level: float = LEVEL) -> int | None:
    """Cases at which an interval of this level would just exclude zero, if the difference stayed as observed.

    The standard error shrinks as 1/√n: n' = n · (z · SE / |d|)². None when the difference is zero or the
    standard error is unknown (a single case).
    """
    if n < 2 or estimate == 0 or not math.isfinite(standard_error) or standard_error <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return max(n + 1, math.ceil(n * (z * standard_error / abs(estimate)) ** 2))


def _z_p_value(estimate: float, standard_error: float) -> float:
    if standard_error <= 0 or not math.isfinite(standard_error):
        return 1.0 if estimate == 0 else 0.0  # every case differs by the same amount: no resample crosses zero
    return 2 * (1 - NormalDist().cdf(abs(estimate) / standard_error))


def paired_differences(a: Floats, b: Floats, *, n_resamples: int = N_RESAMPLES, level: float = LEVEL,
                       seed: int = 0, labels: tuple[str, str] = ("A", "B"), only_a: int = 0,
                       only_b: int = 0) -> Comparison:
    """Paired bootstrap of mean(a − b) over items given in the same order (NaN-free)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = int(d.size)
    nan = float("nan")
    if n == 0:
        return Comparison(labels[0], labels[1], Interval(nan, nan, nan, 0), nan, nan, level, only_a, only_b,
                          np.zeros(0), None)
    est = float(d.mean())
    if n == 1:
        return Comparison(labels[0], labels[1], Interval(est, est, est, 1), nan, nan, level, only_a, only_b,
                          np.zeros(0), None)
    means = resampled_means(d, n_resamples, np.random.default_rng(seed))
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    diff = Interval(est, float(lo), float(hi), n)
    se = float(means.std(ddof=1))
    p_value = _z_p_value(est, se)
    decided = lo > 0 or hi < 0
    needed = None if decided else cases_needed(n, est, se, level)
    return Comparison(labels[0], labels[1], diff, float(np.mean(means > 0)), p_value, level, only_a, only_b,
                      means, needed)


def compare_models(results: RunResults, a: str, b: str, *, cases: Bools | None = None,
                   n_resamples: int = N_RESAMPLES, level: float = LEVEL, seed: int = 0) -> Comparison:
    """A vs B over the working cases (or the `cases` mask) both answered; sealed cases are never mixed in."""
    sa, sb = results.case_scores(a), results.case_scores(b)
    mask = results.working if cases is None else cases
    has_a, has_b = mask & ~np.isnan(sa), mask & ~np.isnan(sb)
    both = has_a & has_b
    return paired_differences(sa[both], sb[both], n_resamples=n_resamples, level=level, seed=seed, labels=(a, b),
                              only_a=int((has_a & ~has_b).sum()), only_b=int((has_b & ~has_a).sum()))


def holm_adjust(p_values: Sequence[float] | Floats) -> Floats:
    """Holm–Bonferroni adjusted p-values (step-down, monotone, capped at 1); NaN stays NaN and counts as untested."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


@dataclass(frozen=True, slots=True)
class PairDecision:
    comparison: Comparison
    p_holm: float
    """The pair's p-value after Holm's adjustment over every pair compared together."""
    alpha: float

    @property
    def decided(self) -> bool:
        """Separated after the correction for comparing every pair: what the matrix shows."""
        return self.comparison.decided and self.p_holm < self.alpha

    @property
    def better(self) -> str | None:
        return self.comparison.better if self.decided else None

    @property
    def verdict(self) -> str:
        c = self.comparison
        if self.decided or not c.decided:
            return c.verdict
        return (f"no ordering established after Holm's correction over all pairs (adjusted p = {self.p_holm:.3f}; "
                f"alone: {c.verdict})")


def all_pairs(results: RunResults, models: Sequence[str] | None = None, *, n_resamples: int = MATRIX_RESAMPLES,
              level: float = LEVEL, seed: int = 0) -> list[PairDecision]:
    """Every pair of `models` (default: all), with Holm-adjusted decisions at 1 − level (k models: k(k−1)/2)."""
    names = list(results.models if models is None else models)
    comps = [compare_models(results, a, b, n_resamples=n_resamples, level=level, seed=seed)
             for i, a in enumerate(names) for b in names[i + 1:]]
    adjusted = holm_adjust([c.p_value for c in comps])
    alpha = 1 - level
    return [PairDecision(c, float(p), alpha) for c, p in zip(comps, adjusted, strict=True)]


@dataclass(frozen=True, slots=True)
class RunChange:
    """One model's paired difference between two runs of the same project (new − old)."""

    model: str
    comparison: Comparison
    """a = the newer run's label, b = the older; positive means the newer run scored higher."""

    @property
    def regression(self) -> bool:
        return self.comparison.decided and self.comparison.diff.estimate < 0


def compare_runs(old: RunResults, new: RunResults, *, n_resamples: int = N_RESAMPLES, level: float = LEVEL,
                 seed: int = 0) -> list[RunChange]:
    """Model by model (those in both runs), new − old over the working cases both runs answered (by case id)."""
    out = []
    new_index = {c: j for j, c in enumerate(new.cases)}
    shared_old = np.array([c in new_index for c in old.cases], dtype=bool) & old.working
    idx_new = np.array([new_index[c] for c, s in zip(old.cases, shared_old, strict=True) if s], dtype=np.int64)
    working_new = new.working[idx_new] if idx_new.size else np.zeros(0, bool)
    labels = (f"run {new.run_id}", f"run {old.run_id}")
    for m in old.models:
        if m not in new.models:
            continue
        so = old.case_scores(m)[shared_old]
        sn = new.case_scores(m)[idx_new] if idx_new.size else np.zeros(0)
        has_o, has_n = ~np.isnan(so) & working_new, ~np.isnan(sn) & working_new
        both = has_o & has_n
        c = paired_differences(sn[both], so[both], n_resamples=n_resamples, level=level, seed=seed, labels=labels,
                               only_a=int((has_n & ~has_o).sum()), only_b=int((has_o & ~has_n).sum()))
        out.append(RunChange(m, c))
    return out


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A working case where A's and B's per-case scores differ (trials averaged)."""

    case_id: str
    score_a: float
    score_b: float


def disagreements(results: RunResults, a: str, b: str) -> list[Disagreement]:
    """Working cases both answered where A and B scored differently, largest gap first."""
    sa, sb = results.case_scores(a), results.case_scores(b)
    idx = np.flatnonzero(results.working & ~np.isnan(sa) & ~np.isnan(sb) & (sa != sb))
    idx = idx[np.argsort(-np.abs(sa[idx] - sb[idx]), kind="stable")]
    return [Disagreement(results.cases[j], float(sa[j]), float(sb[j])) for j in idx]

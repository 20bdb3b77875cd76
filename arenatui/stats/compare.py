"""Paired comparisons: two models over the cases both answered, all pairs with Holm, and two runs.

Each case's trials are averaged first, so a case is one item whatever the trial count; the bootstrap
resamples cases keeping each case's pair of scores together (the multinomial path of `bootstrap`).
The verdicts are worded for a decision: an interval that spans zero never reads as "equal".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenatui.kernel.units import plural
from arenatui.stats.bootstrap import (
    Interval,
    cluster_t_interval,
    resampled_cluster_means,
    resampled_means,
    run_seed,
    t_p_value,
)
from arenatui.stats.items import Bools, Floats, Ints, RunResults
from arenatui.stats.power import PowerNote, is_zero, power_note

PAIR_RESAMPLES = 2_000
"""One resampling count (and the run's seed, bootstrap.run_seed) for every view of a pair, so `compare`,
`compare --all`, the report and the console print the same interval, P(A > B) and power figure (with 10,000 for
one pair and 2,000 for all pairs the same pair read P 0.871 in one and 0.861 in the other). 190 pairs for 20 models
in under 5 s on 1,000,000 calls: interval endpoints from 2,000 resamples move by about 2% of the interval's width
between seeds (measured), and the Holm decisions use the z p-value below, which needs no tail counts."""
N_RESAMPLES = MATRIX_RESAMPLES = PAIR_RESAMPLES
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
    """Two-sided p-value for "no difference": t with n − 1 df on the bootstrap SE rescaled to n − 1 (clustered: t
    with G − 1 df on the clustered SE).

    Not counted from resample tails: Holm over 190 pairs asks for p below 0.05/190 ≈ 0.00026, finer than a
    few thousand resamples can count."""
    level: float
    only_a: int
    """Cases A answered and B did not (left out of the comparison)."""
    only_b: int
    differences: Floats
    """The resampled mean differences, for a histogram (empty when n < 2)."""
    power: PowerNote | None
    """Undecided: for 80% power to detect a difference of D, about N cases (None when decided, or the difference
    is zero, or nothing varies)."""
    clusters: int | None = None
    """Clusters the interval rests on (t on the clustered SE with clusters − 1 df; the histogram and P(A > B)
    resample clusters); None when unclustered."""
    clustered_se: float | None = None
    """The analytic clustered standard error of the mean difference (Inspect AI's stderr(cluster=...))."""
    variants: tuple[str, ...] | None = None
    """With prompt variants whose sets differ between the two models: the variants both were asked with, the only
    ones compared (None: every variant, or none)."""

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
    def cases_needed(self) -> int | None:
        """N of the power note: cases for 80% power at its difference D."""
        return self.power.cases if self.power else None

    @property
    def verdict(self) -> str:
        return verdict_text(self.a, self.b, self.diff, self.level, self.power)

    @property
    def coverage_note(self) -> str | None:
        """Said beside the verdict when the two models have scores for different cases (one errored, or was not
        judged, where the other was), or were asked different prompt variants."""
        notes = []
        if self.variants is not None:
            notes.append(f"compared over the prompt {'variant' if len(self.variants) == 1 else 'variants'} both "
                         f"were asked with ({', '.join(self.variants) or 'none'}), case by case")
        if self.only_a or self.only_b:
            notes.append(f"compared over the {plural(self.n, 'case')} both have scores for ({self.a} also has "
                         f"{self.only_a} that {self.b} does not, {self.b} {self.only_b} that {self.a} does not)")
        return "; ".join(notes) or None


def _pct(level: float) -> str:
    return f"{level * 100:g}%"


def verdict_text(a: str, b: str, diff: Interval, level: float = LEVEL, power: PowerNote | None = None) -> str:
    """The decision in words, as the issue states it."""
    if diff.n == 0:
        return f"no cases that both {a} and {b} answered: nothing to compare"
    decided = diff.n > 1 and (diff.low > 0 or diff.high < 0)
    if decided:
        if diff.estimate > 0:
            return (f"{a} is better by {diff.estimate:.3f} ({_pct(level)} CI {diff.low:.3f} to "
                    f"{diff.high:.3f})")
        return f"{b} is better by {-diff.estimate:.3f} ({_pct(level)} CI {-diff.high:.3f} to {-diff.low:.3f})"
    if diff.n > 1 and is_zero(diff.estimate) and is_zero(diff.low) and is_zero(diff.high):
        return f"identical scores on all {plural(diff.n, 'case')}: nothing tells them apart"
    text = f"no ordering established on this evidence ({plural(diff.n, 'case')})"
    if power is not None:
        text += f"; {power.text}"
    elif diff.n > 1 and is_zero(diff.estimate):
        text += "; the observed difference is zero"
    return text


def _zeroed(x: float) -> float:
    return 0.0 if is_zero(x) else x


def paired_differences(a: Floats, b: Floats, *, n_resamples: int = N_RESAMPLES, level: float = LEVEL,
                       seed: int = 0, labels: tuple[str, str] = ("A", "B"), only_a: int = 0,
                       only_b: int = 0, clusters: Ints | None = None) -> Comparison:
    """Paired bootstrap of mean(a − b) over items given in the same order (NaN-free).

    With `clusters` (one code per item: cases that share a passage or a template), the interval is a t interval on
    the clustered standard error with G − 1 degrees of freedom and the p-value its t test (the cluster bootstrap's
    percentile interval covered 81-88% at 5-10 clusters, issue 35); the resampled differences (histogram, P(A > B))
    resample clusters, not items. A difference below 1e-12 in magnitude is zero (trial averages such as 2/3 leave
    rounding behind)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = int(d.size)
    nan = float("nan")
    if n == 0:
        return Comparison(labels[0], labels[1], Interval(nan, nan, nan, 0), nan, nan, level, only_a, only_b,
                          np.zeros(0), None)
    est = _zeroed(float(d.mean()))
    if n == 1:
        return Comparison(labels[0], labels[1], Interval(est, est, est, 1), nan, nan, level, only_a, only_b,
                          np.zeros(0), None)
    rng = np.random.default_rng(seed)
    n_clusters = c_se = None
    if clusters is not None and np.unique(clusters).size < 2:  # one cluster: nothing varies between resamples
        return Comparison(labels[0], labels[1], Interval(est, nan, nan, n), nan, nan, level, only_a, only_b,
                          np.zeros(0), None, 1, nan)
    if clusters is not None:
        means = resampled_cluster_means(d, clusters, n_resamples, rng)
        low, high, c_se, n_clusters = cluster_t_interval(est, (d - d.mean()) / n, clusters, level)
        lo, hi = _zeroed(low), _zeroed(high)
        p_value = t_p_value(est, c_se, n_clusters - 1)
    else:
        means = resampled_means(d, n_resamples, rng)
        alpha = (1 - level) / 2
        lo, hi = (_zeroed(float(x)) for x in np.quantile(means, [alpha, 1 - alpha]))
        # the bootstrap SE is the plug-in one (divides by n): rescaled to n − 1 and read on t with n − 1 df, the test
        # holds its 5% at 100 cases (z on the plug-in SE named a winner for 6.3% of equal pairs under two prompts)
        p_value = t_p_value(est, float(means.std(ddof=1)) * math.sqrt(n / (n - 1)), n - 1)
    diff = Interval(est, lo, hi, n, n_clusters)
    decided = lo > 0 or hi < 0
    # the per-case spread, inflated as the clustered SE is over the plain one when cases are clustered
    sd = float(d.std(ddof=1))
    if c_se is not None and n_clusters is not None and n_clusters > 1:
        plain = sd / math.sqrt(n)
        sd = sd * (c_se / plain) if plain > 0 else sd
    power = None if decided else power_note(n, est, sd, level=level)
    return Comparison(labels[0], labels[1], diff, float(np.mean(means > 0)), p_value, level, only_a, only_b,
                      means, power, n_clusters, c_se)


def compare_models(results: RunResults, a: str, b: str, *, cases: Bools | None = None,
                   n_resamples: int = N_RESAMPLES, level: float = LEVEL, seed: int | None = None) -> Comparison:
    """A vs B over the working cases (or the `cases` mask) both answered; sealed cases are never mixed in. With
    prompt variants, over the (case, variant) cells both were asked: each case's score over the variants both share.

    Resampled in the run's model order whichever way round it is asked, so every view of a pair (`compare`,
    `compare --all`, the report, the console) prints the same interval, P and power figure."""
    seed = run_seed(results.run_id) if seed is None else seed
    if results.model_index(a) > results.model_index(b):
        return _flipped(compare_models(results, b, a, cases=cases, n_resamples=n_resamples, level=level, seed=seed))
    shared = results.shared_variants((a, b))
    over = results.over_variants(shared)
    sa, sb = over.case_scores(a), over.case_scores(b)
    mask = results.working if cases is None else cases
    has_a, has_b = mask & ~np.isnan(sa), mask & ~np.isnan(sb)
    both = has_a & has_b
    c = paired_differences(sa[both], sb[both], n_resamples=n_resamples, level=level, seed=seed, labels=(a, b),
                           only_a=int((has_a & ~has_b).sum()), only_b=int((has_b & ~has_a).sum()),
                           clusters=results.clusters_of(both))
    return c if over is results else dataclasses.replace(c, variants=shared)


def _flipped(c: Comparison) -> Comparison:
    """B vs A from A vs B: the same resamples, negated."""
    d = c.diff
    # 0.0 − x: a zero stays +0.0, never "-0.000"
    diff = Interval(0.0 - d.estimate, 0.0 - d.high, 0.0 - d.low, d.n, d.clusters)
    means = -c.differences
    p_better = float(np.mean(means > 0)) if means.size else c.p_a_better
    return dataclasses.replace(c, a=c.b, b=c.a, diff=diff, p_a_better=p_better, only_a=c.only_b, only_b=c.only_a,
                               differences=means)


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

    def flipped(self) -> PairDecision:
        """The same decision read B against A (the same resamples, negated)."""
        return dataclasses.replace(self, comparison=_flipped(self.comparison))

    @property
    def verdict(self) -> str:
        c = self.comparison
        if self.decided or not c.decided:
            return c.verdict
        return (f"no ordering established after Holm's correction over all pairs (adjusted p = {self.p_holm:.3f}; "
                f"alone: {c.verdict})")


def all_pairs(results: RunResults, models: Sequence[str] | None = None, *, n_resamples: int = MATRIX_RESAMPLES,
              level: float = LEVEL, seed: int | None = None) -> list[PairDecision]:
    """Every pair of `models` (default: all), with Holm-adjusted decisions at 1 − level (k models: k(k−1)/2)."""
    names = list(results.models if models is None else models)
    comps = [compare_models(results, a, b, n_resamples=n_resamples, level=level, seed=seed)
             for i, a in enumerate(names) for b in names[i + 1:]]
    adjusted = holm_adjust([c.p_value for c in comps])
    alpha = 1 - level
    return [PairDecision(c, float(p), alpha) for c, p in zip(comps, adjusted, strict=True)]


@dataclass(frozen=True, slots=True)
class StratumChange(PairDecision):
    """One stratum of one model between two runs (new − old): p_holm is Holm-adjusted over the gate's whole family
    (every model's overall test and every stratum's, RunChange.family)."""

    stratum: str = ""

    @property
    def regression(self) -> bool:
        return self.decided and self.comparison.diff.estimate < 0


GATE_RULE = ("Holm over the whole family: every model's overall test and every stratum's, together")
"""How `arena compare OLD NEW --fail-on-regression` holds one error rate for the whole decision: without it, Holm
over each model's strata alone exited 1 on 11.8% of reruns where nothing changed with 3 models (issue 35);
benchmarks/decision_coverage.py measures the gate at 3 and 10 models."""


@dataclass(frozen=True, slots=True)
class RunChange:
    """One model's paired difference between two runs of the same project (new − old), overall and per stratum."""

    model: str
    comparison: Comparison
    """a = the newer run's label, b = the older; positive means the newer run scored higher."""
    strata: tuple[StratumChange, ...] = ()
    """Per stratum of the shared cases (none when the cases have no strata)."""
    p_holm: float = float("nan")
    """The overall test's p-value after Holm over the whole family (GATE_RULE)."""
    family: int = 1
    """Tests in the family the gate corrects over (every model's overall and strata tests with a p-value)."""
    alpha: float = 1 - LEVEL

    @property
    def decided(self) -> bool:
        """The overall change is decided after the family-wise correction."""
        return self.comparison.decided and self.p_holm < self.alpha

    @property
    def regression(self) -> bool:
        return self.decided and self.comparison.diff.estimate < 0

    @property
    def regressions(self) -> list[str]:
        """Every decided regression of this model, named: overall, and each stratum's (even when the aggregate
        improved), each Holm-adjusted over the whole family."""
        out = [f"{self.model} overall: {self.comparison.verdict} (Holm-adjusted p = {self.p_holm:.4f} over "
               f"{plural(self.family, 'test')})"] if self.regression else []
        out += [f"{self.model} in stratum {s.stratum}: {s.comparison.verdict} (Holm-adjusted p = {s.p_holm:.4f} "
                f"over {plural(self.family, 'test')})" for s in self.strata if s.regression]
        return out


def compare_runs(old: RunResults, new: RunResults, *, n_resamples: int = N_RESAMPLES, level: float = LEVEL,
                 seed: int | None = None) -> list[RunChange]:
    """Model by model (those in both runs), new − old over the working cases both runs answered (by case id),
    overall and within each stratum (the older run's strata), Holm-adjusted over the whole family of tests the
    gate fires on (GATE_RULE). The seed is the pair of runs' (bootstrap.run_seed)."""
    seed = run_seed(old.run_id, new.run_id) if seed is None else seed
    new_index = {c: j for j, c in enumerate(new.cases)}
    shared_old = np.array([c in new_index for c in old.cases], dtype=bool) & old.working
    idx_new = np.array([new_index[c] for c, s in zip(old.cases, shared_old, strict=True) if s], dtype=np.int64)
    working_new = new.working[idx_new] if idx_new.size else np.zeros(0, bool)
    strata = np.array([s for s, keep in zip(old.strata, shared_old, strict=True) if keep], dtype=object)
    names = list(dict.fromkeys(x for x in strata if x is not None))
    clusters = old.clusters[shared_old] if old.clusters is not None else None
    labels = (f"run {new.run_id}", f"run {old.run_id}")
    alpha = 1 - level
    tested: list[tuple[str, list[tuple[str, Comparison]]]] = []
    for m in old.models:
        if m not in new.models:
            continue
        so = old.case_scores(m)[shared_old]
        sn = new.case_scores(m)[idx_new] if idx_new.size else np.zeros(0)
        has_o, has_n = ~np.isnan(so) & working_new, ~np.isnan(sn) & working_new
        both = has_o & has_n
        masks = [("", both), *((name, both & (strata == name)) for name in names)] if len(names) > 1 else [("", both)]
        found = []
        for name, k in masks:
            inside = (strata == name) if name else np.ones(both.shape, bool)
            found.append((name, paired_differences(
                sn[k], so[k], n_resamples=n_resamples, level=level, seed=seed, labels=labels,
                only_a=int((has_n & ~has_o & inside).sum()), only_b=int((has_o & ~has_n & inside).sum()),
                clusters=None if clusters is None else clusters[k])))
        tested.append((m, found))
    family = [c.p_value for _m, found in tested for _name, c in found]
    adjusted = iter(holm_adjust(family))
    size = int(np.sum(~np.isnan(np.asarray(family, dtype=np.float64))))
    out = []
    for m, found in tested:
        ps = [float(next(adjusted)) for _ in found]
        strata_changes = tuple(StratumChange(c, p, alpha, name) for (name, c), p in zip(found[1:], ps[1:], strict=True))
        out.append(RunChange(m, found[0][1], strata_changes, ps[0], size, alpha))
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

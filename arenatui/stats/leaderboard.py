"""The leaderboard's numbers per model: quality over scored calls beside coverage, errors, cost and latency.

Quality is the mean over working cases of each case's mean score over its scored trials: a call that
errored (rate-limited, timed out) says nothing about the model's answers, so it lowers coverage, never
the score; an answered call no scorer scored (an llm_judge case outside the judge's sample) counts as
answered for coverage and is left out of quality. Sealed cases are scored apart; the working − sealed gap
is the contamination signal.

The order and the headline score are coverage-fair (stats.ranking): over the cases every ranked model has scores
for, each model's own-coverage score beside it, low-coverage models listed apart, unranked, with why. Every view
(console, browse, headless, report, export) reads these rows; none ranks on its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenatui.stats.bootstrap import Interval, mean_ci, run_seed
from arenatui.stats.compare import PairDecision
from arenatui.stats.frontier import pareto_front
from arenatui.stats.items import Bools, Floats, LatencySample, RunResults
from arenatui.stats.passk import consistency, pass_at_curve
from arenatui.stats.percentiles import percentiles
from arenatui.stats.ranking import Ranking, Standing, rank_models
from arenatui.stats.weighted import SealedGap, reweighted, sealed_gap

_NAN_INTERVAL = Interval(float("nan"), float("nan"), float("nan"), 0)


@dataclass(frozen=True, slots=True)
class ModelRow:
    model: str
    quality: Interval
    """Mean per-case score over working cases scored, 95% bootstrap interval over cases."""
    planned: int
    """Calls planned over working and sealed cases (the prompt variants this model was asked with)."""
    calls: int
    """Calls stored with a final result."""
    answered: int
    """Calls the model answered, scored or not."""
    errored: int
    errors: dict[str, int]
    """Errored calls by class."""
    retries: int
    passed: int
    """Answered calls that passed, working and sealed."""
    unscored: int
    """Answered calls no scorer scored (status 'unscored'): in coverage, not in quality, pass@k or $/correct."""
    pass_at: dict[int, float]
    """pass@k over trials of one (model, prompt variant) (cells of one case and variant with prompt variants), over
    one case set (those with at least K answered trials, K the largest k shown), for every k some
    case supports (unbiased estimator): non-decreasing in k."""
    consistency: float
    """Share of working cases (2+ answered trials) where every trial agreed; NaN with one trial."""
    spend: float
    """Every attempt's spend, errored calls and retries included; the model's own calls only (a judge's spend
    is the judge's, see store.queries.run_spend)."""
    tokens: int
    cost_per_correct: float | None
    """Spend on scored and errored calls / passed calls: what one correct answer cost, failures and retries paid
    for (unscored calls' spend left out: whether they were correct is unknown)."""
    tokens_per_correct: float | None
    cost_per_answered: float | None
    latency_p50: float | None
    latency_p95: float | None
    latency_p99: float | None
    ttft_p50: float | None
    ttft_p95: float | None
    sealed: Interval
    """Quality over sealed cases (NaN when the run has none)."""
    on_cost_front: bool = False
    """Pareto-optimal for quality against cost per correct answer."""
    on_latency_front: bool = False
    """Pareto-optimal for quality against p95 latency."""
    pass_at_n: int = 0
    """Cases the pass@k curve is computed over."""
    rank: int | None = None
    """Position in the coverage-fair ranking (1 = first); None when unranked."""
    common: Interval = _NAN_INTERVAL
    """The headline: quality over the cases every ranked model has scores for (n = those common cases)."""
    unranked: str | None = None
    """Why the model is listed apart, unranked."""
    order_note: str | None = None
    """Said when a decided paired verdict placed it above a model with a higher common-case score."""
    paradox: str | None = None
    """A coverage paradox: a decided paired verdict against the order of own-coverage scores."""
    weighted: Interval | None = None
    """Quality reweighted to the [strata] weights (production frequency), stratified interval; None without."""
    gap: SealedGap | None = None
    """The stratum-matched working − sealed gap with its interval."""
    tied: bool = False
    """Shares its rank with another model (stats.ranking: ties are shown `=1`, never broken by the own score)."""

    @property
    def rank_text(self) -> str:
        """'1', '=1' when tied, '' when unranked."""
        return "" if self.rank is None else ("=" if self.tied else "") + str(self.rank)

    @property
    def flag(self) -> str:
        """The mark a row carries beside its rank when a note below the table concerns it: * a paired verdict set
        its place, ! a coverage paradox."""
        return ("*" if self.order_note else "") + ("!" if self.paradox else "")

    @property
    def coverage(self) -> float:
        """Answered / planned calls."""
        return self.answered / self.planned if self.planned else float("nan")

    @property
    def error_rate(self) -> float:
        return self.errored / self.calls if self.calls else float("nan")

    @property
    def timeout_rate(self) -> float:
        return self.errors.get("timeout", 0) / self.calls if self.calls else float("nan")

    @property
    def retry_rate(self) -> float:
        """Retries per stored call."""
        return self.retries / self.calls if self.calls else float("nan")

    @property
    def sealed_gap(self) -> float | None:
        """Working − sealed quality: well above zero suggests the working cases leaked into training."""
        if self.gap is not None:
            return self.gap.gap.estimate
        if self.quality.n == 0 or self.sealed.n == 0:
            return None
        return self.quality.estimate - self.sealed.estimate


LEADERBOARD_RESAMPLES = 2_000
"""Interval endpoints from 2,000 resamples move by about 2% of the interval's width between seeds (measured),
and a 20-model, 1,000,000-call leaderboard must open in under 2 s (benchmarks/results_scale.py)."""


STRATIFIED_RESAMPLES = 2_000
"""The reweighted score and the sealed gap resample each stratum (and split) apart, by multinomial counts over each
stratum's distinct scores. 1,000 resamples and one fixed seed held the weighted interval at 92.8% coverage (issue
35); the run's own seed now varies the draws between runs, and 2,000 (the count every other interval uses) cuts the
endpoints' resampling noise by √2. 4,000 cost 2.5x the 1,000's time on the 20-model, 1,000,000-call run
(benchmarks/results_scale.py, results_stratified_*): too much of the leaderboard's 2 s."""


def _quality(scores: Floats, mask: Bools, seed: int, n_resamples: int, results: RunResults | None = None) -> Interval:
    """Mean over the scored cases of `mask`; clustered when the run has clusters (pass `results`)."""
    keep = mask & ~np.isnan(scores)
    clusters = results.clusters_of(keep) if results is not None else None
    return mean_ci(scores[keep], seed=seed, n_resamples=n_resamples, clusters=clusters)


def model_row(results: RunResults, model: str, *, seed: int | None = None,
              n_resamples: int = LEADERBOARD_RESAMPLES) -> ModelRow:
    """One model's row; the bootstrap seed is the run's (bootstrap.run_seed) unless given."""
    seed = run_seed(results.run_id) if seed is None else seed
    i = results.model_index(model)
    scores = results.case_scores(model)
    working = results.working
    unscored = int(results.unscored[i].sum())
    answered = int(results.scored[i].sum()) + unscored
    calls = int(results.calls[i].sum())
    passed = int(results.passed[i].sum())
    spend = float(results.cost[i].sum())
    tokens = int(results.tokens[i].sum())
    # a correct answer's price is over the calls whose correctness is known (scored or errored)
    known_spend = spend - float(results.unscored_cost[i].sum())
    known_tokens = tokens - int(results.unscored_tokens[i].sum())
    lat = results.latency.get(model, LatencySample(np.zeros(0), np.zeros(0)))
    p50, p95, p99 = percentiles(lat.latency_ms, (50, 95, 99))
    t50, t95 = percentiles(lat.ttft_ms, (50, 95))
    # pass@k and agreement are over the trials of one (model, variant, case) cell: two prompts are not two trials
    # (issue 35: "pass@k 0.773 k=2" with one trial read "passes under either prompt")
    cells = results.by_variant
    if cells is not None:
        asked = np.array([v in cells.asked.get(model, cells.variants) for v in cells.variants], dtype=bool)
        n_w, c_w = cells.scored[i][asked][:, working].ravel(), cells.passed[i][asked][:, working].ravel()
    else:
        n_w, c_w = results.scored[i][working], results.passed[i][working]
    pass_at, pass_at_n = pass_at_curve(n_w, c_w, range(1, results.trials + 1))
    weighted = reweighted(scores, results.strata, working, results.weights, n_resamples=STRATIFIED_RESAMPLES,
                          seed=seed, clusters=results.clusters) if results.weights else None
    gap = sealed_gap(scores, results.strata, working, results.sealed, n_resamples=STRATIFIED_RESAMPLES,
                     seed=seed, clusters=results.clusters) if results.sealed.any() else None
    return ModelRow(
        model=model, quality=_quality(scores, working, seed, n_resamples, results),
        planned=len(results.cases) * results.calls_per_case(model),
        calls=calls, answered=answered, errored=calls - answered, errors=dict(results.errors.get(model, {})),
        retries=int(results.attempts[i].sum()) - calls, passed=passed, unscored=unscored,
        pass_at=pass_at, pass_at_n=pass_at_n, weighted=weighted, gap=gap,
        consistency=consistency(n_w, c_w), spend=spend, tokens=tokens,
        cost_per_correct=known_spend / passed if passed else None,
        tokens_per_correct=known_tokens / passed if passed else None,
        cost_per_answered=spend / answered if answered else None,
        latency_p50=p50, latency_p95=p95, latency_p99=p99, ttft_p50=t50, ttft_p95=t95,
        sealed=_quality(scores, results.sealed, seed, n_resamples, results),
    )


def leaderboard(results: RunResults, *, seed: int | None = None, n_resamples: int = LEADERBOARD_RESAMPLES,
                decisions: Sequence[PairDecision] | None = None) -> list[ModelRow]:
    """Every model of the run in the coverage-fair order (stats.ranking): ranked models first, then the unranked
    ones, then models with nothing scored; frontiers marked. `decisions`: all pairs, when already computed."""
    ranking = rank_models(results, decisions)
    return rows_for(results, ranking, seed=seed, n_resamples=n_resamples)


def rows_for(results: RunResults, ranking: Ranking, *, seed: int | None = None,
             n_resamples: int = LEADERBOARD_RESAMPLES) -> list[ModelRow]:
    """The leaderboard rows of a ranking, in its order."""
    seed = run_seed(results.run_id) if seed is None else seed
    by_model = {m: model_row(results, m, seed=seed, n_resamples=n_resamples) for m in results.models}
    over = results.over_variants(ranking.variants)
    rows = [_ranked(by_model[s.model], s, over, ranking.common, seed, n_resamples) for s in ranking.standings]
    # the fronts read each row's headline (the common-case score when ranked): a model asked only the easier prompt
    # variant, or answering only easy cases, is not put on a front by its own-coverage score (issue 35)
    q = [(r.common if r.rank is not None else r.quality).estimate if (r.common if r.rank is not None else
                                                                     r.quality).n else None for r in rows]
    cost_front = pareto_front(q, [r.cost_per_correct for r in rows])
    lat_front = pareto_front(q, [r.latency_p95 for r in rows])
    return [dataclasses.replace(r, on_cost_front=cf, on_latency_front=lf)
            for r, cf, lf in zip(rows, cost_front, lat_front, strict=True)]


def _ranked(row: ModelRow, s: Standing, results: RunResults, common: Bools, seed: int, n_resamples: int) -> ModelRow:
    common_iv = _NAN_INTERVAL
    if s.rank is not None:
        common_iv = _quality(results.case_scores(row.model), common, seed, n_resamples, results)
    return dataclasses.replace(row, rank=s.rank, common=common_iv, unranked=s.unranked, order_note=s.order_note,
                               paradox=s.paradox, tied=s.tied)


def ranked_models(results: RunResults) -> list[str]:
    """Models with any scored working case in the coverage-fair order (ranked, then unranked): no intervals."""
    return rank_models(results).order

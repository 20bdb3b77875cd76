"""The coverage-fair ranking: models ordered over the cases every ranked model has scores for.

Ranking each model by its own answered cases ranks coverage luck: a rate-limited twin whose errors fall on the
hard cases at the end of the file ranked first in 16 of 16 runs (issue 26), and a model with one answered case was
ranked first at 1.000. So:

- **Who is ranked.** Models are taken in order of coverage (scored working cases, most first); a model is ranked
  when adding it keeps the common set (the cases every ranked model has scores for) at no fewer than half the
  cases the best-covered model has (and 2, or that model's own count if smaller). The others are listed apart,
  unranked, with why.
- **The order** is by the score over the common set. It never contradicts a decided paired verdict (all pairs,
  Holm-adjusted, over each pair's own shared cases, as `arena compare --all` prints them): a model a decided
  verdict puts above another is placed above it, and the row says so. Only pairs whose shared-case difference
  points against the order can be such a verdict, so the all-pairs bootstrap runs only when one does.
- **Prompt variants.** When models were asked different variant sets, the common score is over the (case,
  variant) cells every model shares (the variants all were asked); each model's own score stays over its own.
- **Ties** (equal common-case scores, no decided verdict between them) share a rank, shown `=1`, and keep the
  run's model order: never broken by the own-coverage score, the very number the fair ranking discounts (a
  rate-limited twin that answered mostly easy cases took every tie and ranked first 54.8% of 1,000 runs, issue 35).
- **The coverage paradox.** A decided verdict against the order of the models' own-coverage scores (A better
  than B case for case, yet B's own score higher because A answered only the hard cases) is flagged on the row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arenatui.kernel.units import plural
from arenatui.stats.compare import PairDecision, all_pairs
from arenatui.stats.items import Bools, RunResults
from arenatui.stats.power import ZERO

MIN_SHARE = 0.5
"""A model is ranked when the common set keeps at least this share of the best-covered model's cases."""


@dataclass(frozen=True, slots=True)
class Standing:
    model: str
    rank: int | None
    """1 for the first; None when unranked."""
    own_cases: int
    """Working cases the model has scores for."""
    own_score: float
    common_score: float
    """Mean over the common cases (NaN when unranked)."""
    unranked: str | None = None
    """Why the model is not ranked."""
    order_note: str | None = None
    """Said when a decided paired verdict placed this model above one with a higher common-case score."""
    paradox: str | None = None
    """Coverage paradox: a decided paired verdict against the order of own-coverage scores."""
    tied: bool = False
    """Shares its rank with another model (equal common-case scores, no decided verdict between them)."""

    @property
    def rank_text(self) -> str:
        """'1', '=1' when tied, '' when unranked."""
        return "" if self.rank is None else ("=" if self.tied else "") + str(self.rank)


@dataclass(frozen=True, slots=True)
class Ranking:
    standings: tuple[Standing, ...]
    """Ranked models in rank order, then unranked models (best own score first), then models with no score."""
    common: Bools
    """The working cases every ranked model has scores for."""
    best_cases: int
    """Scored working cases of the best-covered model."""
    threshold: int
    """The fewest common cases ranking a model may leave."""
    decisions: tuple[PairDecision, ...] | None
    """The all-pairs decisions, when a conflict made the ranking compute them (or they were given)."""
    variants: tuple[str, ...] | None = None
    """With prompt variants asked of some models and not others: the variants every ranked model was asked, the only
    ones the common score is over (None: every model was asked the same variants, or the run has none)."""

    @property
    def ranked(self) -> list[str]:
        return [s.model for s in self.standings if s.rank is not None]

    @property
    def order(self) -> list[str]:
        """Every model with a scored working case: ranked first, then unranked."""
        return [s.model for s in self.standings if s.own_cases]


def answered_models(results: RunResults) -> list[str]:
    """Models with any scored working case, in the run's order: the family every all-pairs view compares."""
    w = results.working
    return [m for i, m in enumerate(results.models) if (results.scored[i][w] > 0).any()]


def _shared_means(results: RunResults) -> tuple[np.ndarray, np.ndarray]:
    """[i, j]: model i's mean over the working cases i and j both have scores for, and how many there are."""
    w = results.working
    s = np.array([results.case_scores(m)[w] for m in results.models]).reshape(len(results.models), int(w.sum()))
    has = ~np.isnan(s)
    s0 = np.where(has, s, 0.0)
    hf = has.astype(np.float64)
    counts = hf @ hf.T
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (s0 @ hf.T) / counts
    return means, counts


def rank_models(results: RunResults, decisions: Sequence[PairDecision] | None = None) -> Ranking:
    """The coverage-fair ranking of a run's models; `decisions` (all pairs of `answered_models`) if already made."""
    w = results.working
    own_scores = {m: results.case_scores(m) for m in results.models}
    own_has = {m: w & ~np.isnan(s) for m, s in own_scores.items()}
    own_n = {m: int(h.sum()) for m, h in own_has.items()}
    own = {m: float(own_scores[m][own_has[m]].mean()) if own_n[m] else math.nan for m in results.models}
    # with prompt variants, the common score is over the (case, variant) cells every answered model was asked
    variants = results.shared_variants([m for m in results.models if own_n[m]])
    over = results.over_variants(variants)
    scores = {m: over.case_scores(m) for m in results.models}
    has = {m: w & ~np.isnan(s) for m, s in scores.items()}
    best = max(own_n.values(), default=0)
    threshold = max(min(2, best), math.ceil(MIN_SHARE * best))
    common = w.copy()
    ranked: list[str] = []
    why: dict[str, str] = {}
    index = {m: i for i, m in enumerate(results.models)}
    for m in sorted((m for m in results.models if own_n[m]), key=lambda m: (-own_n[m], index[m])):
        left = common & has[m]
        k = int(left.sum())
        if k >= threshold and int(has[m].sum()):
            ranked.append(m)
            common = left
        elif variants == ():
            why[m] = ("no prompt variant every answered model was asked: models asked different prompts are not "
                      "ranked together (compare them pair by pair, over the variants both were asked)")
        elif own_n[m] < threshold:
            why[m] = (f"scores for {plural(own_n[m], 'working case')}, under half the {best} the "
                      "best-covered model has")
        else:
            why[m] = (f"ranking it would leave {plural(k, 'case')} every ranked model has scores for, "
                      f"under half the {best} the best-covered model has")
    if not ranked:
        common = np.zeros_like(w)
    common_score = {m: float(scores[m][common].mean()) if common.any() else math.nan for m in ranked}
    by_score = sorted(ranked, key=lambda m: (-common_score[m], index[m]))
    means, counts = _shared_means(over)
    pos = {m: i for i, m in enumerate(by_score)}

    def shared_diff(a: str, b: str) -> float:
        i, j = index[a], index[b]
        return float(means[i, j] - means[j, i]) if counts[i, j] > 1 else 0.0

    answered = [m for m in results.models if own_n[m]]
    against_order = any(pos[a] < pos[b] and shared_diff(a, b) < -ZERO for a in ranked for b in ranked)
    against_own = any(own[a] > own[b] + ZERO and shared_diff(a, b) < -ZERO for a in answered for b in answered)
    if decisions is None and (against_order or against_own) and len(answered) > 1:
        decisions = all_pairs(results, answered)
    beats: dict[str, dict[str, PairDecision]] = {}
    for d in decisions or ():
        if d.better is not None:
            c = d.comparison
            loser = c.b if d.better == c.a else c.a
            beats.setdefault(d.better, {})[loser] = d
    order, notes = _respect_verdicts(by_score, beats, common_score)
    paradox = _paradoxes(answered, beats, own, own_n)
    ranks = _tied_ranks(order, common_score, beats, notes)
    standings = [Standing(m, ranks[m][0], own_n[m], own[m], common_score[m], None, notes.get(m), paradox.get(m),
                          ranks[m][1]) for m in order]
    rest = sorted((m for m in answered if m not in common_score), key=lambda m: (-own[m], index[m]))
    standings += [Standing(m, None, own_n[m], own[m], math.nan, why[m], None, paradox.get(m)) for m in rest]
    standings += [Standing(m, None, 0, math.nan, math.nan, "no scored working case") for m in results.models
                  if not own_n[m]]
    return Ranking(tuple(standings), common, best, threshold, None if decisions is None else tuple(decisions),
                   None if over is results else variants)


def _tied_ranks(order: list[str], score: dict[str, float], beats: dict[str, dict[str, PairDecision]],
                notes: dict[str, str]) -> dict[str, tuple[int, bool]]:
    """Competition ranks (1, =2, =2, 4): a model shares the rank above it when their common-case scores are equal and
    no decided verdict or cycle note placed it."""
    out: dict[str, tuple[int, bool]] = {}
    for i, m in enumerate(order):
        prev = order[i - 1] if i else None
        same = (prev is not None and abs(score[m] - score[prev]) <= ZERO and m not in notes
                and prev not in beats.get(m, {}) and m not in beats.get(prev, {}))
        if same and prev is not None:
            out[prev] = (out[prev][0], True)
            out[m] = (out[prev][0], True)
        else:
            out[m] = (i + 1, False)
    return out


def _respect_verdicts(by_score: list[str], beats: dict[str, dict[str, PairDecision]],
                      score: dict[str, float]) -> tuple[list[str], dict[str, str]]:
    """Common-score order, except that no model goes above one a decided verdict says beats it (a stable
    topological order; a cycle of verdicts, possible only across different shared case sets, keeps score order
    and says so)."""
    left = list(by_score)
    order: list[str] = []
    notes: dict[str, str] = {}
    while left:
        free = [m for m in left if not any(m in beats.get(o, {}) for o in left if o != m)]
        m = free[0] if free else left[0]
        if not free:
            notes[m] = "paired verdicts among the models below form a cycle: placed by its common-case score"
        passed = [o for o in left if o != m and left.index(o) < left.index(m)]
        if passed:
            d = beats.get(m, {}).get(passed[0])
            why = d.comparison.verdict if d else "a decided paired verdict"
            notes[m] = (f"placed above {', '.join(passed)} (higher common-case score "
                        f"{score[passed[0]]:.3f}) by the paired verdict: {why}")
        order.append(m)
        left.remove(m)
    return order, notes


def _paradoxes(models: list[str], beats: dict[str, dict[str, PairDecision]], own: dict[str, float],
               own_n: dict[str, int]) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in models:
        for loser, d in beats.get(w, {}).items():
            if own[loser] > own[w] + ZERO:
                out[w] = (f"coverage paradox: {loser}'s own-coverage score is higher ({own[loser]:.3f} over "
                          f"{plural(own_n[loser], 'case')} against {own[w]:.3f} over {own_n[w]}), yet paired over the "
                          f"{plural(d.comparison.n, 'case')} both have scores for, {d.comparison.verdict}")
    return out

"""Scores per stratum and per tag, with Simpson's-reversal flags against the overall ordering."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from arenatui.stats.bootstrap import Interval, mean_ci
from arenatui.stats.compare import Comparison, PairDecision, compare_models
from arenatui.stats.items import Bools, RunResults
from arenatui.stats.leaderboard import LEADERBOARD_RESAMPLES


@dataclass(frozen=True, slots=True)
class GroupScores:
    group: str
    """The stratum or tag."""
    kind: str
    """'stratum' or 'tag'."""
    cases: int
    """Working cases in the group."""
    scores: dict[str, Interval]
    """Per model, quality over the group's answered working cases."""


@dataclass(frozen=True, slots=True)
class Reversal:
    """`model` beats `beaten` overall but scores lower in `group`."""

    group: str
    kind: str
    model: str
    beaten: str
    overall_diff: float
    """How far `model` is ahead overall (positive)."""
    group_diff: float
    """model − beaten inside the group (negative)."""


def groups(results: RunResults) -> list[tuple[str, str, Bools]]:
    """(name, kind, working-case mask) for every stratum, then every tag, in first-seen order."""
    out: list[tuple[str, str, Bools]] = []
    working = results.working
    strata = list(dict.fromkeys(s for s in results.strata if s is not None))
    for s in strata:
        out.append((s, "stratum", np.array([x == s for x in results.strata], dtype=bool) & working))
    tags = list(dict.fromkeys(t for ts in results.tags for t in ts))
    for t in tags:
        out.append((t, "tag", np.array([t in ts for ts in results.tags], dtype=bool) & working))
    return out


def group_scores(results: RunResults, *, seed: int = 0, n_resamples: int = LEADERBOARD_RESAMPLES) -> list[GroupScores]:
    out = []
    per_model = {m: results.case_scores(m) for m in results.models}
    for name, kind, mask in groups(results):
        scores = {}
        for m, s in per_model.items():
            v = s[mask]
            scores[m] = mean_ci(v[~np.isnan(v)], seed=seed, n_resamples=n_resamples)
        out.append(GroupScores(name, kind, int(mask.sum()), scores))
    return out


def reversals(table: list[GroupScores], decisions: Iterable[PairDecision]) -> list[Reversal]:
    """Groups where a model scores below one it beats overall.

    "Beats" means separated by the all-pairs comparison (Holm-adjusted), so noise between models that are
    not ordered overall is not flagged.
    """
    pairs = []
    for d in decisions:
        if d.better is None:
            continue
        c = d.comparison
        winner, loser = (c.a, c.b) if d.better == c.a else (c.b, c.a)
        pairs.append((winner, loser, abs(c.diff.estimate)))
    out = []
    for g in table:
        for a, b, overall in pairs:
            sa, sb = g.scores.get(a), g.scores.get(b)
            if sa is None or sb is None or sa.n == 0 or sb.n == 0:
                continue
            if sa.estimate < sb.estimate:
                out.append(Reversal(g.group, g.kind, a, b, overall, sa.estimate - sb.estimate))
    return out


def group_differences(results: RunResults, a: str, b: str, *, n_resamples: int = LEADERBOARD_RESAMPLES,
                      seed: int = 0) -> list[tuple[str, str, Comparison]]:
    """A − B within each stratum and tag, paired over the group's working cases both answered: (group, kind, result)."""
    return [(name, kind, compare_models(results, a, b, cases=mask, n_resamples=n_resamples, seed=seed))
            for name, kind, mask in groups(results)]

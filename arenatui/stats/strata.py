"""Scores per stratum and per tag, with subgroup-reversal flags that rest on evidence.

A group is flagged only when its own paired interval excludes zero against a decided overall verdict, Holm-adjusted
over every (pair, group) tested: comparing point estimates flagged 11 of 20 uniform strata of 20 cases (SE ≈ 0.14)
over 8 seeds (issue 26). The coverage paradox (leaderboard against a paired verdict) is flagged by stats.ranking.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from arenatui.stats.bootstrap import Interval, mean_ci, run_seed
from arenatui.stats.compare import Comparison, PairDecision, compare_models, holm_adjust
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
    """A subgroup reversal: `model` beats `beaten` overall (decided, Holm over all pairs), and inside `group` its
    paired interval excludes zero the other way, Holm-adjusted over every (pair, group) tested."""

    group: str
    kind: str
    model: str
    beaten: str
    overall_diff: float
    """How far `model` is ahead overall (positive)."""
    group_diff: float
    """model − beaten inside the group (negative)."""
    interval: Interval
    """model − beaten inside the group: paired interval over the group's cases both have scores for (its n)."""
    p_holm: float


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


def group_scores(results: RunResults, *, seed: int | None = None,
                 n_resamples: int = LEADERBOARD_RESAMPLES) -> list[GroupScores]:
    """Per stratum and tag, each model's quality over the group's scored working cases; over clusters (t on the
    clustered SE) when the run is clustered, as every interval of a clustered run is."""
    seed = run_seed(results.run_id) if seed is None else seed
    out = []
    per_model = {m: results.case_scores(m) for m in results.models}
    for name, kind, mask in groups(results):
        scores = {}
        for m, s in per_model.items():
            keep = mask & ~np.isnan(s)
            scores[m] = mean_ci(s[keep], seed=seed, n_resamples=n_resamples, clusters=results.clusters_of(keep))
        out.append(GroupScores(name, kind, int(mask.sum()), scores))
    return out


def reversals(results: RunResults, decisions: Iterable[PairDecision], *, level: float = 0.95,
              n_resamples: int = LEADERBOARD_RESAMPLES, seed: int | None = None) -> list[Reversal]:
    """Subgroup reversals of the decided pairs.

    Only a group whose point difference goes against the overall verdict can be flagged, so only those are
    resampled; every group with 2+ shared cases counts in the Holm family (the others' p-values sort after and
    do not change the adjustment of those that could be flagged).
    """
    tests: list[tuple[str, str, str, str, float, Comparison | None]] = []
    masks = groups(results)
    for d in decisions:
        if d.better is None:
            continue
        c = d.comparison
        winner, loser = (c.a, c.b) if d.better == c.a else (c.b, c.a)
        sw, sl = results.case_scores(winner), results.case_scores(loser)
        both = ~np.isnan(sw) & ~np.isnan(sl)
        for name, kind, mask in masks:
            keep = mask & both
            if keep.sum() < 2:
                continue
            against = float((sw[keep] - sl[keep]).mean()) < 0
            g = compare_models(results, winner, loser, cases=mask, n_resamples=n_resamples, seed=seed) \
                if against else None
            tests.append((name, kind, winner, loser, abs(c.diff.estimate), g))
    adjusted = holm_adjust([t[5].p_value if t[5] is not None else 1.0 for t in tests])
    alpha = 1 - level
    return [Reversal(name, kind, w, lo, overall, g.diff.estimate, g.diff, float(p))
            for (name, kind, w, lo, overall, g), p in zip(tests, adjusted, strict=True)
            if g is not None and g.diff.high < 0 and p < alpha]


def group_differences(results: RunResults, a: str, b: str, *, n_resamples: int = LEADERBOARD_RESAMPLES,
                      seed: int | None = None) -> list[tuple[str, str, Comparison]]:
    """A − B within each stratum and tag, paired over the group's working cases both answered: (group, kind, result)."""
    return [(name, kind, compare_models(results, a, b, cases=mask, n_resamples=n_resamples, seed=seed))
            for name, kind, mask in groups(results)]

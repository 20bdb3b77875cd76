"""Prompt variants: each model's score under each way of asking, its spread across them, and whether each ordering of
two models holds under every variant (issue 23: a margin must survive the prompt).

A re-ordered category list or a schema moved from the system to the user message moves a model by two or three
points, the size of the margins argued about. So every figure here is paired over cases: a model's spread is the
difference between its best and worst variant over the cases both scored; a pair's verdict is taken under each
variant on its own (paired bootstrap over the cases both models scored under it, `compare.paired_differences`),
then read together:

- **holds**: every variant decides the same winner;
- **flips**: one variant decides A, another B ("ordering depends on the prompt");
- **undecided in some**: one winner where decided, but some variant cannot tell them apart;
- **undecided**: no variant decides (not enough evidence under any).

A variant decides a winner only after Holm over the variants of the pair (each variant is one more chance of a false
winner).

A spurious flip needs two wrong decisions in opposite directions, so it is rarer than one false verdict; the
coverage test (tests/unit/test_stats_variants.py) draws known truths over seeds.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arenatui.stats.bootstrap import Interval, mean_ci
from arenatui.stats.compare import LEVEL, N_RESAMPLES, Comparison, holm_adjust, paired_differences
from arenatui.stats.items import Floats, Ints

HOLDS, FLIPS, UNDECIDED_IN_SOME, UNDECIDED = "holds", "flips", "undecided in some", "undecided"


@dataclass(frozen=True, slots=True)
class VariantResults:
    """Per (model, variant, case) aggregates of a run with prompt variants, trials summed (the store fills it)."""

    models: tuple[str, ...]
    variants: tuple[str, ...]
    cases: tuple[str, ...]
    scored: Ints
    """[model, variant, case]: calls scored (passed or failed)."""
    score_sum: Floats
    """[model, variant, case]: sum of their scores."""
    asked: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per model, the variants it was asked with (a model may name its own)."""

    def case_means(self, m: int, v: int) -> Floats:
        """A model's per-case score under a variant (its trials averaged), NaN where nothing was scored."""
        n = self.scored[m, v]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, self.score_sum[m, v] / np.maximum(n, 1), np.nan)


@dataclass(frozen=True, slots=True)
class VariantScore:
    model: str
    variant: str
    score: Interval
    """Mean per-case score under the variant, with its bootstrap interval over cases."""


@dataclass(frozen=True, slots=True)
class Spread:
    """How far a model moves between its best and its worst variant, paired over the cases both scored."""

    model: str
    best: str
    worst: str
    diff: Interval
    """best − worst over shared cases (estimate = max − min of the variants' means over those cases)."""

    @property
    def decided(self) -> bool:
        return self.diff.low > 0


@dataclass(frozen=True, slots=True)
class PairAcrossVariants:
    """Two models' paired verdict under each variant both were asked with, and what they add up to."""

    a: str
    b: str
    per_variant: dict[str, Interval]
    """Per variant, mean(a − b) over the cases both scored under it, with its interval."""
    winners: dict[str, str | None]
    """Per variant, the model the interval decides for, or None (undecided)."""
    verdict: str
    """HOLDS, FLIPS, UNDECIDED_IN_SOME or UNDECIDED."""
    p_holm: dict[str, float] = field(default_factory=dict)
    """Per variant, the pair's p-value Holm-adjusted over the variants both were asked with: a variant decides a
    winner only when its interval excludes zero and this is under 1 − level."""

    @property
    def depends_on_prompt(self) -> bool:
        return self.verdict != HOLDS

    def text(self) -> str:
        """The verdict in words, naming the variants that decide it."""
        if not self.per_variant:
            return f"{self.a} vs {self.b}: not enough evidence: no prompt variant both were asked with"
        by = {w: [v for v, x in self.winners.items() if x == w] for w in (self.a, self.b, None)}
        if self.verdict == HOLDS:
            winner = self.winners[next(iter(self.winners))]
            if len(self.per_variant) == 1:  # "every" of one shared variant overstates it
                return f"{winner} ahead under the one prompt variant both were asked with ({next(iter(self.winners))})"
            return f"{winner} ahead under every prompt variant both were asked with"
        if self.verdict == FLIPS:
            return (f"ordering depends on the prompt: {self.a} ahead under {', '.join(by[self.a])}, {self.b} under "
                    f"{', '.join(by[self.b])}")
        if self.verdict == UNDECIDED_IN_SOME:
            lead = self.a if by[self.a] else self.b
            return (f"ordering depends on the prompt: {lead} ahead under {', '.join(by[lead])}, undecided under "
                    f"{', '.join(by[None])}")
        return f"not enough evidence under any prompt variant ({', '.join(self.per_variant)})"


@dataclass(frozen=True, slots=True)
class PromptRobustness:
    """What a run with prompt variants says about them: per model × variant scores, spreads, pair verdicts."""

    variants: tuple[str, ...]
    scores: tuple[VariantScore, ...]
    spreads: tuple[Spread, ...]
    pairs: tuple[PairAcrossVariants, ...]
    level: float = LEVEL

    @property
    def fragile(self) -> tuple[PairAcrossVariants, ...]:
        """The pairs whose ordering depends on the prompt (flips or undecided in some)."""
        return tuple(p for p in self.pairs if p.verdict in (FLIPS, UNDECIDED_IN_SOME))

    def summary(self) -> str:
        """One sentence for a page's margin: the variants, which orderings depend on the prompt and which hold, and
        the widest spread."""
        head = f"{len(self.variants)} prompt variants ({', '.join(self.variants)})"
        fragile = self.fragile
        parts = [f"{p.a} vs {p.b}: {p.text()}" for p in fragile]
        held = [f"{p.a} vs {p.b}" for p in self.pairs if p.verdict == HOLDS]
        if held:
            parts.append(f"holds under every variant: {', '.join(held)}")
        open_ = [f"{p.a} vs {p.b}" for p in self.pairs if p.verdict == UNDECIDED]
        if open_:
            parts.append(f"undecided under every variant: {', '.join(open_)}")
        if self.spreads:
            wide = max(self.spreads, key=lambda s: s.diff.estimate)
            parts.append(f"widest spread {wide.model} {wide.diff.estimate:+.3f} ({wide.best} − {wide.worst}, "
                         f"{'decided' if wide.decided else 'not decided'})")
        return f"{head}; " + "; ".join(parts) if parts else head

    def score(self, model: str, variant: str) -> Interval | None:
        return next((s.score for s in self.scores if s.model == model and s.variant == variant), None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-shaped (NaN as None), for the report and the bake-off page."""
        def iv(i: Interval) -> dict[str, Any]:
            return {k: (None if isinstance(x, float) and not np.isfinite(x) else x)
                    for k, x in (("estimate", i.estimate), ("low", i.low), ("high", i.high), ("n", i.n))}

        return {
            "variants": list(self.variants),
            "level": self.level,
            "scores": [{"model": s.model, "variant": s.variant, "score": iv(s.score)} for s in self.scores],
            "spreads": [{"model": s.model, "best": s.best, "worst": s.worst, "diff": iv(s.diff),
                         "decided": s.decided} for s in self.spreads],
            "pairs": [{"a": p.a, "b": p.b, "verdict": p.verdict, "text": p.text(),
                       "per_variant": {v: {"diff": iv(d), "winner": p.winners[v], "p_holm": p.p_holm.get(v)}
                                       for v, d in p.per_variant.items()}}
                      for p in self.pairs],
        }


def analyse_variants(vr: VariantResults, *, n_resamples: int = N_RESAMPLES, level: float = LEVEL,
                     seed: int = 0) -> PromptRobustness:
    """Per model × variant scores, each model's spread, and every pair's verdict across variants."""
    scores: list[VariantScore] = []
    spreads: list[Spread] = []
    means: dict[tuple[int, int], Floats] = {}
    asked = {m: vr.asked.get(m, vr.variants) for m in vr.models}
    for mi, m in enumerate(vr.models):
        mine = [vi for vi, v in enumerate(vr.variants) if v in asked[m]]
        for vi in mine:
            x = means[(mi, vi)] = vr.case_means(mi, vi)
            scores.append(VariantScore(m, vr.variants[vi], mean_ci(x[~np.isnan(x)], n_resamples=n_resamples,
                                                                   level=level, seed=seed)))
        spread = _spread(m, [(vr.variants[vi], means[(mi, vi)]) for vi in mine], n_resamples, level, seed)
        if spread is not None:
            spreads.append(spread)
    pairs: list[PairAcrossVariants] = []
    for (ai, a), (bi, b) in itertools.combinations(enumerate(vr.models), 2):
        found: dict[str, Comparison] = {}
        for vi, v in enumerate(vr.variants):
            if v not in asked[a] or v not in asked[b]:
                continue
            x, y = means[(ai, vi)], means[(bi, vi)]
            both = ~np.isnan(x) & ~np.isnan(y)
            if not both.any():
                continue
            found[v] = paired_differences(x[both], y[both], n_resamples=n_resamples, level=level, seed=seed,
                                          labels=(a, b))
        # Holm over the pair's variants: a winner under *some* prompt is one claim per variant tried (10% of equal
        # pairs were named a winner under one of two prompts without it, issue 35)
        adjusted = dict(zip(found, holm_adjust([c.p_value for c in found.values()]), strict=True))
        per = {v: c.diff for v, c in found.items()}
        winners = {v: (c.better if c.decided and adjusted[v] < 1 - level else None) for v, c in found.items()}
        pairs.append(PairAcrossVariants(a, b, per, winners, _verdict(a, b, winners),
                                        {v: float(p) for v, p in adjusted.items()}))
    return PromptRobustness(vr.variants, tuple(scores), tuple(spreads), tuple(pairs), level)


def _spread(model: str, per_variant: Sequence[tuple[str, Floats]], n_resamples: int, level: float,
            seed: int) -> Spread | None:
    """Best − worst variant over the cases every variant of the model scored, with a paired interval."""
    if len(per_variant) < 2:
        return None
    stacked = np.vstack([x for _, x in per_variant])
    shared = ~np.isnan(stacked).any(axis=0)
    if not shared.any():
        return None
    col = stacked[:, shared]
    avg = col.mean(axis=1)
    best, worst = int(np.argmax(avg)), int(np.argmin(avg))
    if best == worst:  # every variant scored alike: a spread of zero, between the first and the last named
        z = Interval(0.0, 0.0, 0.0, int(shared.sum()))
        return Spread(model, per_variant[0][0], per_variant[-1][0], z)
    c = paired_differences(col[best], col[worst], n_resamples=n_resamples, level=level, seed=seed)
    return Spread(model, per_variant[best][0], per_variant[worst][0], c.diff)


def _verdict(a: str, b: str, winners: dict[str, str | None]) -> str:
    decided = {w for w in winners.values() if w is not None}
    if len(decided) > 1:
        return FLIPS
    if not decided:
        return UNDECIDED
    return HOLDS if all(w is not None for w in winners.values()) else UNDECIDED_IN_SOME

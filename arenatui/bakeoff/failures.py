"""Which errors each candidate makes: every call's failure mode counted per model with a 95% interval on its share
of the model's calls, and the categories (strata, tags) a candidate refuses, called out on their own: a refusal row
can decide alone (a support bot that refuses every billing question is out, whatever its mean)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from arenatui.kernel.units import plural
from arenatui.scoring.failure_modes import FAILURE_MODES
from arenatui.stats.items import RunResults
from arenatui.stats.proportions import wilson_interval

REFUSES_SHARE = 0.5
"""A category is called one a model *refuses* when the lower end of its refusal share's interval is at least
this; below it, a category with refusals is listed as refusing some."""


@dataclass(frozen=True, slots=True)
class ModeCount:
    model: str
    mode: str
    count: int
    calls: int
    low: float
    high: float

    @property
    def share(self) -> float:
        return self.count / self.calls if self.calls else 0.0


@dataclass(frozen=True, slots=True)
class Refusal:
    """A model's refusals in one category (a stratum, or a tag), with the interval on their share."""

    model: str
    category: str
    refused: int
    calls: int
    low: float
    high: float

    @property
    def refuses(self) -> bool:
        return self.low >= REFUSES_SHARE

    @property
    def words(self) -> str:
        verb = "refuses" if self.refuses else "refuses some of"
        return (f"{self.model} {verb} {self.category}: {self.refused} of {plural(self.calls, 'call')} "
                f"({self.refused / self.calls:.0%}, 95% CI {self.low:.0%}–{self.high:.0%})")


def mode_counts(results: RunResults, failed: Mapping[str, Mapping[str, int]]) -> list[ModeCount]:
    """Per model, each failure mode it showed (failed answers by mode, errored calls by class) over its calls."""
    out = []
    for i, model in enumerate(results.models):
        calls = int(results.calls[i].sum())
        counts = dict(failed.get(model, {}))
        for ec, n in results.errors.get(model, {}).items():
            counts[ec] = counts.get(ec, 0) + n
        for mode in sorted(counts, key=lambda m: FAILURE_MODES.index(m) if m in FAILURE_MODES else len(FAILURE_MODES)):
            n = counts[mode]
            iv = wilson_interval(n, calls) if n else None
            if iv is not None:
                out.append(ModeCount(model, mode, n, calls, iv[0], iv[1]))
    return out


def refusals_by_category(results: RunResults, refused: Mapping[str, Mapping[str, int]]) -> list[Refusal]:
    """Per model and category (stratum, tag) with any refusal: its share of the category's calls, most refused
    first."""
    cats: dict[str, list[int]] = {}
    for j, (stratum, tags) in enumerate(zip(results.strata, results.tags, strict=True)):
        for cat in ([f"stratum {stratum}"] if stratum else []) + [f"tag {t}" for t in tags]:
            cats.setdefault(cat, []).append(j)
    if not cats:
        cats["all cases"] = list(range(len(results.cases)))
    out = []
    for i, model in enumerate(results.models):
        by_case = refused.get(model, {})
        if not by_case:
            continue
        for cat, idx in cats.items():
            n = sum(by_case.get(results.cases[j], 0) for j in idx)
            calls = int(results.calls[i, idx].sum())
            iv = wilson_interval(n, calls) if n else None
            if iv is not None:
                out.append(Refusal(model, cat, n, calls, iv[0], iv[1]))
    return sorted(out, key=lambda r: (-r.low, r.model, r.category))

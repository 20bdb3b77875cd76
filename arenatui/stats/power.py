"""Power for a paired comparison: the smallest difference a number of cases can detect, and the cases a difference
needs, at 80% power and a two-sided 95% level.

One normal-approximation formula for every view (Miller 2024, "Adding Error Bars to Evals", section on power):
n = (z₁₋α/₂ + z_power)² · σ_d² / D², where σ_d is the standard deviation of the per-case difference a − b.

- Before a run (`arena plan`) σ_d is not known. For a baseline accuracy p and 0/1 scores, two models with
  independent errors give σ_d² = p(1 − p) + q(1 − q) with q = p + D: the conservative planning figure (models
  that fail on the same cases, as real ones do, need fewer). Trials are not counted as shrinking σ_d: extra trials
  average away only the within-case part of the noise, and how big that part is is unknown before a run.
- After a run σ_d is the observed standard deviation of the paired per-case differences (trials averaged).

The old "cases that would resolve it" (the n at which the observed difference would just reach significance) was
the n for 50% power at a noisy estimate: it ranged 201-32,480 for one true +0.05 pair. This states the
difference D it is about and never starts from a zero difference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from arenatui.kernel.units import plural

POWER = 0.8
LEVEL = 0.95
ZERO = 1e-12
"""Differences below this in magnitude are zero: trial averages such as 2/3 leave ~1e-17 of rounding behind."""


def is_zero(x: float) -> bool:
    return abs(x) < ZERO


def _z_sum(level: float = LEVEL, power: float = POWER) -> float:
    nd = NormalDist()
    return nd.inv_cdf(0.5 + level / 2) + nd.inv_cdf(power)


def cases_for(difference: float, sd: float, *, level: float = LEVEL, power: float = POWER) -> int | None:
    """Cases a paired comparison needs to detect `difference` with this power, given the per-case sd of a − b."""
    if is_zero(difference) or not math.isfinite(sd) or sd <= ZERO:
        return None
    # the 1e-9 keeps the MDE of n cases mapping back to n, not n + 1, through floating-point rounding
    return max(2, math.ceil((_z_sum(level, power) * sd / abs(difference)) ** 2 - 1e-9))


def detectable(n: int, sd: float, *, level: float = LEVEL, power: float = POWER) -> float | None:
    """The minimum detectable difference (MDE) for n cases: the smallest |a − b| found with this power."""
    if n < 2 or not math.isfinite(sd) or sd <= ZERO:
        return None
    return _z_sum(level, power) * sd / math.sqrt(n)


def planning_sd(baseline: float, difference: float = 0.0) -> float:
    """σ_d of a 0/1 paired difference for two models at `baseline` and `baseline + difference`, errors independent."""
    q = min(1.0, max(0.0, baseline + difference))
    return math.sqrt(baseline * (1 - baseline) + q * (1 - q))


def planned_mde(n: int, baseline: float, *, level: float = LEVEL, power: float = POWER) -> float | None:
    """The MDE of n planned cases at a baseline accuracy: solved with σ_d at the better model's accuracy, too
    (the variance depends on the difference itself), by a few fixed-point steps."""
    d = detectable(n, planning_sd(baseline), level=level, power=power)
    if d is None:
        return None
    for _ in range(30):
        up = min(d, 1 - baseline) if baseline < 1 else d
        nxt = detectable(n, planning_sd(baseline, up), level=level, power=power)
        if nxt is None or abs(nxt - d) < 1e-9:
            break
        d = nxt
    return d


def planned_cases(difference: float, baseline: float, *, level: float = LEVEL, power: float = POWER) -> int | None:
    """Cases needed before a run to detect `difference` over a model at `baseline` accuracy."""
    return cases_for(difference, planning_sd(baseline, difference), level=level, power=power)


@dataclass(frozen=True, slots=True)
class PowerNote:
    """After a run, for an undecided pair: "for 80% power to detect a difference of D, about N cases" (D observed),
    or what the compared cases can detect at all (D their MDE, N their number)."""

    difference: float
    """D: the observed |a − b| when it is above the MDE of the cases compared, else that MDE."""
    cases: int
    observed: bool
    """Whether D is the observed difference (else it is the MDE)."""

    @property
    def text(self) -> str:
        if self.observed:
            return f"for {POWER:.0%} power to detect a difference of {self.difference:.3f}, about " \
                   f"{plural(self.cases, 'case')}"
        # below what the cases detect, the observed difference is no basis for a plan: say what these cases can see
        return (f"these {plural(self.cases, 'case')} detect a difference of {self.difference:.3f} or more with "
                f"{POWER:.0%} power; a smaller one needs more (arena plan --mde D)")


def power_note(n: int, estimate: float, sd: float, *, level: float = LEVEL) -> PowerNote | None:
    """None when the difference is zero or the per-case differences do not vary (nothing to plan from)."""
    if is_zero(estimate):
        return None
    mde = detectable(n, sd, level=level)
    if mde is None:
        return None
    observed = abs(estimate) > mde
    d = abs(estimate) if observed else mde
    cases = cases_for(d, sd, level=level)
    return None if cases is None else PowerNote(d, cases, observed)


TABLE_BASELINES = (0.5, 0.7, 0.8, 0.9, 0.95)
TABLE_CASES = (50, 100, 200, 500, 1000, 2000, 5000)


def mde_table(baselines: tuple[float, ...] = TABLE_BASELINES,
              cases: tuple[int, ...] = TABLE_CASES) -> list[tuple[int, list[float | None]]]:
    """(n cases, MDE at each baseline): the README's table, printed by `arena plan --table`."""
    return [(n, [planned_mde(n, p) for p in baselines]) for n in cases]


def impossible(baseline: float, difference: float | None) -> bool:
    """A difference that would push the better model's accuracy above 1: no such pair exists at this baseline
    (p = 0.95 with 100 cases needs a model at 1.011), so the cell is marked, not read."""
    return difference is not None and baseline + difference > 1.0 + ZERO


def observed_sd(diffs: list[float]) -> float:
    """The sd of per-case paired differences a run observed (trials averaged as it ran them, partial credit and
    shared errors included): what a plan after a run rests on instead of the 0/1, independent-errors figure."""
    n = len(diffs)
    if n < 2:
        return math.nan
    mean = sum(diffs) / n
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))

"""Behaviour at the target load: the segment of a load run that offered the bake-off's target rate (or reached its
target concurrency), and whether the run ever got there.

A load run offers one model a schedule of rates, one segment each; the bake-off reads the segment at the rate
production will bring (`[bakeoff] target_rate`), from schedule (what a user arriving then waited). A run that never
offered that rate, or offered it and fell behind, is flagged: its figures describe another load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from arenatui.kernel.units import plural
from arenatui.load.metrics import SATURATION_SHARE, Figures, LoadOutcome
from arenatui.stats.percentiles import min_for_interval

MIN_ANSWERED = min_for_interval(95.0)
"""Answered requests below which a p95 at load is not evidence (its 95% interval has no upper bound): 73."""
RATE_TOLERANCE = 0.01
"""A segment offered at 99% of the target rate or more counts as at the target (rates are typed by hand)."""


@dataclass(frozen=True, slots=True)
class AtTarget:
    """One load run's figures at the target load, with how the segment was chosen and what to flag."""

    figures: Figures
    target: str
    """In words: "5/s (target_rate)", "concurrency 8 (target_concurrency)", or "no target: the highest rate"."""
    reached: bool
    flag: str | None
    """Why these figures are not the target's (never offered it, fell behind), or None."""


def in_flight(f: Figures) -> float:
    """Requests in flight during a segment, by Little's law: achieved rate × median latency from schedule."""
    p50 = f.latency_schedule.get(50.0, math.nan)
    return f.achieved_rate * p50 / 1000.0 if math.isfinite(p50) else math.nan


def at_target(outcome: LoadOutcome, target_rate: float | None, target_concurrency: float | None) -> AtTarget:
    """The segment at the target: the slowest one offered at the target rate or above; for a concurrency target,
    the first (by rate) whose in-flight reaches it; without a target, the fastest segment. Flagged when the run never
    got there (the fastest segment is given instead) or fell behind the rate it offered there."""
    segs = sorted([s for s in outcome.segments if s.requests], key=lambda s: s.target_rate) or [outcome.run]
    fastest = segs[-1]
    if target_rate is not None:
        target = f"{target_rate:g}/s (target_rate)"
        hits = [s for s in segs if s.target_rate >= target_rate * (1 - RATE_TOLERANCE)]
        if not hits:
            return AtTarget(fastest, target, False, f"never reached the target: offered at most "
                                                    f"{fastest.target_rate:g}/s of {target_rate:g}/s")
        seg = hits[0]
    elif target_concurrency is not None:
        target = f"concurrency {target_concurrency:g} (target_concurrency)"
        hits = [s for s in segs if in_flight(s) >= target_concurrency]
        if not hits:
            most = max((in_flight(s) for s in segs if math.isfinite(in_flight(s))), default=0.0)
            return AtTarget(fastest, target, False, f"never reached the target: at most {most:.1f} requests in "
                                                    f"flight of {target_concurrency:g}")
        seg = hits[0]
    else:
        return AtTarget(fastest, "no target set: the fastest segment", True, None)
    if seg.requests and seg.achieved_rate < SATURATION_SHARE * seg.offered_rate:
        return AtTarget(seg, target, False, f"fell behind at the target: answered {seg.achieved_rate:.2f}/s of "
                                            f"{seg.offered_rate:.2f}/s offered")
    return AtTarget(seg, target, True, None)


def p95_evidence(f: Figures) -> str | None:
    """None when the segment's p95 rests on enough answered requests (MIN_ANSWERED); else "not enough evidence"
    and why: the frontier and the decision then leave it out."""
    if f.answered >= MIN_ANSWERED and math.isfinite(f.p95_interval[1]):
        return None
    return (f"not enough evidence: p95 from {plural(f.answered, 'answered request')} of {f.requests} (at least "
            f"{MIN_ANSWERED} give it an interval)")

"""Each candidate eliminated (with the reason) or a contender (with what keeps it in), from verdicts computed
elsewhere: failed requirements (terms), a category it refuses (failures), nothing scored, or dominated on evidence
(another contender decided better on quality, Holm over all pairs, at no more cost per correct case and a p95 at the
target load not decided higher: its interval lies wholly above the other's. A p95 without an interval, or with
intervals that overlap, counts as no higher: noise never keeps a dominated candidate, issue 35)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from arenatui.bakeoff.failures import Refusal
from arenatui.bakeoff.terms import ASK, TermCheck
from arenatui.stats.compare import PairDecision
from arenatui.stats.leaderboard import ModelRow


@dataclass(slots=True)
class Decision:
    model: str
    eliminated: bool = False
    reasons: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "eliminated" if self.eliminated else "contender"


def _no_worse(a: float | None, b: float | None) -> bool | None:
    """a <= b, or None when either is unmeasured."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    return a <= b


@dataclass(frozen=True, slots=True)
class LoadP95:
    """One candidate's p95 latency at the target load with its interval and n (NaN bounds: not enough evidence)."""

    p95: float
    low: float
    high: float
    answered: int

    @property
    def words(self) -> str:
        band = (f" ({self.low:.0f}-{self.high:.0f})" if math.isfinite(self.low) and math.isfinite(self.high)
                else " (no interval)")
        return f"{self.p95:.0f} ms{band}, n {self.answered}"


def decided_higher(a: LoadP95 | None, b: LoadP95 | None) -> bool:
    """a's p95 is decided above b's: both have intervals and a's lies wholly above b's."""
    if a is None or b is None:
        return False
    return math.isfinite(a.low) and math.isfinite(b.high) and a.low > b.high


def decide(rows: Sequence[ModelRow], pairs: Sequence[PairDecision], terms: Mapping[str, Sequence[TermCheck]],
           refusals: Sequence[Refusal], p95_at_target: Mapping[str, LoadP95 | None],
           fronts: Mapping[str, Sequence[str]], load_notes: Mapping[str, str] | None = None) -> list[Decision]:
    """One Decision per model, in the rows' order. `fronts`: per model, the frontiers it is on (in words: "quality
    against ..."); `load_notes`: per model, what a contender's reader must know of its load figures (never reached
    the target, not load-tested)."""
    out = {r.model: Decision(r.model) for r in rows}
    for r in rows:
        d = out[r.model]
        for t in terms.get(r.model, ()):
            if t.met is False:
                source = f"source: {t.source}" if t.source else "no source given"
                checked = f", checked {t.checked}" if t.checked else ""
                d.eliminated = True
                d.reasons.append(f"terms: {t.term} is {t.shown}, the requirement is "
                                 f"{t.requirement} ({source}{checked})")
        for ref in refusals:
            if ref.model == r.model and ref.refuses:
                d.eliminated = True
                d.reasons.append(f"refusals: {ref.words}")
        if not r.quality.n:
            d.eliminated = True
            d.reasons.append("nothing scored: no answer of this model could be judged")
    beats = {(p.comparison.a, p.comparison.b) if p.better == p.comparison.a else (p.comparison.b, p.comparison.a): p
             for p in pairs if p.better is not None}
    standing = [r for r in rows if not out[r.model].eliminated]
    kept: dict[str, list[str]] = {}
    for r in standing:
        for o in standing:
            p = beats.get((o.model, r.model))
            if p is None:
                continue
            cheaper = _no_worse(o.cost_per_correct, r.cost_per_correct)
            mine, theirs = p95_at_target.get(r.model), p95_at_target.get(o.model)
            slower = decided_higher(theirs, mine)
            if cheaper and not slower:
                d = out[r.model]
                d.eliminated = True
                if theirs is not None and mine is not None:
                    load = (f", and its p95 at the target load is not decided higher ({theirs.words} against "
                            f"{mine.words}: a p95 counts as higher only when its interval lies wholly above)")
                else:
                    load = ""
                d.reasons.append(f"dominated by {o.model}: decided better on quality (Holm-adjusted p = "
                                 f"{p.p_holm:.3g}) at no more cost per correct case{load}")
                break
            why = (f"{o.model} is decided better on quality but costs more per correct case" if not cheaper else
                   f"{o.model} is decided better on quality but its p95 at the target load is decided higher "
                   f"({theirs.words if theirs else '-'} against {mine.words if mine else '-'})")
            kept.setdefault(r.model, []).append(f"not dominated: {why}")
    for r in rows:
        d = out[r.model]
        if d.eliminated:
            continue
        if len(rows) == 1:  # a front of one is no finding
            d.reasons.append("the only candidate: nothing to compare it with")
        else:
            d.reasons += [f"on the front of {f}" for f in fronts.get(r.model, ())]
        unknown = [t.term for t in terms.get(r.model, ()) if t.value is None]
        if unknown and len(unknown) == len(terms[r.model]) and not any(t.source for t in terms[r.model]):
            d.reasons.append(f"no terms recorded: {ASK}")
        elif unknown:
            d.reasons.append(f"{ASK} about: {', '.join(unknown)}")
        d.reasons += kept.get(r.model, [])
        note = (load_notes or {}).get(r.model)
        if note:
            d.reasons.append(note)
        if not d.reasons:
            d.reasons.append("not separated from the others on evidence: no contender is decided better on quality "
                             "at no more cost per correct case")
    return [out[r.model] for r in rows]

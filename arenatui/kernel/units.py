"""Units: how a figure is written everywhere (money, milliseconds, shares, scores, intervals, counts with their noun),
primitives that import nothing, so every layer from the stats up writes a figure the same way."""

from __future__ import annotations

import math

NOTHING = "–"
"""What a cell shows when there is no figure (no answer, no price, nothing measured)."""

MONEY_DIGITS = 3
"""Significant digits of an amount below $1: $0.0381, $0.00292, $0.000823 (never exponent notation)."""
MONEY_FLOOR = 1e-8
"""Below this an amount prints as "<$0.00000001" rather than a long row of zeros."""


def absent(v: float | None) -> bool:
    """No figure: None or NaN."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def _decimals(v: float, digits: int) -> int:
    """Decimals that show `digits` significant digits of |v| < 1."""
    return max(2, digits - 1 - math.floor(math.log10(abs(v))))


def money(v: float | None, *, digits: int = MONEY_DIGITS) -> str:
    """Dollars: 2 decimals from $1 up, `digits` significant digits below (never exponent notation); $0 for
    nothing spent; "–" for no figure."""
    if absent(v):
        return NOTHING
    assert v is not None
    if v == 0:
        return "$0"
    sign = "-" if v < 0 else ""
    a = abs(v)
    if a >= 1:
        return f"{sign}${a:,.2f}"
    if a < MONEY_FLOOR:
        return f"{sign}<${MONEY_FLOOR:.8f}"
    text = f"{a:.{_decimals(a, digits)}f}"
    return f"{sign}${text}"


def fixed(v: float | None, digits: int = 3) -> str:
    """A figure to `digits` decimals (a quality, a p-value), or NOTHING when there is none."""
    return NOTHING if v is None else f"{v:.{digits}f}"


def number(v: float | None, *, digits: int = 3) -> str:
    """A plain figure (an axis tick, a rate): `digits` significant digits, never exponent notation."""
    if absent(v):
        return NOTHING
    assert v is not None
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 10 ** (digits - 1):
        return f"{v:,.0f}"
    if a >= 1:
        return f"{v:.{digits - 1 - math.floor(math.log10(a))}f}"
    return f"{v:.{min(12, _decimals(a, digits))}f}"


def ms(v: float | None, unit: str = "") -> str:
    """Milliseconds: whole from 10 up, one decimal below; "–" for none measured. A unit is joined by a no-break
    space: "390 ms" never wraps between the figure and its unit."""
    if absent(v):
        return NOTHING
    assert v is not None
    return (f"{v:,.0f}" if abs(v) >= 10 else f"{v:.1f}") + unit.replace(" ", "\u00a0")


def pct(v: float | None, *, decimals: int = 0) -> str:
    """A share as a percentage. A share strictly between 0 and 1 never reads 0% or 100% (a coverage of 99.7%
    is not full): it reads "<1%" or ">99%" instead."""
    if absent(v):
        return NOTHING
    assert v is not None
    text = f"{v * 100:.{decimals}f}%"
    if 0 < v < 1:
        step = 10.0 ** -decimals
        if float(text[:-1]) >= 100:
            return f">{100 - step:.{decimals}f}%"
        if float(text[:-1]) <= 0:
            return f"<{step:.{decimals}f}%"
    return text


def score(v: float | None) -> str:
    """A score or a probability: three decimals."""
    return NOTHING if absent(v) else f"{v:.3f}"


def signed(v: float | None) -> str:
    """A difference of scores: a sign always, three decimals."""
    return NOTHING if absent(v) else f"{v:+.3f}"


def interval(low: float | None, high: float | None, n: int = 2) -> str:
    """A 95% interval of scores "0.812–0.901"; "–" with fewer than two cases (nothing to resample)."""
    if n < 2 or absent(low) or absent(high):
        return NOTHING
    return f"{low:.3f}–{high:.3f}"


def signed_interval(low: float | None, high: float | None, n: int = 2) -> str:
    """A 95% interval of a difference "-0.068 to +0.284"; "–" with fewer than two cases."""
    if n < 2 or absent(low) or absent(high):
        return NOTHING
    return f"{signed(low)} to {signed(high)}"


def plural(n: int, one: str, many: str | None = None) -> str:
    """A count with its noun in the right number: `1 call`, `0 calls`, `2 calls`; `many` where adding an s is wrong
    (`plural(n, "retry", "retries")`). The one place CLI and TUI words agree with their numbers."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def models_by_variants(per_model: dict[str, int], variants: bool) -> str:
    """The first factor of `N models × … cases × … trials = … calls`: `3 models`, `2 models × 2 prompt variants`,
    or, when models were asked different numbers of prompt variants, their lanes with each model's count (per_model:
    each model's lanes, one per variant it is asked with; `variants`: the run has prompt variants), so the
    product always equals the calls (`3 models × 2 prompt variants × 66 cases = 330` was 5 lanes, not 6)."""
    counts = set(per_model.values())
    lanes = sum(per_model.values())
    if not variants:
        return plural(lanes, "model")
    if len(counts) == 1:
        return f"{plural(len(per_model), 'model')} × {plural(counts.pop(), 'prompt variant')}"
    named = ", ".join(f"{m} {n}" for m, n in per_model.items())
    return (f"{plural(lanes, 'model × prompt variant lane')} ({plural(len(per_model), 'model')}; prompt variants: "
            f"{named})")

"""Figures as JSON: a non-finite number is null (JSON has no NaN), an interval is {estimate, low, high, n}."""

from __future__ import annotations

import math
import time
from typing import Any

from arenatui.stats.bootstrap import Interval
from arenatui.stats.power import PowerNote


def finite(v: float | None) -> float | None:
    """The number, or None where it is missing or not finite."""
    return None if v is None or not math.isfinite(v) else float(v)


def iso_utc(t: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC time (what the reports' JSON carries), None for none."""
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def interval_dict(iv: Interval) -> dict[str, Any]:
    return {"estimate": finite(iv.estimate), "low": finite(iv.low), "high": finite(iv.high), "n": iv.n}


def power_dict(p: PowerNote | None) -> dict[str, Any] | None:
    """After a run: for 80% power to detect a difference of D, about N cases (D observed, or the MDE)."""
    return None if p is None else {"difference": p.difference, "cases": p.cases, "observed": p.observed,
                                   "text": p.text}

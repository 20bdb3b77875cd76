"""Formatting shared by the console's screens: numbers and error counts the same way everywhere."""

from __future__ import annotations

from typing import Any


def fmt_num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    return (f"{v:.0f}" if abs(v) >= 10 else f"{v:.1f}") + unit


def fmt_errors(errors: dict[str, int] | Any) -> str:
    short = {"rate_limited": "429", "timeout": "timeout", "transient": "transient", "terminal": "terminal",
             "cancelled": "cancelled"}
    # none is "0", as the headless leaderboard and the header's error count say it
    return " ".join(f"{short.get(k, k)}×{v}" for k, v in sorted(errors.items())) or "0"



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




FAILURE_SHORT = {"wrong_answer": "wrong", "invalid_format": "format", "truncated": "cut", "refusal": "refusal",
                 "empty": "empty", "wrong_language": "lang", "judge_error": "judge"}
"""Failure modes in a table cell: short words, so two or three fit beside each other."""


def fmt_failures(failures: dict[str, int] | Any, most: int = 3) -> str:
    """The commonest failure modes of a model's failed answers, most first: `wrong×4 refusal×2`."""
    ranked = sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))[:most]
    return " ".join(f"{FAILURE_SHORT.get(k, k)}×{v}" for k, v in ranked) or "-"

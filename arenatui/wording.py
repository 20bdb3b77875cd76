"""Words the console and the headless report share, so a figure is explained the same way everywhere."""

from __future__ import annotations

from typing import Any

LEADERBOARD_NOTE = ("quality: mean per-case score over scored calls (a case's trials averaged first), with its "
                    "95% interval over cases; errored calls count against coverage, never as zeros. "
                    "$/correct: all spend, retries and errors included, per passed call; $/answered: per answered "
                    "call. \"tests\" in the summary line are the cases.")
"""Said once under the leaderboard, in the console and headless alike (issue 12)."""


def fmt_errors(errors: dict[str, int] | Any) -> str:
    short = {"rate_limited": "429", "timeout": "timeout", "transient": "transient", "terminal": "terminal",
             "cancelled": "cancelled", "incomplete_stream": "cut stream"}
    # none is "0", as the headless leaderboard and the header's error count say it
    return " ".join(f"{short.get(k, k)}×{v}" for k, v in sorted(errors.items())) or "0"


FAILURE_SHORT = {"wrong_answer": "wrong", "invalid_format": "format", "truncated": "cut", "refusal": "refusal",
                 "empty": "empty", "wrong_language": "lang", "judge_error": "judge"}
"""Failure modes in a table cell: short words, so two or three fit beside each other."""


def fmt_failures(failures: dict[str, int] | Any, most: int = 3) -> str:
    """The commonest failure modes of a model's failed answers, most first: `wrong×4 refusal×2`."""
    ranked = sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))[:most]
    return " ".join(f"{FAILURE_SHORT.get(k, k)}×{v}" for k, v in ranked) or "-"

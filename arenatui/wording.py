"""Words the console and the headless report share, so a figure is explained the same way everywhere."""

from __future__ import annotations

from typing import Any

from arenatui.figures import NOTHING, error_counts

LEADERBOARD_NOTE = ("quality: mean per-case score over scored calls (a case's trials averaged first), with its "
                    "95% interval over cases; errored calls count against coverage, never as zeros. "
                    "$/correct: all spend, retries and errors included, per passed call; $/answered: per answered "
                    "call.")
"""Said once under the leaderboard, in the console and headless alike (issue 12)."""


def plural(n: int, one: str, many: str | None = None) -> str:
    """A count with its noun in the right number: `1 call`, `0 calls`, `2 calls`; `many` where adding an s is wrong
    (`plural(n, "retry", "retries")`). The one place CLI and TUI words agree with their numbers."""
    return f"{n} {one if n == 1 else many or one + 's'}"


fmt_errors = error_counts
"""Errored calls by class (figures.error_counts): none is "0", as the header's error count says it."""


FAILURE_SHORT = {"wrong_answer": "wrong", "invalid_format": "format", "truncated": "cut", "refusal": "refusal",
                 "empty": "empty", "wrong_language": "lang", "judge_error": "judge",
                 "cut_while_reasoning": "cut-reasoning"}
"""Failure modes in a table cell: short words, so two or three fit beside each other."""


def fmt_failures(failures: dict[str, int] | Any, most: int = 3) -> str:
    """The commonest failure modes of a model's failed answers, most first: `wrong×4 refusal×2`."""
    ranked = sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))[:most]
    return " ".join(f"{FAILURE_SHORT.get(k, k)}×{v}" for k, v in ranked) or NOTHING

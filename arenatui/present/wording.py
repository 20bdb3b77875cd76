"""Words the console and the headless report share, so a figure is explained the same way everywhere."""

from __future__ import annotations

from typing import Any

from arenatui.kernel.units import NOTHING, plural
from arenatui.present.columns import error_counts

LEADERBOARD_NOTE = ("quality: mean per-case score over scored calls (a case's trials averaged first), with its "
                    "95% interval over cases; errored calls count against coverage, never as zeros. "
                    "$/correct: all spend, retries and errors included, per passed call; $/answered: per answered "
                    "call.")
"""Said once under the leaderboard, in the console and headless alike (issue 12)."""


def clusters_note(clusters: int | None) -> str | None:
    """Said under every view of a clustered run's intervals: what they rest on, and below FEW_CLUSTERS that they are
    approximate (None when unclustered)."""
    if clusters is None:
        return None
    from arenatui.stats.bootstrap import FEW_CLUSTERS

    text = (f"Intervals rest on {plural(clusters, 'cluster')}, not cases (t on the clustered standard error, "
            f"{clusters - 1} df)")
    if clusters < FEW_CLUSTERS:
        text += f"; few clusters ({clusters}, under {FEW_CLUSTERS}): the interval is approximate"
    return text + "."


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

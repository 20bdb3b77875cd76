"""Words the console and the headless report share, so a figure is explained the same way everywhere."""

from __future__ import annotations

LEADERBOARD_NOTE = ("quality: mean per-case score over answered calls (a case's trials averaged first), with its "
                    "95% interval over cases; errored calls count against coverage, never as zeros. "
                    "$/correct: all spend, retries and errors included, per passed call; $/answered: per answered "
                    "call. \"tests\" in the summary line are the cases.")
"""Said once under the leaderboard, in the console and headless alike (issue 12)."""

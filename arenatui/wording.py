"""Words the console and the headless report share, so a figure is explained the same way everywhere."""

from __future__ import annotations

LEADERBOARD_NOTE = ("score: mean per-case score (a case's trials averaged first), with its 95% interval over cases. "
                    "$/completed: all spend, retries included, per answered call (passed or failed). "
                    "\"tests\" in the summary line are the cases.")
"""Said once under the leaderboard, in the console and headless alike (issue 12)."""

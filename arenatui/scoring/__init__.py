"""Scorers: turn a model's output and a case's expectation into a score in [0, 1] and a pass/fail.

The package itself loads nothing: the pure parts (`f1`, `failure_modes`) are read by the read model and the views
without loading the scorers (and `regex`, `jsonschema`); the names below load `scorers` when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arenatui.scoring.scorers import (
        REGEX_TIMEOUT_S,
        Score,
        Scorer,
        ScorerSet,
        ScoringError,
        ScoringSlow,
        extract_choice,
    )

__all__ = ["REGEX_TIMEOUT_S", "Score", "Scorer", "ScorerSet", "ScoringError", "ScoringSlow", "extract_choice"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from arenatui.scoring import scorers

        return getattr(scorers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

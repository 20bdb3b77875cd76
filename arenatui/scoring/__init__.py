"""Scorers: turn a model's output and a case's expectation into a score in [0, 1] and a pass/fail."""

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

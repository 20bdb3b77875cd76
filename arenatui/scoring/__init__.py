"""Scorers: turn a model's output and a case's expectation into a score in [0, 1] and a pass/fail."""

from arenatui.scoring.scorers import Score, Scorer, ScorerSet, extract_choice

__all__ = ["Score", "Scorer", "ScorerSet", "extract_choice"]

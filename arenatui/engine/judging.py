"""Judge jobs: a candidate's answer waiting for its judge model (its request is `scoring.judge.judge_messages`).

The runner queues a job on the judge's lane when an llm_judge case in its scorer's sample is answered (or, on
resume, for a stored answer awaiting its judge); the judge's answer is read by `scoring.verdict.from_judge`.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenatui.config.schema import Case, ScorerConfig


@dataclass(slots=True)
class JudgeJob:
    """A candidate's answer waiting for its judge."""

    model_key: str
    model_index: int
    case: Case
    trial: int
    output: str
    finish_reason: str | None
    scorer: ScorerConfig

"""Judge jobs: a candidate's answer waiting for its judge model, and the request the judge is sent.

The runner queues a job on the judge's lane when an llm_judge case in its scorer's sample is answered (or, on
resume, for a stored answer awaiting its judge); the judge's answer is read by `scoring.verdict.from_judge`.
"""

from __future__ import annotations

from dataclasses import dataclass

from arenatui.config.schema import Case, ModelConfig, ScorerConfig
from arenatui.scoring.judge import render_rubric


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


def judge_messages(judge: ModelConfig, job: JudgeJob) -> tuple[dict[str, str], ...]:
    """The judge's request: the rubric filled in, after the judge model's own system prompt if it has one (the
    project's [defaults] system is for the candidates: "answer with one letter" must not reach a judge)."""
    assert job.scorer.rubric is not None
    prompt = render_rubric(job.scorer.rubric, job.case, job.output)
    if judge.system:
        return {"role": "system", "content": judge.system}, {"role": "user", "content": prompt}
    return ({"role": "user", "content": prompt},)

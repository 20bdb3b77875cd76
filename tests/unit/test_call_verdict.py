"""`scoring.verdict`: what a call's stored result says, decided once for every path of the runner."""

from __future__ import annotations

from arenatui.config.schema import ScorerConfig
from arenatui.scoring import verdict
from arenatui.scoring.scorers import Score

JUDGE = ScorerConfig(name="q", kind="llm_judge", judge="g", rubric="Rate {output}", scale="1-5")


def test_an_answer_scored_passed_or_failed_with_its_failure_mode_and_detail() -> None:
    ok = verdict.answered(Score(1.0, True, False, "matched"), "yes", "stop", None, False)
    assert ok == verdict.Verdict("passed", 1.0, True, None, None, "none", "matched")
    cut = verdict.answered(Score(0.0, False), "the answer is", "length", None, False)
    assert (cut.status, cut.passed, cut.failure_mode) == ("failed", False, "truncated")
    bad = verdict.answered(Score(0.0, False, True, "not JSON"), "{", "stop", None, False)
    assert (bad.failure_mode, bad.detail) == ("invalid_format", "not JSON")


def test_no_verdict_is_an_error_never_a_zero_and_a_judged_case_waits() -> None:
    v = verdict.answered("scorer 'x' raised KeyError", "out", "stop", None, False)
    assert (v.status, v.score, v.error_class, v.failure_mode) == ("errored", None, "scoring_error", "scoring_error")
    assert verdict.answered(None, "out", "stop", None, True).failure_mode == "awaiting_judge"
    assert verdict.answered(None, "out", "stop", None, False).failure_mode == "unjudged"
    assert verdict.answered(None, "out", "stop", None, False).status == "unscored"


def test_a_judges_reading_and_an_unreadable_one() -> None:
    v = verdict.from_judge(JUDGE, "VERDICT: 5", "candidate text", "stop", None)
    assert (v.status, v.score, v.passed, v.failure_mode) == ("passed", 1.0, True, "none")  # 5 of 1-5
    low = verdict.from_judge(JUDGE, "VERDICT: 1", "candidate text", "stop", None)
    assert (low.status, low.passed) == ("failed", False) and low.failure_mode != "none"
    bad = verdict.from_judge(JUDGE, "I cannot say", "candidate text", "stop", None)
    assert (bad.status, bad.error_class, bad.failure_mode, bad.score) == ("errored", "judge_error", "judge_error", None)


def test_a_full_score_is_the_shared_passed_verdict() -> None:
    assert verdict.answered(Score(1.0, True), "yes", "stop", None, False) is verdict.PASSED
    assert verdict.Verdict("passed", 1.0, True, None, None, "none", None) == verdict.PASSED


def test_a_call_without_an_answer() -> None:
    assert verdict.ended("timeout", "no answer within 5s") == verdict.Verdict(
        "errored", None, False, "timeout", "no answer within 5s", "timeout")

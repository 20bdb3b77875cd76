"""max_tokens and timeout_s recommendations (arenatui.tuning.budgets) on hand-made evidence."""

from __future__ import annotations

import random

from arenatui.tuning.budgets import (
    MIN_ANSWERS,
    Answer,
    TimeoutEvidence,
    recommend_max_tokens,
    recommend_timeout,
    run_timeout,
    seconds_per_token,
)


def _answers(n: int, tokens: int, *, passed: bool = True, truncated: bool = False, per_token: float = 0.002,
             seed: int = 0) -> list[Answer]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        t = max(1, round(tokens * (0.5 + rnd.random())))
        out.append(Answer(t, passed, truncated, 0.1 + t * per_token))
    return out


def test_no_truncation_lowers_to_the_longest_passing_answer_with_margin() -> None:
    passing = _answers(80, 20)  # 10-30 tokens
    rambling = _answers(20, 400, passed=False, seed=1)  # wrong answers run on
    rec = recommend_max_tokens("m", 1024, passing + rambling, price_out_per_mtok=2.0)
    longest = max(a.output_tokens for a in passing)
    assert rec.action == "lower" and rec.writable
    assert rec.value is not None and longest <= rec.value <= longest * 1.25 + 16
    assert all(a.output_tokens <= rec.value for a in passing)  # it cuts no passing answer
    assert rec.n == 100
    assert "cuts none of the passing answers" in rec.verdict
    saved = sum(a.output_tokens - rec.value for a in rambling if a.output_tokens > rec.value)
    assert any(f"{saved} tokens" in d for d in rec.detail)
    assert any("ms per output token" in d for d in rec.detail)
    assert any("$" in d for d in rec.detail)


def test_a_limit_that_fits_is_kept() -> None:
    rec = recommend_max_tokens("m", 48, _answers(60, 30))
    assert rec.action == "keep" and not rec.writable and "fits" in rec.verdict


def test_heavy_truncation_says_raise_never_lower() -> None:
    # passing answers reach 60 tokens of a 64 limit: the failed ones stopped at it were plausibly cut
    answers = _answers(50, 40) + [Answer(64, False, True, 0.3) for _ in range(25)]
    rec = recommend_max_tokens("m", 64, answers)
    assert rec.action == "raise" and rec.value == 128
    assert "stopped at the limit" in rec.verdict and "25 of 75" in rec.verdict


def test_too_few_answers_is_not_enough_evidence() -> None:
    rec = recommend_max_tokens("m", 1024, _answers(MIN_ANSWERS - 1, 20))
    assert rec.action == "none" and rec.value is None and not rec.writable
    assert rec.verdict.startswith("not enough evidence")
    assert recommend_max_tokens("m", 1024, []).action == "none"


def test_seconds_per_token_is_the_latency_slope() -> None:
    slope = seconds_per_token(_answers(100, 200, per_token=0.004))
    assert slope is not None and abs(slope - 0.004) < 1e-9
    assert seconds_per_token([Answer(32, True, False, 0.5)] * 50) is None  # lengths do not vary


def test_timeout_lowered_above_the_slowest_answer() -> None:
    ev = TimeoutEvidence([0.5 + i * 0.01 for i in range(100)], timed_out=0)
    rec = recommend_timeout("m", 120.0, ev)
    assert rec.action == "lower" and rec.value == 3.0  # slowest 1.49 s x 1.5 = 2.2, rounded up
    assert all(s <= rec.value for s in ev.answered_s)


def test_slow_but_valid_calls_being_cut_say_raise() -> None:
    # answers crowd the 10 s limit and 7 attempts timed out: the limit cuts slow-but-valid calls
    ev = TimeoutEvidence([2.0] * 40 + [9.1, 9.5, 9.8], timed_out=7, timed_out_no_first_byte=2)
    rec = recommend_timeout("m", 10.0, ev)
    assert rec.action == "raise" and rec.value == 20.0
    assert any("2 of them had no first token (probably hung)" in d and "had started answering" in d for d in rec.detail)


def test_hung_calls_with_fast_answers_lower_the_timeout() -> None:
    ev = TimeoutEvidence([1.0] * 50, timed_out=4, timed_out_no_first_byte=4)
    rec = recommend_timeout("m", 60.0, ev)
    assert rec.action == "lower" and rec.value == 2.0
    assert any("probably hung" in d for d in rec.detail)


def test_timeout_needs_evidence_and_the_run_limit_covers_the_slowest_model() -> None:
    assert recommend_timeout("m", 60.0, TimeoutEvidence([1.0] * 5, 0)).action == "none"
    fast = recommend_timeout("fast", 60.0, TimeoutEvidence([0.5] * 40, 0))
    slow = recommend_timeout("slow", 60.0, TimeoutEvidence([4.0] * 40, 0))
    both = run_timeout([fast, slow], 60.0)
    assert both is not None and both.action == "lower" and both.value == 6.0 and "slow" in both.verdict
    none = recommend_timeout("x", 60.0, TimeoutEvidence([], 0))
    assert run_timeout([fast, none], 60.0) is None


def test_wrong_answers_rambling_to_the_limit_are_not_cut_answers() -> None:
    # every passing answer is under 30 tokens; the wrong ones run to the 256 limit: lower it, do not raise it
    answers = _answers(60, 20) + [Answer(256, False, True, 0.6) for _ in range(15)]
    rec = recommend_max_tokens("m", 256, answers)
    assert rec.action == "lower" and rec.value is not None and rec.value < 64
    assert any("ramble" in d for d in rec.detail)


def test_a_verdict_reads_once_its_setting_is_named_by_its_label() -> None:
    from arenatui.tuning.budgets import Recommendation

    def said(verdict: str, key: str = "m", setting: str = "max_tokens") -> str:
        return Recommendation(setting, key, 256, "lower", 96, verdict, 40).unnamed()  # type: ignore[arg-type]

    assert said("lower max_tokens 256 → 96: it cuts none") == "lower 256 → 96: it cuts none"
    assert said("raise max_tokens: 3 of 40 answers") == "raise: 3 of 40 answers"
    assert said("max_tokens 256 fits: the longest") == "256 fits: the longest"
    assert said("not enough evidence: 3 passing answers") == "not enough evidence: 3 passing answers"
    assert said("lower [run] timeout_s 30 → 1 s (set by m)", "*", "timeout_s") == "lower 30 → 1 s (set by m)"

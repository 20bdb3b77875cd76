"""The one call renderer (tui/call_text.py) on hand-made typed rows, and the store reader that fills those rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arenatui.kernel.events import VARIANT_SEP, CallResult, CallRetrying, JudgeFinished, StepFinished
from arenatui.store import Store
from arenatui.store.db import (
    INSERT_FAILED_ATTEMPT,
    INSERT_STEP,
    UPSERT_JUDGMENT,
    judgment_rows,
    result_row,
    retry_row,
    step_row,
)
from arenatui.store.queries import CallRow, CallStep, FailedAttempt, JudgmentRow, call_details, judge_calls
from arenatui.tui.call_text import PREVIEW_CHARS, CallContext, call_text, judgment_text
from tests.tui.support import INJECTIONS, stored_call

EXACT = CallContext(expected="Paris", scorer="answer", scorer_kind="exact")
EVIL = " ".join(INJECTIONS)


def _judgment(**fields: Any) -> JudgmentRow:
    base: dict[str, Any] = dict(model_key="sim-0", case_id="case-000", trial=0, judge="grader", status="passed",
                                score=1.0, passed=True, error_class=None, error_message=None, answer="Verdict: 5",
                                answer_chars=10, attempts=1, latency_ms=250.0, total_ms=300.0, input_tokens=40,
                                output_tokens=7, cost=0.002, score_detail="judge 5 on 1-5")
    return JudgmentRow(**(base | fields))


def test_a_passed_call_shows_its_figures_and_output() -> None:
    text = call_text(stored_call(trial=2, latency_ms=120.0, total_ms=150.0, ttft_ms=40.0, input_tokens=8,
                                 output_tokens=52, cost=0.00012, output="Paris"), EXACT).plain
    lines = text.splitlines()
    assert lines[0] == "trial 2  passed   score 1.000   attempts 1"
    assert lines[1].replace("\u00a0", " ") == ("  latency 120 ms · total 150 ms · TTFT 40 ms · tokens 8→52 · "
                                                "cost $0.000120")
    assert "\u00a0· cost\u00a0$0.000120" in lines[1]  # each figure held together: a narrow column wraps after "·"
    assert lines[2:] == ["output", "Paris"]
    assert "why" not in text and "on the wire" not in text


def test_a_failed_call_says_which_scorer_wanted_what() -> None:
    text = call_text(stored_call(status="failed", passed=False, score=0.0, output="I cannot help",
                                 failure_mode="refusal", score_detail="no city named"), EXACT).plain
    assert "why scored 0 by answer (exact match): expected Paris; failed as refusal (no city named)" in text
    sealed = call_text(stored_call(status="failed", passed=False, score=0.0, output="Lyon", score_detail="Lyon≠x"),
                       CallContext(sealed=True, scorer="answer", scorer_kind="exact")).plain
    assert "why scored 0 by answer (exact match): the expected answer is sealed" in sealed
    assert "Lyon" not in sealed and "output" not in sealed


def test_an_unscored_call_says_why_it_has_no_score() -> None:
    judged = CallContext(scorer="quality", scorer_kind="llm_judge", judge="grader", sample=0.5)
    waiting = call_text(stored_call(status="unscored", passed=False, score=None, failure_mode="awaiting_judge"),
                        judged).plain
    assert "trial 0  unscored   score -" in waiting
    assert "why answered, awaiting its judge judge:grader: scored when the judge answers" in waiting
    outside = call_text(stored_call(status="unscored", passed=False, score=None, failure_mode="unjudged"),
                        judged).plain
    assert "outside the sample of the llm_judge scorer quality (sample 0.5); it never will be" in outside


def test_an_errored_call_shows_why_its_attempts_and_no_output() -> None:
    row = stored_call(status="errored", passed=False, score=None, output=None, error_class="rate_limited",
                      error_message="too many requests", http_status=429, attempts=3, connect_ms=42.0,
                      failed_attempts=(FailedAttempt(1, "rate_limited", 429, 1.5, 1.6, "slow", "retry-after"),
                                       FailedAttempt(2, "rate_limited", 429, None, 0.4, "slow"),
                                       FailedAttempt(3, "rate_limited", 429, None, None, "slow")))
    text = call_text(row, EXACT).plain
    assert "why rate_limited (HTTP 429): too many requests" in text
    assert "request on the wire after 42\u00a0ms (connecting, TLS, client queueing; not in the latency)" in text
    assert "attempt 1 failed: rate_limited (HTTP 429), asked to wait 1.50s (retry-after), slept 1.60s" in text
    assert ("attempt 2 failed: rate_limited (HTTP 429), with no retry hint (no Retry-After or rate-limit reset "
            "header): backed off, slept 0.40s") in text
    assert "attempt 3 failed: rate_limited (HTTP 429)\n" in text  # the attempt that ended it: nothing slept
    assert "output" not in text


def test_an_unreachable_call_names_its_broken_chain() -> None:
    row = stored_call(status="unreachable", passed=False, score=None, output=None, attempts=0,
                      error_class="unreachable", error_message="depends on plan, which failed")
    text = call_text(row, EXACT).plain
    assert "trial 0  unreachable   score -   attempts 0\n" in text
    assert "why unreachable: depends on plan, which failed\n" in text and "output" not in text


def test_a_solver_error_shows_its_traceback_unless_sealed() -> None:
    row = stored_call(status="errored", passed=False, score=None, output=None, error_class="solver_error",
                      error_message="ValueError: no", score_detail="Traceback (most recent call last):\n  ...")
    assert "solver traceback\nTraceback (most recent call last):" in call_text(row, EXACT).plain
    assert "Traceback" not in call_text(row, CallContext(sealed=True)).plain


def test_a_judged_call_shows_the_judges_verdict_answer_and_spend() -> None:
    text = call_text(stored_call(judgment=_judgment()), EXACT).plain
    assert "judge grader: passed (judge 5 on 1-5)\n" in text
    assert "  attempts 1 · latency 250 ms · total 300 ms · tokens 40→7 · cost $0.00200\n" in text.replace("\u00a0", " ")
    assert "judge's answer\nVerdict: 5\n" in text
    # a judge_error is said once, by the judge call that had it
    failed = _judgment(status="errored", score=None, passed=False, error_class="judge_error",
                       error_message="no verdict in the judge's answer", score_detail=None)
    text = call_text(stored_call(status="errored", passed=False, score=None, error_class="judge_error",
                                 error_message="no verdict in the judge's answer", judgment=failed), EXACT).plain
    assert text.count("no verdict in the judge's answer") == 1
    assert "output\n42" in text  # the answer that could not be judged is kept and shown
    sealed = judgment_text(_judgment(answer="quoting SEALED text"), CallContext(sealed=True)).plain
    assert "judge's answer hidden: sealed case" in sealed and "SEALED" not in sealed and "5 on 1-5" not in sealed


def test_a_repaired_and_escalated_call_shows_each_step() -> None:
    steps = (CallStep(0, "answer", "small", "failed", 0.0, "wrong_answer", None, None, None, "Lyon", 1, 90.0, 5, 2,
                      0.001),
             CallStep(1, "repair", "small", "failed", 0.0, "invalid_format", None, None, "not JSON", "{Lyon", 1, 80.0,
                      9, 3, 0.001),
             CallStep(2, "escalation", "big", "passed", 1.0, "none", None, None, None, "Paris", 2, 300.0, 5, 1, 0.01))
    text = call_text(stored_call(repairs=1, escalated_to="big", first_passed=False, steps=steps), EXACT).plain
    assert "follow-ups 1 repair turn, escalated to big, the first answer failed\n" in text
    assert "  step 0 answer by small: failed, score 0.000 · attempts 1" in text
    assert "  step 1 repair by small: failed, score 0.000, failed as invalid_format" in text
    assert "    scorer: not JSON\n    said: {Lyon\n" in text
    assert "  step 2 escalation by big: passed, score 1.000 · attempts 2" in text
    assert "said: " not in call_text(stored_call(repairs=1, steps=steps), CallContext(sealed=True)).plain


def test_a_long_output_shows_its_start_and_how_to_get_the_rest() -> None:
    long = "x" * PREVIEW_CHARS
    text = call_text(stored_call(output=long, output_chars=1_500_000), EXACT).plain
    assert f"… the first {PREVIEW_CHARS:,} of 1,500,000 characters: s saves the whole output to a file" in text
    quiet = call_text(stored_call(output=long, output_chars=1_500_000), CallContext(save_hint=False)).plain
    assert "of 1,500,000 characters\n" in quiet and "s saves" not in quiet


def test_hostile_text_shows_literally_everywhere() -> None:
    """Model output, error bodies, scorer details, judge answers and names from config: markup shows as text,
    control sequences as visible escapes, nothing styles, links or reaches the terminal."""
    step = CallStep(0, "answer", EVIL, "failed", 0.0, EVIL, EVIL, EVIL, EVIL, EVIL, 1, 1.0, 1, 1, 0.0)
    row = stored_call(model_key=EVIL, status="failed", passed=False, score=0.0, output=EVIL, error_class=EVIL,
                      error_message=EVIL, failure_mode=EVIL, score_detail=EVIL, escalated_to=EVIL, repairs=1,
                      steps=(step,), judgment=_judgment(judge=EVIL, status=EVIL, error_class=EVIL, error_message=EVIL,
                                                         answer=EVIL, score_detail=EVIL),
                      failed_attempts=(FailedAttempt(1, EVIL, 500, 1.0, 1.0, EVIL, EVIL),))
    ctx = CallContext(expected=EVIL, scorer=EVIL, scorer_kind=EVIL)
    text = call_text(row, ctx)
    assert "[bold red]x[/]" in text.plain and "[@click=app.quit]" in text.plain and "[link=https://example.com]y" \
        in text.plain
    assert not any(c in text.plain for c in ("\x1b", "\x07", "\x9b"))
    assert "␛]0;title\\x07" in text.plain
    assert not any("red" in str(span.style) or "link" in str(span.style) for span in text.spans)


def test_a_sealed_cases_error_messages_go_through_its_scrubber() -> None:
    """A provider's error may echo the sealed prompt: every error message shown is scrubbed first."""
    ctx = CallContext(sealed=True, scrub=lambda m: None if m is None else m.replace("SECRET", "[removed]"))
    row = stored_call(status="errored", passed=False, score=None, output=None, error_class="terminal",
                      error_message="bad request: SECRET", steps=(CallStep(
                          0, "answer", "m", "errored", None, None, "transient", "echo SECRET", None, None, 1, None, 0,
                          0, 0.0),), judgment=_judgment(error_class="judge_error", error_message="judge saw SECRET"))
    text = call_text(row, ctx).plain
    assert "SECRET" not in text and text.count("[removed]") == 3


def _result(key: str, trial: int, **fields: Any) -> CallResult:
    base: dict[str, Any] = dict(model_key=key, case_id="c1", trial=trial, status="passed", output="out " * 10,
                                score=1.0, passed=True, error_class=None, error_message=None, attempts=1,
                                latency_ms=10.0, total_ms=12.0, ttft_ms=None, input_tokens=1, output_tokens=1,
                                cost=0.0, finish_reason="stop", tokens_estimated=False, started_at=1.0,
                                finished_at=2.0)
    return CallResult(**(base | fields))


def test_the_store_reads_one_lanes_calls_with_attempts_judgment_and_steps(tmp_path: Path) -> None:
    lane = f"m{VARIANT_SEP}terse"
    with Store(tmp_path / "a.db") as store:
        run = store.create_run("p", None, {}, {}, 4)
        store.write_rows([result_row(run, _result(lane, 0, attempts=2, connect_ms=3.0, repairs=1, first_passed=False)),
                          result_row(run, _result(lane, 1, status="errored", output=None, passed=False, score=None,
                                                  error_class="timeout", error_message="slow", http_status=504)),
                          result_row(run, _result("m", 0)),
                          result_row(run, _result(lane, 2, error_class="cancelled", status="errored"))])
        c = store.conn
        c.execute(INSERT_FAILED_ATTEMPT, retry_row(run, CallRetrying(lane, "c1", 0, 1, "rate_limited", 0.5, "429",
                                                                     0.0, 0.4, 429, "retry-after"), 1.5))
        c.execute(INSERT_FAILED_ATTEMPT, retry_row(run, CallRetrying("m", "c1", 0, 1, "transient", 0.1, "x", 0.0),
                                                   1.5))
        c.execute(INSERT_STEP, step_row(run, StepFinished(_result(lane, 0, status="failed", output="first"), 0,
                                                          "answer", "m", 0.0)))
        judge = _result("judge:g", 0, output="Verdict 5" * 5_000, score_detail="judge 5 on 1-5")
        found = judgment_rows(run, JudgeFinished(judge, lane, "c1", 0, 0.0))
        assert found is not None
        judgment, _update = found
        c.execute(UPSERT_JUDGMENT, judgment)
        c.execute(INSERT_FAILED_ATTEMPT, retry_row(run, CallRetrying("judge:g", "c1", 7, 1, "transient", 0.1, "j",
                                                                     0.0), 1.5))
        c.commit()
        rows = call_details(store, run, "c1", lane=lane, preview=5)
        live = call_details(store, run, "c1", lane=lane, preview=5, final=False)
        everyone = call_details(store, run, "c1", preview=5)
        judged = judge_calls(store, run, "c1", "g", lambda key, trial: 7 if key == lane else -1)
        saved = store.save_output(run, lane, "c1", 0, tmp_path / "out.txt")  # `s` in either detail: the lane's
    assert saved == 40 and (tmp_path / "out.txt").read_text() == "out " * 10
    assert [r.trial for r in rows] == [0, 1] and [r.trial for r in live] == [0, 1, 2]  # cancelled: the console's
    first, timed_out = rows
    assert isinstance(first, CallRow) and first.model_key == lane
    assert (first.output, first.output_chars, first.connect_ms, first.repairs, first.first_passed) == (
        "out o", 40, 3.0, 1, False)
    assert first.failed_attempts == (FailedAttempt(1, "rate_limited", 429, 0.4, 0.5, "429", "retry-after"),)
    assert [(s.step, s.kind, s.output) for s in first.steps] == [(0, "answer", "first")]
    assert first.judgment is not None and first.judgment.judge == "g" and first.judgment.answer_chars == 45_000
    assert (timed_out.http_status, timed_out.judgment, timed_out.failed_attempts) == (504, None, ())
    plain = next(r for r in everyone if r.model_key == "m")
    assert [fa.error_class for fa in plain.failed_attempts] == ["transient"] and plain.judgment is None
    (j,) = judged
    assert j.model_key == lane and [fa.message for fa in j.failed_attempts] == ["j"]

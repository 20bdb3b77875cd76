"""Live metrics folded from scripted events on a fake clock: no engine, no Textual."""

from __future__ import annotations

from typing import Any

import pytest

from arenatui.kernel.events import (
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    ConcurrencyChanged,
    RunFinished,
)
from arenatui.session.live import BACKOFF, ERRORED, FAILED, IN_FLIGHT, PASSED, QUEUED, LiveMetrics


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def result(model: str, case: str, trial: int = 0, *, status: str = "passed", error_class: str | None = None,
           latency_ms: float | None = 100.0, attempts: int = 1, cost: float = 0.001, **kw: Any) -> CallResult:
    fields: dict[str, Any] = dict(
        model_key=model, case_id=case, trial=trial, status=status, output="x", score=1.0 if status == "passed"
        else 0.0 if status == "failed" else None, passed=status == "passed", error_class=error_class,
        error_message="boom" if error_class else None, attempts=attempts, latency_ms=latency_ms,
        total_ms=latency_ms or 0.0, ttft_ms=None, input_tokens=10, output_tokens=5, cost=cost,
        finish_reason="stop", tokens_estimated=False, started_at=0.0, finished_at=0.0)
    fields.update(kw)
    return CallResult(**fields)


@pytest.fixture
def live() -> tuple[LiveMetrics, Clock]:
    clock = Clock()
    return LiveMetrics(["a", "b"], ["c1", "c2", "c3"], 2, clock=clock), clock


def test_cell_states_follow_a_call_through_retry_to_a_result(live: tuple[LiveMetrics, Clock]) -> None:
    lm, clock = live
    t = clock.now
    assert lm.cell(0, 0) == (2, 0, 0, 0, 0, 0, 0, 0, 0)
    lm.on_event(CallStarted("a", "c1", 0, 1, t + 0.1))
    assert lm.cell(0, 0)[QUEUED] == 1 and lm.cell(0, 0)[IN_FLIGHT] == 1
    lm.on_event(CallRetrying("a", "c1", 0, 1, "rate_limited", 0.5, "429", t + 0.2))
    assert lm.cell(0, 0)[IN_FLIGHT] == 0 and lm.cell(0, 0)[BACKOFF] == 1
    s = lm.snapshot()
    assert (s.in_flight, s.backing_off, s.retries, s.rate_limited) == (0, 1, 1, 1)
    lm.on_event(CallStarted("a", "c1", 0, 2, t + 0.7))
    assert lm.cell(0, 0)[BACKOFF] == 0 and lm.cell(0, 0)[IN_FLIGHT] == 1
    lm.on_event(CallFinished(result("a", "c1", 0, attempts=2), t + 0.8))
    assert lm.cell(0, 0) == (1, 0, 0, 1, 0, 0, 0, 0, 0)
    lm.on_event(CallStarted("a", "c1", 1, 1, t + 0.8))
    lm.on_event(CallFinished(result("a", "c1", 1, status="failed"), t + 0.9))
    assert lm.cell(0, 0)[PASSED] == 1 and lm.cell(0, 0)[FAILED] == 1 and lm.cell(0, 0)[QUEUED] == 0
    lm.on_event(CallStarted("b", "c3", 0, 1, t + 0.9))
    lm.on_event(CallFinished(result("b", "c3", 0, status="errored", error_class="terminal", latency_ms=5.0),
                             t + 1.0))
    assert lm.cell(1, 2)[ERRORED] == 1
    clock.now = t + 1.0
    s = lm.snapshot()
    assert (s.done, s.passed, s.failed, s.errored, s.in_flight, s.backing_off) == (3, 1, 1, 1, 0, 0)
    assert s.models[1].errors == {"terminal": 1}
    # the index of every cell touched is reported dirty
    assert {0 * 3 + 0, 1 * 3 + 2} <= lm.take_dirty()


def test_cancelled_calls_return_to_queued(live: tuple[LiveMetrics, Clock]) -> None:
    lm, clock = live
    t = clock.now
    lm.on_event(CallStarted("a", "c2", 0, 1, t))
    lm.on_event(CallStarted("a", "c2", 1, 1, t))
    lm.on_event(CallRetrying("a", "c2", 1, 1, "transient", 1.0, "503", t + 0.1))
    for trial in (0, 1):
        lm.on_event(CallFinished(result("a", "c2", trial, status="errored", error_class="cancelled"), t + 0.2))
    assert lm.cell(0, 1) == (2, 0, 0, 0, 0, 0, 0, 0, 0)
    s = lm.snapshot()
    assert (s.done, s.errored, s.in_flight, s.backing_off) == (0, 0, 0, 0)
    assert s.models[0].errors == {}


def test_rates_percentiles_and_eta() -> None:
    clock = Clock()
    t0 = clock.now
    lm = LiveMetrics(["a"], [f"c{i}" for i in range(100)], 1, clock=clock, window_s=10.0)
    latencies = [float(10 * (i + 1)) for i in range(20)]  # 10 .. 200 ms
    for i, lat in enumerate(latencies):
        t = t0 + i * 0.25  # 20 calls over 5 s: 4 calls/s
        lm.on_event(CallStarted("a", f"c{i}", 0, 1, t))
        if i % 4 == 0:  # every fourth call is retried once after a 429
            lm.on_event(CallRetrying("a", f"c{i}", 0, 1, "rate_limited", 0.01, "429", t))
            lm.on_event(CallStarted("a", f"c{i}", 0, 2, t))
        lm.on_event(CallFinished(result("a", f"c{i}", latency_ms=lat), t + 0.01))
    clock.now = t0 + 5.0
    s = lm.snapshot()
    m = s.models[0]
    assert m.done == 20 and s.done == 20
    assert m.calls_per_s == pytest.approx(4.0, rel=0.05)
    # 25 attempts, 5 retries (all 429s)
    assert m.retry_rate == pytest.approx(5 / 25) and m.rate_limited_rate == pytest.approx(5 / 25)
    assert s.retry_rate == pytest.approx(5 / 25)
    assert m.p50_ms == pytest.approx(105.0) and m.p95_ms == pytest.approx(190.5)
    # 80 calls left at 4 calls/s
    assert s.eta_s == pytest.approx(20.0, rel=0.05)
    assert m.score == pytest.approx(1.0)


def test_concurrency_changes_and_run_end() -> None:
    clock = Clock()
    t = clock.now
    lm = LiveMetrics(["a"], ["c1"], 1, clock=clock)
    lm.on_event(ConcurrencyChanged(0, 8, None, "config", t, 0.0))
    lm.on_event(ConcurrencyChanged(8, 3, None, "user", t + 2.0, 0.0))
    lm.on_event(ConcurrencyChanged(0, 2, "a", "user", t + 3.0, 0.0))
    lm.on_event(RunFinished("cancelled", t + 4.0))
    clock.now = t + 100.0
    s = lm.snapshot()
    assert s.target == 3 and s.models[0].cap == 2
    assert [(round(x[0], 3), x[1], x[2], x[3]) for x in s.markers] == [(0.0, 0, 8, None), (2.0, 8, 3, None),
                                                                      (3.0, 0, 2, "a")]
    assert s.state == "cancelled"
    assert s.elapsed_s == pytest.approx(4.0)  # the clock stops at the end of the run


def test_preload_counts_stored_results_but_not_in_the_rate() -> None:
    clock = Clock()
    lm = LiveMetrics(["a"], ["c1", "c2", "c3", "c4"], 1, clock=clock)
    lm.preload([("a", "c1", 0, "passed", 1.0), ("a", "c2", 0, "errored", None)])
    clock.now += 10
    s = lm.snapshot()
    assert (s.done, s.passed, s.errored) == (2, 1, 1)
    assert s.calls_per_s == 0.0
    assert lm.cell(0, 0)[PASSED] == 1 and lm.cell(0, 1)[ERRORED] == 1 and lm.cell(0, 2)[QUEUED] == 1


def test_eta_is_decided_by_the_slowest_model() -> None:
    # Issue 12, item 17: after 5 s "a" (2 calls/s) has 10 left and "b" (capped, 1 call/s) has 15 left. The global
    # rate (3/s over 25 left) would say 8 s; the run ends when "b" does, in 15 s.
    clock = Clock()
    t0 = clock.now
    lm = LiveMetrics(["a", "b"], [f"c{i}" for i in range(20)], 1, clock=clock, window_s=10.0)
    done_a = 0
    for sec in range(5):
        for k in range(2):  # "a": 2 calls/s
            lm.on_event(CallStarted("a", f"c{done_a}", 0, 1, t0 + sec + k * 0.4))
            lm.on_event(CallFinished(result("a", f"c{done_a}"), t0 + sec + k * 0.4 + 0.1))
            done_a += 1
        lm.on_event(CallStarted("b", f"c{sec}", 0, 1, t0 + sec))  # "b": 1 call/s
        lm.on_event(CallFinished(result("b", f"c{sec}"), t0 + sec + 0.5))
    clock.now = t0 + 5.0
    s = lm.snapshot()
    assert (s.models[0].done, s.models[1].done) == (10, 5)
    assert s.eta_s == pytest.approx(15 / 1.0, rel=0.05)  # "b": 15 left at 1/s; "a" would need 5 s


def test_finished_run_shows_totals_not_a_decayed_window() -> None:
    clock = Clock()
    t0 = clock.now
    lm = LiveMetrics(["a"], [f"c{i}" for i in range(40)], 1, clock=clock, window_s=10.0)
    for i in range(40):  # 40 calls over 20 s, the first 10 each with one 429
        t = t0 + i * 0.5
        lm.on_event(CallStarted("a", f"c{i}", 0, 1, t))
        if i < 10:
            lm.on_event(CallRetrying("a", f"c{i}", 0, 1, "rate_limited", 0.01, "429", t))
            lm.on_event(CallStarted("a", f"c{i}", 0, 2, t))
        lm.on_event(CallFinished(result("a", f"c{i}", attempts=2 if i < 10 else 1), t + 0.01))
    clock.now = t0 + 20.0
    live_s = lm.snapshot()
    assert live_s.rates_window_s == 10.0
    assert live_s.models[0].rate_limited_rate == 0.0  # the last 10 s had no 429
    lm.on_event(RunFinished("finished", t0 + 20.0))
    clock.now = t0 + 200.0  # long after the end: nothing decays
    s = lm.snapshot()
    assert s.rates_window_s is None
    m = s.models[0]
    assert m.calls_per_s == pytest.approx(40 / 20.0)
    assert m.rate_limited_rate == pytest.approx(10 / 50) and m.retry_rate == pytest.approx(10 / 50)
    assert s.eta_s == 0.0


def test_cap_changes_from_and_to_no_cap_are_logged_in_words() -> None:
    clock = Clock()
    lm = LiveMetrics(["a"], ["c1"], 1, clock=clock)
    lm.on_event(ConcurrencyChanged(0, 3, "a", "user", clock.now, 0.0))
    lm.on_event(ConcurrencyChanged(3, 0, "a", "user", clock.now, 0.0))
    assert [e.text for e in lm.log] == ["a no cap → 3 (user)", "a cap 3 → no cap (user)"]


def test_preload_brings_back_spend_retries_latency_errors_and_elapsed() -> None:
    from arenatui.session.live import StoredResult, busy_seconds

    clock = Clock()
    lm = LiveMetrics(["a"], ["c1", "c2", "c3", "c4"], 1, clock=clock)
    lm.preload([
        StoredResult("a", "c1", 0, "passed", 1.0, None, 3, 200.0, 50.0, 0.01, 10, 5),
        StoredResult("a", "c2", 0, "errored", None, "timeout", 2, None, None, 0.02, 10, 0),
        StoredResult("a", "c3", 0, "errored", None, "cancelled", 1, None, None, 0.0, 0, 0),  # runs again
    ], elapsed_s=busy_seconds([(100.0, 130.0), (110.0, 140.0), (5000.0, 5002.0)]))
    s = lm.snapshot()
    m = s.models[0]
    assert (m.done, m.errored, m.retries, m.errors) == (2, 1, 3, {"timeout": 1})
    assert m.cost == pytest.approx(0.03) and s.cost == pytest.approx(0.03)
    assert m.p50_ms == pytest.approx(200.0) and m.ttft_p50_ms == pytest.approx(50.0)
    assert s.elapsed_s == pytest.approx(42.0)  # 40 s busy, then 2 s: the gap between sessions is not counted
    assert m.calls_per_s == 0.0 and lm.cell(0, 2)[QUEUED] == 1


def test_an_unreachable_call_leaves_the_queue_for_its_own_cell_state(live: tuple[LiveMetrics, Clock]) -> None:
    from arenatui.session.live import UNREACHABLE

    lm, clock = live
    lm.on_event(CallFinished(result("a", "c2", 1, status="unreachable", error_class="unreachable", attempts=0,
                                    latency_ms=None, cost=0.0, output=None, failure_mode="unreachable"), clock()))
    assert lm.cell(0, 1)[QUEUED] == 1 and lm.cell(0, 1)[UNREACHABLE] == 1  # never made: no attempt, no worker
    row = lm.snapshot().models[0]
    assert row.errors == {"unreachable": 1} and row.in_flight == 0


def test_answers_stopped_at_max_tokens_are_counted_per_model(live: tuple[LiveMetrics, Clock]) -> None:
    """Issue 27 item 3: the tuning pane's truncation warning reads this count (finish reasons in TRUNCATED_FINISH)."""
    lm, clock = live
    t = clock.now
    for case, trial, reason in (("c1", 0, "length"), ("c1", 1, "stop"), ("c2", 0, "max_tokens"), ("c2", 1, None)):
        lm.on_event(CallStarted("a", case, trial, 1, t))
        lm.on_event(CallFinished(result("a", case, trial, status="failed", finish_reason=reason), t + 0.1))
    lm.on_event(CallStarted("b", "c1", 0, 1, t))
    lm.on_event(CallFinished(result("b", "c1", 0, finish_reason="stop"), t + 0.1))
    snap = {m.key: m for m in lm.snapshot().models}
    assert snap["a"].truncated == 2 and snap["b"].truncated == 0


def test_answers_with_no_text_show_apart_from_wrong_answers(live: tuple[LiveMetrics, Clock]) -> None:
    """Issue 37 item 15b: a cell whose misses are mostly empty answers (a server that finished without saying
    anything) shows ∅, not the ✗ of a model that answered wrong; live, and from stored rows on resume."""
    from arenatui.session.live import NO_TEXT, StoredResult
    from arenatui.tui.widgets import NO_ANSWER, cell_state

    lm, clock = live
    t = clock.now
    for trial, mode in ((0, "empty"), (1, "cut_while_reasoning")):
        lm.on_event(CallStarted("a", "c1", trial, 1, t))
        lm.on_event(CallFinished(result("a", "c1", trial, status="failed", output="", failure_mode=mode), t + 0.1))
    for trial, mode in ((0, "wrong_answer"), (1, "empty")):
        lm.on_event(CallStarted("a", "c2", trial, 1, t))
        lm.on_event(CallFinished(result("a", "c2", trial, status="failed", failure_mode=mode), t + 0.1))
    assert lm.cell(0, 0)[NO_TEXT] == 2 and cell_state(lm.cell(0, 0)) == NO_ANSWER
    assert lm.cell(0, 1)[NO_TEXT] == 1 and cell_state(lm.cell(0, 1)) == FAILED  # half empty: a wrong answer's ✗
    resumed = LiveMetrics(["a"], ["c1"], 2, clock=clock)
    resumed.preload([StoredResult("a", "c1", trial, "failed", 0.0, failure_mode="empty") for trial in (0, 1)])
    assert cell_state(resumed.cell(0, 0)) == NO_ANSWER

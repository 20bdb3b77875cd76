"""Live metrics of a sweep with an llm_judge scorer: judge lanes as rows, unscored answers, verdicts, resume.

The plan comes from a real project file (config load + make_plan); the events are scripted on a fake clock
the way the engine emits them (engine/events.py: JudgeFinished).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_live_metrics import Clock, result

from arenatui.kernel.events import CallFinished, CallRetrying, CallStarted, JudgeFinished
from arenatui.plan import Plan, judge_trial, make_plan
from arenatui.project import load_project
from arenatui.session.live import (
    ERRORED,
    FAILED,
    IN_FLIGHT,
    PASSED,
    QUEUED,
    UNSCORED,
    LiveMetrics,
    StoredResult,
    judge_lanes,
    resumed_rows,
)

PROJECT = """
[project]
name = "judged"
[run]
trials = 2
seed = 1
[[models]]
key = "cand-a"
provider = "sim"
model = "a"
[[models]]
key = "cand-b"
provider = "sim"
model = "b"
[[models]]
key = "sim-judge"
provider = "sim"
model = "j"
[[scorers]]
name = "judge"
kind = "llm_judge"
judge = "sim-judge"
rubric = "Is {output} right for {input}? Say PASS or FAIL."
sample = 0.5
[[scorers]]
name = "exact"
kind = "exact"
[[cases]]
id = "q1"
input = "one"
expected = "1"
[[cases]]
id = "q2"
input = "two"
expected = "2"
[[cases]]
id = "q3"
input = "three"
expected = "3"
[[cases]]
id = "q4"
input = "four"
expected = "4"
[[cases]]
id = "x1"
input = "x"
expected = "x"
scorer = "exact"
"""
LANE = "judge:sim-judge"


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    path = tmp_path / "arena.toml"
    path.write_text(PROJECT, encoding="utf-8")
    return make_plan(load_project(path))


def metrics(plan: Plan) -> tuple[LiveMetrics, Clock]:
    clock = Clock()
    lm = LiveMetrics([m.key for m in plan.models], [c.id for c in plan.cases], plan.trials,
                     judges=judge_lanes(plan), clock=clock)
    return lm, clock


def judged_and_not(plan: Plan) -> tuple[list[str], list[str]]:
    judged = sorted(plan.judges[0].case_ids)
    other = [c.id for c in plan.cases if c.id not in judged and c.id != "x1"]
    return judged, other


def judge_result(plan: Plan, model: str, case: str, trial: int, *, status: str = "passed",
                 error_class: str | None = None, cost: float = 0.002, **kw: Any) -> JudgeFinished:
    mi = [m.key for m in plan.models].index(model)
    jt = judge_trial(mi, trial, plan.trials)
    r = result(LANE, case, jt, status=status, error_class=error_class, cost=cost, latency_ms=50.0,
               failure_mode=kw.pop("failure_mode", None if status == "passed" else "wrong_answer"),
               score_detail="judge PASS" if status == "passed" else "judge FAIL", **kw)
    return JudgeFinished(r, model, case, trial, 0.0)


def answer(lm: LiveMetrics, model: str, case: str, trial: int, t: float, *, mode: str = "awaiting_judge") -> None:
    lm.on_event(CallStarted(model, case, trial, 1, t))
    lm.on_event(CallFinished(result(model, case, trial, status="unscored", score=None, passed=False,
                                    failure_mode=mode, cost=0.001), t + 0.1))


def test_the_plan_has_one_judge_lane_judging_half_the_cases(plan: Plan) -> None:
    assert [j.key for j in plan.judges] == [LANE]
    assert len(plan.judges[0].case_ids) == 2 and plan.judges[0].total == 2 * 2 * 2


def test_judge_lane_is_a_row_planned_only_on_its_cases(plan: Plan) -> None:
    lm, _clock = metrics(plan)
    assert lm.row_keys == ("cand-a", "cand-b", LANE) and lm.model_keys == ("cand-a", "cand-b")
    assert [a.key for a in lm.models] == ["cand-a", "cand-b"]  # the tuner's and the caps' models: no judge
    assert lm.is_judge(2) and not lm.is_judge(1)
    judged, other = judged_and_not(plan)
    ci = {c: i for i, c in enumerate(lm.case_ids)}
    for c in judged:  # 2 models × 2 trials of judge calls per judged case
        assert lm.cell(2, ci[c])[QUEUED] == 4
    for c in [*other, "x1"]:  # nothing planned: never shown as queued
        assert sum(lm.cell(2, ci[c])) == 0
    s = lm.snapshot()
    lane = s.models[2]
    assert lane.judge and lane.key == LANE and lane.planned == plan.judges[0].total == 8
    assert s.planned == plan.total + 8 and s.judge_planned == 8
    assert [m.planned for m in s.models[:2]] == [len(plan.cases) * 2] * 2


def test_an_unscored_answer_is_done_but_in_no_score(plan: Plan) -> None:
    lm, clock = metrics(plan)
    judged, other = judged_and_not(plan)
    answer(lm, "cand-a", judged[0], 0, clock.now)
    answer(lm, "cand-a", other[0], 0, clock.now, mode="unjudged")
    lm.on_event(CallStarted("cand-a", "x1", 0, 1, clock.now))
    lm.on_event(CallFinished(result("cand-a", "x1", 0, status="passed"), clock.now + 0.2))
    ci = {c: i for i, c in enumerate(lm.case_ids)}
    assert lm.cell(0, ci[judged[0]])[UNSCORED] == 1 and lm.cell(0, ci[other[0]])[UNSCORED] == 1
    clock.now += 1.0
    s = lm.snapshot()
    a = s.models[0]
    assert (a.done, a.passed, a.failed, a.errored, a.unscored) == (3, 1, 0, 0, 2)
    assert a.score == 1.0  # over the one scored call, not 1/3
    assert a.failures == {} and a.errors == {}  # awaiting_judge and unjudged are not failures
    assert (s.done, s.passed, s.unscored) == (3, 1, 2)
    assert a.calls_per_s > 0  # answered calls count in throughput


def test_a_verdict_scores_the_candidate_and_judge_spend_is_in_the_total(plan: Plan) -> None:
    lm, clock = metrics(plan)
    judged, _other = judged_and_not(plan)
    ci = {c: i for i, c in enumerate(lm.case_ids)}
    t = clock.now
    answer(lm, "cand-b", judged[0], 1, t)
    jt = judge_trial(1, 1, plan.trials)
    lm.on_event(CallStarted(LANE, judged[0], jt, 1, t + 0.2))
    assert lm.cell(2, ci[judged[0]])[IN_FLIGHT] == 1
    lm.on_event(CallRetrying(LANE, judged[0], jt, 1, "rate_limited", 0.1, "429", t + 0.3))
    lm.on_event(CallStarted(LANE, judged[0], jt, 2, t + 0.4))
    lm.on_event(judge_result(plan, "cand-b", judged[0], 1, status="failed", attempts=2))
    assert lm.cell(1, ci[judged[0]])[FAILED] == 1 and lm.cell(1, ci[judged[0]])[UNSCORED] == 0
    assert lm.cell(2, ci[judged[0]])[FAILED] == 1 and lm.cell(2, ci[judged[0]])[QUEUED] == 3
    clock.now = t + 1.0
    s = lm.snapshot()
    b, lane = s.models[1], s.models[2]
    assert (b.done, b.failed, b.unscored, b.score) == (1, 1, 0, 0.0)
    assert b.failures == {"wrong_answer": 1}
    assert (lane.done, lane.failed, lane.retries, lane.rate_limited, lane.in_flight) == (1, 1, 1, 1, 0)
    assert lane.cost == pytest.approx(0.002) and lane.p50_ms == 50.0
    # spend: the candidate's 0.001 and the judge's 0.002; the verdict is counted once (on the candidate)
    assert s.cost == pytest.approx(0.003) and s.judge_cost == pytest.approx(0.002)
    assert (s.done, s.failed, s.judge_done) == (2, 1, 1)
    assert s.retries == 1 and s.rate_limited == 1


def test_a_judge_error_errs_the_candidate_and_is_logged(plan: Plan) -> None:
    lm, clock = metrics(plan)
    judged, _other = judged_and_not(plan)
    answer(lm, "cand-a", judged[1], 0, clock.now)
    lm.on_event(CallStarted(LANE, judged[1], 0, 1, clock.now))
    lm.on_event(judge_result(plan, "cand-a", judged[1], 0, status="errored", error_class="judge_error",
                             failure_mode="judge_error"))
    ci = {c: i for i, c in enumerate(lm.case_ids)}
    assert lm.cell(0, ci[judged[1]])[ERRORED] == 1 and lm.cell(2, ci[judged[1]])[ERRORED] == 1
    s = lm.snapshot()
    assert s.models[0].errors == {"judge_error": 1} and s.models[0].unscored == 0
    assert s.models[2].errors == {"judge_error": 1}
    assert s.errored == 1  # once: the lane's errored verdict is the candidate's
    # the log names the answer the judge call was judging, not only the lane's own trial number
    assert [e.text for e in lm.log if e.kind == "error"] == [
        f"{LANE} on cand-a {judged[1]}#0: judge_error after 1 attempt: boom"]


def test_a_cancelled_judge_call_leaves_the_candidate_unscored(plan: Plan) -> None:
    lm, clock = metrics(plan)
    judged, _other = judged_and_not(plan)
    ci = {c: i for i, c in enumerate(lm.case_ids)}
    answer(lm, "cand-a", judged[0], 0, clock.now)
    lm.on_event(CallStarted(LANE, judged[0], 0, 1, clock.now))
    lm.on_event(judge_result(plan, "cand-a", judged[0], 0, status="errored", error_class="cancelled",
                             failure_mode="awaiting_judge", cost=0.0005))
    assert lm.cell(0, ci[judged[0]])[UNSCORED] == 1
    assert lm.cell(2, ci[judged[0]])[QUEUED] == 4 and lm.cell(2, ci[judged[0]])[IN_FLIGHT] == 0
    s = lm.snapshot()
    assert (s.models[0].unscored, s.models[0].errored, s.models[0].done) == (1, 0, 1)
    lane = s.models[2]
    assert (lane.done, lane.errored, lane.in_flight) == (0, 0, 0) and lane.errors == {}
    assert lane.cost == pytest.approx(0.0005)  # what it spent before it was stopped is spent


def test_a_second_verdict_on_a_scored_call_counts_nothing_twice(plan: Plan) -> None:
    lm, clock = metrics(plan)
    judged, _other = judged_and_not(plan)
    answer(lm, "cand-a", judged[0], 0, clock.now)
    lm.on_event(judge_result(plan, "cand-a", judged[0], 0))
    lm.on_event(judge_result(plan, "cand-a", judged[0], 0))
    a = lm.snapshot().models[0]
    assert (a.done, a.passed, a.unscored) == (1, 1, 0)


def test_preload_brings_back_unscored_answers_and_the_judge_lane(plan: Plan) -> None:
    lm, _clock = metrics(plan)
    judged, other = judged_and_not(plan)
    ci = {c: i for i, c in enumerate(lm.case_ids)}
    stored = [
        StoredResult("cand-a", judged[0], 0, "passed", 1.0, cost=0.001),
        StoredResult("cand-a", judged[0], 1, "unscored", None, cost=0.001, failure_mode="awaiting_judge"),
        StoredResult("cand-a", other[0], 0, "unscored", None, cost=0.001, failure_mode="unjudged"),
        # the judge lane's stored call (store.queries.judged_rows keys it by the lane)
        StoredResult(LANE, judged[0], 0, "passed", 1.0, latency_ms=40.0, cost=0.002),
    ]
    lm.preload(stored)
    assert lm.cell(0, ci[judged[0]])[PASSED] == 1 and lm.cell(0, ci[judged[0]])[UNSCORED] == 1
    assert lm.cell(2, ci[judged[0]])[PASSED] == 1 and lm.cell(2, ci[judged[0]])[QUEUED] == 3
    s = lm.snapshot()
    assert (s.models[0].done, s.models[0].unscored, s.models[0].passed) == (3, 2, 1)
    assert (s.judge_done, s.judge_cost) == (1, pytest.approx(0.002))
    assert s.cost == pytest.approx(0.005) and s.done == 4
    # the resumed run's judge call then scores the answer left awaiting
    lm.on_event(judge_result(plan, "cand-a", judged[0], 1, status="failed"))
    assert lm.snapshot().models[0].unscored == 1 and lm.cell(0, ci[judged[0]])[FAILED] == 1


def test_resumed_rows_judge_a_judge_error_again_under_retry_errored() -> None:
    rows = [
        ("m", "c1", 0, "errored", None, "judge_error", 2, 10.0, None, 0.001, 5, 5, "judge_error", 1.0, 2.0),
        ("m", "c2", 0, "errored", None, "timeout", 3, None, None, 0.0, 0, 0, "timeout", 1.0, 2.0),
        ("m", "c3", 0, "errored", None, "cancelled", 1, None, None, 0.0, 0, 0, None, 1.0, 2.0),
        ("m", "c4", 0, "unscored", None, None, 1, 10.0, None, 0.001, 5, 5, "awaiting_judge", 1.0, 2.0),
    ]
    kept = resumed_rows(rows, retry_errored=False)
    assert [r[1] for r in kept] == ["c1", "c2", "c4"]
    again = resumed_rows(rows, retry_errored=True)
    assert [r[1] for r in again] == ["c1", "c4"]
    c1 = StoredResult(*again[0][:13])
    assert (c1.status, c1.error_class, c1.failure_mode, c1.cost, again[0][13:]) == (
        "unscored", None, "awaiting_judge", 0.001, (1.0, 2.0))


def test_judged_rows_read_the_judgments_table_for_preload(tmp_path: Path, plan: Plan) -> None:
    from arenatui.store import Store
    from arenatui.store.db import judgment_rows
    from arenatui.store.queries import judged_rows

    judged, _other = judged_and_not(plan)
    with Store(tmp_path / "j.db") as store:
        run_id = store.create_run("judged", "p", {}, {}, 10)
        for ev in (judge_result(plan, "cand-a", judged[0], 0), judge_result(plan, "cand-b", judged[0], 1,
                   status="errored", error_class="judge_error")):
            rows = judgment_rows(run_id, ev)
            assert rows is not None
            store.conn.execute(
                "INSERT INTO judgments VALUES (" + ", ".join("?" for _ in rows[0]) + ")", rows[0])
        got = judged_rows(store, run_id)
        assert sorted((r[0], r[1], r[3]) for r in got) == [(LANE, judged[0], "errored"), (LANE, judged[0], "passed")]
        assert [r[3] for r in judged_rows(store, run_id, retry_errored=True)] == ["passed"]
    lm, _clock = metrics(plan)
    lm.preload(r[:13] for r in got)
    lane = lm.snapshot().models[2]
    assert (lane.done, lane.passed, lane.errored, lane.errors) == (2, 1, 1, {"judge_error": 1})

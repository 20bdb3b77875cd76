"""The watcher's fold of rows rewritten in place, on database fixtures written through the writer's own statements:
a cancelled call resumed (its row replaced, the spends added) and judge verdicts landing on a candidate's row of
one trial while another trial of the same cell waits for its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arenatui.kernel.events import CallResult, JudgeFinished
from arenatui.plan import judge_lane
from arenatui.session.live import NO_TEXT
from arenatui.session.watch import WatchedRun
from arenatui.store import Store, watch_queries
from arenatui.store.db import JUDGED, UPSERT_JUDGMENT, judgment_rows

CONFIG: dict[str, Any] = {
    "project": {"name": "fold"}, "run": {"trials": 2},
    "models": [{"key": "alpha", "provider": "sim", "model": "a"}, {"key": "grader", "provider": "sim", "model": "g"}],
    "scorers": [{"name": "quality", "kind": "llm_judge", "judge": "grader", "rubric": "Rate this: {output}",
                 "scale": "1-5"}],
    "cases": [{"id": "j1", "input": "write", "expected": "good", "scorer": "quality"},
              {"id": "j2", "input": "write more", "expected": "good", "scorer": "quality"}],
}


def _result(case: str, trial: int, **kw: Any) -> CallResult:
    f: dict[str, Any] = dict(model_key="alpha", case_id=case, trial=trial, status="unscored", output="an answer",
                             score=None, passed=False, error_class=None, error_message=None, attempts=1,
                             latency_ms=100.0, total_ms=100.0, ttft_ms=30.0, input_tokens=10, output_tokens=5,
                             cost=0.01, finish_reason="stop", tokens_estimated=False, started_at=1.0,
                             finished_at=2.0, failure_mode="awaiting_judge")
    f.update(kw)
    return CallResult(**f)


def _judge(s: Store, run: str, case: str, trial: int, passed: bool) -> None:
    status, score, mode = ("passed", 1.0, "none") if passed else ("failed", 0.0, "wrong_answer")
    r = CallResult(judge_lane("grader"), case, trial, status, "score", score, passed, None, None, 1, 250.0, 300.0,
                   None, 40, 7, 0.002, "stop", False, 3.0, 4.0, failure_mode=mode, score_detail="judged")
    pair = judgment_rows(run, JudgeFinished(r, "alpha", case, trial, 4.0))
    assert pair is not None
    s.conn.execute("BEGIN")
    s.conn.execute(UPSERT_JUDGMENT, pair[0])
    s.conn.execute(JUDGED, pair[1])
    s.conn.execute("COMMIT")


def _stored(db: Path) -> tuple[Any, ...]:
    with Store(db, read_only=True) as s:
        row = s.conn.execute("SELECT SUM(status = 'passed'), SUM(status = 'failed'), SUM(status = 'unscored'), "
                             "ROUND(SUM(cost), 6), SUM(input_tokens), SUM(output_tokens) FROM results").fetchone()
    return tuple(row)


def _watched(run: WatchedRun) -> tuple[Any, ...]:
    alpha = run.live.rows[0]
    return (alpha.passed, alpha.failed, alpha.unscored, round(alpha.cost, 6), alpha.input_tokens,
            alpha.output_tokens)


@pytest.fixture(params=["replayed", "aggregated"])
def opening(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: the rows stored before the watcher opens folded one by one (fewer than TAIL), and read as
    SQL aggregates (TAIL 0)."""
    if request.param == "aggregated":
        monkeypatch.setattr(watch_queries, "TAIL", 0)
    return str(request.param)


def _everything(run: WatchedRun) -> tuple[Any, ...]:
    """Every figure the fold and the aggregates both give: per lane, and every cell of the matrix."""
    live = run.live
    lanes = tuple((a.key, a.done, a.passed, a.failed, a.errored, a.unscored, a.retries, a.rate_limited,
                   round(a.cost, 9), a.input_tokens, a.output_tokens, a.estimated, a.truncated, round(a.score_sum, 9),
                   sorted(a.errors.items()), sorted(a.failures.items()), sorted(a.error_messages.items()))
                  for a in live.rows)
    cells = tuple(live.cell(m, c) for m in range(len(live.row_keys)) for c in range(len(live.case_ids)))
    return lanes, cells, sum(live._done_sec), sum(live._retry_sec)


def test_aggregates_give_the_figures_the_fold_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A judged run (judged_run: verdicts, a judge_error, unjudged answers, a two-attempt judge call) and a retried,
    errored and cancelled call: the watcher opened with every row aggregated shows what it shows replaying them."""
    from judged_run import build

    db = tmp_path / "j.db"
    run_id, _judged = build(db)
    with Store(db) as s:
        s.conn.execute("UPDATE results SET status = 'errored', error_class = 'timeout', error_message = 'slow', "
                       "score = NULL, passed = 0, attempts = 3, failure_mode = NULL, finish_reason = 'length', "
                       "tokens_estimated = 1 WHERE model_key = 'alpha' AND case_id = 'e2'")
        s.conn.execute("INSERT INTO failed_attempts (run_id, model_key, case_id, trial, attempt, error_class, at, "
                       "delay_s, variant) VALUES (?, 'alpha', 'e1', 0, 1, 'rate_limited', 1.5, 0.2, '')", (run_id,))
        # an answer with no text (the matrix's ∅): counted apart in the cell, aggregated as folded
        s.conn.execute("UPDATE results SET status = 'failed', output = '', score = 0, passed = 0, "
                       "failure_mode = 'empty' WHERE model_key = 'alpha' AND case_id = 'e1'")
    replayed = WatchedRun([db], run_id)
    monkeypatch.setattr(watch_queries, "TAIL", 0)
    aggregated = WatchedRun([db], run_id)
    try:
        assert _everything(aggregated) == _everything(replayed)
        assert aggregated.live.rows[0].retries == 1 and aggregated.live.rows[0].estimated == 1
        live = aggregated.live
        assert live.cell(live.row_keys.index("alpha"), live.case_ids.index("e1"))[NO_TEXT] == 1
    finally:
        replayed.close()
        aggregated.close()


def test_a_cancelled_call_resumed_counts_its_spend_once(tmp_path: Path, opening: str) -> None:
    """The resumed row holds both sessions' spend (UPSERT_RESULT adds them): the cancelled attempt's, folded when
    the watcher read the cancelled row, must not be counted again."""
    db = tmp_path / "r.db"
    with Store(db) as s:
        run = s.create_run("fold", "fold.toml", CONFIG, {}, 4)
        s.write_results(run, [_result("j1", 0, status="errored", error_class="cancelled", failure_mode=None,
                                      cost=0.03, input_tokens=11, output_tokens=2)])
        watched = WatchedRun([db], run)
        try:
            assert _watched(watched) == (0, 0, 0, 0.03, 11, 2)
            s.write_results(run, [_result("j1", 0, status="passed", score=1.0, passed=True, failure_mode="none")])
            watched.poll()
            assert _stored(db) == (1, 0, 0, 0.04, 21, 7)
            assert _watched(watched) == _stored(db)
        finally:
            watched.close()


def test_verdicts_on_several_trials_move_each_its_own_call(tmp_path: Path, opening: str) -> None:
    """Trial 1's answer is folded unscored; trial 0's row is read already judged (failed) together with its
    verdict: that verdict must not score trial 1, which waits for its own (passed)."""
    db = tmp_path / "r.db"
    with Store(db) as s:
        run = s.create_run("fold", "fold.toml", CONFIG, {}, 4)
        s.write_results(run, [_result("j1", 1)])
        watched = WatchedRun([db], run)
        try:
            assert _watched(watched)[:3] == (0, 0, 1)
            s.write_results(run, [_result("j1", 0)])
            _judge(s, run, "j1", 0, passed=False)
            watched.poll()
            assert _stored(db)[:3] == (0, 1, 1)
            assert _watched(watched) == _stored(db)
            _judge(s, run, "j1", 1, passed=True)
            watched.poll()
            assert _stored(db)[:3] == (1, 1, 0)
            assert _watched(watched) == _stored(db)
            judge = watched.live.rows[1]
            assert (judge.key, judge.done, round(judge.cost, 6)) == ("judge:grader", 2, 0.004)
        finally:
            watched.close()

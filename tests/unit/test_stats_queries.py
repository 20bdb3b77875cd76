"""The read-side queries: a run's results as arrays (cancelled calls left out), runs, per-call rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arenatui.kernel.errors import PlanError
from arenatui.kernel.events import CallResult
from arenatui.results.runs import read_results
from arenatui.store import Store
from arenatui.store.queries import call_details, call_rows, list_runs, resolve_run, run_plan

CONFIG: dict[str, Any] = {
    "project": {"name": "q"}, "run": {"trials": 2},
    "models": [{"key": "a", "provider": "sim", "model": "a"}, {"key": "b", "provider": "sim", "model": "b"}],
    "cases": [{"id": "c1", "input": "one", "expected": "1", "stratum": "easy", "tags": ["x"]},
              {"id": "c2", "input": "two", "expected": "2", "tags": ["x", "y"]},
              {"id": "s1", "input": "secret question", "expected": "secret answer", "sealed": True}],
}


def res(model: str, case: str, trial: int = 0, **kw: Any) -> CallResult:
    f: dict[str, Any] = dict(model_key=model, case_id=case, trial=trial, status="passed", output="ok", score=1.0,
                             passed=True, error_class=None, error_message=None, attempts=1, latency_ms=100.0,
                             total_ms=100.0, ttft_ms=40.0, input_tokens=3, output_tokens=2, cost=0.5,
                             finish_reason="stop", tokens_estimated=False, started_at=1.0, finished_at=2.0)
    f.update(kw)
    return CallResult(**f)


def err(model: str, case: str, trial: int, cls: str, **kw: Any) -> CallResult:
    return res(model, case, trial, status="errored", output=None, score=None, passed=False, error_class=cls,
               error_message=f"{cls} happened", latency_ms=None, ttft_ms=None, **kw)


@pytest.fixture
def store(db_path: Path) -> Any:
    with Store(db_path) as s:
        run = s.create_run("q", None, CONFIG, {}, 12)
        s.write_results(run, [
            res("a", "c1", 0), res("a", "c1", 1, status="failed", score=0.0, passed=False, output="nope",
                                   latency_ms=300.0, ttft_ms=None),
            res("a", "c2", 0, attempts=3, cost=1.5), err("a", "c2", 1, "rate_limited", attempts=5, cost=0.25),
            res("a", "s1", 0), res("a", "s1", 1),
            res("b", "c1", 0), err("b", "c1", 1, "cancelled"), err("b", "c2", 0, "timeout"),
        ])
        yield s, run


def test_results_as_model_by_case_arrays(store: Any) -> None:
    s, run = store
    r = read_results(s, run)
    assert r.models == ("a", "b") and r.cases == ("c1", "c2", "s1") and r.trials == 2
    assert r.strata == ("easy", None, None) and r.tags == (("x",), ("x", "y"), ())
    assert r.sealed.tolist() == [False, False, True]
    assert r.calls.tolist() == [[2, 2, 2], [1, 1, 0]]  # the cancelled call is not final: not counted
    assert r.answered.tolist() == [[2, 1, 2], [1, 0, 0]]
    assert r.passed.tolist() == [[1, 1, 2], [1, 0, 0]]
    np.testing.assert_allclose(r.case_scores("a"), [0.5, 1.0, 1.0])
    assert np.isnan(r.case_scores("b")[1:]).all()
    assert r.attempts[0].tolist() == [2, 8, 2] and r.cost[0].tolist() == pytest.approx([1.0, 1.75, 1.0])
    assert r.errors == {"a": {"rate_limited": 1}, "b": {"timeout": 1}}
    assert sorted(r.latency["a"].latency_ms.tolist()) == [100.0, 100.0, 100.0, 100.0, 300.0]
    assert r.latency["a"].ttft_ms.size == 4  # the NULL TTFT is left out, not read as zero
    assert r.latency["b"].latency_ms.tolist() == [100.0]


def test_run_plan_hides_sealed_text(store: Any) -> None:
    s, run = store
    plan = run_plan(resolve_run(s, run))
    sealed = next(c for c in plan.cases if c.id == "s1")
    assert sealed.input == "" and sealed.expected is None
    assert next(c for c in plan.cases if c.id == "c1").expected == "1"


def test_runs_listing_and_last(store: Any) -> None:
    s, run = store
    (listing,) = list_runs(s)
    assert listing.run_id == run and listing.models == ("a", "b") and listing.calls == 8 and listing.planned == 12
    assert resolve_run(s, "last").run_id == run
    with pytest.raises(PlanError, match="no run 'zzz'"):
        resolve_run(s, "zzz")


def test_call_rows_filters(store: Any) -> None:
    s, run = store
    assert len(call_rows(s, run)) == 8
    assert [(c.model_key, c.case_id, c.trial) for c in call_rows(s, run, outcome="errored")] == [
        ("a", "c2", 1), ("b", "c2", 0)]
    assert [c.output for c in call_rows(s, run, search="NOP")] == ["nope"]
    assert [c.error_class for c in call_rows(s, run, search="timeout")] == ["timeout"]
    assert {c.model_key for c in call_rows(s, run, models=("b",))} == {"b"}
    assert [c.trial for c in call_rows(s, run, limit=2, offset=1)] == [1, 0]
    assert {(c.model_key, c.trial) for c in call_details(s, run, "c1", preview=10)} == {("a", 0), ("a", 1), ("b", 0)}
    with pytest.raises(ValueError):
        call_rows(s, run, outcome="cancelled")

"""Reading a run with an llm_judge scorer: unscored calls are answered (coverage) and never zeros nor errors;
judge spend apart and in the total; which cases were judged; one call's judgment. Figures by hand."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from judged_run import CANDIDATE_COST, JUDGE_ANSWER, JUDGE_COST, build
from stats_support import make_results

from arenatui.cli import main
from arenatui.commands.evaluate import error_failure, spend_line
from arenatui.commands.export import write_export
from arenatui.commands.report import LISTED_CASES, build_report, judged_list, render
from arenatui.results.runs import read_results
from arenatui.stats import all_pairs, compare_models, leaderboard
from arenatui.store import Store
from arenatui.store.queries import (
    JudgedScorer,
    RunPlan,
    call_details,
    call_rows,
    list_runs,
    resolve_run,
    run_plan,
    run_spend,
    unscored_modes,
)


@pytest.fixture
def judged(db_path: Path) -> tuple[Path, str, list[str]]:
    run, ids = build(db_path)
    return db_path, run, ids


# ---- stats: an unscored call is neither a zero nor an error ------------------------------------------------


def test_unscored_calls_are_not_zeros_in_quality_or_the_bootstrap() -> None:
    # A scores 1 on every case it was scored on; its other cases are unscored. Counted as zeros, its quality
    # would be 0.5; counted as errors, its coverage would be 0.5.
    r = make_results({"A": [[1.0], [1.0], ["unscored"], ["unscored"]], "B": [[0.0], [0.0], [0.0], [0.0]]})
    rows = {row.model: row for row in leaderboard(r)}
    a = rows["A"]
    assert a.quality.estimate == 1.0 and a.quality.n == 2
    assert a.answered == 4 and a.unscored == 2 and a.errored == 0 and a.coverage == 1.0
    assert a.error_rate == 0.0 and a.errors == {}
    assert a.pass_at[1] == 1.0  # pass@k over scored trials only
    c = compare_models(r, "A", "B")
    assert c.n == 2 and c.diff.estimate == 1.0  # paired over the cases both were scored on
    assert np.all(np.asarray(c.differences) == 1.0)  # no resample ever draws an unscored case as a zero
    (d,) = all_pairs(r, ["A", "B"])
    assert d.comparison.n == 2


def test_an_unscored_call_costs_nothing_per_correct_answer() -> None:
    # 2 scored calls at $1 (1 passed), 2 unscored at $5: $/correct = $2 over the calls whose outcome is known;
    # $/answered = all $12 over the 4 answered calls
    r = make_results({"A": [[1.0], [0.0], ["unscored"], ["unscored"]]}, cost_per_call={"A": 1.0}, unscored_cost=5.0)
    (a,) = leaderboard(r)
    assert a.spend == pytest.approx(12.0)
    assert a.cost_per_correct == pytest.approx(2.0)
    assert a.cost_per_answered == pytest.approx(3.0)
    assert a.tokens_per_correct == pytest.approx(200.0)


def test_a_model_with_only_unscored_calls_did_not_fail_the_run() -> None:
    r = make_results({"A": [["unscored"], ["unscored"]], "B": [[1.0], [None]]})
    assert error_failure(r, None) is None  # every call of A answered: not "every call errored"
    assert error_failure(r, 0.2) is not None  # B's one error in 4 calls is above 20%


# ---- a stored run -------------------------------------------------------------------------------------------


def test_stored_run_quality_coverage_and_errors_by_hand(judged: tuple[Path, str, list[str]]) -> None:
    db, run, _ids = judged
    with Store(db) as s:
        r = read_results(s, run)
    assert r.models == ("alpha", "beta")  # the judge-only model is no candidate
    rows = {row.model: row for row in leaderboard(r)}
    alpha, beta = rows["alpha"], rows["beta"]
    # alpha: e1, e2 pass; judged: three pass, one fails -> 5 of 6 scored working cases
    assert alpha.quality.n == 6 and alpha.quality.estimate == pytest.approx(5 / 6)
    # beta: e1 passes, e2 fails; judged: judge_error on the first, three pass -> 4 of 5
    assert beta.quality.n == 5 and beta.quality.estimate == pytest.approx(4 / 5)
    # 11 planned calls each; the 5 unjudged ones (j odd... and s1) are answered, not errors
    assert (alpha.answered, alpha.unscored, alpha.errored, alpha.coverage) == (11, 5, 0, 1.0)
    assert (beta.answered, beta.unscored, beta.errored) == (10, 5, 1)
    assert beta.errors == {"judge_error": 1}
    # $/correct: the candidates' own spend over scored and errored calls: 6 × $0.01 / 5 and 6 × $0.01 / 4
    assert alpha.cost_per_correct == pytest.approx(6 * CANDIDATE_COST / 5)
    assert beta.cost_per_correct == pytest.approx(6 * CANDIDATE_COST / 4)
    assert alpha.spend == pytest.approx(11 * CANDIDATE_COST)  # never a judge's spend


def test_judge_spend_apart_and_in_the_total(judged: tuple[Path, str, list[str]]) -> None:
    db, run, _ = judged
    with Store(db) as s:
        spend = run_spend(s, run)
    (g,) = spend.judges
    # 8 judgments (4 judged cases × 2 models), 9 attempts (one verdict took 2), 1 judge_error, 47 tokens each
    assert (g.judge, g.calls, g.passed, g.failed, g.errors, g.attempts, g.retries) == ("grader", 8, 6, 1, 1, 9, 1)
    assert g.tokens == 8 * 47
    assert spend.candidates == pytest.approx(22 * CANDIDATE_COST)
    assert g.cost == pytest.approx(9 * JUDGE_COST)
    assert spend.total == pytest.approx(22 * CANDIDATE_COST + 9 * JUDGE_COST)
    line = spend_line(spend)
    assert line == "Spend: $0.238 (models $0.220; judges $0.0180: grader $0.0180 over 8 judge calls (1 judge error))"


def test_report_json_says_judge_spend_judged_cases_and_unscored_modes(judged: tuple[Path, str, list[str]]) -> None:
    db, run, ids = judged
    with Store(db) as s:
        rep = json.loads(render(build_report(s, run), "json"))
    sp = rep["spend"]
    assert sp["candidates"] == pytest.approx(0.22) and sp["judges_total"] == pytest.approx(0.018)
    assert sp["total"] == pytest.approx(0.238)
    (g,) = sp["judges"]
    assert (g["judge"], g["calls"], g["judge_errors"], g["attempts"], g["retries"]) == ("grader", 8, 1, 9, 1)
    assert (g["input_tokens"], g["output_tokens"], g["cost"]) == (8 * 40, 8 * 7, pytest.approx(0.018))
    (j,) = rep["judged"]
    assert (j["scorer"], j["judge"], j["sample"], j["cases"], j["judged"]) == ("quality", "grader", 4, 9, 4)
    assert j["judged_case_ids"] == ids and j["more"] == 0
    assert (j["judgments"], j["planned_judgments"]) == (8, 8)
    assert rep["unscored"] == {"alpha": {"judge_error": 0, "unjudged": 5},
                               "beta": {"judge_error": 1, "unjudged": 5}}
    board = {m["model"]: m for m in rep["leaderboard"]}
    assert board["alpha"]["unscored"] == 5 and board["beta"]["errors"] == {"judge_error": 1}
    # failed answers by mode: the judge's "fail" is a wrong answer; unjudged calls are not failures
    assert rep["failure_modes"] == {"alpha": {"wrong_answer": 1}, "beta": {"wrong_answer": 1}}
    judges = [m for m in rep["settings"]["models"] if m.get("judge")]
    assert judges == [{"key": "grader", "provider": "sim", "model": "g", "judge": True, "candidate": False}]


def test_report_markdown_and_html_show_judges_and_judged_cases(judged: tuple[Path, str, list[str]]) -> None:
    db, run, ids = judged
    with Store(db) as s:
        rep = build_report(s, run)
    md = render(rep, "md")
    assert "Total spend $0.238: models $0.220, judges $0.0180." in md
    assert "| grader | 8 | 1 | 1 | 376 | $0.0180 |" in md
    assert (f"- **quality** (judge grader: judged 4 of 9 cases (sample 4 cases); 8 of 8 judge calls stored). "
            f"Judged: {', '.join(ids)}") in md
    assert "| beta | 5 | 0 | 1 |" in md  # unjudged, awaiting judge, judge_error: apart from the failures
    assert "SEALED judged question" not in md and JUDGE_ANSWER not in md
    page = render(rep, "html")
    assert "<h3>Judges</h3>" in page and "judged 4 of 9 cases" in page


def test_a_long_judged_list_is_bounded() -> None:
    ids = tuple(f"c{i:03d}" for i in range(LISTED_CASES + 7))
    plan = RunPlan(record=None, models=("a", "b"), cases=(), trials=3,  # type: ignore[arg-type]
                   judged=(JudgedScorer("q", "g", 0.5, (*ids, "x1", "x2"), ids),))
    (j,) = judged_list(plan, {"c000": 6})
    assert j["judged_case_ids"] == list(ids[:LISTED_CASES]) and j["more"] == 7
    assert (j["judged"], j["cases"], j["judgments"], j["planned_judgments"]) == (57, 59, 6, 57 * 6)
    from arenatui.commands.report_doc import _judged_ids

    assert _judged_ids(j).endswith(f"c{LISTED_CASES - 1:03d}, … and 7 more")


def test_one_calls_judgment_and_the_cases_filter(judged: tuple[Path, str, list[str]]) -> None:
    db, run, ids = judged
    with Store(db) as s:
        by = {(r.model_key, r.trial): r.judgment for r in call_details(s, run, ids[0], preview=100)}
        j = by[("alpha", 0)]
        assert j is not None
        assert (j.judge, j.status, j.score_detail, j.answer, j.attempts, j.cost) == (
            "grader", "passed", "judge 4 on 1-5", JUDGE_ANSWER, 1, pytest.approx(JUDGE_COST))
        unjudged = call_details(s, run, "j1" if "j1" not in ids else "e1", lane="alpha", preview=100)
        assert [r.judgment for r in unjudged] == [None]
        beta = by[("beta", 0)]
        assert set(by) == {("alpha", 0), ("beta", 0)} and beta is not None and beta.error_class == "judge_error"
        unscored = call_rows(s, run, outcome="unscored")
        assert len(unscored) == 10 and {r.failure_mode for r in unscored} == {"unjudged"}
        assert {r.case_id for r in unscored} & set(ids) == set()
        (err,) = call_rows(s, run, outcome="errored")
        assert (err.model_key, err.case_id, err.error_class, err.output) == ("beta", ids[0], "judge_error",
                                                                              f"beta on {ids[0]}")
        assert unscored_modes(s, run) == {"alpha": {"unjudged": 5}, "beta": {"unjudged": 5}}
        assert list_runs(s)[0].models == ("alpha", "beta")  # the judge-only model is not listed as evaluated
        plan = run_plan(resolve_run(s, run))
    assert plan.judges == ("grader",) and plan.judged_case_ids() == frozenset(ids)
    js = plan.judge_scorer(ids[0])
    assert js is not None and js.sample_text == "sample 4 cases" and plan.judge_scorer("e1") is None


def test_export_has_judge_and_total_rows(judged: tuple[Path, str, list[str]]) -> None:
    db, run, ids = judged
    out = io.StringIO()
    with Store(db) as s:
        n = write_export(s, run, "jsonl", out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert n == len(rows)
    (g,) = [r for r in rows if r["row"] == "judge_aggregate"]
    assert (g["judge_key"], g["calls"], g["judge_errors"], g["attempts"]) == ("grader", 8, 1, 9)
    assert g["cost"] == pytest.approx(9 * JUDGE_COST) and (g["input_tokens"], g["output_tokens"]) == (320, 56)
    (t,) = [r for r in rows if r["row"] == "spend_total"]
    assert t["candidate_cost"] == pytest.approx(22 * CANDIDATE_COST) and t["judge_cost"] == pytest.approx(0.018)
    assert t["cost"] == pytest.approx(t["candidate_cost"] + t["judge_cost"])
    calls = {(r["model_key"], r["case_id"]): r for r in rows if r["row"] == "call"}
    assert calls[("alpha", ids[0])]["score_detail"] == "judge 4 on 1-5"
    assert calls[("alpha", "j1" if "j1" not in ids else "j3")]["failure_mode"] == "unjudged"
    buf = io.StringIO()
    with Store(db) as s:
        write_export(s, run, "csv", buf)
    table = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert {r["row"] for r in table} == {"call", "sealed_aggregate", "judge_aggregate", "spend_total",
                                         "leaderboard"}


def test_the_public_diagnosis_query_still_works(judged: tuple[Path, str, list[str]]) -> None:
    db, run, _ = judged
    with sqlite3.connect(db) as c:
        got = c.execute(
            "SELECT model_key, COUNT(*) AS calls, ROUND(AVG(latency_ms)) AS mean_ms, ROUND(MAX(latency_ms)) AS max_ms, "
            f"SUM(attempts) - COUNT(*) AS retries FROM results WHERE run_id = '{run}' GROUP BY model_key").fetchall()
    assert got == [("alpha", 11, 100.0, 100.0, 0), ("beta", 11, 100.0, 100.0, 0)]  # judge calls are not results


def test_evaluate_style_cli_report_and_export(judged: tuple[Path, str, list[str]],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    db, run, _ = judged
    assert main(["report", run, "-f", "json", "--db", str(db)]) == 0
    rep: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert rep["spend"]["total"] == pytest.approx(0.238)
    assert main(["export", run, "--db", str(db)]) == 0
    assert '"row": "spend_total"' in capsys.readouterr().out


def test_a_run_stopped_before_its_judge_says_what_awaits(judged: tuple[Path, str, list[str]]) -> None:
    """An interrupted run leaves an answer awaiting its judge: answered (coverage), not a failure, listed apart."""
    db, run, ids = judged
    with Store(db) as s:
        s.conn.execute("DELETE FROM judgments WHERE run_id = ? AND model_key = 'alpha' AND case_id = ?", (run, ids[3]))
        s.conn.execute("UPDATE results SET status = 'unscored', score = NULL, passed = 0, failure_mode = "
                       "'awaiting_judge', score_detail = NULL WHERE run_id = ? AND model_key = 'alpha' AND "
                       "case_id = ?", (run, ids[3]))
        rep = build_report(s, run)
        assert [a.case_id for a in s.awaiting_judge(run)] == [ids[3]]
    alpha = next(m for m in rep["leaderboard"] if m["model"] == "alpha")
    assert alpha["quality"]["estimate"] == pytest.approx(1.0) and alpha["quality"]["n"] == 5  # not 5 of 6
    assert alpha["coverage"] == pytest.approx(1.0) and alpha["unscored"] == 6
    assert rep["unscored"]["alpha"] == {"judge_error": 0, "unjudged": 5, "awaiting_judge": 1}
    (j,) = rep["judged"]
    assert (j["judgments"], j["planned_judgments"]) == (7, 8)
    assert "| alpha | 5 | 1 | 0 |" in render(rep, "md")
    assert rep["spend"]["judges"][0]["calls"] == 7

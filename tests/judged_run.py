"""A stored run with an llm_judge scorer, written straight into the store (no engine): candidates' rows as the
engine stores them (unscored), then the judges' verdicts through the writer's own statements (judgment_rows,
UPSERT_JUDGMENT, JUDGED), so the read side is tested on exactly what the writer commits.

Two candidates, alpha and beta, one judge-only model, grader. Two exact cases (e1, e2) and eight cases under the
llm_judge scorer `quality` with sample = 4 (plus one sealed case under it, s1). Every figure below is by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arenatui.kernel.events import CallResult, JudgeFinished
from arenatui.plan import judge_lane, judged_case_ids
from arenatui.project import project_from_dict
from arenatui.store import Store
from arenatui.store.db import JUDGED, UPSERT_JUDGMENT, judgment_rows

JUDGE_ANSWER = "[bold]Verdict[/bold] [link=http://x]4[/link]\x1b[31m score: 4"
"""What the judge says of alpha's first judged case: markup and an escape that must reach the screen as text."""
CANDIDATE_COST = 0.01
"""Every candidate call's spend."""
JUDGE_COST = 0.002
"""Every judge attempt's spend."""

CONFIG: dict[str, Any] = {
    "project": {"name": "judged"}, "run": {"trials": 1},
    "models": [{"key": "alpha", "provider": "sim", "model": "a"}, {"key": "beta", "provider": "sim", "model": "b"},
               {"key": "grader", "provider": "sim", "model": "g"}],
    "scorers": [{"name": "exact", "kind": "exact"},
                {"name": "quality", "kind": "llm_judge", "judge": "grader", "rubric": "Rate this: {output}",
                 "scale": "1-5", "sample": 4}],
    "cases": ([{"id": f"e{i}", "input": f"say {i}", "expected": str(i)} for i in (1, 2)]
              + [{"id": f"j{i}", "input": f"write about {i}", "expected": "good", "scorer": "quality"}
                 for i in range(1, 9)]
              + [{"id": "s1", "input": "SEALED judged question", "expected": "good", "scorer": "quality",
                  "sealed": True}]),
}


def judged_ids() -> list[str]:
    """The cases the judge judges (the plan's deterministic sample of 4 of j1..j8, s1), in case order."""
    project = project_from_dict(CONFIG, Path("judged.toml"))
    chosen = judged_case_ids(project, project.scorers[1])
    return [c.id for c in project.cases if c.id in chosen]


def result(model: str, case: str, **kw: Any) -> CallResult:
    f: dict[str, Any] = dict(model_key=model, case_id=case, trial=0, status="passed", output=f"{model} on {case}",
                             score=1.0, passed=True, error_class=None, error_message=None, attempts=1,
                             latency_ms=100.0, total_ms=100.0, ttft_ms=30.0, input_tokens=10, output_tokens=5,
                             cost=CANDIDATE_COST, finish_reason="stop", tokens_estimated=False, started_at=1.0,
                             finished_at=2.0, failure_mode="none")
    f.update(kw)
    return CallResult(**f)


def verdict(model: str, case: str, passed: bool | None, answer: str, attempts: int = 1) -> JudgeFinished:
    """The judge's call on (model, case): passed/failed, or None for a judge_error."""
    if passed is None:
        status, score, ec, msg, mode, detail = ("errored", None, "judge_error", "no verdict in the judge's answer",
                                                "judge_error", None)
    else:
        status, score, ec, msg = ("passed" if passed else "failed"), (1.0 if passed else 0.0), None, None
        mode, detail = ("none" if passed else "wrong_answer"), f"judge {4 if passed else 2} on 1-5"
    r = CallResult(judge_lane("grader"), case, 0, status, answer, score, bool(passed), ec, msg,  # type: ignore[arg-type]
                   attempts, 250.0, 300.0, None, 40, 7, JUDGE_COST * attempts, "stop", False, 3.0, 4.0,
                   failure_mode=mode, score_detail=detail)
    return JudgeFinished(r, model, case, 0, 4.0)


def build(db: Path, run_id: str | None = None, started: float = 1767268800.0) -> tuple[str, list[str]]:
    """Store the run; returns its id and the judged case ids.

    alpha: e1, e2 pass; judged cases: the judge passes the first three, fails the fourth (2 judge attempts).
    beta: e1 passes, e2 fails; judged cases: a judge_error on the first, passes on the rest.
    The unjudged cases are unscored ('unjudged') for both; the sealed s1, when not judged, too.
    With run_id, the run is renamed to it and its times fixed (snapshots must not depend on the clock).
    """
    judged = judged_ids()
    with Store(db) as s:
        run = s.create_run("judged", "judged.toml", CONFIG, {}, 2 * 11)
        rows = [result("alpha", "e1"), result("alpha", "e2"), result("beta", "e1"),
                result("beta", "e2", status="failed", score=0.0, passed=False, failure_mode="wrong_answer")]
        for m in ("alpha", "beta"):
            for c in [f"j{i}" for i in range(1, 9)] + ["s1"]:
                rows.append(result(m, c, status="unscored", score=None, passed=False,
                                   failure_mode="awaiting_judge" if c in judged else "unjudged"))
        s.write_results(run, rows)
        events = [verdict("alpha", judged[0], True, JUDGE_ANSWER), verdict("alpha", judged[1], True, "score: 5"),
                  verdict("alpha", judged[2], True, "score: 4"), verdict("alpha", judged[3], False, "score: 2", 2),
                  verdict("beta", judged[0], None, "I cannot tell")]
        events += [verdict("beta", c, True, "score: 4") for c in judged[1:]]
        pairs = [p for p in (judgment_rows(run, ev) for ev in events) if p is not None]
        s.conn.execute("BEGIN")
        s.conn.executemany(UPSERT_JUDGMENT, [j for j, _ in pairs])
        s.conn.executemany(JUDGED, [u for _, u in pairs])
        s.conn.execute("COMMIT")
        s.mark_run(run, "finished")
        if run_id is not None:
            for table in ("results", "judgments"):
                s.conn.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (run_id, run))
            s.conn.execute("UPDATE runs SET run_id = ?, started_at = ?, finished_at = ? WHERE run_id = ?",
                           (run_id, started, started + 5, run))
            run = run_id
    return run, judged

"""Prompt variants, repair turns and escalation through the real engine and store: each stored result records its
variant, a failed answer goes back to its model with the scorer's word on it, a case it still fails goes to the
escalation model, every step's spend is counted (apart from rate-limit retries), and a resumed run continues a
chain where it stopped (nothing finished lost, nothing repeated), with simulated models, python solvers and the
bundled mock server."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomli_w
from httpkit import FAST_SIM, start_server, stop_server

import arenatui
from arenatui.config.schema import PromptVariant, Repair, SimSettings
from arenatui.results.read import prompt_robustness, read_run
from arenatui.stats import compare_models, leaderboard, rank_models
from arenatui.stats.variants import FLIPS
from arenatui.store import Store
from arenatui.store.queries import follow_ups

REPAIR_MSG = "Not valid JSON ({error}). Reply with JSON only."
SIM = {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0}


def _rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


def test_a_sweep_runs_models_by_variants_and_each_result_records_its_variant(tmp_path: Path) -> None:
    cases = tuple(arenatui.Case(id=f"c{i}", input=f"question {i}", expected=str(i)) for i in range(60))
    sim = SimSettings(**SIM)
    project = arenatui.Project(
        name="variants", path=tmp_path / "arena.toml", cases=cases,
        prompts=(PromptVariant("terse", template="Q: {input}"), PromptVariant("verbose", system="Think first.")),
        models=(arenatui.Model(key="a", sim=SimSettings(**SIM, prompt_accuracy={"terse": 0.95, "verbose": 0.3})),
                arenatui.Model(key="b", sim=SimSettings(**SIM, prompt_accuracy={"terse": 0.3, "verbose": 0.95})),
                arenatui.Model(key="c", sim=sim, prompts=("terse",))),
        run=arenatui.RunSettings(trials=2, concurrency=16, seed=5))
    r = arenatui.bench(project, db=tmp_path / "r.db")
    assert r.status == "finished"
    counts = dict(((m, v), n) for m, v, n in _rows(
        r.db, "SELECT model_key, variant, COUNT(*) FROM results GROUP BY model_key, variant"))
    assert counts == {("a", "terse"): 120, ("a", "verbose"): 120, ("b", "terse"): 120, ("b", "verbose"): 120,
                      ("c", "terse"): 120}
    # the DESIGN query a user runs by hand still works, one row per model (its variants together)
    assert [m for (m,) in _rows(r.db, "SELECT model_key FROM results WHERE run_id = ? GROUP BY model_key",
                                r.run_id)] == ["a", "b", "c"]
    with Store(r.db, read_only=True) as store:
        stored = read_run(store, r.run_id)
    # the leaderboard's headline is the mean over variants: each model's per-case mean over variants and trials
    res = stored.results
    ai = res.models.index("a")
    per_variant = {v: _rows(r.db, "SELECT AVG(passed) FROM results WHERE model_key = 'a' AND variant = ?", v)[0][0]
                   for v in ("terse", "verbose")}
    assert res.trials == 2 and res.calls[ai].sum() == 240  # coverage: 2 trials × 2 variants planned per case
    assert res.calls_per_case("a") == 4 and res.calls_per_case("c") == 2  # c was asked one prompt: not a miss
    rows = {row.model: row for row in leaderboard(res)}
    assert rows["c"].planned == 120 and rows["c"].coverage == rows["c"].answered / 120
    # c (asked terse only) is compared with a over terse only, case by case, and ranked on the cells all share
    c_vs_a = compare_models(res, "c", "a")
    terse = res.over_variants(("terse",))
    assert c_vs_a.variants == ("terse",) and c_vs_a.coverage_note and "terse" in c_vs_a.coverage_note
    assert c_vs_a.diff.estimate == pytest.approx(float(np.nanmean(terse.case_scores("c") - terse.case_scores("a"))))
    assert rank_models(res).variants == ("terse",)
    assert rows["a"].common.estimate == pytest.approx(float(np.nanmean(terse.case_scores("a"))))
    # pass@k is over one variant's trials: k never exceeds the 2 trials, though a was asked 4 calls per case
    assert max(rows["a"].pass_at) == 2
    assert float(res.score_sum[ai].sum() / res.scored[ai].sum()) == pytest.approx(
        (per_variant["terse"] + per_variant["verbose"]) / 2)
    rob = prompt_robustness(stored)
    assert rob is not None and rob.variants == ("terse", "verbose")
    pair = next(p for p in rob.pairs if {p.a, p.b} == {"a", "b"})
    assert pair.verdict == FLIPS and pair.winners == {"terse": "a", "verbose": "b"}
    assert {s.model: s.best for s in rob.spreads} == {"a": "terse", "b": "verbose"}  # c has one variant: no spread
    assert "ordering depends on the prompt" in pair.text()

    # resume's identity is (model, variant, case, trial): remove some of one variant's results, and resume makes
    # exactly those calls again, nothing of the other variant
    _rows(r.db, "DELETE FROM results WHERE model_key = 'a' AND variant = 'verbose' AND case_id IN ('c1', 'c2')")
    before = dict(((m, v, c, t), s) for m, v, c, t, s in _rows(
        r.db, "SELECT model_key, variant, case_id, trial, started_at FROM results"))
    again = arenatui.bench(db=tmp_path / "r.db", resume=r.run_id)
    assert again.status == "finished"
    after = dict(((m, v, c, t), s) for m, v, c, t, s in _rows(
        r.db, "SELECT model_key, variant, case_id, trial, started_at FROM results"))
    made = {k for k in after if k not in before}
    assert made == {("a", "verbose", c, t) for c in ("c1", "c2") for t in (0, 1)}
    assert all(after[k] == v for k, v in before.items())


def _pipeline(tmp_path: Path, calls: list[tuple[str, str, int]]) -> arenatui.Project:
    """small answers JSON only when asked again about 'fixable'; big always answers JSON."""

    def small(ctx: arenatui.TrialContext) -> Any:
        def solve(req: arenatui.SolverRequest) -> arenatui.Answer:
            turn = sum(m["role"] == "assistant" for m in req.messages)
            calls.append(("small", req.case_id, turn))
            if req.case_id == "fine" or (turn and req.case_id == "fixable"):
                assert turn == 0 or "Not valid JSON (" in req.messages[-1]["content"]  # the scorer's word, sent
                return arenatui.Answer('{"ok": true}', input_tokens=10, output_tokens=1)
            return arenatui.Answer("sure, here it is", input_tokens=10, output_tokens=1)

        return solve

    def big(ctx: arenatui.TrialContext) -> Any:
        def solve(req: arenatui.SolverRequest) -> arenatui.Answer:
            calls.append(("big", req.case_id, sum(m["role"] == "assistant" for m in req.messages)))
            assert req.input == f"please answer {req.case_id}" and req.system == "JSON please."  # the variant's
            return arenatui.Answer('{"big": true}', input_tokens=10, output_tokens=1)

        return solve

    return arenatui.Project(
        name="repairs", path=tmp_path / "arena.toml",
        cases=tuple(arenatui.Case(id=c, input=f"answer {c}") for c in ("fine", "fixable", "stubborn")),
        prompts=(PromptVariant("v", system="JSON please.", template="please {input}"),),
        scorers=(arenatui.Scorer(name="json", kind="json_valid"),),
        models=(arenatui.Model(key="small", solver=small, escalate_to="big", price_out_per_mtok=1e6),
                arenatui.Model(key="big", solver=big, candidate=False, price_out_per_mtok=2e6)),
        run=arenatui.RunSettings(concurrency=4, repair=Repair(attempts=1, on=("invalid_format",),
                                                               message=REPAIR_MSG)))


def test_repairs_on_invalid_json_and_an_escalation_are_stored_steps_with_every_steps_spend(tmp_path: Path) -> None:
    calls: list[tuple[str, str, int]] = []
    r = arenatui.bench(_pipeline(tmp_path, calls), db=tmp_path / "r.db")
    assert r.status == "finished"
    rows = {c: rest for c, *rest in _rows(
        r.db, "SELECT case_id, status, output, attempts, repairs, escalated_to, first_passed, input_tokens, "
              "output_tokens, cost FROM results")}
    assert rows["fine"] == ["passed", '{"ok": true}', 1, 0, None, None, 10, 1, 1.0]
    assert rows["fixable"] == ["passed", '{"ok": true}', 1, 1, None, 0, 20, 2, 2.0]
    assert rows["stubborn"] == ["passed", '{"big": true}', 1, 1, "big", 0, 30, 3, 4.0]  # 1 + 1 + big's 2
    assert sorted(calls) == sorted([("small", "fine", 0), ("small", "fixable", 0), ("small", "fixable", 1),
                                    ("small", "stubborn", 0), ("small", "stubborn", 1), ("big", "stubborn", 0)])
    steps = _rows(r.db, "SELECT case_id, step, kind, answered_by, status, failure_mode, cost FROM call_steps "
                        "ORDER BY case_id, step")
    assert steps == [("fixable", 0, "answer", "small", "failed", "invalid_format", 1.0),
                     ("fixable", 1, "repair", "small", "passed", "none", 1.0),
                     ("stubborn", 0, "answer", "small", "failed", "invalid_format", 1.0),
                     ("stubborn", 1, "repair", "small", "failed", "invalid_format", 1.0),
                     ("stubborn", 2, "escalation", "big", "passed", "none", 2.0)]
    # repairs are not retries: the diagnosis query of DESIGN.md still reads no retries
    assert _rows(r.db, "SELECT SUM(attempts) - COUNT(*) FROM results")[0][0] == 0
    with Store(r.db, read_only=True) as store:
        fu = follow_ups(store, read_run(store, r.run_id).plan)
    assert [(f.model, f.before, f.after, f.repairs, f.escalated, f.cost_per_completed, f.tokens_per_completed)
            for f in fu] == [("small", pytest.approx(1 / 3), 1.0, 2, 1, pytest.approx(7 / 3), pytest.approx(22.0))]

    # a chain whose every step was stored but not its result (the engine died between the two): resume ends it from
    # the stored steps, asking nobody again
    _rows(r.db, "DELETE FROM results WHERE case_id = 'stubborn'")
    calls.clear()
    again = arenatui.bench(_pipeline(tmp_path, calls), db=tmp_path / "r.db", resume=r.run_id)
    assert again.status == "finished" and calls == []
    assert _rows(r.db, "SELECT status, output, repairs, escalated_to, first_passed, cost FROM results "
                       "WHERE case_id = 'stubborn'") == [("passed", '{"big": true}', 1, "big", 0, 4.0)]


SOLVER_MODULE = '''
import os, time
from pathlib import Path
HERE = Path(__file__).parent

def make(ctx):
    def solve(req):
        turn = sum(m["role"] == "assistant" for m in req.messages)
        with open(HERE / "calls.log", "a") as f:
            f.write(f"{os.getpid()} {req.case_id} {turn}\\n")
        if req.case_id == "slow" and turn == 1 and not (HERE / "go").exists():
            (HERE / "waiting").write_text("")
            time.sleep(120)
        return '{"ok": 1}' if turn else "not json"
    return solve
'''


def test_resume_continues_a_repair_chain_where_it_stopped(tmp_path: Path) -> None:
    (tmp_path / "chain_solver.py").write_text(SOLVER_MODULE, encoding="utf-8")
    doc = {"project": {"name": "chain"},
           "run": {"concurrency": 2, "repair": {"attempts": 1, "on": ["invalid_format"], "message": REPAIR_MSG}},
           "models": [{"key": "m", "provider": "python", "factory": "chain_solver:make", "concurrency": "thread"}],
           "scorers": [{"name": "json", "kind": "json_valid"}],
           "cases": [{"id": "quick", "input": "a"}, {"id": "slow", "input": "b"}]}
    (tmp_path / "arena.toml").write_text(tomli_w.dumps(doc), encoding="utf-8")
    db = tmp_path / "r.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(Path.cwd()), os.environ.get("PYTHONPATH"))))}
    argv = [sys.executable, "-m", "arenatui", "evaluate", "--db", str(db), "--quiet", "--no-report"]
    proc = subprocess.Popen([*argv, "--project", str(tmp_path)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "waiting").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        # the first answer's step is committed by the writer process within its batch interval
        while not _rows(db, "SELECT 1 FROM call_steps WHERE case_id = 'slow'"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    first = (tmp_path / "calls.log").read_text().split("\n")
    assert [ln.split()[1:] for ln in first if ln and "slow" in ln] == [["slow", "0"], ["slow", "1"]]
    (tmp_path / "go").write_text("")
    done = subprocess.run([*argv, "--resume", "last"], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    second = (tmp_path / "calls.log").read_text().split("\n")[len(first) - 1:]
    # the resumed run asked only the repair turn of 'slow': its first answer was stored as a step, never asked again
    assert [ln.split()[1:] for ln in second if ln] == [["slow", "1"]]
    (row,) = _rows(db, "SELECT status, repairs, first_passed, output_tokens FROM results WHERE case_id = 'slow'")
    assert row[:3] == ("passed", 1, 0) and row[3] >= 2  # both steps' tokens (estimated from the texts)
    assert [s for (s,) in _rows(db, "SELECT step FROM call_steps WHERE case_id = 'slow' ORDER BY step")] == [0, 1]


def test_two_variants_repairs_and_an_escalation_against_the_mock_server(tmp_path: Path) -> None:
    models = [
        {"key": "small", "provider": "openai", "model": "small", "escalate_to": "big",
         "price_in_per_mtok": 1.0, "price_out_per_mtok": 4.0,
         "sim": {**FAST_SIM, "accuracy": 0.5}},
        {"key": "big", "provider": "anthropic", "model": "big", "candidate": False, "price_out_per_mtok": 20.0,
         "sim": {**FAST_SIM, "accuracy": 1.0}},
    ]
    doc: dict[str, Any] = {
        "project": {"name": "mock-variants"},
        "run": {"concurrency": 8, "timeout_s": 5.0, "seed": 1, "trials": 2,
                "repair": {"attempts": 1, "on": ["invalid_format"], "message": REPAIR_MSG}},
        "prompts": [{"name": "plain", "template": "{input}"},
                    {"name": "framed", "system": "Reply with JSON.", "template": "Task: {input}"}],
        "models": models,
        "scorers": [{"name": "json", "kind": "json_valid"}],
        "cases": [{"id": f"q{i}", "input": f"give me JSON number {i}"} for i in range(12)],
    }
    server_cfg = tmp_path / "server.toml"
    server_cfg.write_text(tomli_w.dumps({**doc, "models": [{**m, "base_url": "http://127.0.0.1:1"}
                                                          for m in models]}), encoding="utf-8")
    proc, m, _lines = start_server([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config",
                                    str(server_cfg)], r"listening on (http://127\.0\.0\.1:\d+)")
    try:
        url = m.group(1)
        doc["models"] = [{**models[0], "base_url": f"{url}/v1"}, {**models[1], "base_url": url}]
        (tmp_path / "arena.toml").write_text(tomli_w.dumps(doc), encoding="utf-8")
        db = tmp_path / "r.db"
        out = subprocess.run([sys.executable, "-m", "arenatui", "evaluate", "--project", str(tmp_path), "--db",
                              str(db), "--quiet"], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "COLUMNS": "200"})
    finally:
        stop_server(proc)
    assert out.returncode == 0, out.stderr
    assert "1 model × 2 prompt variants × 12 cases × 2 trials = 48 calls" in out.stdout
    for words in ("Prompt variants", "Repairs and escalation", "mean over the variants"):
        assert words in out.stdout
    by_variant = dict(_rows(db, "SELECT variant, COUNT(*) FROM results GROUP BY variant"))
    assert by_variant == {"plain": 24, "framed": 24}
    repaired, escalated, first_failed, passed = _rows(
        db, "SELECT SUM(repairs), SUM(escalated_to = 'big'), SUM(first_passed = 0), SUM(passed) FROM results")[0]
    assert repaired >= 3 and escalated >= 1 and first_failed == repaired  # accuracy 0.5: many a first answer fails
    assert passed == 48  # every still-failed case went to big, which always answers JSON
    kinds = dict(_rows(db, "SELECT kind, COUNT(*) FROM call_steps GROUP BY kind"))
    assert kinds["repair"] == repaired and kinds["escalation"] == escalated
    # cost is every step's: the results' total equals the steps' for chained calls plus the plain calls'
    chained = _rows(db, "SELECT TOTAL(s.cost) FROM call_steps s")[0][0]
    plain = _rows(db, "SELECT TOTAL(cost) FROM results WHERE repairs = 0 AND escalated_to IS NULL")[0][0]
    assert _rows(db, "SELECT TOTAL(cost) FROM results")[0][0] == pytest.approx(chained + plain)
    report = subprocess.run([sys.executable, "-m", "arenatui", "report", "last", "--db", str(db), "--format",
                             "json"], capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    rep = json.loads(report.stdout)
    assert rep["prompt_variants"]["variants"] == ["plain", "framed"]
    assert rep["follow_ups"][0]["model"] == "small" and rep["follow_ups"][0]["after"] == 1.0
    assert rep["follow_ups"][0]["before"] < 1.0
    export = subprocess.run([sys.executable, "-m", "arenatui", "export", "last", "--db", str(db), "--format", "csv"],
                            capture_output=True, text=True, timeout=60)
    assert export.returncode == 0, export.stderr
    import csv
    import io

    calls = [r for r in csv.DictReader(io.StringIO(export.stdout)) if r["row"] == "call"]
    assert {(r["model_key"], r["variant"]) for r in calls} == {("small", "plain"), ("small", "framed")}


def test_prompts_narrows_evaluate_and_a_resume_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from arenatui.cli import main

    doc = {"project": {"name": "narrow"}, "run": {"seed": 2},
           "prompts": [{"name": "terse", "template": "Q: {input}"}, {"name": "verbose", "system": "Explain."}],
           "models": [{"key": "m", "sim": SIM}],
           "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "x"} for i in range(5)]}
    (tmp_path / "arena.toml").write_text(tomli_w.dumps(doc), encoding="utf-8")
    db = tmp_path / "r.db"
    assert main(["evaluate", "--project", str(tmp_path), "--db", str(db), "--quiet", "--no-report",
                 "--prompts", "terse"]) == 0
    assert _rows(db, "SELECT variant, COUNT(*) FROM results GROUP BY variant") == [("terse", 5)]
    # the run was planned with terse only: a resume has nothing left, whatever --prompts it is given
    assert main(["evaluate", "--resume", "last", "--db", str(db), "--quiet", "--no-report"]) == 0
    assert _rows(db, "SELECT variant, COUNT(*) FROM results GROUP BY variant") == [("terse", 5)]
    # a typo is bad input with a suggestion, exit 2
    assert main(["evaluate", "--project", str(tmp_path), "--db", str(db), "--quiet", "--prompts", "trese"]) == 2
    assert "did you mean 'terse'" in " ".join(capsys.readouterr().err.split())  # the paragraph wraps at the width
    # a full run interrupted before its verbose calls: resume --prompts terse makes only what terse lacks
    assert main(["evaluate", "--project", str(tmp_path), "--db", str(db), "--quiet", "--no-report"]) == 0
    run_id = _rows(db, "SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1")[0][0]
    _rows(db, "DELETE FROM results WHERE run_id = ? AND case_id IN ('c0', 'c1')", run_id)
    assert main(["evaluate", "--resume", run_id, "--db", str(db), "--quiet", "--no-report", "--prompts",
                 "terse"]) == 0
    assert _rows(db, "SELECT variant, COUNT(*) FROM results WHERE run_id = ? GROUP BY variant ORDER BY variant",
                 run_id) == [("terse", 5), ("verbose", 3)]


def test_the_bakeoff_margin_says_whether_orderings_survive_the_prompt(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from arenatui.cli import main

    doc = {"project": {"name": "bake-variants"}, "run": {"seed": 4, "concurrency": 16},
           "prompts": [{"name": "terse", "template": "Q: {input}"}, {"name": "verbose", "system": "Explain."}],
           "models": [{"key": "a", "sim": {**SIM, "prompt_accuracy": {"terse": 0.95, "verbose": 0.4}}},
                      {"key": "b", "sim": {**SIM, "prompt_accuracy": {"terse": 0.4, "verbose": 0.95}}}],
           "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "x"} for i in range(80)]}
    (tmp_path / "arena.toml").write_text(tomli_w.dumps(doc), encoding="utf-8")
    db = str(tmp_path / "r.db")
    assert main(["evaluate", "--project", str(tmp_path), "--db", db, "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    assert main(["bakeoff", "last", "--db", db, "--format", "json"]) == 0
    page = json.loads(capsys.readouterr().out)
    rob = page["margin"]["robustness"]
    assert rob["measured"] and rob["variants"] == ["terse", "verbose"]
    (pair,) = rob["pairs"]
    assert pair["verdict"] == FLIPS and pair["per_variant"]["terse"]["winner"] == "a"
    assert rob["text"].startswith("2 prompt variants (terse, verbose); a vs b: ordering depends on the prompt")
    for fmt, words in (("md", "| model | terse | verbose | spread (best − worst) |"),
                       ("html", "<th>A − B verbose</th>")):
        assert main(["bakeoff", "last", "--db", db, "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "Robustness across prompt variants: 2 prompt variants" in out and words in out, fmt


@pytest.mark.parametrize("big_is_candidate", [False, True], ids=["target-only", "target-also-a-candidate"])
def test_escalations_wait_for_room_under_the_targets_cap(tmp_path: Path, big_is_candidate: bool) -> None:
    """An escalation asks the target's provider, so the target's max_concurrency bounds it, together with the
    target's own calls when it is a candidate too; the candidate's cap and the global pool do not."""
    import threading

    lock = threading.Lock()
    at_big = [0, 0]  # in flight now, most seen at once

    def small(ctx: arenatui.TrialContext) -> Any:
        return lambda req: arenatui.Answer("not json", input_tokens=1, output_tokens=1)

    def big(ctx: arenatui.TrialContext) -> Any:
        def solve(req: arenatui.SolverRequest) -> arenatui.Answer:
            with lock:
                at_big[0] += 1
                at_big[1] = max(at_big[1], at_big[0])
            time.sleep(0.02)
            with lock:
                at_big[0] -= 1
            return arenatui.Answer('{"big": true}', input_tokens=1, output_tokens=1)

        return solve

    project = arenatui.Project(
        name="escalation-cap", path=tmp_path / "arena.toml",
        cases=tuple(arenatui.Case(id=f"c{i}", input=f"answer {i}") for i in range(16)),
        scorers=(arenatui.Scorer(name="json", kind="json_valid"),),
        models=(arenatui.Model(key="small", solver=small, escalate_to="big"),
                arenatui.Model(key="big", solver=big, candidate=big_is_candidate, max_concurrency=1)),
        run=arenatui.RunSettings(concurrency=8))
    r = arenatui.bench(project, db=tmp_path / "r.db")
    assert r.status == "finished"
    escalated = _rows(r.db, "SELECT COUNT(*) FROM results WHERE model_key = 'small' AND escalated_to = 'big' "
                            "AND status = 'passed'")[0][0]
    assert escalated == 16
    assert at_big[1] == 1  # never two at once at the target, however many candidates' calls escalated together

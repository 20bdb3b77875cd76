"""Chained cases: a dependent runs after its parents passed, with their answers in its input; a broken chain
leaves its dependents 'unreachable' (coverage, never wrong); cycles and unknown ids are configuration errors."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import arenatui
from arenatui.kernel.errors import ConfigError

CASES = (
    arenatui.Case(id="plan", input="make a plan", expected="PLAN"),
    arenatui.Case(id="left", input="do the left half of {output:plan}", expected="LEFT", depends_on=("plan",)),
    arenatui.Case(id="right", input="do the right half of {output:plan}", expected="RIGHT", depends_on=("plan",)),
    arenatui.Case(id="merge", input="merge {output:left} and {output:right}", expected="LEFT+RIGHT",
                  depends_on=("left", "right")),
    arenatui.Case(id="alone", input="unrelated", expected="ALONE"),
)


def _solver(log: list[tuple[str, str, int, float, float, str]], *, broken: bool = False) -> Any:
    def make(ctx: arenatui.TrialContext) -> Any:
        async def solve(req: arenatui.SolverRequest) -> str:
            t0 = time.monotonic()
            await anyio.sleep(0.05)
            text = str(req.input)
            answers = {"plan": "WRONG" if broken and req.trial == 1 else "PLAN", "left": "LEFT", "right": "RIGHT",
                       "alone": "ALONE"}
            if req.case_id == "merge":
                out = "LEFT+RIGHT" if "LEFT and RIGHT" in text else "?"
            else:
                out = answers[req.case_id]
            log.append((ctx.model_key, req.case_id, req.trial, t0, time.monotonic(), text))
            return out

        return solve

    return make


def _project(tmp_path: Path, log: list[Any], broken: bool = False) -> arenatui.Project:
    return arenatui.Project(name="chain", path=tmp_path / "arena.toml",
                            models=(arenatui.Model(key="pipe", solver=_solver(log, broken=broken)),),
                            cases=CASES, run=arenatui.RunSettings(trials=2, concurrency=8))


def test_dependents_run_after_their_parents_with_their_answers(tmp_path: Path) -> None:
    log: list[Any] = []
    r = arenatui.bench(_project(tmp_path, log), db=tmp_path / "r.db")
    assert r.status == "finished" and r.average_score() == 1.0
    by = {(cid, t): (t0, t1, text) for _m, cid, t, t0, t1, text in log}
    for t in (0, 1):
        assert by[("left", t)][2] == "do the left half of PLAN"
        assert by[("merge", t)][2] == "merge LEFT and RIGHT"
        assert by[("left", t)][0] >= by[("plan", t)][1]  # started after its parent ended
        assert by[("merge", t)][0] >= max(by[("left", t)][1], by[("right", t)][1])
    # siblings of one episode overlap, and so do the episodes (trials) themselves
    assert by[("left", 0)][0] < by[("right", 0)][1] and by[("right", 0)][0] < by[("left", 0)][1]
    assert by[("plan", 0)][0] < by[("plan", 1)][1] and by[("plan", 1)][0] < by[("plan", 0)][1]


def test_a_broken_chain_leaves_its_dependents_unreachable_never_wrong(tmp_path: Path) -> None:
    log: list[Any] = []
    r = arenatui.bench(_project(tmp_path, log, broken=True), db=tmp_path / "r.db")
    assert r.status == "finished"
    with sqlite3.connect(r.db) as conn:
        rows = {(c, t): (s, ec, msg, a) for c, t, s, ec, msg, a in conn.execute(
            "SELECT case_id, trial, status, error_class, error_message, attempts FROM results")}
    assert rows[("plan", 1)][0] == "failed"
    assert rows[("left", 1)] == ("unreachable", "unreachable",
                                 "not run: its parent 'plan' did not pass in this trial", 0)
    assert rows[("merge", 1)][:2] == ("unreachable", "unreachable")  # the chain below it too
    assert rows[("alone", 1)][0] == rows[("merge", 0)][0] == "passed"
    assert {(cid, t) for _m, cid, t, *_ in log}.isdisjoint({("left", 1), ("right", 1), ("merge", 1)})  # never called
    row = r.leaderboard()[0]
    # quality over scored calls only: plan fails once (0.5 for that case), unreachable calls are coverage
    assert row.quality.estimate == pytest.approx((0.5 + 1 + 1 + 1 + 1) / 5)
    assert row.answered == 7 and row.errors == {"unreachable": 3} and row.retries == 0
    assert row.coverage == pytest.approx(7 / 10)
    report = r.report(tmp_path / "report.json", format="json").read_text()
    assert '"unreachable": 3' in report


def _toml(tmp_path: Path, cases: str) -> Path:
    p = tmp_path / "arena.toml"
    p.write_text('[[models]]\nkey = "m"\nsim = { accuracy = 1.0, base_latency_s = 0.001 }\n\n' + cases)
    return p


def test_cycles_and_unknown_parents_are_config_errors_naming_the_cases(tmp_path: Path) -> None:
    cycle = ('[[cases]]\nid = "a"\ninput = "x {output:c}"\ndepends_on = ["c"]\n\n'
             '[[cases]]\nid = "b"\ninput = "y"\ndepends_on = ["a"]\n\n'
             '[[cases]]\nid = "c"\ninput = "z"\ndepends_on = ["b"]\n')
    with pytest.raises(ConfigError) as e:
        arenatui.bench(_toml(tmp_path, cycle), db=tmp_path / "r.db")
    assert str(e.value).endswith("cases[id=a].depends_on: makes a cycle (a -> c -> b -> a): a case cannot wait for "
                                 "its own answer")
    with pytest.raises(ConfigError, match=r"cases\[id=b\].depends_on: names no case 'aa'; did you mean 'a'\?"):
        arenatui.bench(_toml(tmp_path, '[[cases]]\nid = "a"\ninput = "x"\n\n[[cases]]\nid = "b"\ninput = "y"\n'
                                       'depends_on = ["aa"]\n'), db=tmp_path / "r.db")
    with pytest.raises(ConfigError, match=r"cases\[id=b\].input: uses \{output:a\} but 'a' is not in its depends_on"):
        arenatui.bench(_toml(tmp_path, '[[cases]]\nid = "a"\ninput = "x"\n\n[[cases]]\nid = "b"\n'
                                       'input = "y {output:a}"\n'), db=tmp_path / "r.db")


def test_a_resumed_chained_run_fills_its_dependents_from_stored_answers(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text("def make(ctx):\n    return lambda req: req.input\n")
    p = tmp_path / "arena.toml"
    p.write_text('[[models]]\nkey = "echo"\nprovider = "python"\nfactory = "echo:make"\n\n'
                 '[[cases]]\nid = "a"\ninput = "first"\nexpected = "first"\n\n'
                 '[[cases]]\nid = "b"\ninput = "then {output:a}"\nexpected = "then first"\ndepends_on = ["a"]\n')
    db = tmp_path / "r.db"
    r = arenatui.bench(p, db=db)
    with sqlite3.connect(db) as conn:  # as if the run had stopped after a, before b
        assert conn.execute("SELECT output FROM results WHERE case_id = 'b'").fetchone() == ("then first",)
        conn.execute("DELETE FROM results WHERE case_id = 'b'")
    out = subprocess.run([sys.executable, "-m", "arenatui", "evaluate", "--resume", r.run_id, "--db", str(db),
                          "--quiet", "--no-report"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT case_id, status, output FROM results ORDER BY case_id").fetchall() == [
            ("a", "passed", "first"), ("b", "passed", "then first")]


def test_an_episode_is_forgotten_once_its_chain_has_ended() -> None:
    from arenatui.engine.chains import Chains

    chains = Chains(CASES)
    ready = chains.finished("m", "plan", 0, (True, "PLAN"))
    assert [(c.id, c.input, why) for c, why in ready] == [
        ("left", "do the left half of PLAN", None), ("right", "do the right half of PLAN", None)]
    assert chains.finished("m", "left", 0, (True, "L")) == []
    (merge, why), = chains.finished("m", "right", 0, (True, "R"))
    assert (merge.input, why) == ("merge L and R", None) and chains.episodes == 1
    assert "alone" not in chains.involved  # the runner tells it only of cases in a chain
    assert chains.finished("m", "merge", 0, (False, "?")) == [] and chains.episodes == 0
    broken = chains.finished("m", "plan", 1, (False, None))
    assert [(c.id, why is not None) for c, why in broken] == [("left", True), ("right", True), ("merge", True)]
    assert chains.episodes == 0


def test_a_chained_project_is_not_sharded(tmp_path: Path) -> None:
    from arenatui.kernel.errors import PlanError
    from arenatui.plan import Filters, Shard, make_plan

    project = arenatui.Project(name="c", path=tmp_path / "arena.toml", models=(arenatui.Model(key="m"),),
                               cases=CASES)
    with pytest.raises(PlanError, match="chained case"):
        make_plan(project, Filters(shard=Shard(0, 2)))


def test_a_broken_chain_counts_each_unreachable_call_once(tmp_path: Path) -> None:
    """Issue 37 item 2: `arena evaluate --project examples/chained` showed 43/40. A parent that fails decides its
    whole chain below at once; the unreachable calls' own results went back through the chain bookkeeping, which
    had forgotten the finished episode, and decided `merge` unreachable a second time."""
    from arenatui.api import _validated
    from arenatui.session.sweep import Sweep, SweepOptions

    async def go() -> Any:
        sweep = Sweep(SweepOptions(project=_validated(_project(tmp_path, [], broken=True)), db=tmp_path / "r.db"))
        await sweep.run()
        return sweep.live.snapshot()

    snap = anyio.run(go)
    assert snap.done == snap.planned == 10
    assert [(m.done, m.errored) for m in snap.models] == [(10, 3)]

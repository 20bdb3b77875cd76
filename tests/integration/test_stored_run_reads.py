"""The read model (`store.read`): a stored run is read as stored, never re-validated.

Moving a python scorer's module and a json_schema scorer's schema file away (a colleague opening the database on
another machine) leaves `arena report`, `arena export` and `arena compare` working, and none of them runs the
user's code. The plan read from the stored configuration is the one the validating planner makes, filters and
judge samples included.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arenatui.cli import main
from arenatui.plan import Filters, judged_case_ids, make_plan
from arenatui.project import project_from_dict, project_to_dict
from arenatui.store.db import RunRecord
from arenatui.store.queries import stored_plan

GRADING = '''
import os, pathlib
pathlib.Path(os.environ["ARENA_MARKER"]).write_text("imported")

def grade(case, output):
    return output.strip() == case.expected
'''

PROJECT = '''
[project]
name = "moved"

[run]
seed = 3
concurrency = 8

[[models]]
key = "a"
provider = "sim"
sim = { base_latency_s = 0.0, per_token_s = 0.0, jitter = 0.0, accuracy = 0.9 }

[[models]]
key = "b"
provider = "sim"
sim = { base_latency_s = 0.0, per_token_s = 0.0, jitter = 0.0, accuracy = 0.5 }

[[scorers]]
name = "mine"
kind = "python"
function = "grading:grade"

[[scorers]]
name = "shape"
kind = "json_schema"
schema_file = "shape.json"

[[scorers]]
name = "label"
kind = "f1"
labels = ["pos", "neg"]
'''


def _cases() -> str:
    out = []
    for i in range(12):
        scorer = ("mine", "shape", "label")[i % 3]
        expected = {"mine": "yes", "shape": "{}", "label": ("pos", "neg")[i % 2]}[scorer]
        out.append(f'[[cases]]\nid = "c{i}"\ninput = "question {i}"\nexpected = \'{expected}\'\nscorer = "{scorer}"\n'
                   f'stratum = "{("easy", "hard")[i % 2]}"\n')
    return "\n".join(out)


def _arena(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arenatui", *args], capture_output=True, text=True, env=env,
                          check=False, timeout=120)


def test_report_export_and_compare_read_a_run_whose_scorer_module_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    proj_dir = tmp_path / "project"
    proj_dir.mkdir()
    (proj_dir / "grading.py").write_text(GRADING, encoding="utf-8")
    (proj_dir / "shape.json").write_text('{"type": "object"}', encoding="utf-8")
    (proj_dir / "p.toml").write_text(PROJECT + _cases(), encoding="utf-8")
    marker = tmp_path / "marker"
    db = tmp_path / "runs.db"
    monkeypatch.setenv("ARENA_MARKER", str(marker))
    monkeypatch.syspath_prepend(str(proj_dir))
    assert main(["evaluate", "--project", str(proj_dir / "p.toml"), "--db", str(db), "--quiet", "--no-report"]) == 0
    run_id = re.search(r"Run id: (\S+)", capsys.readouterr().out).group(1)  # type: ignore[union-attr]
    assert marker.read_text() == "imported"  # the sweep did run the user's scorer

    # another machine: the project's files are gone, the database is all there is
    for f in proj_dir.iterdir():
        f.unlink()
    proj_dir.rmdir()
    marker.unlink()
    env = {**os.environ, "ARENA_MARKER": str(marker), "PYTHONPATH": os.pathsep.join(sys.path)}

    rep = _arena(env, "report", run_id, "--db", str(db), "--format", "json")
    assert rep.returncode == 0, rep.stderr
    report = json.loads(rep.stdout)
    assert report["run"]["run_id"] == run_id and report["run"]["stored"] == 24
    assert {m["model"] for m in report["leaderboard"]} == {"a", "b"}
    assert set(report["classification"]) == {"a", "b"}  # the f1 answers are read from the stored outputs
    exp = _arena(env, "export", run_id, "--db", str(db), "--format", "jsonl")
    assert exp.returncode == 0, exp.stderr
    calls = [json.loads(line) for line in exp.stdout.splitlines() if '"row": "call"' in line]
    assert len(calls) == 24
    cmp = _arena(env, "compare", run_id, "--db", str(db), "--json")
    assert cmp.returncode == 0, cmp.stderr
    assert not marker.exists(), "reading a stored run ran the user's scorer module"


CONFIG: dict[str, Any] = {
    "project": {"name": "plans"}, "run": {"trials": 2},
    "models": [{"key": "alpha", "provider": "sim"}, {"key": "beta", "provider": "sim"},
               {"key": "grader", "provider": "sim"}, {"key": "both", "provider": "sim", "candidate": True}],
    "scorers": [{"name": "exact", "kind": "exact"},
                {"name": "quality", "kind": "llm_judge", "judge": "grader", "rubric": "Rate: {output}", "sample": 0.4},
                {"name": "style", "kind": "llm_judge", "judge": "both", "rubric": "Style: {output}", "sample": 3}],
    "cases": [{"id": f"k{i}", "input": [{"role": "user", "content": f"q{i}"}] if i % 4 == 0 else f"q{i}",
               "expected": str(i), "tags": [f"t{i % 3}"], "stratum": ("s1", "s2")[i % 2],
               "sealed": i == 7, **({"scorer": ("quality", "style")[i % 2]} if i % 3 else {})}
              for i in range(20)],
}


@pytest.mark.parametrize("filters", [
    Filters(), Filters(models=("beta",)), Filters(tags=("t1", "s2")), Filters(limit=5), Filters(trials=3),
    Filters(models=("alpha", "both"), tags=("t2",), limit=4, trials=1),
], ids=["none", "models", "tags", "limit", "trials", "all"])
def test_the_stored_plan_is_the_plan_the_validating_planner_makes(filters: Filters) -> None:
    project = project_from_dict(CONFIG, Path("plans.toml"))
    plan = make_plan(project, filters)
    record = RunRecord("r1", "plans", None, project_to_dict(project), filters.to_dict(), plan.total, 0.0, None,
                       "finished", None)
    got = stored_plan(record)
    assert got.models == tuple(m.key for m in plan.models)
    assert [c.id for c in got.cases] == [c.id for c in plan.cases]
    assert got.trials == plan.trials and got.total == plan.total
    for c, want in zip(got.cases, plan.cases, strict=True):
        assert (c.stratum, c.tags, c.sealed) == (want.stratum, want.tags, want.sealed)
        assert c.input == ("" if want.sealed else want.prompt_text())
        assert c.expected == (None if want.sealed else want.expected)
    default = project.scorers[0].name
    want_judged = []
    for s in project.scorers:
        if s.kind == "llm_judge":
            chosen = judged_case_ids(project, s)
            mine = tuple(c.id for c in plan.cases if (c.scorer or default) == s.name)
            want_judged.append((s.name, s.judge, s.sample, mine, tuple(c for c in mine if c in chosen)))
    assert [(j.scorer, j.judge, j.sample, j.case_ids, j.judged) for j in got.judged] == want_judged

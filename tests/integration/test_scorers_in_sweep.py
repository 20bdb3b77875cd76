"""The new scorers through a whole sweep: failure modes and scorer details stored, shown in the report."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from arenatui.cli import main

PROJECT = '''
[project]
name = "scorers"

[run]
concurrency = 4
seed = 1
allow_code_exec = true

[[models]]
key = "right"
provider = "sim"
sim = {{ base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0, accuracy = 1.0 }}

[[models]]
key = "wrong"
provider = "sim"
sim = {{ base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0, accuracy = 0.0 }}

[[scorers]]
name = "code"
kind = "code_exec"
timeout_s = 30

[[scorers]]
name = "shape"
kind = "json_schema"
schema = {{ type = "object", required = ["city"], properties = {{ city = {{ type = "string" }} }} }}

[[scorers]]
name = "sentiment"
kind = "f1"
labels = ["positive", "negative"]

[[scorers]]
name = "mine"
kind = "python"
function = "grading:grade"

[[cases]]
id = "add"
input = "Write add(a, b)."
expected = "def add(a, b):\\n    return a + b\\n"
tests = "assert add(2, 3) == 5"
scorer = "code"

[[cases]]
id = "json"
input = "Where? Answer as JSON."
expected = '{{"city": "Paris"}}'
scorer = "shape"

[[cases]]
id = "mood"
input = "I loved it."
expected = "positive"
scorer = "sentiment"

[[cases]]
id = "own"
input = "Say yes."
expected = "yes"
scorer = "mine"
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="code_exec limits are Linux-only")
def test_every_result_has_a_failure_mode_and_the_report_tables_them(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "grading.py").write_text("def grade(case, output):\n    return output.strip() == case.expected\n")
    project = tmp_path / "arena.toml"
    project.write_text(PROJECT.format())
    db = tmp_path / "r.db"
    assert main(["evaluate", "-p", str(project), "--db", str(db), "--quiet"]) == 0
    with sqlite3.connect(db) as conn:
        rows = {(m, c): (status, mode, detail) for m, c, status, mode, detail in conn.execute(
            "SELECT model_key, case_id, status, failure_mode, score_detail FROM results")}
    for case in ("add", "json", "mood", "own"):
        assert rows[("right", case)][:2] == ("passed", "none"), case
    status, mode, detail = rows[("wrong", "add")]
    assert (status, mode) == ("failed", "wrong_answer") and detail is not None and detail.startswith("crashed")
    assert rows[("wrong", "json")][:2] == ("failed", "invalid_format")
    assert "not JSON" in (rows[("wrong", "json")][2] or "")
    assert rows[("wrong", "mood")][:2] == ("failed", "invalid_format")  # no label in "I am not sure."
    assert rows[("wrong", "own")][:2] == ("failed", "wrong_answer")
    capsys.readouterr()
    assert main(["report", "last", "--db", str(db), "--format", "md"]) == 0
    report = capsys.readouterr().out
    assert "## What the wrong answers looked like" in report
    assert "| model | failed | wrong_answer | invalid_format |" in report
    assert "| wrong | 4 | 2 (50%) | 2 (50%) |" in report
    # the f1 scorer's model-level figure: right labels every case, wrong reads no label at all
    assert "## Classification (macro-F1)" in report
    # one case: no interval, and its label marked as resting on fewer than 5 cases
    assert "| right | sentiment | 1.000 | – | 1 | 1 | positive 1.00 (n 1 ⚠) |" in report
    assert "| wrong | sentiment | 0.000 | – | 1 | 1 | positive 0.00 (n 1 ⚠) |" in report


def test_a_python_scorer_that_breaks_is_that_calls_scoring_error(tmp_path: Path) -> None:
    (tmp_path / "grading.py").write_text("def grade(case, output):\n    return {'not': 'a score'}\n")
    project = tmp_path / "arena.toml"
    text = PROJECT.format().replace("allow_code_exec = true", "")
    only_mine = '[[scorers]]\nname = "mine"\nkind = "python"\nfunction = "grading:grade"\n'
    text = text[:text.index("[[scorers]]")] + only_mine + text[text.index('[[cases]]\nid = "own"'):]
    project.write_text(text)
    db = tmp_path / "r.db"
    code = main(["evaluate", "-p", str(project), "--db", str(db), "--quiet", "--fail-on-error", "1"])
    assert code == 0
    with sqlite3.connect(db) as conn:
        got = conn.execute("SELECT DISTINCT status, error_class, failure_mode FROM results").fetchall()
    assert got == [("errored", "scoring_error", "scoring_error")]

"""The `arena` command for issue 2: errors for people, `arena init`, the summary line of `evaluate`."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from arenatui.cli import main

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sample_configs" / "demo.toml"

BAD = """
[[models]]
key = "a"
provider = "sim"

[[models]]
key = "b"
provider = "sim"

[[models]]
key = "c"
provider = "sim"
rpm = "sixty"

[[cases]]
id = "q"
input = "x"
"""

SMALL = """
[project]
name = "small"

[run]
concurrency = 4
seed = 3

[[models]]
key = "fast"
provider = "sim"
sim = { base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0 }

[[models]]
key = "other"
provider = "sim"
sim = { base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0, accuracy = 0.3 }

[[cases]]
id = "q1"
input = "2+2?"
expected = "4"
tags = ["math"]

[[cases]]
id = "q2"
input = "capital of France?"
expected = "Paris"
tags = ["geo"]

[[cases]]
id = "q3"
input = "3+3?"
expected = "6"
tags = ["math"]
"""


def _one_error_paragraph(stderr: str) -> str:
    text = stderr.strip()
    assert text.startswith("error:"), stderr
    assert "Traceback" not in stderr
    assert "\n\n" not in text  # one paragraph
    return " ".join(text.split())


def test_bad_project_is_one_error_paragraph_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD, encoding="utf-8")
    code = main(["evaluate", "--project", str(bad), "--db", str(tmp_path / "r.db"), "--quiet"])
    out = capsys.readouterr()
    assert code == 2
    msg = _one_error_paragraph(out.err)
    assert str(bad) in msg and "models[2].rpm" in msg and "expected a number" in msg
    assert out.out == ""


@pytest.mark.parametrize(("args", "words"), [
    (["--models", "fsat"], ["--models", "did you mean 'fast'?"]),
    (["--tags", "nope"], ["--tags nope", "no case"]),
    (["--resume", "no-such-run"], ["no run 'no-such-run'"]),
])
def test_plan_errors_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                     words: list[str]) -> None:
    proj = tmp_path / "arena.toml"
    proj.write_text(SMALL, encoding="utf-8")
    base = ["evaluate", "--db", str(tmp_path / "r.db"), "--quiet"]
    if "--resume" not in args:
        base += ["--project", str(proj)]
    code = main(base + args)
    msg = _one_error_paragraph(capsys.readouterr().err)
    assert code == 2
    for w in words:
        assert w in msg


def test_bad_project_in_a_real_subprocess(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD.replace('[[cases]]', '[[cases]]\nexpectd = "x"'), encoding="utf-8")
    env = {**os.environ, "ARENATUI_HOME": str(tmp_path / "home")}
    p = subprocess.run([sys.executable, "-m", "arenatui", "evaluate", "--project", str(bad), "--quiet"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert p.returncode == 2
    msg = _one_error_paragraph(p.stderr)
    assert "models[2].rpm" in msg
    assert p.stdout == ""


def test_init_writes_a_project_that_loads_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "proj"
    assert main(["init", str(d)]) == 0
    capsys.readouterr()
    from arenatui.project import load_project

    proj = load_project(d)
    assert len(proj.models) >= 1 and len(proj.cases) >= 1
    db = tmp_path / "r.db"
    code = main(["evaluate", "--project", str(d), "--db", str(db), "--quiet", "--concurrency", "16"])
    out = capsys.readouterr()
    assert code == 0, out.err
    n = len(proj.models) * len(proj.cases) * proj.run.trials
    assert f"= {n} calls in " in out.out
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM results").fetchone()[0] == n
    # writing again over it is refused with a clear error, --force overwrites
    assert main(["init", str(d)]) == 2
    assert "already exists" in _one_error_paragraph(capsys.readouterr().err)
    assert main(["init", str(d), "--force"]) == 0


def test_filters_and_summary_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = tmp_path / "arena.toml"
    proj.write_text(SMALL, encoding="utf-8")
    db = tmp_path / "r.db"
    code = main(["evaluate", "--project", str(proj), "--db", str(db), "--quiet", "--models", "fast",
                 "--tags", "math", "--trials", "2"])
    out = capsys.readouterr().out
    assert code == 0
    assert "1 model × 2 cases × 2 trials = 4 calls in " in out
    assert "Spend: $" in out and "Leaderboard" in out
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT model_key, case_id, trial FROM results ORDER BY 1, 2, 3").fetchall()
    assert rows == [("fast", "q1", 0), ("fast", "q1", 1), ("fast", "q3", 0), ("fast", "q3", 1)]


@pytest.mark.slow
def test_demo_summary_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["evaluate", "--project", str(DEMO), "--db", str(tmp_path / "demo.db"), "--quiet",
                 "--no-report", "--concurrency", "32", "--trials", "3"])  # the demo's 8 trials take ~25 s
    out = capsys.readouterr().out
    assert code == 0
    assert "4 models × 12 cases × 3 trials = 144 calls in " in out
    assert "Spend: $" in out
    with sqlite3.connect(tmp_path / "demo.db") as c:
        assert c.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 144

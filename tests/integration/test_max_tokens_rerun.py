"""max_tokens and timeout_s recommended from a stored sweep, end to end on simulated models of known behaviour:
the recommended max_tokens cuts no passing answer, and the tokens and spend it predicts saving are what a rerun
at that limit saves."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from arenatui.cli import main
from arenatui.commands.tune_budgets import budgets_for_run

# A classification task (answers of ~20 tokens) behind a generous limit; a wrong answer rambles for ~300 tokens.
PROJECT = """\
[project]
name = "budgets"

[defaults]
max_tokens = {max_tokens}

[run]
concurrency = 32
timeout_s = 30.0
seed = 11

[[models]]
key = "chatty"
provider = "sim"
price_out_per_mtok = 4.0
[models.sim]
base_latency_s = 0.002
per_token_s = 0.00002
jitter = 0.0
output_tokens = 20
wrong_tokens = 300
accuracy = 0.7
{cases}
"""


def _project(path: Path, max_tokens: int) -> Path:
    cases = "".join(f'\n[[cases]]\nid = "c{i:02d}"\ninput = "label {i}"\nexpected = "pos"\n' for i in range(80))
    path.write_text(PROJECT.format(max_tokens=max_tokens, cases=cases), encoding="utf-8")
    return path


def _rows(db: Path, run_id: str) -> dict[str, tuple[int, int, float]]:
    with sqlite3.connect(db) as conn:
        return {case: (passed, tokens, cost) for case, passed, tokens, cost in conn.execute(
            "SELECT case_id, passed, output_tokens, cost FROM results WHERE run_id = ?", (run_id,))}


def _last_run(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1").fetchone()[0])


def test_recommended_max_tokens_cuts_no_passing_answer_and_saves_what_it_predicts(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    assert main(["evaluate", "--project", str(_project(tmp_path / "a.toml", 1024)), "--db", str(db),
                 "--quiet", "--no-report"]) == 0
    first = _last_run(db)
    b = budgets_for_run(first, db)
    rec = b.max_tokens["chatty"]
    assert rec.action == "lower" and rec.value is not None, rec.verdict
    limit = int(rec.value)
    before = _rows(db, first)
    assert limit < 1024 and all(tokens <= limit for passed, tokens, _ in before.values() if passed)
    predicted_tokens = sum(t - limit for _, t, _ in before.values() if t > limit)
    assert predicted_tokens > 0 and any(f"{predicted_tokens} tokens" in d for d in rec.detail)

    assert main(["evaluate", "--project", str(_project(tmp_path / "b.toml", limit)), "--db", str(db),
                 "--quiet", "--no-report"]) == 0
    after = _rows(db, _last_run(db))
    # the same answers pass and fail at the lower limit: it cut no passing answer
    assert {c for c, r in before.items() if r[0]} == {c for c, r in after.items() if r[0]}
    saved_tokens = sum(r[1] for r in before.values()) - sum(r[1] for r in after.values())
    assert abs(saved_tokens - predicted_tokens) <= 0.1 * predicted_tokens
    saved_cost = sum(r[2] for r in before.values()) - sum(r[2] for r in after.values())
    assert abs(saved_cost - predicted_tokens * 4.0 / 1e6) <= 0.1 * predicted_tokens * 4.0 / 1e6
    # the timeout: 30 s is far above calls of a few ms
    assert b.timeouts["chatty"].action == "lower" and b.run_timeout is not None and b.run_timeout.value == 1.0


def test_tune_show_prints_the_three_recommendations(tmp_path: Path, capsys: object) -> None:
    db = tmp_path / "r.db"
    assert main(["evaluate", "--project", str(_project(tmp_path / "a.toml", 1024)), "--db", str(db),
                 "--quiet", "--no-report"]) == 0
    assert main(["tune", "--show", "last", "--db", str(db)]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "max_tokens lower 1024 →" in out  # the label names the setting once
    assert "[run] timeout_s lower 30 → 1 s" in out


def test_tune_write_max_tokens_writes_only_what_has_evidence(tmp_path: Path, capsys: object) -> None:
    """`--write max_tokens,timeout_s`: the lower limit and the run's timeout are written, nothing else changes."""
    import tomllib

    proj = _project(tmp_path / "arena.toml", 1024)
    assert main(["tune", "--project", str(proj), "--budget", "80", "--db", str(tmp_path / "t.db"),
                 "--write", "max_tokens,timeout_s"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    data = tomllib.loads(proj.read_text())
    assert data["models"][0]["max_tokens"] < 1024 and "max_concurrency" not in data["models"][0]
    assert data["run"]["timeout_s"] < 30.0
    assert "wrote max_tokens for chatty, [run] timeout_s into" in out
    assert main(["tune", "--project", str(proj), "--write", "concurrency,colour"]) == 2

"""The results store: schema versions, the public query, result identity, resume overwrites, no secrets."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from arenatui.kernel.errors import StoreError
from arenatui.kernel.events import CallResult
from arenatui.project import project_from_dict, project_to_dict
from arenatui.store import Store
from arenatui.store.schema import MIGRATIONS

PUBLIC_QUERY = """
SELECT model_key, COUNT(*) AS calls, ROUND(AVG(latency_ms)) AS mean_ms, ROUND(MAX(latency_ms)) AS max_ms,
       SUM(attempts) - COUNT(*) AS retries
FROM results WHERE run_id = ? GROUP BY model_key;
"""


def res(model: str, case: str, trial: int = 0, **kw: Any) -> CallResult:
    f: dict[str, Any] = dict(model_key=model, case_id=case, trial=trial, status="passed", output="ok", score=1.0,
                             passed=True, error_class=None, error_message=None, attempts=1, latency_ms=100.0,
                             total_ms=100.0, ttft_ms=None, input_tokens=3, output_tokens=2, cost=0.5,
                             finish_reason="stop", tokens_estimated=False, started_at=1.0, finished_at=2.0)
    f.update(kw)
    return CallResult(**f)


def cancelled(model: str, case: str, trial: int = 0) -> CallResult:
    return res(model, case, trial, status="errored", output=None, score=None, passed=False,
               error_class="cancelled", error_message="stopped", finished_at=1.5)


def test_fresh_database_is_at_the_latest_version_and_reopens(db_path: Path) -> None:
    with Store(db_path):
        pass
    with Store(db_path) as s:
        assert s.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_newer_schema_is_a_clear_store_error(db_path: Path) -> None:
    with Store(db_path):
        pass
    with sqlite3.connect(db_path) as c:
        c.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 3}")
    with pytest.raises(StoreError) as ei:
        Store(db_path)
    msg = str(ei.value)
    assert str(db_path) in msg and "newer" in msg and "upgrade arenatui" in msg


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    p = tmp_path / "junk.db"
    p.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError):
        Store(p)


def test_the_public_query_works_as_written(db_path: Path) -> None:
    with Store(db_path) as s:
        run = s.create_run("p", None, {}, {}, 4)
        other = s.create_run("p", None, {}, {}, 1)
        s.write_results(run, [res("a", "c1", latency_ms=100.0, attempts=3), res("a", "c2", latency_ms=200.4),
                              res("b", "c1", latency_ms=50.0, attempts=2),
                              res("b", "c2", status="errored", latency_ms=None, error_class="terminal")])
        s.write_results(other, [res("a", "c1", attempts=9)])
        rows = s.conn.execute(PUBLIC_QUERY, (run,)).fetchall()
    assert sorted(rows) == [("a", 2, 150.0, 200.0, 2), ("b", 2, 50.0, 50.0, 1)]


def test_result_identity_is_unique_and_final_rows_are_never_overwritten(db_path: Path) -> None:
    with Store(db_path) as s:
        run = s.create_run("p", None, {}, {}, 3)
        s.write_results(run, [res("a", "c1"), cancelled("a", "c2"), cancelled("a", "c3")])
        assert s.done_keys(run) == {"a": {("c1", 0)}}
        # resume: the cancelled ones are replaced, the final one is not (even by a later different result)
        s.write_results(run, [res("a", "c2", finished_at=9.0), res("a", "c1", status="failed", finished_at=9.0,
                                                                  output="later")])
        got = {r[0]: r[1:] for r in s.results(run, ("case_id", "status", "output", "finished_at", "error_class"))}
        assert got["c1"] == ("passed", "ok", 2.0, None)
        assert got["c2"] == ("passed", "ok", 9.0, None)
        assert got["c3"][0] == "errored" and got["c3"][3] == "cancelled"
        assert s.count_results(run) == 3
        # a final errored row is final too
        s.write_results(run, [res("a", "c4", status="errored", error_class="timeout", output=None)])
        s.write_results(run, [res("a", "c4")])
        assert s.result(run, "a", "c4", 0)["error_class"] == "timeout"  # type: ignore[index]
        # the key really is unique at the SQL level
        with pytest.raises(sqlite3.IntegrityError):
            s.conn.execute("INSERT INTO results SELECT * FROM results WHERE case_id = 'c1'")
        assert [r.stored for r in s.list_runs() if r.run_id == run] == [3]  # cancelled c3 not counted


def test_config_snapshot_holds_no_secret_values(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-DO-NOT-STORE-0123456789abcdef"
    monkeypatch.setenv("MY_PROVIDER_KEY", secret)
    proj = project_from_dict({
        "models": [{"key": "gpt", "provider": "openai", "api_key_env": "MY_PROVIDER_KEY",
                    "base_url": "http://localhost:9/v1"}, {"key": "s", "provider": "sim"}],
        "cases": [{"id": "c", "input": "x"}]}, Path("p.toml"))
    with Store(db_path) as s:
        run = s.create_run(proj.name, str(proj.path), project_to_dict(proj), {}, 2)
        rec = s.get_run("last")
    assert rec.run_id == run
    dumped = json.dumps(rec.config)
    assert secret not in dumped
    assert rec.config["models"][0]["api_key_env"] == "MY_PROVIDER_KEY"
    assert secret.encode() not in db_path.read_bytes()
    # the snapshot is a loadable project: resume rebuilds the same thing
    again = project_from_dict(rec.config, Path("p.toml"))
    assert again.models == proj.models and again.cases == proj.cases and again.run == proj.run


def test_call_result_fields_are_the_results_columns_in_order() -> None:
    # the writer builds rows as (run_id, *result, variant): a reordered field would silently shift columns
    from arenatui.kernel.events import CallResult
    from arenatui.store.db import result_row
    from arenatui.store.schema import RESULT_COLUMNS

    assert ("run_id", *CallResult._fields, "reasoning_estimated", "variant") == RESULT_COLUMNS
    r = CallResult("m · terse", "c", 0, "passed", "x", 1.0, True, None, None, 1, 1.0, 1.0, None, 1, 1, 0.0, "stop",
                   False, 0.0, 0.0)
    row = dict(zip(RESULT_COLUMNS, result_row("run", r), strict=True))
    assert (row["model_key"], row["variant"], row["case_id"]) == ("m", "terse", "c")  # a variant lane split apart
    assert dict(zip(RESULT_COLUMNS, result_row("run", r._replace(model_key="m")), strict=True))["variant"] == ""
    from arenatui.kernel.events import ReasoningKept

    reasoned = dict(zip(RESULT_COLUMNS, result_row("run", r._replace(
        model_key="m", reasoning_tokens=9, reasoning=ReasoningKept("hm", True))), strict=True))
    assert (reasoned["reasoning"], reasoned["reasoning_estimated"], reasoned["reasoning_tokens"], reasoned["variant"]) \
        == ("hm", 1, 9, "")
    assert row["reasoning"] is None and row["reasoning_estimated"] == 0

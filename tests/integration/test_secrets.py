"""No API key reaches the database, the logs or the output, even when a server echoes request headers back."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

import pytest
from httpkit import MockServerProcess, write_project

from arenatui.cli import main


def test_canary_key_never_leaves_the_environment(mock_server: MockServerProcess, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    canary = "cnry" + secrets.token_hex(6)  # short and plain: only the known-value scrub can catch it
    monkeypatch.setenv("ARENA_CANARY_KEY", canary)
    keys = ["oa-echo", "an-echo", "oa-echo-5xx", "an-echo-5xx", "oa-ok", "an-ok"]
    models = [dict(mock_server.models[k], api_key_env="ARENA_CANARY_KEY") for k in keys]
    project = write_project(tmp_path / "secrets.toml", mock_server.url, models, run={"max_attempts": 2})
    db = tmp_path / "secrets.db"
    caplog.set_level(logging.DEBUG)
    # The echo models error on every call by design: accept that (by default a dead model fails the run).
    code = main(["evaluate", "--project", str(project), "--db", str(db), "--concurrency", "4",
                 "--fail-on-error", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    places = {"stdout": out, "stderr": err, "logs": caplog.text}
    for p in (db, db.with_name(db.name + "-wal")):
        if p.exists():
            places[p.name] = p.read_bytes().decode("latin-1")
    for where, text in places.items():
        assert canary not in text, f"the canary key leaked into {where}"
    # The echoed headers did arrive (scrubbed): the test would prove nothing if they had not.
    import sqlite3

    with sqlite3.connect(db) as conn:
        msgs = [r[0] for r in conn.execute("SELECT error_message FROM results WHERE error_message IS NOT NULL")]
    assert any("request headers" in m and "[redacted]" in m for m in msgs), msgs


def test_missing_key_variable_is_a_setup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ARENA_NO_SUCH_KEY", raising=False)
    monkeypatch.setenv("ARENA_SET_KEY", "sk-set-value-never-shown")
    models = [{"key": "has-key", "provider": "openai", "model": "m", "api_key_env": "ARENA_SET_KEY"},
              {"key": "needs-key", "provider": "anthropic", "model": "m", "api_key_env": "ARENA_NO_SUCH_KEY"}]
    project = write_project(tmp_path / "nokey.toml", "http://127.0.0.1:9", models)
    code = main(["evaluate", "--project", str(project), "--db", str(tmp_path / "nokey.db")])
    out, err = capsys.readouterr()
    assert code == 2
    said = " ".join(err.split())  # one paragraph, wrapped
    # where to fix it: the project file, the model's key in it, and the variable it expected
    assert said.startswith(f"error: {project}: models[1].api_key_env: model 'needs-key' reads its API key from "
                           "the environment variable ARENA_NO_SUCH_KEY, which is not set"), said
    assert "Traceback" not in err and "sk-set-value-never-shown" not in out + err

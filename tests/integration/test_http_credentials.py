"""Issue 9, leak and server items against real HTTP: credentials in base_url and headers never reach the store,
the output or the logs, a resumed run still sends them, and the mock server refuses a lone surrogate cleanly."""

from __future__ import annotations

import base64
import json
import logging
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import tomli_w
from httpkit import MockServerProcess

from arenatui.cli import main
from arenatui.kernel.errors import ConfigError
from arenatui.kernel.events import CallFinished
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store

USER_PW = "alice:pw-9f3kq"  # short and plain: only the URL rules and the known-value scrub can catch it
HEADER_SECRET = "hdr-canary-7d2p"
COOKIE_SECRET = "cookie-canary-4x8m"
QUERY_SECRET = "qp-canary-3k9z"
CANARIES = ("pw-9f3kq", base64.b64encode(USER_PW.encode()).decode(), HEADER_SECRET, COOKIE_SECRET, QUERY_SECRET)


@dataclass
class Recorder:
    """A tiny OpenAI-shaped server on 127.0.0.1 that records each request's headers; model "echo" answers
    401 with every request header in its error body, as some gateways do."""

    url: str = ""
    seen: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            headers = dict(self.headers.items())
            rec.seen.append(headers)
            rec.paths.append(self.path)
            if body.get("model") == "echo":
                status, out = 401, {"error": {"message": "unauthorized; request headers: " + json.dumps(headers),
                                              "type": "authentication_error"}}
            else:
                status, out = 200, {"id": "x", "object": "chat.completion", "model": body.get("model"),
                                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris"},
                                                 "finish_reason": "stop"}],
                                    "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
            data = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    rec.url = f"http://{USER_PW}@127.0.0.1:{server.server_address[1]}/v1?api_key={QUERY_SECRET}&api-version=1"
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()


def write(tmp_path: Path, base_url: str, models: list[str], transport: str = "auto", cases: int = 3) -> Path:
    doc = {
        "project": {"name": "leaks"},
        "run": {"concurrency": 1, "max_attempts": 1, "timeout_s": 10.0},
        "models": [{"key": m, "provider": "openai", "model": m, "base_url": base_url, "stream": False,
                    "transport": transport, "headers": {"X-Goog-Api-Key": HEADER_SECRET, "X-Trace": "t1"},
                    "headers_env": {"Cookie": "ARENA_TEST_COOKIE"}} for m in models],
        "cases": [{"id": f"c{i}", "input": f"What is the capital of France? ({i})", "expected": "Paris"}
                  for i in range(cases)],
    }
    p = tmp_path / "arena.toml"
    p.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return p


def stored_text(db: Path) -> str:
    text = ""
    for p in (db, db.with_name(db.name + "-wal")):
        if p.exists():
            text += p.read_bytes().decode("latin-1")
    return text


def config_json(db: Path) -> dict[str, Any]:
    with sqlite3.connect(db) as conn:
        (raw,) = conn.execute("SELECT config_json FROM runs").fetchone()
    return dict(json.loads(raw))


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
def test_credentials_in_base_url_and_headers_are_sent_never_stored_or_shown(
        recorder: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str], transport: str) -> None:
    monkeypatch.setenv("ARENA_TEST_COOKIE", COOKIE_SECRET)
    project = write(tmp_path, recorder.url, ["ok", "echo"], transport)
    db = tmp_path / "r.db"
    caplog.set_level(logging.DEBUG)
    # the echo model errors on every call by design: accept that instead of failing the run
    code = main(["evaluate", "-p", str(project), "--db", str(db), "--fail-on-error", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    # Sent: the proof that redaction did not simply drop them.
    assert len(recorder.seen) == 6
    assert set(recorder.paths) == {f"/v1/chat/completions?api_key={QUERY_SECRET}&api-version=1"}
    for h in recorder.seen:
        low = {k.lower(): v for k, v in h.items()}
        assert low["authorization"] == "Basic " + base64.b64encode(USER_PW.encode()).decode()
        assert low["x-goog-api-key"] == HEADER_SECRET and low["cookie"] == COOKIE_SECRET and low["x-trace"] == "t1"
    # Never stored, shown or logged.
    places = {"stdout": out, "stderr": err, "logs": caplog.text, "db": stored_text(db)}
    for where, text in places.items():
        for canary in CANARIES:
            assert canary not in text, f"{canary!r} leaked into {where}"
    cfg = config_json(db)
    m = cfg["models"][0]
    assert m["base_url"].startswith("http://[redacted]@127.0.0.1:")
    assert m["base_url"].endswith("/v1?api_key=[redacted]&api-version=1")
    assert m["headers"] == {"X-Goog-Api-Key": "[redacted]", "X-Trace": "[redacted]"}
    assert m["headers_env"] == {"Cookie": "ARENA_TEST_COOKIE"}
    # The echoed headers did arrive in the stored error (scrubbed): otherwise this test would prove nothing.
    with sqlite3.connect(db) as conn:
        msgs = [r[0] for r in conn.execute("SELECT error_message FROM results WHERE error_message IS NOT NULL")]
    assert len(msgs) == 3 and all("request headers" in s and "[redacted]" in s for s in msgs), msgs


def test_a_resumed_run_still_sends_the_redacted_credentials(recorder: Recorder, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_TEST_COOKIE", COOKIE_SECRET)
    project = write(tmp_path, recorder.url, ["ok"], cases=3)
    db = tmp_path / "r.db"
    holder: list[Sweep] = []

    def stop_after_one(ev: object) -> None:  # an interrupted run: one call made, the rest left to resume
        if isinstance(ev, CallFinished):
            holder[0].runner.cancel()

    sweep = Sweep(SweepOptions(project=project, db=db), extra_sinks=(stop_after_one,))
    holder.append(sweep)
    assert anyio.run(sweep.run) == "cancelled"
    made = len(recorder.seen)
    assert 1 <= made < 3
    assert HEADER_SECRET not in json.dumps(config_json(db)) and "pw-9f3kq" not in json.dumps(config_json(db))

    resumed = Sweep(SweepOptions(resume=sweep.run_id, db=db))
    assert resumed.resumed and resumed.plan.remaining == 3 - made
    assert anyio.run(resumed.run) == "finished"
    later = recorder.seen[made:]
    assert len(later) == 3 - made
    assert all(QUERY_SECRET in path for path in recorder.paths[made:])
    for h in later:
        low = {k.lower(): v for k, v in h.items()}
        assert low["authorization"] == "Basic " + base64.b64encode(USER_PW.encode()).decode()
        assert low["x-goog-api-key"] == HEADER_SECRET and low["cookie"] == COOKIE_SECRET
    for canary in CANARIES:
        assert canary not in stored_text(db)


def test_resume_without_the_project_file_says_what_is_missing(recorder: Recorder, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_TEST_COOKIE", COOKIE_SECRET)
    project = write(tmp_path, recorder.url, ["ok"], cases=2)
    db = tmp_path / "r.db"
    sweep = Sweep(SweepOptions(project=project, db=db))  # recorded, never run
    with Store(db) as store:
        store.mark_run(sweep.run_id, "cancelled")  # as an interrupted run ends
    project.unlink()
    with pytest.raises(ConfigError) as ei:
        Sweep(SweepOptions(resume=sweep.run_id, db=db))
    e = ei.value
    assert e.file == str(project) and e.key == "models[0].base_url"
    assert "without its credential" in e.expected and "restore the project file" in e.expected


def test_mock_server_answers_a_lone_surrogate_with_a_clean_400(mock_server: MockServerProcess) -> None:
    before = len(mock_server.lines)
    for path, extra in (("/v1/chat/completions", {}), ("/v1/messages", {})):
        body = ('{"model": "oa-ok", "max_tokens": 5, "messages": [{"role": "user", "content": "bad\\ud800id"}]'
                + "".join(f', "{k}": {json.dumps(v)}' for k, v in extra.items()) + "}")
        r = httpx.post(mock_server.url + path, content=body.encode(), headers={"content-type": "application/json"},
                       timeout=10)
        assert r.status_code == 400, r.text
        msg = json.dumps(r.json())
        assert "lone surrogate" in msg and "messages[0].content" in msg
    r = httpx.post(mock_server.url + "/v1/chat/completions", content=b'{"a": ' + b"[" * 100_000 + b"]" * 100_000
                   + b"}", headers={"content-type": "application/json"}, timeout=10)
    assert r.status_code in (400, 413)
    # The server keeps serving, and logged no traceback.
    r = httpx.post(mock_server.url + "/v1/chat/completions", json={"model": "oa-ok", "max_tokens": 5, "messages": [
        {"role": "user", "content": "hello"}]}, timeout=10)
    assert r.status_code == 200
    assert not any("Traceback" in line for line in mock_server.lines[before:]), mock_server.lines[before:]

"""Real sweeps through the OpenAI and Anthropic providers against `arena mock-server` on loopback.

Every test runs over each HTTP transport (`wire`): streaming, retries, timeouts and error classes
must not depend on the client library.
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
from pathlib import Path

import pytest
from httpkit import (
    PROVIDERS,
    RETRY_AFTER_FORMS,
    TERMINAL_FAULTS,
    TIMEOUT_FAULTS,
    TRANSIENT_FAULTS,
    WIRES,
    MockServerProcess,
    run_sweep,
)

from arenatui.kernel.events import CallRetrying, CallStarted
from arenatui.store import Store


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _models(server: MockServerProcess, *keys: str) -> list[dict[str, object]]:
    return [server.models[k] for k in keys]


def test_answers_stream_and_not(mock_server: MockServerProcess, tmp_path: Path, wire: str) -> None:
    keys = [f"{p}-{v}" for p in PROVIDERS for v in ("ok", "ok-ns")]
    out = run_sweep(tmp_path, mock_server.url, _models(mock_server, *keys), run={"trials": 2}, transport=wire)
    assert out.status == "finished"
    assert len(out.rows) == len(keys) * 3 * 2
    for (model, case, _), r in out.rows.items():
        assert r["status"] == "passed", (model, case, r["error_message"])
        assert r["attempts"] == 1
        assert r["input_tokens"] > 0 and r["output_tokens"] > 0
        assert r["tokens_estimated"] == 0  # usage came from the server, streamed or not
        assert r["finish_reason"] == "stop"
        # the transport stamped when the request went out (with no stamp it would be exactly 0), and that wait
        # is kept apart from the latency
        assert r["connect_ms"] is not None and r["connect_ms"] > 0
        assert r["latency_ms"] + r["connect_ms"] <= r["total_ms"] + 0.5
        if model.endswith("-ns"):
            assert r["ttft_ms"] is None
        else:
            assert r["ttft_ms"] is not None and 0 < r["ttft_ms"] <= r["latency_ms"]


def test_max_tokens_is_finish_reason_length(mock_server: MockServerProcess, tmp_path: Path, wire: str) -> None:
    keys = [f"{p}-{v}" for p in PROVIDERS for v in ("long", "long-ns")]
    out = run_sweep(tmp_path, mock_server.url, _models(mock_server, *keys), limit=1, transport=wire)
    for r in out.rows.values():
        assert r["finish_reason"] == "length"  # Anthropic's max_tokens, normalised
        assert r["output_tokens"] == 32  # capped at [defaults].max_tokens


@pytest.mark.parametrize("fault", TRANSIENT_FAULTS)
def test_transient_faults_are_retried_then_stored(mock_server: MockServerProcess, tmp_path: Path,
                                                  fault: str, wire: str) -> None:
    keys = [f"{p}-{fault}{ns}" for p in PROVIDERS for ns in ("", "-ns")]
    out = run_sweep(tmp_path, mock_server.url, _models(mock_server, *keys), limit=1, transport=wire)
    assert len(out.rows) == len(keys)
    for (model, _, _), r in out.rows.items():
        assert r["status"] == "errored"
        # a stream that ends cleanly without its end marker is told apart (non-streamed, half a body is malformed),
        # and so is an answer without a finish reason, streamed or whole (llama-cpp-python's interrupted stream)
        cut = (fault == "truncated" and not model.endswith("-ns")) or fault == "interrupted"
        assert r["error_class"] == ("incomplete_stream" if cut else "transient"), (model, r["error_message"])
        assert r["attempts"] == 3
        assert len(out.of(CallStarted, model)) == 3


@pytest.mark.parametrize("fault", TERMINAL_FAULTS)
def test_terminal_faults_make_exactly_one_attempt(mock_server: MockServerProcess, tmp_path: Path,
                                                  fault: str, wire: str) -> None:
    keys = [f"{p}-{fault}{ns}" for p in PROVIDERS for ns in ("", "-ns")]
    out = run_sweep(tmp_path, mock_server.url, _models(mock_server, *keys), limit=1, transport=wire)
    for (model, _, _), r in out.rows.items():
        assert r["error_class"] == "terminal", (model, r["error_message"])
        assert r["attempts"] == 1
        assert f"HTTP {fault}" in r["error_message"]
        assert r["connect_ms"] is not None and r["connect_ms"] > 0  # a refusal is timed from the wire too
        assert len(out.of(CallStarted, model)) == 1
        assert not out.of(CallRetrying, model)


@pytest.mark.parametrize("fault", TIMEOUT_FAULTS)
def test_timeouts_hold_on_hanging_and_trickling_servers(mock_server: MockServerProcess, tmp_path: Path,
                                                        fault: str, wire: str) -> None:
    timeout = 0.4
    keys = [f"{p}-{fault}{ns}" for p in PROVIDERS for ns in ("", "-ns")]
    t0 = time.monotonic()
    out = run_sweep(tmp_path, mock_server.url, _models(mock_server, *keys), limit=1,
                    run={"timeout_s": timeout, "max_attempts": 2}, transport=wire)
    # calls run side by side, each attempt cut at the deadline; the ceilings are generous for a busy machine and
    # still far below an uncut attempt (a hang lasts an hour, a trickle a byte per 0.2 s: tens of seconds)
    assert time.monotonic() - t0 < 2 * timeout + 15.0
    for (model, _, _), r in out.rows.items():
        assert r["error_class"] == "timeout", (model, r["error_message"])
        assert r["attempts"] == 2
        assert timeout * 1000 - 20 <= r["latency_ms"] <= timeout * 1000 + 5000


def test_a_timeout_tells_a_hung_stream_from_a_slow_one(mock_server: MockServerProcess, tmp_path: Path,
                                                       wire: str) -> None:
    """Issue 27: a streamed attempt cut by its timeout records whether its first token had come (slow) or not
    (probably hung); a non-streamed one cannot tell, and timeout_s's evidence says nothing rather than guess."""
    from arenatui.results.budgets import budget_evidence

    hung = [f"{p}-hang" for p in PROVIDERS]
    slow = [f"{p}-slow-stream" for p in PROVIDERS]
    blind = [f"{p}-hang-ns" for p in PROVIDERS]
    out = run_sweep(tmp_path, mock_server.url, _models(mock_server, *hung, *slow, *blind), limit=2,
                    run={"timeout_s": 1.5, "max_attempts": 2}, transport=wire)
    for (model, _, _), r in out.rows.items():
        assert r["error_class"] == "timeout", (model, r["error_message"])
    for ev in out.of(CallRetrying):
        assert ev.streamed_timeout == (ev.model_key not in blind)
        assert (ev.first_token_ms is not None) == (ev.model_key in slow), ev
    with Store(out.db) as store:
        evidence = budget_evidence(store, out.run_id)
        attempts = {k: v for k, _, _, _, _, v in store.conn.execute(
            "SELECT model_key, case_id, trial, attempt, error_class, ttft_ms FROM failed_attempts")}
    for key in hung + slow + blind:
        ev = evidence.timeout_evidence(key)
        assert ev.timed_out == 4  # two cases, two attempts each
        assert ev.timed_out_no_first_byte == {**dict.fromkeys(hung, 4), **dict.fromkeys(slow, 0)}.get(key), key
    assert all(attempts[k] is not None and 0 < attempts[k] < 1500 for k in slow)


@pytest.mark.parametrize("form", RETRY_AFTER_FORMS)
def test_429_retry_after_is_honoured(mock_server: MockServerProcess, tmp_path: Path, form: str, wire: str) -> None:
    asked = 0.3
    keys = [f"{p}-429-{form}" for p in PROVIDERS]
    wall_offset = time.time() - time.monotonic()
    out = run_sweep(tmp_path, mock_server.url, _models(mock_server, *keys), limit=1, run={"max_attempts": 2},
                    transport=wire)
    for model in keys:
        (r,) = out.by_model(model)
        assert r["error_class"] == "rate_limited" and r["attempts"] == 2
        assert r["connect_ms"] is not None and r["connect_ms"] > 0 and r["latency_ms"] < 10_000  # answered, not hung
        starts = sorted(out.of(CallStarted, model), key=lambda e: e.attempt)
        (retrying,) = out.of(CallRetrying, model)
        assert retrying.reason == "rate_limited"
        gap = starts[1].t - retrying.t
        source = {"ms": "retry-after-ms", "both": "retry-after-ms", "seconds": "retry-after", "date": "retry-after",
                  "llm_provider": "llm_provider-retry-after", "openai_reset": "x-ratelimit-reset-requests",
                  "anthropic_reset": "anthropic-ratelimit-requests-reset", "none": None}[form]
        assert retrying.retry_after_source == source
        with sqlite3.connect(out.db) as c:
            stored = c.execute("SELECT retry_after_s, retry_after_source FROM failed_attempts WHERE model_key = ? "
                               "AND delay_s IS NOT NULL", (model,)).fetchall()
        assert stored == [(retrying.retry_after, source)]
        with sqlite3.connect(out.db) as c:  # the last attempt, not retried, keeps what it was told too
            last = c.execute("SELECT retry_after_s, retry_after_source FROM failed_attempts WHERE model_key = ? "
                             "AND delay_s IS NULL", (model,)).fetchall()
        assert len(last) == 1 and last[0][1] == source and (last[0][0] is None) == (source is None)
        if form in ("ms", "both", "openai_reset"):  # retry-after-ms wins when both are sent; a reset in ms
            assert retrying.delay >= asked and gap >= asked
            assert retrying.delay < 1.0
        elif form in ("seconds", "llm_provider"):  # whole seconds, rounded up by the server
            assert retrying.delay >= 1.0 and gap >= 1.0
        elif form == "none":  # no hint: the engine's own backoff
            assert retrying.retry_after is None
        else:  # an HTTP date or an RFC 3339 time: the retry starts no earlier than the second it names
            earliest = math.ceil(starts[0].t + wall_offset + asked)
            assert starts[1].t + wall_offset >= earliest - 0.005


def test_provider_rate_limit_from_simcore(mock_server: MockServerProcess, tmp_path: Path, wire: str) -> None:
    keys = [f"{p}-limited" for p in PROVIDERS]
    out = run_sweep(tmp_path, mock_server.url, _models(mock_server, *keys),
                    run={"max_attempts": 8, "concurrency": 6}, transport=wire)
    assert all(r["status"] == "passed" for r in out.rows.values())
    retries = out.of(CallRetrying)
    assert retries and all(e.reason == "rate_limited" for e in retries)
    starts = {(e.model_key, e.case_id, e.trial, e.attempt): e.t for e in out.of(CallStarted)}
    for e in retries:
        assert starts[(e.model_key, e.case_id, e.trial, e.attempt + 1)] >= e.t + e.delay


def test_serial_model_serves_one_at_a_time(mock_server: MockServerProcess, tmp_path: Path, wire: str) -> None:
    keys = [f"{p}-serial" for p in PROVIDERS]
    out = run_sweep(tmp_path, mock_server.url, _models(mock_server, *keys), run={"trials": 2}, transport=wire)
    for model in keys:
        rows = out.by_model(model)
        assert all(r["status"] == "passed" for r in rows)
        span = max(r["finished_at"] for r in rows) - min(r["started_at"] for r in rows)
        assert span >= 0.9 * 0.04 * len(rows)  # six answers of 40 ms, queued one behind another


def test_unknown_model_is_terminal(mock_server: MockServerProcess, tmp_path: Path, wire: str) -> None:
    models = [dict(mock_server.models["oa-ok"], key="nobody", model="no-such-model"),
              dict(mock_server.models["an-ok"], key="nobody-an", model="no-such-model")]
    out = run_sweep(tmp_path, mock_server.url, models, limit=1, transport=wire)
    for r in out.rows.values():
        assert r["error_class"] == "terminal" and r["attempts"] == 1 and "HTTP 404" in r["error_message"]


def test_connection_refused_is_transient(tmp_path: Path, wire: str) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    models = [{"key": "gone", "provider": "openai", "model": "m"}]
    out = run_sweep(tmp_path, f"http://127.0.0.1:{port}", models, limit=1, transport=wire)
    (r,) = out.rows.values()
    assert r["error_class"] == "transient" and r["attempts"] == 3
    assert re.search(r"Connect(or)?Error talking to gone", r["error_message"])

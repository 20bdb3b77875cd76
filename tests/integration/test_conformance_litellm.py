"""Conformance against the litellm proxy (a server we did not write) in front of llama-cpp-python's server, with a
requests-per-minute limit: how it refuses (429 and its retry hint), which rate-limit headers it declares, what it does
to streams, and what arenatui records for each. Skips, saying what to install, when either server is absent.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from httpkit import run_sweep, write_project
from realservers import (
    LITELLM_KEY,
    LITELLM_KEY_ENV,
    MODEL_ALIAS,
    Server,
    chat,
    litellm_proxy,
    llama_server,
    open_request,
    post,
    read_response,
    servers,
)

from arenatui.kernel.errors import RateLimited
from arenatui.project import load_project
from arenatui.providers.base import Completion, Request, build_messages
from arenatui.providers.registry import make_provider

pytestmark = [servers, pytest.mark.timeout(600)]

LIMITED = "gemma-limited"
"""The proxy's model group with rpm 1: one request a minute passes, the next is refused. Each check below allows one
request to pass first, in case the minute turned between two checks."""


@pytest.fixture(scope="module")
def llama() -> Iterator[Server]:
    yield from llama_server()


@pytest.fixture(scope="module")
def proxy(llama: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from litellm_proxy(tmp_path_factory.mktemp("litellm"), f"{llama.url}/v1", {MODEL_ALIAS: 1000, LIMITED: 1})


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LITELLM_KEY_ENV, LITELLM_KEY)


def _model(key: str, name: str, stream: bool, **kw: Any) -> dict[str, Any]:
    return {"key": key, "provider": "openai", "model": name, "stream": stream, "api_key_env": LITELLM_KEY_ENV,
            "max_tokens": 8, **kw}


def _sweep(tmp_path: Path, proxy: Server, models: list[dict[str, Any]], **run: Any) -> Any:
    return run_sweep(tmp_path, proxy.url, models, run={"timeout_s": 120.0, "backoff_base_s": 0.05,
                                                        "backoff_cap_s": 0.5, "concurrency": 1, **run})


def test_over_its_rpm_it_answers_429_with_only_its_own_retry_hint(proxy: Server, tmp_path: Path, key: None) -> None:
    # three in a row: however slow the answers, a minute boundary falls between two of them at most once, so two
    # share a minute at an rpm of 1 and one of those is refused (two alone passed when the minute turned between)
    tries = [post(proxy.url, "/v1/chat/completions", chat("Hello", max_tokens=4, model=LIMITED)) for _ in range(3)]
    assert {r.status for r in tries} <= {200, 429} and 429 in [r.status for r in tries]
    refused = next(r for r in tries if r.status == 429)
    # its own header, a fixed 60 s; no Retry-After, no x-ratelimit-* on the refusal
    assert refused.headers["llm_provider-retry-after"] == "60"
    assert "retry-after" not in refused.headers and "retry-after-ms" not in refused.headers
    assert not [h for h in refused.headers if h.startswith("x-ratelimit-")]
    error = refused.json()["error"]
    assert error["type"] == "throttling_error" and error["code"] == "429"
    assert "No deployments available" in error["message"]
    # arenatui's provider: rate limited, the delay read from litellm's own header
    for stream in (True, False):
        refusal = _refusal(tmp_path, proxy, _model("limited", LIMITED, stream=stream))
        assert refusal.http_status == 429
        assert (refusal.retry_after, refusal.retry_after_source) == (60.0, "llm_provider-retry-after")
    # and a sweep stores the calls rate_limited (one attempt each: a retry would honour the 60 s)
    out = _sweep(tmp_path, proxy, [_model("limited", LIMITED, stream=True)], max_attempts=1)
    classes = [r["error_class"] for r in out.rows.values()]
    assert classes.count("rate_limited") >= len(classes) - 1 and set(classes) <= {"rate_limited", None}
    with sqlite3.connect(out.db) as c:
        statuses = {s for (s,) in c.execute("SELECT http_status FROM failed_attempts WHERE run_id = ?",
                                            (out.run_id,))}
    assert statuses == {429}


def _refusal(tmp_path: Path, proxy: Server, model: dict[str, Any]) -> RateLimited:
    """The refusal of one of two calls (the first may pass when the minute has just turned)."""
    for _ in range(2):
        try:
            _complete(tmp_path, proxy, model)
        except RateLimited as e:
            return e
    raise AssertionError("litellm answered two calls in a row past an rpm of 1")


def _complete(tmp_path: Path, proxy: Server, model: dict[str, Any]) -> Completion:
    """One request through arenatui's own provider object, as a sweep makes it."""
    # the server's first answer after its start takes seconds: longer than write_project's 5 s default
    project = load_project(write_project(tmp_path / "one.toml", proxy.url, [model], run={"timeout_s": 120.0}))
    m, case = project.models[0], project.cases[0]
    provider = make_provider(m, project.run)
    request = Request(m, case, 0, 1, build_messages(m, project.defaults, case), 8, 0.0, 120.0)

    async def go() -> Completion:
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    return anyio.run(go)


def test_answers_declare_the_request_limit_and_forward_upstream_headers(proxy: Server, tmp_path: Path,
                                                                         key: None) -> None:
    for stream in (False, True):
        # arenatui reads the declared limit on every answer: requests per minute and what is left of it
        comp = _complete(tmp_path, proxy, _model("st" if stream else "ns", MODEL_ALIAS, stream=stream))
        assert comp.limits is not None and comp.limits.requests_limit == 1000, comp.limits
        assert comp.limits.requests_remaining is not None and comp.limits.tokens_limit is None
        raw = post(proxy.url, "/v1/chat/completions", chat("Hello", max_tokens=4, stream=stream))
        assert raw.status == 200
        assert raw.headers["x-ratelimit-limit-requests"] == "1000"
        assert 0 <= int(raw.headers["x-ratelimit-remaining-requests"]) < 1000
        # no reset header, no token limits (none configured)
        assert not [h for h in raw.headers if h.startswith("x-ratelimit-reset") or "tokens" in h]
        # the upstream's own headers come through prefixed
        assert raw.headers["llm_provider-content-type"].startswith(
            "text/event-stream" if stream else "application/json")


def test_streams_pass_through_with_a_finish_reason_and_usage_when_asked(proxy: Server, tmp_path: Path,
                                                                        key: None) -> None:
    raw = post(proxy.url, "/v1/chat/completions", chat("What is the capital of France?", max_tokens=16, stream=True,
                                                       stream_options={"include_usage": True}))
    chunks = raw.chunks()
    assert raw.events[-1] == "[DONE]"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert [f for f in raw.finish_reasons if f] in (["stop"], ["length"])
    # llama.cpp sent no usage; litellm counts it itself and sends it last
    assert chunks[-1]["usage"]["prompt_tokens"] > 0 and chunks[-1]["usage"]["completion_tokens"] > 0
    # arenatui: an answer whose tokens are litellm's counts (not flagged as estimated)
    out = _sweep(tmp_path, proxy, [_model("st", MODEL_ALIAS, stream=True)])
    for r in out.rows.values():
        assert r["error_class"] is None and r["finish_reason"] in ("stop", "length"), r
        assert r["tokens_estimated"] == 0


def _interrupted(proxy: Server) -> Any:
    """A long stream through the proxy, and a second request sent once the first has sent its first event."""
    first = open_request(proxy.url, "/v1/chat/completions",
                         chat("Count from 1 to 200, separated by commas.", max_tokens=200, stream=True))
    started = threading.Event()
    second: list[Any] = []

    def send_second() -> None:
        started.wait(60)
        second.append(post(proxy.url, "/v1/chat/completions", chat("Hello", max_tokens=4)))

    t = threading.Thread(target=send_second)
    t.start()
    raw = read_response(first, on_event=lambda _: started.set())
    t.join(120)
    assert second[0].status == 200
    return raw


def test_it_closes_an_interrupted_upstream_stream_with_finish_reason_stop(proxy: Server, llama: Server) -> None:
    before = sum("Disconnected" in line for line in llama.lines)
    raw = _interrupted(proxy)
    # llama.cpp interrupted it (role chunk, a few tokens, [DONE], no finish reason: test_conformance_llamacpp) ...
    assert sum("Disconnected" in line for line in llama.lines) > before
    assert raw.status == 200 and raw.events[-1] == "[DONE]" and len(raw.text) < 100
    # ... and litellm closes it as if it had ended: a last chunk with finish_reason "stop". On the wire behind the
    # proxy an interrupted answer looks like a complete short one; only an empty one can still be told apart.
    assert raw.chunks()[-1]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert [f for f in raw.finish_reasons if f] == ["stop"]


def test_a_sweep_through_the_proxy_stores_interrupted_answers_as_answers(proxy: Server, llama: Server,
                                                                          tmp_path: Path, key: None) -> None:
    before = sum("Disconnected" in line for line in llama.lines)
    out = _sweep(tmp_path, proxy, [_model("st", MODEL_ALIAS, stream=True, max_tokens=32)], concurrency=3,
                 max_attempts=1)
    # llama.cpp interrupted streams ...
    assert sum("Disconnected" in line for line in llama.lines) > before
    # ... and every one reached arenatui as a finished answer (litellm's finish_reason "stop"): nothing on the
    # wire says otherwise, so none is incomplete_stream
    for r in out.rows.values():
        assert r["error_class"] is None and r["finish_reason"] in ("stop", "length"), r

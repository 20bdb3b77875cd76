"""Input tokens of a server that reports no usage count the chat template: measured once on a local server with a
tokenizer endpoint (llama-cpp-python's /extras/tokenize/count, llama.cpp's /tokenize), else a fixed estimate."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from arenatui.config.schema import Case, ModelConfig, RunSettings
from arenatui.providers.base import Request, estimate_tokens, prepared
from arenatui.providers.http import TEMPLATE_TOKENS_PER_MESSAGE, TEMPLATE_TOKENS_PRIMING, template_tokens
from arenatui.providers.openai import PROBE, OpenAIProvider, local_server

CASE = Case(id="c1", input="What is 2+2?", expected="4")
MSGS = ({"role": "user", "content": "What is 2+2?"},)
SYSTEM = {"role": "system", "content": "Be terse, precise and quick about it."}
STREAM = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in (
    {"choices": [{"delta": {"role": "assistant"}, "finish_reason": None}]},
    {"choices": [{"delta": {"content": "4"}, "finish_reason": None}]},
    {"choices": [{"delta": {}, "finish_reason": "stop"}]})) + b"data: [DONE]\n\n"
SERVER_TEMPLATE = 9
"""The template's tokens on the fake server: its prompt count of the probe is the tokenizer's count plus these."""


def _calls(base_url: str, tokenizer: str | None, n: int = 2) -> tuple[list[Any], list[str]]:
    """`n` streamed calls against a llama-cpp-python-like server (streams without usage, bodies with it)."""
    seen: list[str] = []
    model = ModelConfig(key="m", provider="openai", model="mm", base_url=base_url, stream=True)

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req.url.path)
        body = json.loads(req.content)
        if req.url.path == tokenizer == "/extras/tokenize/count":
            return httpx.Response(200, json={"count": estimate_tokens(body["input"]) + 1})
        if req.url.path == tokenizer == "/tokenize":
            return httpx.Response(200, json={"tokens": list(range(estimate_tokens(body["content"]) + 1))})
        if not req.url.path.endswith("/chat/completions"):
            return httpx.Response(404, json={"detail": "Not Found"})
        if body["stream"]:
            return httpx.Response(200, content=STREAM, headers={"content-type": "text/event-stream"})
        assert body["messages"] in (list(PROBE), list(PROBE[1:])) and body["max_tokens"] == 1  # a probe, one token
        text = "\n".join(m["content"] for m in body["messages"])
        # a template that drops the system message (llama-cpp-python's Gemma)
        dropped = estimate_tokens(text) - estimate_tokens(PROBE[1]["content"]) if len(body["messages"]) == 2 else 0
        prompt = estimate_tokens(text) + 1 + SERVER_TEMPLATE - dropped
        return httpx.Response(200, json={"choices": [{"message": {"content": "x"}, "finish_reason": "length"}],
                                         "usage": {"prompt_tokens": prompt, "completion_tokens": 1}})

    provider = OpenAIProvider(model, RunSettings(), 4, transport=httpx.MockTransport(handler))

    async def go() -> list[Any]:
        out: list[Any] = []
        try:
            await prepared(provider)  # before the first call: every probe is made here
            probes = len(seen)
            async with anyio.create_task_group() as tg:
                async def one(msgs: tuple[dict[str, str], ...]) -> None:
                    out.append(await provider.complete(Request(model, CASE, 0, 1, msgs, 16, 0.0, 5.0)))
                for k in range(n):
                    tg.start_soon(one, (SYSTEM, *MSGS) if k % 2 else MSGS)
            assert len(seen) == probes + n  # the calls asked nothing more
        finally:
            await provider.aclose()
        return out

    return anyio.run(go), seen


@pytest.mark.parametrize("tokenizer", ["/extras/tokenize/count", "/tokenize"])
def test_the_template_is_measured_once_on_a_local_server_with_a_tokenizer(tokenizer: str) -> None:
    comps, seen = _calls("http://127.0.0.1:9/v1", tokenizer)
    assert all(c.tokens_estimated for c in comps)  # still an estimate, marked as one
    # the template's tokens as the server counts them; with a system message, less the probe's system message (the
    # server dropped it)
    probe = "\n".join(m["content"] for m in PROBE)
    dropped = estimate_tokens(probe) - estimate_tokens(PROBE[1]["content"])
    assert sorted(c.input_tokens for c in comps) == sorted([
        estimate_tokens("What is 2+2?") + SERVER_TEMPLATE,
        estimate_tokens(SYSTEM["content"] + "\nWhat is 2+2?") + SERVER_TEMPLATE - dropped])
    assert seen.count("/v1/chat/completions") == 4  # the two calls and two probes (without and with a system)


def test_without_a_tokenizer_the_template_is_a_fixed_estimate_per_message() -> None:
    comps, seen = _calls("http://localhost:9/v1", None)
    fixed = TEMPLATE_TOKENS_PER_MESSAGE + TEMPLATE_TOKENS_PRIMING
    assert sorted(c.input_tokens for c in comps) == sorted([
        estimate_tokens("What is 2+2?") + fixed,
        estimate_tokens(SYSTEM["content"] + "\nWhat is 2+2?") + fixed + TEMPLATE_TOKENS_PER_MESSAGE])
    assert seen.count("/v1/chat/completions") == 2  # no probe answer without a tokenizer


def test_a_hosted_api_is_never_asked_for_its_tokenizer() -> None:
    comps, seen = _calls("https://api.example.com/v1", "/extras/tokenize/count")
    assert set(seen) == {"/v1/chat/completions"} and len(seen) == 2
    assert comps[0].input_tokens == estimate_tokens("What is 2+2?") + TEMPLATE_TOKENS_PER_MESSAGE + \
        TEMPLATE_TOKENS_PRIMING


def test_template_tokens_count_each_further_message() -> None:
    two = ({"role": "system", "content": "x"}, {"role": "user", "content": "y"})
    assert template_tokens(two) == 2 * TEMPLATE_TOKENS_PER_MESSAGE + TEMPLATE_TOKENS_PRIMING
    assert template_tokens(two, 9) == 9 + TEMPLATE_TOKENS_PER_MESSAGE


@pytest.mark.parametrize(("url", "local"), [("http://127.0.0.1:8080/v1", True), ("http://localhost/v1", True),
                                            ("http://10.0.0.5:8000/v1", True), ("http://[::1]:9/v1", True),
                                            ("https://api.openai.com/v1", False), ("http://8.8.8.8/v1", False),
                                            (None, False)])
def test_local_server(url: str | None, local: bool) -> None:
    assert local_server(url) is local

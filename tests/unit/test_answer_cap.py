"""A response's text is capped where it is accumulated ([run] max_answer_chars, default 4,000,000 characters): a 200
MB answer was stored whole (800 MB RSS in evaluate, 1.4 GB in the CSV export). The answer kept is marked as cut, with
its real size (issue 34 item 17)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from arenatui.config.schema import Case, ModelConfig, RunSettings
from arenatui.kernel.errors import ConfigError
from arenatui.project import load_project
from arenatui.providers.base import MAX_ANSWER_CHARS, Request
from arenatui.providers.openai import OpenAIProvider
from arenatui.scoring.failure_modes import classify

CASE = Case(id="c1", input="Say a lot.", expected="4")
MSGS = ({"role": "user", "content": "Say a lot."},)


def _call(body: bytes, stream: bool, cap: int | None) -> Any:
    model = ModelConfig(key="m", provider="openai", model="mm", base_url="http://test", stream=stream)

    def handler(req: httpx.Request) -> httpx.Response:
        ctype = "text/event-stream" if stream else "application/json"
        return httpx.Response(200, content=body, headers={"content-type": ctype})

    provider = OpenAIProvider(model, RunSettings(max_answer_chars=cap), 4, transport=httpx.MockTransport(handler))

    async def go() -> Any:
        try:
            return await provider.complete(Request(model, CASE, 0, 1, MSGS, 16, 0.0, 5.0))
        finally:
            await provider.aclose()

    return anyio.run(go)


def _body(text_parts: list[str], stream: bool) -> bytes:
    if not stream:
        return json.dumps({"choices": [{"message": {"content": "".join(text_parts)}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 3, "completion_tokens": 9}}).encode()
    events = [{"choices": [{"delta": {"content": t}}]} for t in text_parts]
    events.append({"choices": [{"delta": {}, "finish_reason": "stop"}]})
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"


@pytest.mark.parametrize("stream", [True, False])
def test_an_answer_past_the_cap_is_cut_there_and_marked_with_its_real_size(stream: bool) -> None:
    parts = ["abcdefghij" * 7] * 30  # 2,100 characters in 30 pieces
    c = _call(_body(parts, stream), stream, 1000)
    assert c.finish_reason == "answer_cap"
    assert c.text.startswith("".join(parts)[:1000])
    assert len(c.text) < 1200 and "2,100" in c.text and "1,000" in c.text and "max_answer_chars" in c.text
    assert classify(passed=False, output=c.text, finish_reason=c.finish_reason) == "truncated"


@pytest.mark.parametrize("stream", [True, False])
def test_an_answer_within_the_cap_is_untouched(stream: bool) -> None:
    parts = ["abcdefghij"] * 100
    c = _call(_body(parts, stream), stream, 1000)
    assert c.text == "".join(parts) and c.finish_reason == "stop"


def test_the_cap_is_a_run_setting_with_a_generous_default(tmp_path: Path) -> None:
    assert MAX_ANSWER_CHARS == 4_000_000
    p = tmp_path / "arena.toml"
    base = '[[models]]\nkey = "m"\nprovider = "sim"\n[[cases]]\nid = "c"\ninput = "q"\n'
    p.write_text(base, encoding="utf-8")
    assert load_project(p).run.max_answer_chars is None  # the default: MAX_ANSWER_CHARS
    p.write_text('[run]\nmax_answer_chars = 5000\n' + base, encoding="utf-8")
    assert load_project(p).run.max_answer_chars == 5000
    p.write_text('[run]\nmax_answer_chars = 0\n' + base, encoding="utf-8")
    with pytest.raises(ConfigError, match="max_answer_chars"):
        load_project(p)


def test_a_solvers_answer_is_held_to_the_cap_too() -> None:
    from arenatui.providers.solver import SolverRequest, completion
    from arenatui.providers.solver_answer import Answer

    req = SolverRequest("q", MSGS, 16, 0.0, None, "c1", 0, 1)
    for out in ("y" * 5000, Answer("y" * 5000, 3, 1250)):
        c = completion(out, req, 0.0, 1000)
        assert c.finish_reason == "answer_cap" and c.text.startswith("y" * 1000) and "5,000" in c.text
        assert len(c.text) < 1200
    assert completion("short", req, 0.0, 1000).text == "short"


def test_a_cut_stream_without_usage_estimates_every_character_received() -> None:
    events = [{"choices": [{"delta": {"content": "z" * 100}}]} for _ in range(40)]
    events.append({"choices": [{"delta": {}, "finish_reason": "stop"}]})
    body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
    c = _call(body, True, 1000)
    assert c.tokens_estimated and c.output_tokens == 1000  # 4,000 characters received, about 4 a token

"""What counts as an answer on the wire, what a reasoning model sends beside it, and the rate limits a response
declares: each wire path that could mistake a broken answer for an empty one, over fake transports."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from arenatui.config.schema import Case, ModelConfig, RunSettings
from arenatui.kernel.errors import IncompleteStream, TerminalError, TransientError
from arenatui.kernel.events import DeclaredLimits
from arenatui.providers.anthropic import AnthropicProvider, parse_message
from arenatui.providers.base import Completion, Request
from arenatui.providers.http import declared_limits, error_for_status
from arenatui.providers.openai import OpenAIProvider, parse_chat_completion, token_limit_param
from arenatui.scoring.failure_modes import classify
from arenatui.tuning.budgets import Answer, recommend_max_tokens

CASE = Case(id="c1", input="What is 2+2?", expected="4")
MSGS = ({"role": "user", "content": "What is 2+2?"},)
SSE = {"content-type": "text/event-stream"}


def _model(kind: str, **kw: Any) -> ModelConfig:
    return ModelConfig(key="m", provider=kind, model="mm", base_url=kw.pop("base_url", "http://test"), **kw)


def _request(model: ModelConfig) -> Request:
    return Request(model, CASE, 0, 1, MSGS, 16, 0.0, 5.0)


def _call(kind: str, handler: Any, **model_kw: Any) -> Completion:
    model = _model(kind, **model_kw)
    cls = OpenAIProvider if kind == "openai" else AnthropicProvider
    provider = cls(model, RunSettings(), 4, transport=httpx.MockTransport(handler))

    async def go() -> Completion:
        try:
            return await provider.complete(_request(model))
        finally:
            await provider.aclose()

    return anyio.run(go)


def _sse(*events: Any) -> bytes:
    return b"".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events)


def _anthropic_sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _stream(body: bytes, headers: dict[str, str] | None = None) -> Any:
    return lambda req: httpx.Response(200, content=body, headers={**SSE, **(headers or {})})


ROLE = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}


# ---- 1. answers that are answers -------------------------------------------------------------------------------


LLAMA_CPP_ROLE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                  "choices": [{"index": 0, "delta": {"role": "assistant"}, "logprobs": None, "finish_reason": None}]}
"""llama-cpp-python 0.3.36's role chunk, as its server sends it (servers-findings: no content key)."""


@pytest.mark.parametrize("role", [ROLE, LLAMA_CPP_ROLE])
def test_role_chunk_then_done_is_an_incomplete_stream_not_an_empty_answer(role: dict[str, Any]) -> None:
    # llama-cpp-python's server, interrupted by another request: its role chunk, then [DONE]
    with pytest.raises(IncompleteStream) as ei:
        _call("openai", _stream(_sse(role, "[DONE]")))
    assert "without a finish reason" in ei.value.message and ei.value.error_class == "incomplete_stream"
    assert ei.value.detail == "no answer text arrived"  # type: ignore[attr-defined]


def test_finish_reason_null_in_the_final_chunk_is_no_finish_reason() -> None:
    body = _sse(ROLE, {"choices": [{"delta": {"content": "4 is"}, "finish_reason": None}]},
                {"choices": [{"delta": {}, "finish_reason": None}]}, "[DONE]")
    with pytest.raises(IncompleteStream) as ei:
        _call("openai", _stream(body))
    # whatever it carried is kept for the call's detail, never as an answer
    assert ei.value.detail == "partial answer, 4 characters: 4 is"  # type: ignore[attr-defined]


def test_an_empty_answer_with_a_real_finish_reason_stays_an_answer_of_its_own_mode() -> None:
    c = _call("openai", _stream(_sse(ROLE, {"choices": [{"delta": {}, "finish_reason": "stop"}]}, "[DONE]")))
    assert (c.text, c.finish_reason) == ("", "stop")
    assert classify(passed=False, output=c.text, finish_reason=c.finish_reason) == "empty"


def test_usage_after_the_finish_reason_in_the_same_read_is_kept() -> None:
    # the finish reason arrives before any text: the rest of the body (usage, [DONE]) is still read
    body = _sse({"choices": [{"delta": {}, "finish_reason": "stop"}]},
                {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 0}}, "[DONE]")
    c = _call("openai", _stream(body))
    assert (c.input_tokens, c.output_tokens, c.tokens_estimated) == (5, 0, False)


def test_anthropic_stream_without_message_delta_is_incomplete() -> None:
    body = _anthropic_sse({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}},
                          {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                          {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "4"}},
                          {"type": "message_stop"})
    with pytest.raises(IncompleteStream) as ei:
        _call("anthropic", _stream(body))
    assert "without a finish reason" in ei.value.message


@pytest.mark.parametrize("body", [{"object": "chat.completion"}, {"choices": []}, {"choices": "x"}])
def test_a_whole_body_without_choices_is_never_an_answer(body: dict[str, Any]) -> None:
    with pytest.raises(TransientError):
        parse_chat_completion(json.dumps(body).encode(), _request(_model("openai")), "m")


def test_a_whole_body_without_a_finish_reason_is_incomplete() -> None:
    raw = json.dumps({"choices": [{"message": {"content": ""}, "finish_reason": None}]}).encode()
    with pytest.raises(IncompleteStream):
        parse_chat_completion(raw, _request(_model("openai")), "m")
    raw = json.dumps({"content": [], "stop_reason": None}).encode()
    with pytest.raises(IncompleteStream):
        parse_message(raw, _request(_model("anthropic")), "m")


# ---- 2. reasoning models ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_openai_reasoning_fields_are_kept_apart_and_timed(field: str) -> None:
    body = _sse(ROLE, {"choices": [{"delta": {field: "Two and two"}}]},
                {"choices": [{"delta": {field: " make four."}}]},
                {"choices": [{"delta": {"content": "4"}}]}, {"choices": [{"delta": {}, "finish_reason": "stop"}]},
                {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 9,
                                          "completion_tokens_details": {"reasoning_tokens": 8}}}, "[DONE]")
    c = _call("openai", _stream(body))
    assert (c.text, c.reasoning, c.reasoning_tokens, c.reasoning_estimated) == ("4", "Two and two make four.", 8,
                                                                               False)
    assert c.output_tokens == 9 and c.ttft_s is not None and c.answer_ttft_s is not None
    assert c.ttft_s <= c.answer_ttft_s


def test_a_server_sending_both_reasoning_fields_is_read_once() -> None:
    body = _sse({"choices": [{"delta": {"reasoning_content": "hm", "reasoning": "hm"}}]},
                {"choices": [{"delta": {"content": "4"}, "finish_reason": "stop"}]}, "[DONE]")
    c = _call("openai", _stream(body))
    assert c.reasoning == "hm" and c.reasoning_estimated  # no usage: estimated, and marked


def test_anthropic_thinking_blocks_are_reasoning_redacted_ones_marked() -> None:
    body = _anthropic_sse(
        {"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Add them."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "xx"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "4"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 40}},
        {"type": "message_stop"})
    c = _call("anthropic", _stream(body))
    assert c.text == "4" and c.reasoning == "Add them.[redacted thinking]"
    # Anthropic counts thinking in output_tokens only: the rest after the answer's estimate, marked
    assert (c.output_tokens, c.reasoning_tokens, c.reasoning_estimated) == (40, 39, True)


def test_a_limit_used_up_while_reasoning_is_its_own_failure_mode() -> None:
    body = _sse({"choices": [{"delta": {"reasoning_content": "Let me think"}}]},
                {"choices": [{"delta": {}, "finish_reason": "length"}]},
                {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 16}}, "[DONE]")
    c = _call("openai", _stream(body))
    assert (c.text, c.finish_reason, c.reasoning_tokens, c.reasoning_estimated) == ("", "length", 16, False)
    assert classify(passed=False, output=c.text, finish_reason=c.finish_reason) == "cut_while_reasoning"


def _body_of(kind: str, **model_kw: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen.update(json.loads(req.content))
        if kind == "openai":
            return httpx.Response(200, json={"choices": [{"message": {"content": "4"}, "finish_reason": "stop"}]})
        return httpx.Response(200, json={"content": [{"type": "text", "text": "4"}], "stop_reason": "end_turn"})

    _call(kind, handler, stream=False, **model_kw)
    return seen


def test_request_settings_of_reasoning_models() -> None:
    plain = _body_of("openai")
    assert plain["max_tokens"] == 16 and plain["temperature"] == 0.0 and "reasoning_effort" not in plain
    hosted = _body_of("openai", base_url="https://api.openai.com/v1")
    assert hosted["max_completion_tokens"] == 16 and "max_tokens" not in hosted
    chosen = _body_of("openai", token_limit_param="max_completion_tokens", omit_temperature=True,
                      reasoning_effort="low")
    assert chosen["max_completion_tokens"] == 16 and "temperature" not in chosen and chosen["reasoning_effort"] == "low"
    thinking = _body_of("anthropic", thinking_budget=2048)
    assert thinking["thinking"] == {"type": "enabled", "budget_tokens": 2048} and "temperature" not in thinking
    assert token_limit_param("http://127.0.0.1:8000/v1") == "max_tokens"


@pytest.mark.parametrize(("message", "hint"), [
    ("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
     'set token_limit_param = "max_completion_tokens" on this model'),
    ("Unsupported value: 'temperature' does not support 0.0 with this model. Only the default (1) value is "
     "supported.", 'set temperature = "omit" on this model'),
    ("Unrecognized request argument supplied: max_completion_tokens",
     'set token_limit_param = "max_tokens" on this model'),
])
def test_a_refused_parameter_says_which_setting_to_change(message: str, hint: str) -> None:
    err = error_for_status(400, {}, json.dumps({"error": {"message": message}}).encode(), where="m")
    assert isinstance(err, TerminalError) and err.message.endswith(f"({hint})") and "\n" not in err.message
    assert "(" not in error_for_status(400, {}, b'{"error": {"message": "bad messages"}}', where="m").message


def test_max_tokens_recommendation_says_it_counts_reasoning() -> None:
    answers = [Answer(300, True, False, 1.0, False, 250) for _ in range(30)]
    rec = recommend_max_tokens("m", 1024, answers)
    assert any("reasoning + answer" in line and "250 reasoning tokens" in line for line in rec.detail)
    assert rec.value == 384  # 300 (reasoning included) +25%, rounded up to 16


# ---- 3. declared limits ----------------------------------------------------------------------------------------


def test_declared_limits_openai_and_anthropic_headers() -> None:
    oa = declared_limits(httpx.Headers({"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "499",
                                        "x-ratelimit-reset-requests": "120ms", "x-ratelimit-limit-tokens": "30000",
                                        "x-ratelimit-remaining-tokens": "29000", "x-ratelimit-reset-tokens": "2s"}))
    assert oa == DeclaredLimits(500, 499, 0.12, 30000, 29000, 2.0)
    an = declared_limits({"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
                          "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:30Z",
                          "anthropic-ratelimit-input-tokens-limit": "20000",
                          "anthropic-ratelimit-input-tokens-remaining": "1000"},
                         now=1767225600.0)  # 2026-01-01T00:00:00Z
    assert an == DeclaredLimits(50, 0, 30.0, 20000, 1000, None)
    assert "50 requests/min (0 left), 20,000 tokens/min (1,000 left)" in an.describe()
    assert declared_limits({"content-type": "application/json"}) is None
    junk = declared_limits({"x-ratelimit-limit-requests": "lots", "x-ratelimit-remaining-requests": "-3"})
    assert junk == DeclaredLimits()  # stated, unreadable: left out, never an error


def test_a_litellm_proxy_answer_declares_its_rpm_without_a_reset() -> None:
    # what litellm 1.108's proxy sends on a 200 with a deployment rpm of 3 (servers-findings, captured)
    body = _sse({"choices": [{"delta": {"role": "assistant", "content": ""}}]},
                {"choices": [{"delta": {"content": "Paris"}}]}, {"choices": [{"delta": {}, "finish_reason": "stop"}]},
                "[DONE]")
    c = _call("openai", _stream(body, {"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "2",
                                       "x-litellm-key-spend": "0.0", "llm_provider-content-type": "text/event-stream"}))
    assert c.text == "Paris" and c.limits == DeclaredLimits(3, 2, None, None, None, None)


def test_a_429_carries_the_limits_it_declares() -> None:
    err = error_for_status(429, {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0",
                                 "x-ratelimit-reset-requests": "1s"}, b"", where="m")
    assert err.limits == DeclaredLimits(60, 0, 1.0, None, None, None)


def test_the_level_tracker_keeps_the_latest_declared_limits_per_model() -> None:
    from arenatui.kernel.events import LimitsDeclared
    from arenatui.tuning.levels import LevelTracker, declared_level

    tracker = LevelTracker(["a", "a · terse", "b"])
    first, later = DeclaredLimits(600, 500, 1.0, None, None, None), DeclaredLimits(600, 12, 1.0, None, None, None)
    tracker.on_event(LimitsDeclared("a", first, 1.0, 1.0))
    tracker.on_event(LimitsDeclared("a", later, 2.0, 2.0))
    assert tracker.declared("a") == later and tracker.declared("a · terse") == later  # a variant shares it
    assert tracker.declared("b") is None and tracker.readout("b").declared is None
    assert tracker.readout("a").declared == later
    # 600/min = 10/s × 0.5 s = 5 in flight; a token limit of 60,000/min at 2,000 tokens a call: 0.5/s × 0.5 = 0.25
    assert declared_level(later, 0.5) == pytest.approx(5.0)
    assert declared_level(DeclaredLimits(600, None, None, 60000, None, None), 0.5, 2000) == pytest.approx(0.25)
    assert declared_level(None, 0.5) is None and declared_level(later, None) is None


def test_live_metrics_show_a_models_declared_limits_and_reasoning() -> None:
    from arenatui.kernel.events import CallFinished, CallResult, CallStarted, LimitsDeclared
    from arenatui.session.live import LiveMetrics
    from arenatui.tui.screens.detail import declared_text

    lm = LiveMetrics(["a", "b"], ["c1"], 1, clock=lambda: 10.0)
    limits = DeclaredLimits(500, 480, 0.2, 30000, 29000, None)
    lm.on_event(LimitsDeclared("a", limits, 1.0, 1.0))
    lm.on_event(CallStarted("a", "c1", 0, 1, 1.0))
    lm.on_event(CallFinished(CallResult("a", "c1", 0, "passed", "4", 1.0, True, None, None, 1, 900.0, 900.0, 100.0,
                                        5, 30, 0.0, "stop", False, 0.0, 1.0, reasoning_tokens=25,
                                        answer_ttft_ms=700.0), 2.0))
    a, b = lm.snapshot().models
    assert a.declared == limits and b.declared is None
    assert a.reasoning_tokens == 25 and a.answer_ttft_p50_ms == 700.0 and a.ttft_p50_ms == 100.0
    text = declared_text("a", limits).plain
    assert "500 requests/min (480 left), 30,000 tokens/min (29,000 left); requests reset in 0.2 s" in text


def test_the_tuners_goodput_counts_complete_answers_only() -> None:
    """A server that breaks off every other stream (llama-cpp-python's, interrupted): those calls end
    incomplete_stream, and the level's goodput is the complete answers', not every stream that ended."""
    from arenatui.kernel.events import CallFinished, CallResult, CallStarted, ConcurrencyChanged
    from arenatui.tuning.levels import Evidence, LevelTracker, Window

    windows: list[Window] = []
    tr = LevelTracker(["m"], evidence=Evidence(min_calls=10, min_s=0.5, per_level=3, max_settle_s=0.0),
                      on_window=windows.append)
    tr.on_event(ConcurrencyChanged(0, 2, "m", "tuner", 0.0, 0.0))
    t = 0.0
    for i in range(60):
        cut = i % 2 == 1
        tr.on_event(CallStarted("m", f"c{i}", 0, 1, t))
        t += 0.05
        r = CallResult("m", f"c{i}", 0, "errored" if cut else "passed", None if cut else "4", None if cut else 1.0,
                       not cut, "incomplete_stream" if cut else None, None, 1, 100.0, 100.0, None, 1, 1, 0.0,
                       None if cut else "stop", False, 0.0, 0.1)
        tr.on_event(CallFinished(r, t))
    assert windows
    w = windows[0]
    assert w.answered * 2 == pytest.approx(w.attempts, abs=1)  # half the calls came back whole
    assert 8 < w.goodput < 12  # 20 calls ended per second, 10 of them answers


def test_timed_is_replace_with_the_wire_times_and_limits() -> None:
    from arenatui.providers.http import timed

    comp = Completion("4", 1, 2, "length", 0.1, True, None, None, 0.5, "hm", 3, True, 0.2, None)
    limits = DeclaredLimits(1, 2, 3.0, 4, 5, 6.0)
    assert timed(comp, 1.5, 0.01, limits) == comp._replace(latency_s=1.5, connect_s=0.01, limits=limits)
    assert timed(comp, 1.5, 0.01, None) == comp._replace(latency_s=1.5, connect_s=0.01)
    assert len(Completion._fields) == 14  # timed() spells the fields out by position: a new one must be placed there


def test_litellm_usage_chunk_with_a_choice_and_zero_reasoning_tokens() -> None:
    # LiteLLM 1.108 in front of a server sending no usage counts it itself and sends it in a last chunk that still
    # has a choice (no finish reason: that came before), with reasoning_tokens 0 (servers-findings, captured)
    body = _sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
                {"choices": [{"index": 0, "delta": {"content": "Paris"}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                {"choices": [{"index": 0, "delta": {}}], "usage": {
                    "completion_tokens": 8, "prompt_tokens": 1, "total_tokens": 9,
                    "completion_tokens_details": {"reasoning_tokens": 0, "text_tokens": 8}}}, "[DONE]")
    c = _call("openai", _stream(body))
    assert (c.text, c.finish_reason, c.input_tokens, c.output_tokens, c.tokens_estimated) == ("Paris", "stop", 1, 8,
                                                                                             False)
    assert c.reasoning is None and c.reasoning_tokens is None  # 0 reported and none shown: it did not reason


def test_a_stream_interrupted_after_some_text_is_incomplete() -> None:
    # llama-cpp-python, interrupted after two content chunks (servers-findings, captured): partial text, no finish
    body = _sse(LLAMA_CPP_ROLE, {"choices": [{"index": 0, "delta": {"content": "model"}, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {"content": "\n"}, "finish_reason": None}]}, "[DONE]")
    with pytest.raises(IncompleteStream) as ei:
        _call("openai", _stream(body))
    assert ei.value.detail == "partial answer, 6 characters: model\n"  # type: ignore[attr-defined]

"""The HTTP providers' parsers over fake transports, and property tests: any bytes give only provider errors."""

from __future__ import annotations

import json
from email.utils import formatdate
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arenatui.config.schema import Case, ModelConfig, RunSettings
from arenatui.kernel.errors import (
    IncompleteStream,
    ProviderError,
    ProviderSetupError,
    RateLimited,
    TerminalError,
    TransientError,
)
from arenatui.providers.anthropic import AnthropicProvider, AnthropicStream, parse_message
from arenatui.providers.base import Request
from arenatui.providers.http import SSEDecoder, SSEEvent, error_for_status, json_object, parse_retry_after, scrub
from arenatui.providers.openai import OpenAIProvider, OpenAIStream, parse_chat_completion

CASE = Case(id="c1", input="What is 2+2?", expected="4")
MSGS = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"})


def _request(model: ModelConfig) -> Request:
    return Request(model=model, case=CASE, trial=0, attempt=1, messages=MSGS, max_tokens=16, temperature=0.0,
                   timeout_s=5.0)


def _call(provider_cls: type[OpenAIProvider] | type[AnthropicProvider], handler: Any, **model_kw: Any) -> Any:
    kind = "openai" if provider_cls is OpenAIProvider else "anthropic"
    model = ModelConfig(key="m", provider=kind, model="mm", base_url="http://test", **model_kw)
    provider = provider_cls(model, RunSettings(), 4, transport=httpx.MockTransport(handler))

    async def go() -> Any:
        try:
            return await provider.complete(_request(model))
        finally:
            await provider.aclose()

    return anyio.run(go)


def _sse(*events: Any) -> bytes:
    return b"".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events)


def test_openai_json_and_request_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T_KEY", "sk-test-123456789")
    seen: dict[str, Any] = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen["url"], seen["headers"], seen["body"] = str(req.url), req.headers, json.loads(req.content)
        return httpx.Response(200, json={"choices": [{"message": {"content": "4"}, "finish_reason": "stop"}],
                                         "usage": {"prompt_tokens": 9, "completion_tokens": 1}})

    c = _call(OpenAIProvider, handler, stream=False, api_key_env="T_KEY", extra_body={"top_p": 0.5},
              headers={"X-Team": "a"})
    assert (c.text, c.input_tokens, c.output_tokens, c.tokens_estimated, c.ttft_s) == ("4", 9, 1, False, None)
    assert seen["url"] == "http://test/chat/completions"
    assert seen["headers"]["authorization"] == "Bearer sk-test-123456789" and seen["headers"]["x-team"] == "a"
    assert seen["body"]["top_p"] == 0.5 and seen["body"]["stream"] is False and seen["body"]["messages"][0] == MSGS[0]


def test_openai_stream_with_usage() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        assert json.loads(req.content)["stream_options"] == {"include_usage": True}
        body = _sse({"choices": [{"delta": {"role": "assistant", "content": ""}}]},
                    {"choices": [{"delta": {"content": "4"}}]},
                    {"choices": [{"delta": {}, "finish_reason": "length"}]},
                    {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}, "[DONE]")
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    c = _call(OpenAIProvider, handler)
    assert (c.text, c.finish_reason, c.input_tokens, c.output_tokens, c.tokens_estimated) == ("4", "length", 7, 3,
                                                                                             False)
    assert c.ttft_s is not None and c.ttft_s >= 0


def test_usage_estimated_when_absent() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=_sse({"choices": [{"delta": {"content": "four"}}]},
                                                {"choices": [{"delta": {}, "finish_reason": "stop"}]}, "[DONE]"),
                              headers={"content-type": "text/event-stream"})

    c = _call(OpenAIProvider, handler)
    assert c.tokens_estimated and c.output_tokens >= 1 and c.input_tokens >= 1


def test_anthropic_system_on_top_and_stream() -> None:
    seen: dict[str, Any] = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen["url"], seen["headers"], seen["body"] = str(req.url), req.headers, json.loads(req.content)
        evs = [("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 12,
                                                                                  "output_tokens": 1}}}),
               ("content_block_delta", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "4"}}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
                                  "usage": {"output_tokens": 2}}),
               ("message_stop", {"type": "message_stop"})]
        body = b"".join(f"event: {e}\r\ndata: {json.dumps(d)}\r\n\r\n".encode() for e, d in evs)
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    c = _call(AnthropicProvider, handler)
    assert seen["url"] == "http://test/v1/messages"
    assert seen["headers"]["anthropic-version"] and "x-api-key" not in seen["headers"]
    assert seen["body"]["system"] == "Be brief." and all(m["role"] != "system" for m in seen["body"]["messages"])
    assert (c.text, c.finish_reason, c.input_tokens, c.output_tokens) == ("4", "length", 12, 2)


def test_anthropic_json_end_turn_is_stop() -> None:
    raw = json.dumps({"content": [{"type": "text", "text": "4"}], "stop_reason": "end_turn",
                      "usage": {"input_tokens": 3, "output_tokens": 1}}).encode()
    c = parse_message(raw, _request(ModelConfig(key="m", provider="anthropic", model="m")), "m")
    assert (c.text, c.finish_reason) == ("4", "stop")


@pytest.mark.parametrize(("status", "cls"), [(429, RateLimited), (408, TransientError), (409, TransientError),
                                             (500, TransientError), (503, TransientError), (529, TransientError),
                                             (400, TerminalError), (401, TerminalError), (403, TerminalError),
                                             (404, TerminalError), (422, TerminalError)])
def test_status_mapping(status: int, cls: type[ProviderError]) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": {"message": "nope"}}, headers={"retry-after": "2"})

    with pytest.raises(cls) as ei:
        _call(OpenAIProvider, handler)
    assert type(ei.value) is cls and "nope" in ei.value.message
    if cls is RateLimited:
        assert isinstance(ei.value, RateLimited) and ei.value.retry_after == 2.0


def test_x_should_retry_overrides_status() -> None:
    assert isinstance(error_for_status(400, {"x-should-retry": "true"}, b"", where="m"), TransientError)
    assert isinstance(error_for_status(503, {"X-Should-Retry": "false"}, b"", where="m"), TerminalError)


def test_truncated_stream_is_an_incomplete_stream_with_partial_usage() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=_sse({"choices": [{"delta": {"content": "partial answer"}}]}),
                              headers={"content-type": "text/event-stream"})

    with pytest.raises(IncompleteStream) as ei:  # a TransientError: retried like one
        _call(OpenAIProvider, handler)
    assert isinstance(ei.value, TransientError) and ei.value.error_class == "incomplete_stream"
    assert "without its end marker" in ei.value.message and getattr(ei.value, "output_tokens", 0) > 0


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "3"}) == 0.25
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    date = formatdate(1_000_010, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=1_000_000.0) == pytest.approx(10.0)
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "-1"}) is None
    assert parse_retry_after({}) is None


def test_scrub_removes_keys() -> None:
    text = 'auth {"Authorization": "Bearer abc123", "x-api-key": "k9"} sk-ant-api03-abcdefgh1234 plainsecret'
    out = scrub(text, ["plainsecret"])
    for s in ("abc123", "k9", "sk-ant-api03-abcdefgh1234", "plainsecret"):
        assert s not in out


def test_missing_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_KEY", raising=False)
    m = ModelConfig(key="gpt", provider="openai", model="g", base_url="http://x", api_key_env="NOPE_KEY")
    with pytest.raises(ProviderSetupError, match="NOPE_KEY") as ei:
        OpenAIProvider(m, RunSettings())
    assert "gpt" in str(ei.value)


# ---- properties: arbitrary bytes and headers raise only provider errors ----------------------------

_headers = st.dictionaries(st.sampled_from(["retry-after", "Retry-After", "retry-after-ms", "x-should-retry", "x"]),
                           st.text(max_size=40), max_size=4)


@settings(max_examples=200, deadline=None)
@given(_headers)
def test_retry_after_never_raises(headers: dict[str, str]) -> None:
    v = parse_retry_after(headers)
    assert v is None or v >= 0


@settings(max_examples=200, deadline=None)
@given(st.integers(100, 599), _headers, st.binary(max_size=300))
def test_error_mapping_total(status: int, headers: dict[str, str], body: bytes) -> None:
    err = error_for_status(status, headers, body, where="m", secrets=["sekrit"])
    assert isinstance(err, (RateLimited, TransientError, TerminalError)) and "sekrit" not in err.message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.sampled_from(["openai", "anthropic"]))
def test_parsers_raise_only_provider_errors(raw: bytes, kind: str) -> None:
    req = _request(ModelConfig(key="m", provider=kind, model="m"))  # type: ignore[arg-type]
    try:
        (parse_chat_completion if kind == "openai" else parse_message)(raw, req, "m")
    except ProviderError:
        pass
    reader = (OpenAIStream if kind == "openai" else AnthropicStream)(req, 0.0, "m")
    dec = SSEDecoder()
    try:
        for i in range(0, len(raw), 7):
            for ev in dec.feed(raw[i : i + 7]):
                reader.on_event(ev)
        for ev in dec.close():
            reader.on_event(ev)
        reader.finish()
    except ProviderError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"data: ", b"event: x", b"\r", b"\n", b"\r\n", b":c", b"{}", b"[DONE]", b"\xff"]),
                max_size=30), st.integers(1, 9))
def test_sse_chunking_does_not_matter(parts: list[bytes], size: int) -> None:
    raw = b"".join(parts)
    whole = SSEDecoder()
    a = whole.feed(raw) + whole.close()
    pieces = SSEDecoder()
    b = [ev for i in range(0, len(raw), size) for ev in pieces.feed(raw[i : i + size])] + pieces.close()
    assert a == b


def test_sse_multibyte_text_split_anywhere() -> None:
    raw = 'data: {"t": "café ✓ 東京"}\n\ndata: [DONE]\n\n'.encode()
    want = [SSEEvent("message", '{"t": "café ✓ 東京"}'), SSEEvent("message", "[DONE]")]
    for cut in range(1, len(raw)):
        dec = SSEDecoder()
        assert dec.feed(raw[:cut]) + dec.feed(raw[cut:]) + dec.close() == want, cut


def test_json_object_reads_what_json_loads_reads_and_refuses_the_rest() -> None:
    """The fast path (the C scanner called straight) gives json.loads' result, and anything it cannot take whole
    (whitespace around, trailing garbage, two objects, bytes, bad UTF-8) goes the careful way."""
    import json

    from arenatui.kernel.errors import TransientError

    for text in ('{"a": [1, 2.5, "é"], "b": null}', ' {"a": 1} \n', '{"a": 1}\n', '{"t": "café ✓ 東京"}'):
        assert json_object(text, "x") == json.loads(text)
        assert json_object(text.encode(), "x") == json.loads(text.encode())
    for bad in ('{"a": 1} {"b": 2}', '{"a": 1}]', '{"a": ', '[{"a": 1}]', "{", b'{"a": "\xff"}', "1"):
        with pytest.raises(TransientError):
            json_object(bad, "chunk")


def test_plain_events_read_whole_and_anything_else_left_to_feed() -> None:
    """`feed_plain` takes only a run of whole one-line ``data:`` events with nothing pending; otherwise it consumes
    nothing, so `feed` reads the same bytes the careful way and gives what it always gave."""
    d = SSEDecoder()
    assert d.feed_plain(b'data: {"a": 1}\n\ndata: [DONE]\n\n') == ['{"a": 1}', "[DONE]"]
    for other in (b"event: ping\ndata: x\n\n", b"data: a\r\n\r\n", b"data: a\ndata: b\n\n", b"data: a\n\ndata: b",
                  b": comment\n\n", b"data:a\n\n", b""):
        d = SSEDecoder()
        assert d.feed_plain(other) is None
        assert d.feed_plain(b"data: z\n\n") == ["z"]  # nothing of `other` was kept
    d = SSEDecoder()
    d.feed(b"data: ha")  # a line cut by the network: its bytes wait in the buffer, and join what follows
    assert d.feed_plain(b"lf\n\ndata: b\n\n") == ["half", "b"]
    d = SSEDecoder()
    d.feed(b"data: half\n")  # an event under way (a data line read, its end not): only feed can finish it
    assert d.feed_plain(b"\ndata: b\n\n") is None
    assert d.feed(b"\ndata: b\n\n") == [SSEEvent("message", "half"), SSEEvent("message", "b")]


_OLD_PLAIN = __import__("re").compile(r"(?:data: [^\n]*\n\n)+")
"""The rule `feed_plain` read events by before it counted line ends: what it takes must be exactly this."""


@given(st.lists(st.sampled_from(["data: ", "data:", "\n", "\n\n", "\r", "x", "[DONE]", " ", "event: e", ":c"]),
                max_size=12))
@settings(max_examples=400, deadline=None)
def test_plain_events_are_taken_exactly_when_each_is_one_data_line(parts: list[str]) -> None:
    raw = "".join(parts)
    d = SSEDecoder()
    got = d.feed_plain(raw.encode())
    if raw.endswith("\n\n") and "\r" not in raw and _OLD_PLAIN.fullmatch(raw):
        assert got == [e[6:] for e in raw[:-2].split("\n\n")]
    else:
        assert got is None


def _folded(reader: OpenAIStream) -> tuple[Any, ...]:
    return ("".join(reader.parts), "".join(reader.thought or ()), reader.finish_reason, reader.input_tokens,
            reader.output_tokens, reader.reasoning_tokens, reader.done)


def test_a_batch_of_events_folds_as_the_events_one_by_one() -> None:
    """`on_batch` parses the rest of a stream in one call; the answer, reasoning, finish, usage and end are the same
    as event by event, and a malformed event is refused with the same error."""
    model = ModelConfig(key="m", provider="openai", model="mm", base_url="http://test")
    req = _request(model)
    events = ['{"choices":[{"delta":{"reasoning_content":"think"},"finish_reason":null}]}',
              '{"choices":[{"delta":{"content":"4 \\u00e9"},"finish_reason":null}]}',
              '{"choices":[{"delta":{"content":" ok"},"finish_reason":"stop"}]}',
              '{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,'
              '"completion_tokens_details":{"reasoning_tokens":1}}}',
              "[DONE]"]
    for datas in (events, events[:-1], events[:2], ["[DONE]"], []):
        one, batch = OpenAIStream(req, 0.0, "m"), OpenAIStream(req, 0.0, "m")
        for d in datas:
            one.on_data(d)
        batch.on_batch(list(datas))
        assert _folded(batch) == _folded(one)
    for bad in (['{"choices":[]}', '{"a": 1}, {"b": 2}'], ['{"choices":[]}', "7"], ["{"], ['{"x": NaN}', "{"],
                ['{"error": {"type": "overloaded_error", "message": "busy"}}']):
        errors = []
        for reader, feed in ((OpenAIStream(req, 0.0, "m"), "one"), (OpenAIStream(req, 0.0, "m"), "batch")):
            with pytest.raises(ProviderError) as e:
                if feed == "one":
                    for d in bad:
                        reader.on_data(d)
                else:
                    reader.on_batch(bad)
            errors.append((type(e.value), str(e.value)))
        assert errors[0] == errors[1], bad


def test_what_orjson_refuses_is_read_as_the_stdlib_reads_it() -> None:
    """json_object parses with orjson and falls back to json.loads: NaN and a lone surrogate escape are read, to the
    values the stdlib gives. An integer past 64 bits is the one difference (orjson gives a float): no count a server
    sends can sanely be one, and both read as no count."""
    from arenatui.providers.http import as_int

    for text in ('{"x": NaN}', '{"s": "\\ud800"}', '{"a": 1, "a": 2}', '{"n": -9223372036854775808}'):
        got, want = json_object(text, "x"), json.loads(text)
        assert repr(got) == repr(want)  # repr: NaN != NaN
    huge = '{"n": 123456789012345678901234567890}'
    assert as_int(json_object(huge, "x")["n"]) is None and as_int(json.loads(huge)["n"]) is None


def test_request_bodies_are_written_as_the_stdlib_writes_them() -> None:
    """orjson writes a body byte for byte as json.dumps(ensure_ascii=False, compact) does; where it would differ
    (NaN, a huge integer, a datetime from TOML) the stdlib writes it, or refuses NaN as before."""
    import datetime
    import math

    from arenatui.providers.http import encode_body, orjson_writes_as_stdlib

    body = {"model": "m", "messages": (*MSGS, {"role": "user", "content": "café \u2713 \"q\" \\ \n \x01"}),
            "max_tokens": 16, "stream": True, "temperature": 0.7, "extra": {"k": [1, 2.5, None, False]}}
    want = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    assert encode_body(body, True) == want and encode_body(body, False) == want
    for odd in (math.nan, math.inf, 1 << 70, datetime.date(2026, 1, 1), {1: "a"}):
        assert not orjson_writes_as_stdlib({"x": [odd]})
    assert orjson_writes_as_stdlib({"x": [1, "a", {"b": None}], "y": 2.5})
    with pytest.raises(ValueError):
        encode_body({"x": math.nan}, False)

"""The Anthropic Messages API: x-api-key, anthropic-version, the system prompt as a top-level field."""

from __future__ import annotations

from typing import Any

from arenatui.kernel.errors import TransientError
from arenatui.providers.base import Completion, Request
from arenatui.providers.http import (
    HttpProvider,
    SSEEvent,
    StreamReader,
    as_int,
    json_object,
    usage_or_estimate,
)

API_VERSION = "2023-06-01"
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
"""Anthropic's stop reasons in the OpenAI words the store uses; others (tool_use, refusal) kept as sent."""


def finish_reason(stop_reason: object) -> str | None:
    return STOP_REASONS.get(stop_reason, stop_reason) if isinstance(stop_reason, str) else None


class AnthropicStream(StreamReader):
    """``message_start``, ``content_block_delta``..., ``message_delta`` (stop reason, usage), ``message_stop``."""

    def on_event(self, ev: SSEEvent) -> None:
        if not ev.data.strip():
            return
        obj = json_object(ev.data, f"stream event from {self.where}")
        kind = obj.get("type", ev.event)
        if kind == "error" or ev.event == "error":
            raise self.error_event(obj.get("error", obj))
        if kind == "content_block_delta":
            delta = obj.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("text"), str):
                self.add_text(delta["text"])
        elif kind == "message_start":
            msg = obj.get("message")
            usage = msg.get("usage") if isinstance(msg, dict) else None
            if isinstance(usage, dict):
                self.input_tokens = as_int(usage.get("input_tokens"))
                self.output_tokens = as_int(usage.get("output_tokens"))
        elif kind == "message_delta":
            delta = obj.get("delta")
            if isinstance(delta, dict):
                self.finish_reason = finish_reason(delta.get("stop_reason")) or self.finish_reason
            usage = obj.get("usage")
            if isinstance(usage, dict):
                # message_delta's counts are cumulative, so they replace message_start's.
                if as_int(usage.get("input_tokens")) is not None:
                    self.input_tokens = as_int(usage.get("input_tokens"))
                if as_int(usage.get("output_tokens")) is not None:
                    self.output_tokens = as_int(usage.get("output_tokens"))
        elif kind == "message_stop":
            self.done = True


def parse_message(raw: bytes, request: Request, where: str) -> Completion:
    """A non-streamed Messages API answer; anything unreadable is a transient error."""
    obj = json_object(raw, f"response from {where}")
    content = obj.get("content")
    if not isinstance(content, list):
        raise TransientError(f"malformed response from {where}: no content")
    text = "".join(str(b["text"]) for b in content
                   if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    usage = obj.get("usage")
    i = o = None
    if isinstance(usage, dict):
        i, o = as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens"))
    i_, o_, est = usage_or_estimate(text, request.messages, i, o)
    return Completion(text=text, input_tokens=i_, output_tokens=o_,
                      finish_reason=finish_reason(obj.get("stop_reason")) or "stop", tokens_estimated=est)


class AnthropicProvider(HttpProvider):
    """``POST {base_url}/v1/messages``."""

    def auth_headers(self, key: str | None) -> dict[str, str]:
        h = {"anthropic-version": API_VERSION}
        if key:
            h["x-api-key"] = key
        return h

    def endpoint(self, base_url: str) -> str:
        if base_url.endswith("/messages"):
            return base_url
        return base_url + ("/messages" if base_url.endswith("/v1") else "/v1/messages")

    def body(self, request: Request, stream: bool) -> dict[str, Any]:
        system = [m["content"] for m in request.messages if m["role"] == "system"]
        body: dict[str, Any] = {
            "model": self.model.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "messages": [{"role": m["role"], "content": m["content"]} for m in request.messages
                         if m["role"] != "system"],
            "stream": stream,
        }
        if system:
            body["system"] = "\n\n".join(system)
        body.update(self.model.extra_body)
        return body

    def parse_json(self, raw: bytes, request: Request) -> Completion:
        return parse_message(raw, request, self.where)

    def stream_reader(self, request: Request, sent: float) -> StreamReader:
        return AnthropicStream(request, sent, self.where, self._secrets)

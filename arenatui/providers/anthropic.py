"""The Anthropic Messages API: x-api-key, anthropic-version, the system prompt as a top-level field."""

from __future__ import annotations

from typing import Any

from arenatui.kernel.errors import IncompleteStream, TransientError
from arenatui.providers.base import Completion, Request
from arenatui.providers.http import (
    HttpProvider,
    SSEEvent,
    StreamReader,
    as_int,
    json_object,
    usage_or_estimate,
    with_reasoning,
)

API_VERSION = "2023-06-01"
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
"""Anthropic's stop reasons in the OpenAI words the store uses; others (tool_use, refusal) kept as sent."""
REDACTED_THINKING = "[redacted thinking]"
"""What a redacted_thinking block (encrypted by the provider) leaves in the reasoning kept for a call."""


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
            if isinstance(delta, dict):
                text = delta.get("text")
                if isinstance(text, str):
                    self.add_text(text)
                elif delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
                    self.add_reasoning(delta["thinking"])
        elif kind == "content_block_start":
            block = obj.get("content_block")
            if isinstance(block, dict):
                btype = block.get("type")
                if btype == "thinking":
                    self.add_reasoning(str(block.get("thinking") or ""))
                elif btype == "redacted_thinking":  # encrypted: it is thinking, timed and marked, never read
                    self.add_reasoning(REDACTED_THINKING)
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
    finish = finish_reason(obj.get("stop_reason"))
    if finish is None:
        raise IncompleteStream(f"incomplete answer from {where}: no stop_reason")
    usage = obj.get("usage")
    i = o = None
    if isinstance(usage, dict):
        i, o = as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens"))
    thought = [str(b.get("thinking") or "") if b.get("type") == "thinking" else REDACTED_THINKING for b in content
               if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")]
    if thought:
        return with_reasoning(text, "".join(thought), request.messages, i, o, None, finish)
    i_, o_, est = usage_or_estimate(text, request.messages, i, o)
    return Completion(text=text, input_tokens=i_, output_tokens=o_, finish_reason=finish, tokens_estimated=est)


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
        model = self.model
        body: dict[str, Any] = {
            "model": model.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m["role"], "content": m["content"]} for m in request.messages
                         if m["role"] != "system"],
            "stream": stream,
        }
        if model.thinking_budget is not None:
            # extended thinking refuses any temperature but its own: none is sent
            body["thinking"] = {"type": "enabled", "budget_tokens": model.thinking_budget}
        elif not model.omit_temperature:
            body["temperature"] = request.temperature
        if system:
            body["system"] = "\n\n".join(system)
        body.update(model.extra_body)
        return body

    def parse_json(self, raw: bytes, request: Request) -> Completion:
        return parse_message(raw, request, self.where)

    def stream_reader(self, request: Request, sent: float) -> StreamReader:
        return AnthropicStream(request, sent, self.where, self._secrets)

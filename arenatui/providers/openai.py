"""The OpenAI-compatible chat-completions API (OpenAI, vLLM, Ollama /v1, llama.cpp, LM Studio, OpenRouter)."""

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


class OpenAIStream(StreamReader):
    """``data: {chunk}`` lines ending in ``data: [DONE]``; usage in a last chunk with no choices."""

    def on_event(self, ev: SSEEvent) -> None:
        data = ev.data.strip()
        if data == "[DONE]":
            self.done = True
            return
        if not data:
            return
        obj = json_object(data, f"stream chunk from {self.where}")
        if "error" in obj:
            raise self.error_event(obj["error"])
        choices = obj.get("choices")
        if isinstance(choices, list):
            for c in choices:
                if not isinstance(c, dict):
                    continue
                delta = c.get("delta")
                if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                    self.add_text(delta["content"])
                if isinstance(c.get("finish_reason"), str):
                    self.finish_reason = c["finish_reason"]
                    # Servers that never send [DONE] still end a complete answer with a finish_reason.
                    self.done = True
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self.input_tokens = as_int(usage.get("prompt_tokens"))
            self.output_tokens = as_int(usage.get("completion_tokens"))


def parse_chat_completion(raw: bytes, request: Request, where: str) -> Completion:
    """A non-streamed chat completion; anything unreadable is a transient error."""
    obj = json_object(raw, f"response from {where}")
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise TransientError(f"malformed response from {where}: no choices")
    first = choices[0]
    message = first.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if content is not None and not isinstance(content, str):
        raise TransientError(f"malformed response from {where}: message content is not text")
    text = content or ""
    finish = first.get("finish_reason")
    usage = obj.get("usage")
    i = o = None
    if isinstance(usage, dict):
        i, o = as_int(usage.get("prompt_tokens")), as_int(usage.get("completion_tokens"))
    i_, o_, est = usage_or_estimate(text, request.messages, i, o)
    return Completion(text=text, input_tokens=i_, output_tokens=o_,
                      finish_reason=finish if isinstance(finish, str) else "stop", tokens_estimated=est)


class OpenAIProvider(HttpProvider):
    """``POST {base_url}/chat/completions`` with a Bearer key (optional for local servers)."""

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"} if key else {}

    def endpoint(self, base_url: str) -> str:
        return base_url if base_url.endswith("/chat/completions") else base_url + "/chat/completions"

    def body(self, request: Request, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model.model,
            "messages": [dict(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        body.update(self.model.extra_body)
        return body

    def parse_json(self, raw: bytes, request: Request) -> Completion:
        return parse_chat_completion(raw, request, self.where)

    def stream_reader(self, request: Request, sent: float) -> StreamReader:
        return OpenAIStream(request, sent, self.where, self._secrets)

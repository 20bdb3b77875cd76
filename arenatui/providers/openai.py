"""The OpenAI-compatible chat-completions API (OpenAI, vLLM, Ollama /v1, llama.cpp, LM Studio, OpenRouter)."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any

import anyio
import orjson

from arenatui.kernel.errors import IncompleteStream, TransientError
from arenatui.providers.base import Completion, Request
from arenatui.providers.http import (
    TEMPLATE_TOKENS_PER_MESSAGE,
    HttpProvider,
    SSEEvent,
    StreamReader,
    as_int,
    json_object,
    usage_or_estimate,
    with_reasoning,
)


class OpenAIStream(StreamReader):
    """``data: {chunk}`` lines ending in ``data: [DONE]``; usage in a last chunk with no choices."""

    def on_event(self, ev: SSEEvent) -> None:
        self.on_data(ev.data)

    def on_data(self, data: str) -> None:
        data = data.strip()
        if data == "[DONE]":
            self.done = True
            return
        if not data:
            return
        self.fold(json_object(data, self.chunk_what))

    def on_batch(self, datas: list[str]) -> None:
        """The rest of a stream's events at once: their JSON parsed in one orjson call (an array of them), a
        third of the cost of one call per event. Anything but whole JSON objects goes event by event, so what is
        refused, and the error that names it, is `on_data`'s."""
        chunks = [d for d in datas if d != "[DONE]"]
        try:
            objs = orjson.loads("[" + ",".join(chunks) + "]") if chunks else []
        except orjson.JSONDecodeError:
            objs = None
        if objs is None or len(objs) != len(chunks) or any(type(o) is not dict for o in objs):
            for d in datas:
                self.on_data(d)
            return
        for obj in objs:
            self.fold(obj)
        if len(chunks) != len(datas):
            self.done = True

    def fold(self, obj: dict[str, Any]) -> None:
        """One chunk object: its answer and reasoning text, finish reason and usage."""
        if "error" in obj:
            raise self.error_event(obj["error"])
        choices = obj.get("choices")
        if isinstance(choices, list):
            for c in choices:
                if not isinstance(c, dict):
                    continue
                delta = c.get("delta")
                if isinstance(delta, dict):
                    content = delta.get("content")
                    if isinstance(content, str):
                        self.add_text(content)
                    # DeepSeek and llama.cpp say reasoning_content, recent vLLM and OpenRouter reasoning; a server
                    # sending both sends the same text twice
                    thought = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(thought, str) and thought:
                        self.add_reasoning(thought)
                finish = c.get("finish_reason")
                if isinstance(finish, str) and finish:  # null in a final chunk is no finish reason
                    self.finish_reason = finish
                    # Servers that never send [DONE] still end a complete answer with a finish_reason.
                    self.done = True
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self.input_tokens = as_int(usage.get("prompt_tokens"))
            self.output_tokens = as_int(usage.get("completion_tokens"))
            details = usage.get("completion_tokens_details")
            if isinstance(details, dict) and "reasoning_tokens" in details:
                self.reasoning_tokens = as_int(details["reasoning_tokens"])


def parse_chat_completion(raw: bytes, request: Request, where: str, template: int | None = None) -> Completion:
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
    if not isinstance(finish, str) or not finish:
        # a whole body is complete or it is not an answer: without a finish reason nothing says the model ended it
        raise IncompleteStream(f"incomplete answer from {where}: no finish reason on its choice")
    usage = obj.get("usage")
    i = o = r = None
    if isinstance(usage, dict):
        i, o = as_int(usage.get("prompt_tokens")), as_int(usage.get("completion_tokens"))
        details = usage.get("completion_tokens_details")
        if isinstance(details, dict) and "reasoning_tokens" in details:
            r = as_int(details["reasoning_tokens"])
    thought = message.get("reasoning_content") or message.get("reasoning") if isinstance(message, dict) else None
    if not isinstance(thought, str):
        thought = None
    if thought is None and not r:  # no reasoning (a reported 0 says the same: LiteLLM sends it for every model)
        i_, o_, est = usage_or_estimate(text, request.messages, i, o, template)
        return Completion(text=text, input_tokens=i_, output_tokens=o_, finish_reason=finish, tokens_estimated=est)
    return with_reasoning(text, thought, request.messages, i, o, r, finish, template)


def token_limit_param(base_url: str | None) -> str:
    """The key that carries max_tokens when a model does not say (``token_limit_param``): max_completion_tokens on
    OpenAI's own API (it deprecated max_tokens, and its reasoning models refuse it), max_tokens everywhere else (what
    every OpenAI-compatible server reads: vLLM, llama.cpp, Ollama, LiteLLM, OpenRouter)."""
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(base_url or "").hostname or "").lower()
    except ValueError:
        host = ""
    return "max_completion_tokens" if host == "api.openai.com" else "max_tokens"


def local_server(base_url: str | None) -> bool:
    """A server on this machine or a private network (loopback, localhost, RFC 1918, link-local): one that a user
    runs (llama.cpp, vLLM, Ollama), with no rate limit unless one is declared, and free to ask for its tokenizer."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(base_url or "").hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost") or host.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


PROBE = ({"role": "system", "content": "Answer briefly."},
         {"role": "user", "content": "What is the capital of France?"})
"""The prompts that measure a local server's chat template (`OpenAIProvider.measure_template`)."""


class OpenAIProvider(HttpProvider):
    """``POST {base_url}/chat/completions`` with a Bearer key (optional for local servers)."""

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"} if key else {}

    def endpoint(self, base_url: str) -> str:
        return base_url if base_url.endswith("/chat/completions") else base_url + "/chat/completions"

    def body(self, request: Request, stream: bool) -> dict[str, Any]:
        model = self.model
        body: dict[str, Any] = {
            "model": model.model,
            "messages": request.messages,  # a tuple of plain dicts: written as they are
            self.limit_key: request.max_tokens,
            "stream": stream,
        }
        if not model.omit_temperature:
            body["temperature"] = request.temperature
        if model.reasoning_effort is not None:
            body["reasoning_effort"] = model.reasoning_effort
        if stream:
            body["stream_options"] = {"include_usage": True}
        body.update(model.extra_body)
        return body

    _limit_key: str | None = None

    @property
    def limit_key(self) -> str:
        """The request key that carries max_tokens (the model's token_limit_param, else by its base_url)."""
        key = self._limit_key
        if key is None:
            key = self._limit_key = self.model.token_limit_param or token_limit_param(self.model.base_url)
        return key

    def parse_json(self, raw: bytes, request: Request) -> Completion:
        return parse_chat_completion(raw, request, self.where, self.template(request.messages))

    def stream_reader(self, request: Request, sent: float) -> StreamReader:
        reader = OpenAIStream(request, sent, self.where, self._secrets)
        reader.template = self.template(request.messages)
        return reader

    _templates: tuple[int, int] | None = None
    """The chat template's input tokens as this model's server counts them (`measure_template`), once measured: of
    a prompt that begins with a user message, and of one that begins with a system message."""

    def template(self, messages: tuple[dict[str, str], ...]) -> int | None:
        """The measured template's tokens for a prompt of `messages`' shape (None: not measured)."""
        t = self._templates
        if t is None:
            return None
        return t[1] if messages and messages[0].get("role") == "system" else t[0]

    def prepare(self) -> Awaitable[None] | None:
        """Open the transport's session; for a streamed model on a local server, also measure its chat template
        (`measure_template`), awaited before the first call so that no call waits for it (and no probe interrupts
        a stream: on llama-cpp-python any request does)."""
        super().prepare()
        if self.model.stream and local_server(self.model.base_url):  # whole bodies carry usage
            return self.measure_template()
        return None

    async def measure_template(self) -> None:
        """The chat template's tokens, for the input estimates of a server that reports no usage (llama-cpp-python's
        streams), from a server with a tokenizer endpoint (llama-cpp-python's ``/extras/tokenize/count``,
        llama.cpp's ``/tokenize``): a probe prompt's count (a one-token answer) less its tokenizer's count of the
        messages' text, for a prompt with and one without a system message (a template may drop a system message:
        llama-cpp-python's Gemma does, so that measure is below 0). Anything else (no such endpoint, an error, no
        usage) leaves the fixed estimate."""
        try:
            with anyio.move_on_after(min(self._timeout_s, 30.0)):
                user = await self._template_tokens(PROBE[1:])
                system = None if user is None else await self._template_tokens(PROBE)
                if user is not None and system is not None:  # as template_tokens reads it: +fixed per further one
                    self._templates = (user, system - TEMPLATE_TOKENS_PER_MESSAGE)
        except Exception:  # a probe's failure leaves the fixed estimate; the calls report their own
            self._templates = None

    async def _template_tokens(self, messages: tuple[dict[str, str], ...]) -> int | None:
        root = self.url.split("?")[0].removesuffix("/chat/completions").removesuffix("/v1")
        text = "\n".join(str(m.get("content", "")) for m in messages)  # as usage_or_estimate joins them
        content: int | None = None
        for path, body, read in (("/extras/tokenize/count", {"input": text, "model": self.model.model},
                                  lambda o: o.get("count")),
                                 ("/tokenize", {"content": text, "add_special": True},
                                  lambda o: len(o["tokens"]) if isinstance(o.get("tokens"), list) else None)):
            obj = await self._post_json(root + path, body)
            content = None if obj is None else as_int(read(obj))
            if content:
                break
        if not content:
            return None
        ask = {"model": self.model.model, "messages": [dict(m) for m in messages], self.limit_key: 1, "stream": False}
        obj = await self._post_json(self.url, ask)
        usage = None if obj is None else obj.get("usage")
        prompt = as_int(usage.get("prompt_tokens")) if isinstance(usage, dict) else None
        return None if not prompt else prompt - content

    async def _post_json(self, url: str, body: dict[str, Any]) -> dict[str, Any] | None:
        async with self.wire.post(url, json.dumps(body).encode()) as resp:
            raw = await resp.read()
            if not 200 <= resp.status < 300:
                return None
        try:
            return json_object(raw, "tokenizer answer")
        except TransientError:
            return None

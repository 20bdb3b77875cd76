"""The mock server itself: aiohttp routes speaking the OpenAI and Anthropic wire formats over SimCore.

Behaviour (latency per token, 429 with retry-after, the concurrency ceiling, serial "local GPU"
mode, transient failures, accuracy by stratum and by prompt variant) comes from
`arenatui.providers.sim.SimCore`, the same code the in-process sim provider runs, so a sweep over
HTTP and a simulated sweep agree.

Prompt variants (``[[prompts]]``, ``sim.prompt_accuracy``) are recognised the way a model meets them: by the
prompt alone. A request whose last user message is a variant's template filled with a case's input (and whose
system prompt is the variant's, when it sets one) is that case asked under that variant; nothing tells the server
which variant a request is beyond the text the variant itself puts in the prompt, so a real provider is sent
nothing more than it would be anyway (a header naming the variant would reach real providers too). Two variants
with the same template and system prompt ask identically, and are answered as the first of them. A follow-up turn
([run] repair) is its conversation's opening case asked again, answered afresh (as the in-process sim draws a turn).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import re
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from arenatui.config.schema import Case, MockFaults, ModelConfig, Project, PromptVariant, ScorerConfig
from arenatui.kernel.events import lane_key
from arenatui.kernel.units import plural
from arenatui.mockserver.faults import HTTP_TYPES, FaultPicker, Stall, declared_headers, retry_after_headers
from arenatui.project.read import first_bad_value
from arenatui.providers.base import JudgeTask
from arenatui.providers.sim import SimCore, SimOutcome, draw, judge_answer, reasoning_text, uniform

Wire = Literal["openai", "anthropic"]
HANG_S = 3600.0
"""A hung request holds its connection this long (or until the client gives up and disconnects)."""
ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens"}
REASONING_PIECES = 64
"""Most reasoning events one answer streams (a long reasoning comes in bigger pieces, on the same schedule)."""


@dataclass(slots=True)
class ServedModel:
    entry: ModelConfig
    core: SimCore
    faults: FaultPicker
    serial: asyncio.Lock | None
    counts: dict[tuple[str, str | None, int], int] = field(default_factory=dict)
    """Requests so far per (case, prompt variant, turn): the server cannot see trials, so each repeat draws anew."""
    asked: dict[str, SimCore] = field(default_factory=dict)
    waiting: int = 0
    """Requests waiting for the one slot (``single_slot``): a stream in progress stops when one does."""
    """Per prompt variant: the core that answers the model's calls asked under it (keyed and with the accuracy as
    the in-process sim's lane of that variant); `core` keeps the model's one rate limit and concurrency."""

    def answering(self, variant: str | None) -> SimCore:
        """The core whose draws answer a call asked under `variant` (None: the case as written)."""
        if variant is None:
            return self.core
        core = self.asked.get(variant)
        if core is None:
            s = self.entry.sim
            if variant in s.prompt_accuracy:
                s = dataclasses.replace(s, accuracy=s.prompt_accuracy[variant])
            core = self.asked[variant] = SimCore(lane_key(self.entry.key, variant), s, self.core.seed)
        return core

    @property
    def cfg(self) -> MockFaults:
        return self.faults.cfg

    def declared(self, wire: Wire, now: float) -> dict[str, str] | None:
        """The rate-limit headers this model's responses carry ([mock.models.KEY] declare_limits, declared_rpm,
        declared_tpm), None when it declares none. Remaining requests are the simulated bucket's headroom at the
        declared rate; a lie (declared_rpm without that rpm) is stated with full headroom."""
        cfg, sim = self.cfg, self.entry.sim  # [mock.models.KEY] first, else the model's own sim settings
        lim = self.core.declared(cfg.declare_limits or sim.declare_limits,
                                 cfg.declared_rpm if cfg.declared_rpm is not None else sim.declared_rpm,
                                 self.declared_tpm)
        if lim is None:
            return None
        return declared_headers(wire, lim.requests_limit, lim.requests_remaining, lim.requests_reset_s or 0.0,
                                lim.tokens_limit, now, lim.tokens_remaining, lim.tokens_reset_s or 0.0)

    @property
    def declared_tpm(self) -> float | None:
        """The tokens/min its responses state ([mock.models.KEY] first, else the model's sim settings)."""
        cfg = self.cfg
        return cfg.declared_tpm if cfg.declared_tpm is not None else self.entry.sim.declared_tpm


def _content_text(c: object) -> str | None:
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return None


def _last_user_text(messages: object) -> str | None:
    if not isinstance(messages, list):
        return None
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            return _content_text(m.get("content"))
    return None


def _opening(messages: object) -> tuple[str | None, int]:
    """A conversation's first user message and how many answers (assistant turns) it holds: a follow-up turn
    ([run] repair) asks its case again after the model's earlier answers."""
    if not isinstance(messages, list):
        return None, 0
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    turns = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    return (_content_text(users[0].get("content")) if users else None), turns


def _system_text(body: dict[str, Any]) -> str | None:
    """The system prompt a request carries: Anthropic's top-level `system`, or OpenAI's system messages."""
    system = body.get("system")
    if isinstance(system, list):
        return "".join(str(p.get("text", "")) for p in system if isinstance(p, dict))
    if isinstance(system, str):
        return system
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        return None
    texts = [m.get("content") for m in msgs if isinstance(m, dict) and m.get("role") == "system"]
    return "\n\n".join(t for t in texts if isinstance(t, str)) if texts else None


def _template_pattern(template: str) -> re.Pattern[str] | None:
    """A pattern that reads a variant's filled-in template back into the input it was filled with (None: the
    template has no ``{input}``, so its prompt names no case)."""
    parts = [re.escape(part) for part in template.split("{input}")]
    if len(parts) == 1:
        return None
    return re.compile(parts[0] + "(?P<input>.*)" + "(?P=input)".join(parts[1:]), re.DOTALL)


def _case_prompt(case: Case) -> str:
    """The text of a case's last user message: what a request carries last."""
    if isinstance(case.input, str):
        return case.input
    users = [m["content"] for m in case.input if m.get("role") == "user"]
    return users[-1] if users else case.prompt_text()


def _rubric_pattern(rubric: str) -> re.Pattern[str]:
    """A pattern that reads a rendered rubric back into its input, expected and output (named groups)."""
    out, seen = [], set()
    for part in re.split(r"(\{input\}|\{expected\}|\{output\})", rubric):
        name = part[1:-1] if part in ("{input}", "{expected}", "{output}") else None
        if name is None:
            out.append(re.escape(part))
        else:
            out.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*)")
            seen.add(name)
    return re.compile("".join(out), re.DOTALL)


def _pieces(text: str, n: int) -> list[str]:
    n = max(1, min(n, len(text) or 1))
    size = -(-len(text) // n) if text else 1
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _sse(data: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class MockServer:
    """The models of one project (or any model name, with default settings, when there is no project)."""

    def __init__(self, project: Project | None = None, seed: int | None = None, stall: Stall | None = None) -> None:
        self.project = project
        self.stall = stall
        self.seed = seed if seed is not None else (project.run.seed if project else 0)
        self._rng = random.Random(self.seed)
        self._models: dict[str, ServedModel] = {}
        self._cases: dict[str, Case] = {}
        if project is not None:
            for m in project.models:
                sm = self._served(m, project.mock.get(m.key, MockFaults(rate=0.0)))
                self._models.setdefault(m.model, sm)
                self._models.setdefault(m.key, sm)
            for c in project.cases:
                self._cases.setdefault(_case_prompt(c), c)
        self._variants: list[tuple[PromptVariant, re.Pattern[str] | None]] = [
            (v, None if v.template is None else _template_pattern(v.template))
            for v in (project.prompts if project else ())]
        """[[prompts]]: each variant and the pattern that reads its template back into a case's input."""
        from arenatui.scoring.judge import judge_rubric  # the rubric as the engine sends it

        self._judges: list[tuple[re.Pattern[str], ScorerConfig]] = [
            (_rubric_pattern(judge_rubric(s)), s) for s in (project.scorers if project else ()) if s.kind == "llm_judge"
            and s.rubric is not None]
        """llm_judge rubrics: a judge request is answered with a verdict, like the simulated judge's."""
        self._inputs = {c.prompt_text(): c for c in project.cases} if self._judges and project else {}

    def _judged(self, prompt: str) -> tuple[Case, JudgeTask] | None:
        """The case and answer a judge request is about, when `prompt` is one of the project's rubrics filled in."""
        from arenatui.scoring.judge import unfenced  # the answer as the candidate gave it, its fence taken off

        for pattern, scorer in self._judges:
            m = pattern.fullmatch(prompt)
            if m is None:
                continue
            got = m.groupdict()
            case = self._inputs.get(got["input"]) if "input" in got else None
            if case is None and "expected" in got:
                case = next((c for c in self._inputs.values() if c.expected == got["expected"]), None)
            if case is not None:
                return case, JudgeTask(unfenced(got.get("output", "")), case.expected, scorer.scale_range())
        return None

    def _recognised(self, prompt: str, body: dict[str, Any]) -> tuple[Case | None, str | None]:
        """The case a request asks and the prompt variant it is asked under (None: as written), from the prompt
        alone: the last user message read back through each variant's template, the system prompt deciding
        between variants that fill a case in alike."""
        if not self._variants:
            return self._cases.get(prompt), None
        system = _system_text(body)
        best: tuple[int, Case, str] | None = None
        for v, pattern in self._variants:
            if pattern is None:
                case = self._cases.get(prompt) if v.template is None else None
            else:
                m = pattern.fullmatch(prompt)
                case = None if m is None else self._cases.get(m.group("input"))
            if case is None:
                continue
            # a variant's own system prompt, when the request has it, names the variant; one without defers to it
            rank = 2 if v.system is not None and v.system == system else 1 if v.system is None else 0
            if best is None or rank > best[0]:
                best = (rank, case, v.name)
        if best is not None:
            return best[1], best[2]
        return self._cases.get(prompt), None

    def _served(self, m: ModelConfig, faults: MockFaults) -> ServedModel:
        return ServedModel(entry=m, core=SimCore(m.key, m.sim, self.seed), faults=FaultPicker(faults, self._rng),
                           serial=asyncio.Lock() if m.sim.serial or faults.single_slot else None)

    def lookup(self, name: str) -> ServedModel | None:
        sm = self._models.get(name)
        if sm is None and self.project is None:
            sm = self._models[name] = self._served(ModelConfig(key=name, provider="sim", model=name),
                                                   MockFaults(rate=0.0))
        return sm

    def model_names(self) -> list[str]:
        return sorted({sm.entry.model for sm in self._models.values()})

    def app(self) -> web.Application:
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_post("/v1/messages", self.messages)
        app.router.add_get("/v1/models", self.models)
        return app

    # ---- routes ----------------------------------------------------------------------------------

    async def models(self, request: web.Request) -> web.Response:
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "arenatui-mock"} for n in self.model_names()]
        return web.json_response({"object": "list", "data": data})

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        opts = body.get("stream_options")
        include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens", 256))
        return await self._serve(request, "openai", body, max_tokens, include_usage)

    async def messages(self, request: web.Request) -> web.StreamResponse:
        body = await self._body(request)
        if isinstance(body, web.Response):
            return body
        if "max_tokens" not in body:
            return self._error(request, "anthropic", None, 400, "max_tokens: Field required")
        return await self._serve(request, "anthropic", body, body["max_tokens"], True)

    async def _body(self, request: web.Request) -> dict[str, Any] | web.Response:
        wire: Wire = "anthropic" if request.path.endswith("/messages") else "openai"
        try:
            body = json.loads(await request.read())
        except ValueError:  # invalid JSON, and bytes that are not UTF-8
            return self._error(request, wire, None, 400, "the request body is not valid JSON")
        except RecursionError:
            return self._error(request, wire, None, 400, "the request body is nested too deeply")
        if not isinstance(body, dict):
            return self._error(request, wire, None, 400, "the request body must be a JSON object")
        # A lone surrogate ("\\ud800" is valid JSON) cannot be hashed, encoded or echoed: say so, as a real API
        # does, instead of failing with a 500 and a traceback in the log.
        bad = first_bad_value(body)
        if bad is not None:
            return self._error(request, wire, None, 400, f"{bad[0] or 'the request body'}: {bad[1]}")
        return body

    # ---- the one simulated answer ----------------------------------------------------------------

    async def _serve(self, request: web.Request, wire: Wire, body: dict[str, Any], max_tokens: object,
                     include_usage: bool) -> web.StreamResponse:
        name = body.get("model")
        if not isinstance(name, str):
            return self._error(request, wire, None, 400, "model: a string is required")
        sm = self.lookup(name)
        if sm is None:
            return self._error(request, wire, None, 404, f"the model {name!r} does not exist")
        prompt = _last_user_text(body.get("messages"))
        if prompt is None:
            return self._error(request, wire, sm, 400, "messages: at least one user message with text is required")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            return self._error(request, wire, sm, 400, "max_tokens: a whole number >= 1 is required")
        stream = body.get("stream") is True
        if self.stall is not None:
            pause = self.stall.wait_s(asyncio.get_running_loop().time())
            if pause > 0:
                await asyncio.sleep(pause)

        fault = sm.faults.pick()
        if fault is not None and fault.isdigit():
            status = int(fault)
            headers = retry_after_headers(sm.cfg.retry_after_s, sm.cfg.retry_after, time.time()) \
                if status == 429 else {}
            return self._error(request, wire, sm, status, f"injected fault {status}", headers)
        if fault == "reset":
            return self._reset(request)
        if fault == "hang":
            await asyncio.sleep(HANG_S)
            return self._reset(request)

        wait = sm.core.admit(asyncio.get_running_loop().time())
        declared = sm.declared(wire, time.time())
        if wait is not None:
            hint = retry_after_headers(wait, sm.cfg.retry_after, time.time())
            return self._error(request, wire, sm, 429, f"rate limit reached for {name}",
                               hint if declared is None else {**declared, **hint})
        try:
            case, variant = self._recognised(prompt, body)
            turn = 0
            if case is None and self._cases:  # a follow-up turn: its case is the conversation's opening message
                opening, turn = _opening(body.get("messages"))
                if opening is not None and turn:
                    case, variant = self._recognised(opening, body)
                turn = turn if case is not None else 0
            judged = self._judged(prompt) if case is None and self._judges else None
            cid = case.id if case else "prompt-" + hashlib.blake2b(prompt.encode(), digest_size=6).hexdigest()
            # The server cannot see trials or attempts: each repeat of a (model, case, variant, turn) draws anew.
            n = sm.counts[(cid, variant, turn)] = sm.counts.get((cid, variant, turn), 0) + 1
            all_text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict))
            core = sm.answering(variant)  # a variant's accuracy (sim.prompt_accuracy) and draws, as in process
            out = core.outcome(cid, n, n, expected=case.expected if case else None,
                               stratum=case.stratum if case else None, tags=case.tags if case else (),
                               prompt=all_text, max_tokens=max_tokens, turn=turn)
            if judged is not None:  # a judge's request: a verdict, right with the judge model's accuracy
                u = uniform(draw(core.seed, core.key, cid, n), 1)
                out = out._replace(text=judge_answer(judged[1], out.correct, u))
            sm.core.spend_tokens(out.input_tokens + out.output_tokens, sm.declared_tpm)  # stated from the next
            if sm.serial is not None:
                sm.waiting += 1
                try:
                    await sm.serial.acquire()
                finally:
                    sm.waiting -= 1
                try:
                    return await self._answer(request, wire, sm, out, stream, include_usage, fault, declared)
                finally:
                    sm.serial.release()
            return await self._answer(request, wire, sm, out, stream, include_usage, fault, declared)
        finally:
            sm.core.release()

    async def _answer(self, request: web.Request, wire: Wire, sm: ServedModel, out: SimOutcome, stream: bool,
                      include_usage: bool, fault: str | None,
                      declared: dict[str, str] | None = None) -> web.StreamResponse:
        if out.transient:
            await asyncio.sleep(out.latency_s / 2)
            return self._error(request, wire, sm, 529 if wire == "anthropic" else 503, "simulated overload")
        name = sm.entry.model
        if fault == "trickle":
            payload = b"".join(self._sse_events(wire, name, out, include_usage)) if stream \
                else json.dumps(self._json_answer(wire, name, out)).encode()
            return await self._trickle(request, payload, stream, sm.cfg.trickle_s)
        if not stream:
            if out.latency_s > 0:
                await asyncio.sleep(out.latency_s)
            answer = self._json_answer(wire, name, out)
            if fault == "interrupted":  # a whole body with nothing in it and no finish reason
                if wire == "anthropic":
                    answer.update(content=[], stop_reason=None)
                else:
                    answer["choices"][0].update(message={"role": "assistant", "content": ""}, finish_reason=None)
            payload = json.dumps(answer).encode()
            if fault == "malformed":
                payload = payload[: len(payload) // 2] + b"<html>502 Bad Gateway"
            elif fault == "truncated":
                payload = payload[: len(payload) // 2]
            return web.Response(body=payload, content_type="application/json", headers=declared)

        loop = asyncio.get_running_loop()
        start = loop.time()
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        if declared is not None:
            headers.update(declared)
        resp = web.StreamResponse(headers=headers)
        await resp.prepare(request)
        if out.ttft_s > 0:
            await asyncio.sleep(out.ttft_s - (loop.time() - start))
        # As few writes as the schedule allows (the opening events go with the first piece, the closing ones
        # with the end of the body), each piece from a template: this server is the benchmarks' reference
        # for exact timing, and every bit of its own CPU under load is lateness in what it serves.
        head = b"".join(self._sse_start(wire, name, out))
        if fault == "interrupted":  # llama-cpp-python's server, interrupted: the opening, then the end, nothing between
            await resp.write_eof(head + (_sse({"type": "message_stop"}, "message_stop") if wire == "anthropic"
                                         else b"data: [DONE]\n\n"))
            return resp
        answer_at = start + out.ttft_s
        if out.reasoning_tokens:  # the reasoning first, on its own schedule, then the answer's first token
            thoughts = _pieces(reasoning_text(out.reasoning_tokens), min(out.reasoning_tokens, REASONING_PIECES))
            rstep = out.reasoning_s / len(thoughts)
            for i, thought in enumerate(thoughts):
                if i and sm.waiting and sm.cfg.single_slot:  # stopped while reasoning, as while answering
                    return await self._stopped(resp, head, wire)
                await resp.write(head + self._sse_thought(wire, name, thought))
                head = b""
                await asyncio.sleep(answer_at + (i + 1) * rstep - loop.time())
            answer_at += out.reasoning_s
            head = self._sse_answer_start(wire)
        answer_tokens = out.output_tokens - out.reasoning_tokens
        pieces = _pieces(out.text, answer_tokens) if out.text else []
        step = max(0.0, out.latency_s - out.ttft_s - out.reasoning_s) / max(1, len(pieces))
        piece_bytes = self._piece_encoder(wire, name, 1 if out.reasoning_tokens else 0)
        for i, piece in enumerate(pieces):
            if sm.waiting and sm.cfg.single_slot:  # another request waits for the slot: llama-cpp-python stops here
                return await self._stopped(resp, head, wire)
            if fault == "truncated" and i >= len(pieces) // 2:
                await resp.write_eof(head)  # a clean end, but without the final events: a truncated answer
                return resp
            data = piece_bytes(piece)
            if fault == "malformed" and i == 0:
                data = b'data: {"choices": [{"delta": {"content": "unterminated\n\n' + data
            await resp.write(head + data)
            head = b""
            if step > 0:
                # against the schedule, not after the last write: lateness must not add up over the pieces
                await asyncio.sleep(answer_at + (i + 1) * step - loop.time())
        if fault == "truncated":
            await resp.write_eof(head)
            return resp
        await resp.write_eof(head + b"".join(self._sse_end(wire, name, out, include_usage)))
        return resp

    @staticmethod
    async def _stopped(resp: web.StreamResponse, head: bytes, wire: Wire) -> web.StreamResponse:
        """A stream stopped for a waiting request (``single_slot``): what was due so far, then the end event with
        no finish reason, as llama-cpp-python ends it."""
        await resp.write_eof(head + (_sse({"type": "message_stop"}, "message_stop") if wire == "anthropic"
                                     else b"data: [DONE]\n\n"))
        return resp

    # ---- wire formats --------------------------------------------------------------------------

    def _json_answer(self, wire: Wire, name: str, out: SimOutcome) -> dict[str, Any]:
        thought = reasoning_text(out.reasoning_tokens) if out.reasoning_tokens else None
        if wire == "anthropic":
            content: list[dict[str, Any]] = [{"type": "text", "text": out.text}]
            if thought is not None:
                content.insert(0, {"type": "thinking", "thinking": thought, "signature": "mock"})
            return {"id": "msg_mock", "type": "message", "role": "assistant", "model": name,
                    "content": content,
                    "stop_reason": ANTHROPIC_STOP.get(out.finish_reason, out.finish_reason), "stop_sequence": None,
                    "usage": {"input_tokens": out.input_tokens, "output_tokens": out.output_tokens}}
        message: dict[str, Any] = {"role": "assistant", "content": out.text}
        if thought is not None:
            message["reasoning_content"] = thought
        return {"id": "chatcmpl-mock", "object": "chat.completion", "created": int(time.time()), "model": name,
                "choices": [{"index": 0, "message": message, "finish_reason": out.finish_reason}],
                "usage": self._usage(out)}

    @staticmethod
    def _usage(out: SimOutcome) -> dict[str, Any]:
        usage: dict[str, Any] = {"prompt_tokens": out.input_tokens, "completion_tokens": out.output_tokens,
                                 "total_tokens": out.input_tokens + out.output_tokens}
        if out.reasoning_tokens:
            usage["completion_tokens_details"] = {"reasoning_tokens": out.reasoning_tokens}
        return usage

    def _chunk(self, name: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": int(time.time()), "model": name,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def _sse_start(self, wire: Wire, name: str, out: SimOutcome) -> list[bytes]:
        if wire == "anthropic":
            msg: dict[str, Any] = {
                "id": "msg_mock", "type": "message", "role": "assistant", "model": name, "content": [],
                "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": out.input_tokens, "output_tokens": 1}}
            block = {"type": "thinking", "thinking": ""} if out.reasoning_tokens else {"type": "text", "text": ""}
            return [_sse({"type": "message_start", "message": msg}, "message_start"),
                    _sse({"type": "content_block_start", "index": 0, "content_block": block}, "content_block_start"),
                    _sse({"type": "ping"}, "ping")]
        return [_sse(self._chunk(name, {"role": "assistant", "content": ""}, None))]

    def _sse_thought(self, wire: Wire, name: str, piece: str) -> bytes:
        """A piece of reasoning: Anthropic's thinking_delta, or llama.cpp's and DeepSeek's reasoning_content."""
        if wire == "anthropic":
            return _sse({"type": "content_block_delta", "index": 0,
                         "delta": {"type": "thinking_delta", "thinking": piece}}, "content_block_delta")
        return _sse(self._chunk(name, {"reasoning_content": piece}, None))

    def _sse_answer_start(self, wire: Wire) -> bytes:
        """Between the reasoning and the answer: Anthropic closes the thinking block and opens a text block."""
        if wire == "anthropic":
            return (_sse({"type": "content_block_delta", "index": 0,
                          "delta": {"type": "signature_delta", "signature": "mock"}}, "content_block_delta")
                    + _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
                    + _sse({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
                           "content_block_start"))
        return b""

    def _sse_piece(self, wire: Wire, name: str, piece: str, index: int = 0) -> bytes:
        if wire == "anthropic":
            return _sse({"type": "content_block_delta", "index": index,
                         "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
        return _sse(self._chunk(name, {"content": piece}, None))

    def _piece_encoder(self, wire: Wire, name: str, index: int = 0) -> Callable[[str], bytes]:
        """`_sse_piece` for one answer, as a template filled in per piece (the same bytes, less work)."""
        marker = "\x00piece\x00"
        before, after = self._sse_piece(wire, name, marker, index).split(json.dumps(marker).encode())
        return lambda piece: before + json.dumps(piece).encode() + after

    def _sse_end(self, wire: Wire, name: str, out: SimOutcome, include_usage: bool) -> list[bytes]:
        if wire == "anthropic":
            return [_sse({"type": "content_block_stop", "index": 1 if out.reasoning_tokens else 0},
                         "content_block_stop"),
                    _sse({"type": "message_delta",
                          "delta": {"stop_reason": ANTHROPIC_STOP.get(out.finish_reason, out.finish_reason),
                                    "stop_sequence": None},
                          "usage": {"output_tokens": out.output_tokens}}, "message_delta"),
                    _sse({"type": "message_stop"}, "message_stop")]
        evs = [_sse(self._chunk(name, {}, out.finish_reason))]
        if include_usage:
            evs.append(_sse({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": int(time.time()),
                             "model": name, "choices": [], "usage": self._usage(out)}))
        evs.append(b"data: [DONE]\n\n")
        return evs

    def _sse_events(self, wire: Wire, name: str, out: SimOutcome, include_usage: bool) -> list[bytes]:
        thoughts = [self._sse_thought(wire, name, reasoning_text(out.reasoning_tokens)), self._sse_answer_start(wire)] \
            if out.reasoning_tokens else []
        index = 1 if out.reasoning_tokens else 0
        return [*self._sse_start(wire, name, out), *thoughts,
                *(self._sse_piece(wire, name, p, index) for p in
                  (_pieces(out.text, out.output_tokens - out.reasoning_tokens) if out.text else [])),
                *self._sse_end(wire, name, out, include_usage)]

    def _error(self, request: web.Request, wire: Wire, sm: ServedModel | None, status: int, message: str,
               headers: dict[str, str] | None = None) -> web.Response:
        kind, default = HTTP_TYPES.get(status, ("api_error", "error"))
        text = f"{message}: {default}" if message != default else message
        if sm is not None and sm.cfg.echo_headers:
            text += " (request headers: " + json.dumps(dict(request.headers)) + ")"
        if wire == "anthropic":
            body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": text}}
        else:
            body = {"error": {"message": text, "type": kind, "param": None, "code": None}}
        return web.json_response(body, status=status, headers=headers)

    def _reset(self, request: web.Request) -> web.Response:
        """Drop the connection with a TCP reset (SO_LINGER 0), as a crashed upstream or a middlebox does."""
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            transport.abort()
        raise asyncio.CancelledError  # nothing more to write; aiohttp ends the handler quietly

    async def _trickle(self, request: web.Request, payload: bytes, stream: bool, every_s: float) -> web.StreamResponse:
        ctype = "text/event-stream" if stream else "application/json"
        resp = web.StreamResponse(headers={"Content-Type": ctype})
        resp.content_length = len(payload) if not stream else None
        await resp.prepare(request)
        for i in range(len(payload)):
            await resp.write(payload[i : i + 1])
            await asyncio.sleep(every_s)
        await resp.write_eof()
        return resp


async def serve(project: Project | None, host: str = "127.0.0.1", port: int = 8765, seed: int | None = None,
                announce: Callable[[str], None] = print, stop: asyncio.Event | None = None,
                stall: Stall | None = None) -> None:
    """Serve until `stop` is set (or SIGINT/SIGTERM); announce the address once listening."""
    server = MockServer(project, seed, stall)
    runner = web.AppRunner(server.app(), handler_cancellation=True, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, shutdown_timeout=0.5)
        await site.start()
        bound = runner.addresses[0]
        url = f"http://{host}:{bound[1]}" if ":" not in host else f"http://[{host}]:{bound[1]}"
        what = f"{plural(len(server.model_names()), 'model')} from {project.path}" if project else "any model name"
        announce(f"arena mock-server listening on {url} (OpenAI base_url {url}/v1, Anthropic base_url {url}); "
                 f"serving {what}. Ctrl-C stops it.")
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        if sys.platform != "win32":
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()

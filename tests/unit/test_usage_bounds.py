"""Absurd usage (token counts and cost) from a server or a solver is checked where it enters, and a row the database
cannot take never costs the rows beside it (issue 34 items 10 and 11)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import pytest

from arenatui.config.schema import Case, ModelConfig, RunSettings
from arenatui.kernel.errors import SolverFailed
from arenatui.kernel.events import CallFinished, CallResult
from arenatui.providers.anthropic import AnthropicProvider
from arenatui.providers.base import MAX_TOKENS_PER_CALL, Request, usage_count
from arenatui.providers.openai import OpenAIProvider
from arenatui.providers.solver import SolverRequest, completion
from arenatui.providers.solver_answer import Answer
from arenatui.store import ResultWriter, Store

CASE = Case(id="c1", input="What is 2+2?", expected="4")
MSGS = ({"role": "user", "content": "What is 2+2?"},)
ABSURD = [10**30, -5, 1e300, math.inf, True, "12", None]


@pytest.mark.parametrize("value", ABSURD)
def test_a_token_count_that_is_no_sane_whole_number_is_none(value: object) -> None:
    assert usage_count(value) is None


@pytest.mark.parametrize("value", [0, 1, 12.0, MAX_TOKENS_PER_CALL])
def test_a_sane_token_count_is_kept(value: object) -> None:
    assert usage_count(value) == int(value)  # type: ignore[call-overload]


def _call(provider_cls: type[OpenAIProvider] | type[AnthropicProvider], body: bytes, stream: bool) -> Any:
    kind = "openai" if provider_cls is OpenAIProvider else "anthropic"
    model = ModelConfig(key="m", provider=kind, model="mm", base_url="http://test", stream=stream)

    def handler(req: httpx.Request) -> httpx.Response:
        ctype = "text/event-stream" if stream else "application/json"
        return httpx.Response(200, content=body, headers={"content-type": ctype})

    provider = provider_cls(model, RunSettings(), 4, transport=httpx.MockTransport(handler))

    async def go() -> Any:
        try:
            return await provider.complete(Request(model, CASE, 0, 1, MSGS, 16, 0.0, 5.0))
        finally:
            await provider.aclose()

    return anyio.run(go)


def _sse(*events: Any) -> bytes:
    return b"".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events)


HUGE = 10**30


@pytest.mark.parametrize("stream", [False, True])
def test_openai_usage_past_the_bound_is_estimated_and_marked(stream: bool) -> None:
    usage = {"prompt_tokens": HUGE, "completion_tokens": HUGE}
    body = (_sse({"choices": [{"delta": {"content": "4"}}]}, {"choices": [{"delta": {}, "finish_reason": "stop"}]},
                 {"choices": [], "usage": usage}, "[DONE]") if stream else
            json.dumps({"choices": [{"message": {"content": "4"}, "finish_reason": "stop"}], "usage": usage}).encode())
    c = _call(OpenAIProvider, body, stream)
    assert c.tokens_estimated and c.input_tokens < 100 and c.output_tokens < 100


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_usage_past_the_bound_is_estimated_and_marked(stream: bool) -> None:
    if stream:
        body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in (
            {"type": "message_start", "message": {"usage": {"input_tokens": HUGE, "output_tokens": 1}}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "4"}},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": -3}},
            {"type": "message_stop"}))
    else:
        body = json.dumps({"content": [{"type": "text", "text": "4"}], "stop_reason": "end_turn",
                           "usage": {"input_tokens": HUGE, "output_tokens": HUGE}}).encode()
    c = _call(AnthropicProvider, body, stream)
    assert c.tokens_estimated and c.input_tokens < 100 and c.output_tokens < 100


def _solver_request() -> SolverRequest:
    return SolverRequest("q", MSGS, 16, 0.0, None, "c1", 0, 1)


@pytest.mark.parametrize("tokens", [HUGE, -1000, math.nan, math.inf, "many"])
def test_a_solvers_absurd_token_counts_are_estimated_and_marked(tokens: object) -> None:
    c = completion(Answer("four", input_tokens=tokens, output_tokens=tokens), _solver_request(), 0.0)  # type: ignore[arg-type]
    assert c.tokens_estimated and 0 < c.input_tokens < 100 and 0 < c.output_tokens < 100


@pytest.mark.parametrize("cost", [math.nan, math.inf, -1000.0, -math.inf, "free"])
def test_a_solvers_absurd_cost_is_its_solver_error_naming_the_value(cost: object) -> None:
    with pytest.raises(SolverFailed) as ei:
        completion(Answer("four", cost=cost), _solver_request(), 0.0)  # type: ignore[arg-type]
    assert "cost" in str(ei.value) and repr(cost) in str(ei.value)


def test_a_solvers_sane_cost_and_tokens_are_kept() -> None:
    c = completion(Answer("four", input_tokens=3, output_tokens=1, cost=0.25), _solver_request(), 0.0)
    assert (c.input_tokens, c.output_tokens, c.cost, c.tokens_estimated) == (3, 1, 0.25, False)
    assert completion(Answer("four", cost=0.0), _solver_request(), 0.0).cost in (None, 0.0)


CONFIG = {"project": {"name": "p"}, "models": [{"key": "m1"}], "cases": [{"id": f"q{i}", "input": f"x{i}"}
                                                                         for i in range(10)]}


def _result(case_id: str, input_tokens: int = 1) -> CallResult:
    return CallResult("m1", case_id, 0, "ok", "ok", 1.0, True, None, None, 1, 10.0, 10.0, None, input_tokens, 1,
                      0.0, "stop", False, 1.0, 2.0)


def test_a_row_sqlite_cannot_hold_is_left_out_and_its_batch_committed(tmp_path: Path) -> None:
    """prompt_tokens 10**30 reached the writer once: OverflowError stopped it, the batch was lost and every resume
    failed the same way. Now the row is refused and counted, the rest of its batch stored."""
    db = tmp_path / "r.db"
    with Store(db) as store:
        run_id = store.create_run("p", None, CONFIG, {}, 10)
    writer = ResultWriter(db, run_id)

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await anyio.lowlevel.checkpoint()
            for i in range(6):
                writer.on_event(CallFinished(_result(f"q{i}", HUGE if i == 3 else 1), 0.0))
            writer.stop()

    anyio.run(go)
    writer.close()
    with Store(db) as store:
        assert sorted(r[0] for r in store.results(run_id, ("case_id",))) == ["q0", "q1", "q2", "q4", "q5"]
    assert any("1 row could not be stored" in p and "OverflowError" in p for p in writer.problems)

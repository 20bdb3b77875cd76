"""A simulated reasoning model: its reasoning counts against max_tokens before its answer, and takes its own time
between the first token and the answer's (exact with exact_timing and no jitter)."""

from __future__ import annotations

import anyio
import pytest

from arenatui.config.schema import Case, ModelConfig, SimSettings
from arenatui.providers.base import Request
from arenatui.providers.sim import SimCore, SimProvider

S = SimSettings(base_latency_s=0.01, per_token_s=0.001, jitter=0.0, output_tokens=8, exact_timing=True,
                accuracy=1.0, reasoning_tokens=20, reasoning_per_token_s=0.005)


def test_reasoning_time_and_tokens() -> None:
    out = SimCore("m", S).outcome("c", 0, 1, "4", None, (), "2+2?", 64)
    assert (out.text, out.output_tokens, out.reasoning_tokens, out.finish_reason) == ("4", 28, 20, "stop")
    assert out.ttft_s == pytest.approx(0.01) and out.reasoning_s == pytest.approx(0.1)
    assert out.latency_s == pytest.approx(0.01 + 0.1 + 8 * 0.001)
    assert S.mean_latency_s() == pytest.approx(out.latency_s)


def test_a_limit_the_reasoning_uses_up_leaves_no_answer() -> None:
    out = SimCore("m", S).outcome("c", 0, 1, "4", None, (), "2+2?", 16)
    assert (out.text, out.output_tokens, out.reasoning_tokens, out.finish_reason, out.correct) == \
        ("", 16, 16, "length", False)
    short = SimCore("m", S).outcome("c", 0, 1, "4", None, (), "2+2?", 24)  # room for 4 answer tokens of 8
    assert (short.output_tokens, short.reasoning_tokens, short.finish_reason) == (24, 20, "length")


def test_the_in_process_sim_reports_reasoning_and_both_first_tokens() -> None:
    model = ModelConfig(key="m", sim=S)
    provider = SimProvider(model)
    case = Case(id="c", input="2+2?", expected="4")
    comp = anyio.run(provider.complete, Request(model, case, 0, 1, ({"role": "user", "content": "2+2?"},), 64, 0.0,
                                                5.0))
    assert comp.text == "4" and comp.reasoning_tokens == 20 and not comp.reasoning_estimated
    assert comp.reasoning is not None and comp.reasoning.split() == ["think"] * 20
    assert comp.ttft_s == pytest.approx(0.01) and comp.answer_ttft_s == pytest.approx(0.11)

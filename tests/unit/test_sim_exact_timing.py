"""`exact_timing` makes a simulated model's latency and time to first token exactly what the settings say."""

from __future__ import annotations

from arenatui.config.schema import SimSettings
from arenatui.providers.sim import SimCore


def test_exact_timing_fixes_tokens_latency_and_ttft() -> None:
    core = SimCore("m", SimSettings(base_latency_s=0.05, per_token_s=0.005, output_tokens=10, jitter=0.0,
                                    exact_timing=True), seed=1)
    for trial in range(50):
        out = core.outcome(f"c{trial}", trial, 1 + trial % 3, expected=None, stratum=None, tags=(), prompt="p",
                           max_tokens=64)
        assert out.output_tokens == 10
        assert abs(out.latency_s - 0.1) < 1e-12 and out.ttft_s == 0.05


def test_without_it_timing_still_varies() -> None:
    core = SimCore("m", SimSettings(base_latency_s=0.05, per_token_s=0.005, output_tokens=10, jitter=0.0), seed=1)
    outs = [core.outcome(f"c{i}", i, 1, expected=None, stratum=None, tags=(), prompt="p", max_tokens=64)
            for i in range(20)]
    assert len({o.ttft_s for o in outs}) > 1 and len({o.output_tokens for o in outs}) > 1


def test_a_repair_turn_is_charged_for_the_whole_conversation() -> None:
    """A repair turn sends the question, the wrong answer and the scorer's word back: its input tokens (and so its
    cost, and a repaired case's cost per completed case) count all of it, as the mock server counts them."""
    import anyio

    from arenatui.config.schema import Case, ModelConfig
    from arenatui.providers.base import Request, estimate_tokens
    from arenatui.providers.sim import SimProvider

    model = ModelConfig(key="m", provider="sim", sim=SimSettings(base_latency_s=0.0, per_token_s=0.0, jitter=0.0))
    case = Case(id="c", input="What is the capital of France? Answer in one word.", expected="Paris")
    first = ({"role": "user", "content": case.input},)
    repair = (*first, {"role": "assistant", "content": "I am not sure."},
              {"role": "user", "content": "Not accepted: expected one word naming a city. Try again."})
    sim = SimProvider(model)

    async def ask(messages: tuple[dict[str, str], ...], turn: int) -> int:
        return (await sim.complete(Request(model, case, 0, 1, messages, 64, 0.0, 10.0, None, turn))).input_tokens

    asked, repaired = anyio.run(ask, first, 0), anyio.run(ask, repair, 1)
    assert asked == estimate_tokens(case.input)
    assert repaired == estimate_tokens("\n".join(m["content"] for m in repair)) > 2 * asked


def test_outcomes_draw_the_same_bits_as_draw() -> None:
    """SimCore.outcome hashes inline (its prefix made once); the mock server and judges call `draw`: both must read
    the same bits, or the sim and the mock server would give one model different answers."""
    from arenatui.providers.sim import uniforms

    core = SimCore("model-x", SimSettings(accuracy=0.5, output_tokens=40), seed=11)
    for i in range(200):
        for turn in (0, 2):
            cid = f"case{i}"
            out = core.outcome(cid, i % 3, 1, "yes", None, (), "prompt", 256, turn)
            u = uniforms(11, "model-x", cid if not turn else f"{cid}#turn {turn}", i % 3)
            assert out.correct == (u[0] < 0.5)
            assert out.output_tokens == max(1, round(40 * (0.5 + u[2])))

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

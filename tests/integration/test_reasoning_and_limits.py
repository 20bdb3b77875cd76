"""Reasoning models and declared rate limits over both wires, against the mock server: reasoning kept apart from the
answer and timed (first token of any kind, first answer token), reasoning tokens from usage, a limit used up while
reasoning, and the rate limits a provider states in its headers."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import anyio
import pytest
from httpkit import PROVIDERS, MockServerProcess, run_sweep, write_project

from arenatui.cli import main
from arenatui.config.schema import Case, ModelConfig, RunSettings
from arenatui.providers.anthropic import AnthropicProvider
from arenatui.providers.base import Request
from arenatui.providers.openai import OpenAIProvider
from arenatui.store import Store
from arenatui.store.queries import call_details
from arenatui.tui.call_text import PREVIEW_CHARS, CallContext, call_text

REASONING_S = 20 * 0.005
"""The `*-reason` models' simulated reasoning: 20 tokens at 5 ms."""


@pytest.mark.parametrize("prefix", list(PROVIDERS))
def test_reasoning_is_kept_apart_and_timed(mock_server: MockServerProcess, tmp_path: Path, prefix: str) -> None:
    key = f"{prefix}-reason"
    priced = {**mock_server.models[key], "price_in_per_mtok": 1.0, "price_out_per_mtok": 10.0}
    out = run_sweep(tmp_path, mock_server.url, [priced], run={"trials": 5, "concurrency": 2}, name=prefix)
    rows = out.by_model(key)
    assert len(rows) == 15 and all(r["status"] == "passed" for r in rows)
    gaps = []
    for r in rows:
        # OpenAI-compatible usage reports them; Anthropic's counts thinking in output_tokens only: estimated, marked
        if prefix == "oa":
            assert r["reasoning_tokens"] == 20 and not r["reasoning_estimated"]
        else:
            assert r["reasoning_tokens"] > 0 and r["reasoning_estimated"]
        assert r["reasoning"].split() == ["think"] * 20  # apart from the answer, never in it
        assert "think" not in r["output"]
        assert r["output_tokens"] > 20  # usage counts reasoning as output
        gaps.append(r["answer_ttft_ms"] - r["ttft_ms"])
    # the server writes the first answer token REASONING_S after the first reasoning token; the median of 15 calls
    # is what the client measured of it (generous bound: a busy machine delays single events, rarely the median)
    assert statistics.median(gaps) == pytest.approx(REASONING_S * 1000, abs=25), gaps
    # the call's detail shows the reasoning apart, and both first tokens
    with Store(out.db, read_only=True) as store:
        (row, *_) = call_details(store, out.run_id, "capital", lane=key, preview=PREVIEW_CHARS)
    text = call_text(row, CallContext()).plain
    assert "reasoning (never scored)\nthink think" in text and "first\u00a0answer\u00a0token" in text
    assert text.index("reasoning (never scored)") < text.index("output\nParis")
    # the report counts the reasoning in the spend and says what share of it was thinking
    report = tmp_path / "report.json"
    assert main(["report", out.run_id, "--db", str(out.db), "--format", "json", "--output", str(report)]) == 0
    reasoning = json.loads(report.read_text(encoding="utf-8"))["reasoning"][key]
    assert reasoning["calls"] == 15 and 0 < reasoning["share"] < 1
    if prefix == "oa":  # exact where usage reports it: 20 of 28 output tokens
        assert reasoning["reasoning_tokens"] == 300 and reasoning["share"] == pytest.approx(20 / 28)
    # of the whole spend (input too): the reasoning tokens at the output price over what the model spent
    spent = sum(r["cost"] for r in rows)
    assert reasoning["spend_share"] == pytest.approx(reasoning["reasoning_tokens"] * 10.0 / 1e6 / spent)
    assert 0 < reasoning["spend_share"] < reasoning["share"]
    md = tmp_path / "report.md"
    assert main(["report", out.run_id, "--db", str(out.db), "--output", str(md)]) == 0
    text = md.read_text(encoding="utf-8")
    assert "Reasoning (counted in the tokens and spend above, never scored)" in text
    assert "| reasoning |" in text  # a column of the cost table
    assert f"{reasoning['per_call']:.0f}/call · {reasoning['spend_share']:.0%} of spend" in text


@pytest.mark.parametrize("prefix", list(PROVIDERS))
def test_a_non_streamed_reasoning_answer_keeps_its_reasoning(mock_server: MockServerProcess, tmp_path: Path,
                                                            prefix: str) -> None:
    key = f"{prefix}-reason-ns"
    out = run_sweep(tmp_path, mock_server.url, [mock_server.models[key]], limit=1, name=prefix)
    (r,) = out.by_model(key)
    assert r["status"] == "passed" and r["reasoning"].split() == ["think"] * 20
    # OpenAI reports reasoning tokens in usage; Anthropic does not, so they are estimated (and say so)
    assert (r["reasoning_tokens"], bool(r["reasoning_estimated"])) == ((20, False) if prefix == "oa" else
                                                                        (r["reasoning_tokens"], True))
    assert r["answer_ttft_ms"] is None  # nothing to time in a whole body


@pytest.mark.parametrize("prefix", list(PROVIDERS))
def test_a_limit_used_up_while_reasoning_is_cut_while_reasoning(mock_server: MockServerProcess, tmp_path: Path,
                                                               prefix: str) -> None:
    key = f"{prefix}-reason-cut"  # 40 reasoning tokens, max_tokens 32
    out = run_sweep(tmp_path, mock_server.url, [mock_server.models[key]], limit=1, name=prefix)
    (r,) = out.by_model(key)
    assert (r["status"], r["output"], r["finish_reason"]) == ("failed", "", "length")
    assert r["failure_mode"] == "cut_while_reasoning" and r["reasoning_tokens"] == 32


def _ask(provider_cls: type[OpenAIProvider] | type[AnthropicProvider], base: str, key: str) -> object:
    kind = "openai" if provider_cls is OpenAIProvider else "anthropic"
    model = ModelConfig(key=key, provider=kind, model=key, base_url=f"{base}/v1" if kind == "openai" else base)
    provider = provider_cls(model, RunSettings())
    case = Case(id="capital", input="What is the capital of France?", expected="Paris")
    request = Request(model, case, 0, 1, ({"role": "user", "content": case.input},), 32, 0.0, 5.0)

    async def go() -> object:
        try:
            comp = await provider.complete(request)
            assert provider.declared == comp.limits
            return comp.limits
        finally:
            await provider.aclose()

    return anyio.run(go)


@pytest.mark.parametrize("prefix", list(PROVIDERS))
def test_declared_limits_are_read_from_every_answer(mock_server: MockServerProcess, prefix: str) -> None:
    cls = OpenAIProvider if prefix == "oa" else AnthropicProvider
    limits = _ask(cls, mock_server.url, f"{prefix}-declared")
    assert limits is not None
    assert limits.requests_limit == 600 and limits.tokens_limit == 40000  # type: ignore[attr-defined]
    assert 0 <= limits.requests_remaining <= 600 and limits.requests_reset_s is not None  # type: ignore[attr-defined]
    # what is left of the tokens/min (the answers spend it: tests/integration/test_sim_declared_limits.py)
    assert 0 <= limits.tokens_remaining <= 40000 and limits.tokens_reset_s is not None  # type: ignore[attr-defined]
    lie = _ask(cls, mock_server.url, f"{prefix}-declared-lie")
    assert lie is not None and lie.requests_limit == 90 and lie.tokens_limit is None  # type: ignore[attr-defined]
    assert _ask(cls, mock_server.url, f"{prefix}-ok") is None  # no headers, no record


@pytest.mark.parametrize("prefix", list(PROVIDERS))
def test_arena_tune_shows_the_declared_limits_and_the_run_keeps_them(mock_server: MockServerProcess, tmp_path: Path,
                                                                    prefix: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    key = f"{prefix}-declared"
    project = write_project(tmp_path / "p.toml", mock_server.url, [mock_server.models[key]])
    db = tmp_path / "t.db"
    assert main(["tune", "--project", str(project), "--db", str(db), "--budget", "30"]) == 0
    out = capsys.readouterr().out
    assert "declared rate limits" in out
    line = out.split("declared rate limits")[1].splitlines()[1]
    assert "declares 600 requests/min" in line and "40,000 tokens/min" in line and "left" in line
    with Store(db, read_only=True) as store:
        (run_id,) = [r[0] for r in store.conn.execute("SELECT run_id FROM runs")]
        (at, limits), = store.declared_limits(run_id).values()
        assert limits.requests_limit == 600 and limits.tokens_limit == 40000 and at > 0
    # the stored run shows them again
    assert main(["tune", "--show", run_id, "--db", str(db)]) == 0
    assert "declares 600 requests/min" in capsys.readouterr().out

"""The same provider tests against an independent peer: @copilotkit/aimock (installed by scripts/install_peers.sh).

Our mock server and our providers were written together; a third-party server checks that both
speak the real wire formats and not merely each other's.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from httpkit import PROVIDERS, WIRES, run_sweep, start_server, stop_server

from arenatui.kernel.events import CallRetrying, CallStarted

ROOT = Path(__file__).resolve().parents[2]
LLMOCK = ROOT / ".peers" / "node_modules" / ".bin" / "llmock"
REASONING = "The question asks for the capital of France, which is Paris."
LONG = "Paris is the capital of France, a city on the Seine with many bridges and museums."

FIXTURES: list[dict[str, Any]] = [
    {"match": {"model": "peer-ok"}, "response": {"content": "Paris"}, "streamingProfile": {"ttft": 40, "tps": 200}},
    {"match": {"model": "peer-429"}, "response": {"error": {"message": "slow down", "type": "rate_limit_error"},
                                                  "status": 429, "retryAfter": 1}},
    {"match": {"model": "peer-400"}, "response": {"error": {"message": "bad request", "type": "invalid_request_error"},
                                                  "status": 400}},
    {"match": {"model": "peer-drop"}, "response": {"content": "Paris"}, "chaos": {"dropRate": 1}},
    {"match": {"model": "peer-malformed"}, "response": {"content": "Paris"}, "chaos": {"malformedRate": 1}},
    {"match": {"model": "peer-disconnect"}, "response": {"content": "Paris"}, "chaos": {"disconnectRate": 1}},
    {"match": {"model": "peer-truncated"}, "response": {"content": LONG}, "truncateAfterChunks": 1},
    {"match": {"model": "peer-reason"}, "response": {"content": "Paris", "reasoning": REASONING},
     "streamingProfile": {"ttft": 40, "tps": 200}},
]


def _models(name: str, stream: bool = True) -> list[dict[str, Any]]:
    return [{"key": f"{p}-{name}", "provider": kind, "model": name, "stream": stream} for p, kind in PROVIDERS.items()]


@pytest.fixture(scope="module")
def aimock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the @copilotkit/aimock peer tests need Node 20.15+")
    if not LLMOCK.exists():
        pytest.skip("the aimock peer is not installed: run `bash scripts/install_peers.sh`")
    fx = tmp_path_factory.mktemp("aimock") / "fixtures.json"
    fx.write_text(json.dumps({"fixtures": FIXTURES}), encoding="utf-8")
    proc, m, _ = start_server([str(LLMOCK), "--host", "127.0.0.1", "-p", "0", "-f", str(fx)],
                              r"listening on (http://127\.0\.0\.1:\d+)")
    try:
        yield m.group(1)
    finally:
        stop_server(proc)


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_peer_answers_stream_and_not(aimock: str, tmp_path: Path, wire: str) -> None:
    out = run_sweep(tmp_path, aimock, _models("peer-ok") + [dict(m, key=m["key"] + "-ns") for m in
                                                            _models("peer-ok", stream=False)], limit=1, transport=wire)
    assert len(out.rows) == 4
    for (model, _, _), r in out.rows.items():
        assert r["status"] == "passed" and r["output"] == "Paris", (model, r["error_message"])
        assert r["input_tokens"] > 0 and r["output_tokens"] > 0
        # The peer's Anthropic usage says 0 tokens, which cannot be true: those counts are our estimates.
        assert r["tokens_estimated"] == (model.startswith("an-"))
        if not model.endswith("-ns"):
            assert r["ttft_ms"] is not None and r["ttft_ms"] >= 30  # the fixture's 40 ms time to first token


@pytest.mark.parametrize(("name", "error_class", "attempts"), [
    ("peer-drop", "transient", 3), ("peer-malformed", "transient", 3), ("peer-disconnect", "transient", 3),
    ("peer-truncated", "transient", 3), ("peer-400", "terminal", 1),
])
def test_peer_faults(aimock: str, tmp_path: Path, name: str, error_class: str, attempts: int, wire: str) -> None:
    out = run_sweep(tmp_path, aimock, _models(name) + [dict(m, key=m["key"] + "-ns") for m in
                                                       _models(name, stream=False)], limit=1, transport=wire)
    for (model, _, _), r in out.rows.items():
        if name == "peer-truncated" and model.endswith("-ns"):
            continue  # truncation is a streaming fault: the JSON answer arrives whole
        assert r["error_class"] == error_class, (model, r["error_message"])
        assert r["attempts"] == attempts
        assert len(out.of(CallStarted, model)) == attempts


def test_peer_429_retry_after_is_honoured(aimock: str, tmp_path: Path, wire: str) -> None:
    out = run_sweep(tmp_path, aimock, _models("peer-429"), limit=1, run={"max_attempts": 2}, transport=wire)
    for (model, _, _), r in out.rows.items():
        assert r["error_class"] == "rate_limited" and r["attempts"] == 2
        (retrying,) = out.of(CallRetrying, model)
        second = [e for e in out.of(CallStarted, model) if e.attempt == 2]
        assert retrying.delay >= 1.0 and second[0].t - retrying.t >= 1.0


def test_peer_reasoning_is_kept_apart_from_the_answer(aimock: str, tmp_path: Path, wire: str) -> None:
    # the peer streams reasoning as reasoning_content (OpenAI wire) and thinking blocks (Anthropic), as real ones do
    out = run_sweep(tmp_path, aimock, _models("peer-reason") + [dict(m, key=m["key"] + "-ns") for m in
                                                                _models("peer-reason", stream=False)],
                    limit=1, transport=wire)
    assert len(out.rows) == 4
    for (model, _, _), r in out.rows.items():
        assert r["status"] == "passed" and r["output"] == "Paris", (model, r["error_message"])
        assert r["reasoning"] == REASONING and r["reasoning_tokens"] > 0, model
        if not model.endswith("-ns"):  # the first token is the reasoning's; the answer's comes after it
            assert r["answer_ttft_ms"] >= r["ttft_ms"] >= 30

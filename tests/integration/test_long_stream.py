"""A streamed answer of megabytes, multi-byte text split anywhere: after its first token a stream is read in
one go (`WireResponse.rest`), which must neither stall on the transport's flow control nor lose a byte."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import tomli_w
from httpkit import PROVIDERS, WIRES, start_server, stop_server

from arenatui.project import load_project
from arenatui.providers.base import Completion, Request, build_messages
from arenatui.providers.registry import make_provider

TEXT = "lorem ipsum é中 " * 40_000  # 600,000 characters; in 30,000 pieces: a body of about 5 MB
PIECES = 30_000


def _project(path: Path, base: str, provider: str, transport: str) -> Path:
    url = f"{base}/v1" if provider == "openai" else base
    doc = {"project": {"name": "long"}, "defaults": {"max_tokens": 100_000}, "run": {"timeout_s": 30.0},
           "models": [{"key": "long", "provider": provider, "model": "long", "base_url": url, "stream": True,
                       "transport": transport,
                       "sim": {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0, "output_tokens": PIECES,
                               "exact_timing": True, "accuracy": 1.0}}],
           "cases": [{"id": "long", "input": "Write a lot.", "expected": TEXT}]}
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cfg = _project(tmp_path_factory.mktemp("long") / "server.toml", "http://127.0.0.1:1", "openai", "auto")
    proc, m, _ = start_server([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config", str(cfg)],
                              r"listening on (http://127\.0\.0\.1:\d+)")
    try:
        yield m.group(1)
    finally:
        stop_server(proc)


@pytest.mark.parametrize("transport", WIRES)
@pytest.mark.parametrize("provider", sorted(PROVIDERS.values()))
def test_a_long_stream_arrives_whole(server: str, tmp_path: Path, provider: str, transport: str) -> None:
    project = load_project(_project(tmp_path / "client.toml", server, provider, transport))
    model, case = project.models[0], project.cases[0]
    prov = make_provider(model, project.run)
    req = Request(model, case, 0, 1, build_messages(model, project.defaults, case), 100_000, 0.0, 30.0)

    async def go() -> Completion:
        try:
            return await prov.complete(req)
        finally:
            await prov.aclose()

    comp = anyio.run(go)
    assert comp.text == TEXT
    assert comp.output_tokens == PIECES and comp.finish_reason == "stop"
    assert comp.ttft_s is not None and comp.latency_s is not None and 0 < comp.ttft_s < comp.latency_s

"""What the HTTP providers time: the provider's part of a call, not the client's.

Latency and time to first token run from the moment the request is on the wire, so connecting (TCP,
TLS) and our own event loop's queueing are left out of them and kept apart as connect time; and when
many answers arrive at once, each is timed before any of them goes on to the rest of its work.
"""

from __future__ import annotations

import json
import time
import types
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import tomli_w

from arenatui.config.schema import Case, ModelConfig, RunSettings
from arenatui.kernel.events import CallFinished
from arenatui.plan import Filters
from arenatui.providers.base import Request
from arenatui.providers.openai import OpenAIProvider
from arenatui.session.sweep import Sweep, SweepOptions

CONNECT_S = 0.15
SERVER_S = 0.10
ANSWER = {"choices": [{"message": {"content": "4"}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 5, "completion_tokens": 1}}


class Clock:
    """What FakeWire and the provider read the time from: the real clock, or with `fake` a clock that only moves
    when a fake sleep advances it, so timings come out exact however busy the machine is."""

    def __init__(self) -> None:
        self.fake = False
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t if self.fake else time.monotonic()

    async def sleep(self, s: float) -> None:
        if self.fake:
            self.t += s
            await anyio.lowlevel.checkpoint()
        else:
            await anyio.sleep(s)


CLOCK = Clock()


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    monkeypatch.setattr(CLOCK, "fake", True)
    monkeypatch.setattr("arenatui.providers.http.time", types.SimpleNamespace(monotonic=CLOCK.monotonic))
    return CLOCK


def _sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class FakeResponse:
    def __init__(self, sent: float, stream: bool, ready: anyio.Event | None) -> None:
        self.status = 200
        self.headers: Mapping[str, str] = {"content-type": "text/event-stream" if stream else "application/json"}
        self.sent_at: float | None = sent
        self._ready = ready

    async def chunks(self) -> AsyncIterator[bytes]:  # the first token half-way through the server's time
        await CLOCK.sleep(SERVER_S / 2)
        yield _sse({"choices": [{"delta": {"role": "assistant", "content": "Hi"}}]})

    async def rest(self) -> bytes:
        await CLOCK.sleep(SERVER_S / 2)
        return (_sse({"choices": [{"delta": {"content": " there"}, "finish_reason": "stop"}]})
                + _sse({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}) + b"data: [DONE]\n\n")

    async def read(self) -> bytes:
        if self._ready is not None:
            await self._ready.wait()
        else:
            await CLOCK.sleep(SERVER_S)
        return json.dumps(ANSWER).encode()


class FakeWire:
    """Connecting takes CONNECT_S (or nothing, with `burst`: every answer then arrives in the same instant,
    once `burst` requests are out)."""

    name = "fake"
    timeout_errors: tuple[type[BaseException], ...] = (TimeoutError,)
    errors: tuple[type[BaseException], ...] = (OSError,)

    def __init__(self, stream: bool = False, burst: int = 0) -> None:
        self.stream = stream
        self.burst = burst
        self.out = 0
        self.ready = anyio.Event() if burst else None

    @asynccontextmanager
    async def post(self, url: str, body: bytes) -> AsyncIterator[FakeResponse]:
        if not self.burst:
            await CLOCK.sleep(CONNECT_S)
        sent = CLOCK.monotonic()
        self.out += 1
        if self.ready is not None and self.out == self.burst:
            self.ready.set()
        yield FakeResponse(sent, self.stream, self.ready)

    def warm(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def _complete(stream: bool) -> Any:
    model = ModelConfig(key="m", provider="openai", model="mm", base_url="http://t/v1", stream=stream)
    provider = OpenAIProvider(model, RunSettings())
    provider._wire = FakeWire(stream)
    case = Case(id="q", input="2+2?")
    req = Request(model, case, 0, 1, ({"role": "user", "content": "2+2?"},), 16, 0.0, 5.0)
    return anyio.run(provider.complete, req)


def test_connecting_is_left_out_of_the_latency(fake_clock: Clock) -> None:
    comp = _complete(stream=False)
    assert comp.text == "4"
    assert comp.connect_s == pytest.approx(CONNECT_S)
    # with the connection counted it would be CONNECT_S + SERVER_S = 0.25 s
    assert comp.latency_s == pytest.approx(SERVER_S)


def test_time_to_first_token_and_latency_start_on_the_wire_when_streamed(fake_clock: Clock) -> None:
    comp = _complete(stream=True)
    assert comp.text == "Hi there" and comp.output_tokens == 2 and comp.finish_reason == "stop"
    assert comp.connect_s == pytest.approx(CONNECT_S)
    assert comp.ttft_s == pytest.approx(SERVER_S / 2)
    assert comp.latency_s == pytest.approx(SERVER_S)


def test_answers_arriving_together_are_each_timed_before_any_goes_on(tmp_path: Path) -> None:
    """20 answers arrive in one instant and every finished call then costs 10 ms of work downstream (a slow
    sink stands in for scoring, events and the next request). Timed after that work, the last answer would
    carry 19 × 10 ms that are not the provider's; timed first, the 20 latencies are about equal."""
    n = 20
    doc = {"project": {"name": "burst"}, "run": {"concurrency": n, "trials": n, "max_attempts": 1},
           "models": [{"key": "m", "provider": "openai", "model": "mm", "base_url": "http://127.0.0.1:9/v1",
                       "stream": False}],
           "cases": [{"id": "q", "input": "2+2?", "expected": "4"}]}
    path = tmp_path / "burst.toml"
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    finished: list[CallFinished] = []
    work: list[float] = []

    def slow_sink(ev: object) -> None:
        if type(ev) is CallFinished:
            finished.append(ev)
            t = time.perf_counter()
            time.sleep(0.010)
            work.append(time.perf_counter() - t)

    sweep = Sweep(SweepOptions(project=path, db=tmp_path / "b.db", filters=Filters()), extra_sinks=(slow_sink,))
    sweep.providers["m"]._wire = FakeWire(burst=n)  # type: ignore[attr-defined]
    assert anyio.run(sweep.run) == "finished"
    lat = [e.result.latency_ms for e in finished]
    assert len(lat) == n and all(v is not None for v in lat)
    spread = max(v for v in lat if v is not None) - min(v for v in lat if v is not None)
    # Timed after the others' work, the last answer would carry all of it but its own (19 x 10 ms, longer on a busy
    # machine): the bound is a share of the work this very run measured, not a fixed time.
    others = sum(work[:-1]) * 1000.0
    assert spread < 0.3 * others, f"latencies spread over {spread:.0f} ms of {others:.0f} ms of other calls' work"

"""Small fake providers and a project builder for the engine tests (issue 2, "the spine").

A Provider is any object with ``async complete(request)`` and ``async aclose()``; these fakes script
what each attempt does and count what the engine did to them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from arenatui.config import Project
from arenatui.engine import RetryPolicy, Runner
from arenatui.kernel.errors import ProviderError
from arenatui.kernel.events import CallFinished, CallResult, CallRetrying, CallStarted, Event
from arenatui.plan import Plan, make_plan
from arenatui.project import project_from_dict
from arenatui.providers.base import Completion, Request


def project(n_cases: int = 4, models: Sequence[str | dict[str, Any]] = ("m",), *, trials: int = 1,
            run: dict[str, Any] | None = None) -> Project:
    raw: dict[str, Any] = {
        "run": {"trials": trials, **(run or {})},
        "models": [{"key": m, "provider": "sim"} if isinstance(m, str) else m for m in models],
        "cases": [{"id": f"c{i:03d}", "input": f"question {i}", "expected": "yes"} for i in range(n_cases)],
    }
    return project_from_dict(raw, Path("engine-test.toml"))


class Recorder:
    """A sink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, ev: Event) -> None:
        self.events.append(ev)

    def of(self, tp: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, tp)]

    @property
    def results(self) -> list[CallResult]:
        return [e.result for e in self.of(CallFinished)]

    def started(self) -> list[CallStarted]:
        return self.of(CallStarted)

    def retrying(self) -> list[CallRetrying]:
        return self.of(CallRetrying)


Behaviour = Callable[[Request], "ProviderError | float | None"]


class ScriptedProvider:
    """Each attempt: `behave(request)` returns an exception to raise, or seconds to take before answering."""

    def __init__(self, behave: Callable[[Request], ProviderError | float | None] | None = None,
                 text: str = "yes") -> None:
        self.behave = behave or (lambda r: 0.0)
        self.text = text
        self.calls: list[tuple[str, int, int, float]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.closed = False

    async def complete(self, request: Request) -> Completion:
        self.calls.append((request.case.id, request.trial, request.attempt, time.monotonic()))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            what = self.behave(request)
            if isinstance(what, BaseException):
                raise what
            if what:
                await anyio.sleep(what)
            return Completion(text=self.text, input_tokens=10, output_tokens=5)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        self.closed = True


class GatedProvider:
    """Calls hold until released: lets a test observe and steer what is in flight at a given moment."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.max_in_flight = 0
        self.started = 0
        self.trace: list[tuple[float, int]] = []
        """(monotonic time, calls in flight) after each start."""
        self._gate = anyio.Event()

    def open(self) -> None:
        self._gate.set()

    def close_gate(self) -> None:
        self._gate = anyio.Event()

    async def complete(self, request: Request) -> Completion:
        self.in_flight += 1
        self.started += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.trace.append((time.monotonic(), self.in_flight))
        try:
            await self._gate.wait()
            await anyio.lowlevel.checkpoint()
            return Completion(text="yes", input_tokens=1, output_tokens=1)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        return None


class SleepyProvider:
    """Every call takes `latency` seconds; counts concurrent calls (overall and since `mark()`)."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.in_flight = 0
        self.max_in_flight = 0
        self.max_since_mark = 0
        self.starts_since_mark = 0

    def mark(self) -> None:
        self.max_since_mark = self.in_flight
        self.starts_since_mark = 0

    async def complete(self, request: Request) -> Completion:
        self.in_flight += 1
        self.starts_since_mark += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.max_since_mark = max(self.max_since_mark, self.in_flight)
        try:
            await anyio.sleep(self.latency)
            return Completion(text="yes", input_tokens=1, output_tokens=1)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        return None


def runner(plan: Plan | Project, providers: dict[str, Any], *, rec: Recorder | None = None,
           policy: RetryPolicy | None = None, concurrency: int | None = None, seed: int = 0,
           timeout_s: float | None = None, sinks: Sequence[Callable[[Event], None]] = ()) -> tuple[Runner, Recorder]:
    """A Runner whose events go to a Recorder, then to `sinks` (what a test watches), in that order."""
    import random

    if not isinstance(plan, Plan):
        plan = make_plan(plan)
    rec = rec or Recorder()
    r = Runner(plan, providers, sinks=[rec, *sinks], policy=policy, concurrency=concurrency, rng=random.Random(seed),
               timeout_s=timeout_s)
    return r, rec


async def wait_until(cond: Callable[[], bool], timeout: float = 60.0, step: float = 0.001) -> None:  # noqa: ASYNC109
    """Poll a condition on engine state (a plain attribute, so there is no event to wait on). The timeout is only a
    ceiling against a hang: a busy machine takes longer, never a different path."""
    with anyio.fail_after(timeout):
        while not cond():  # noqa: ASYNC110
            await anyio.sleep(step)

"""The engine and the providers on both of anyio's backends (asyncio and trio), through anyio's pytest plugin.

The code has trio branches (the sim provider's sleep, the HTTP transport `auto` picks httpx there, aiohttp being
asyncio-only): each scenario here runs once per backend, so neither branch goes untested.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
import sniffio
from fake_providers import GatedProvider, ScriptedProvider, project, runner, wait_until
from httpkit import PROVIDERS, MockServerProcess, write_project

from arenatui.engine import RetryPolicy
from arenatui.kernel.errors import RateLimited, TransientError
from arenatui.kernel.events import CallFinished, ConcurrencyChanged, RunFinished
from arenatui.plan import Filters
from arenatui.providers.base import Request
from arenatui.providers.registry import make_provider
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_retries_parked_calls_and_a_raised_limit(anyio_backend: str) -> None:
    assert sniffio.current_async_library() == anyio_backend

    def behave(req: Request) -> TransientError | RateLimited | None:
        if req.attempt == 1 and req.case.id in ("c001", "c003"):
            return TransientError("503") if req.case.id == "c001" else RateLimited("429", retry_after=0.01)
        return None

    scripted = ScriptedProvider(behave)
    r, rec = runner(project(12), {"m": scripted}, policy=RetryPolicy(max_attempts=3, base_s=0.001, cap_s=0.002),
                    concurrency=2)
    assert await r.run() == "finished"
    assert len(rec.results) == 12 and all(x.status == "passed" for x in rec.results)
    retried = {e.case_id: e.reason for e in rec.retrying()}
    assert retried == {"c001": "transient", "c003": "rate_limited"}
    assert {x.case_id: x.attempts for x in rec.results if x.attempts > 1} == {"c001": 2, "c003": 2}

    gated = GatedProvider()
    r2, rec2 = runner(project(20), {"m": gated}, concurrency=2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(r2.run)
        await wait_until(lambda: gated.in_flight == 2)
        r2.set_concurrency(6)
        await wait_until(lambda: gated.in_flight == 6)
        gated.open()
    assert gated.max_in_flight == 6 and len(rec2.results) == 20
    assert [(e.old, e.new, e.source) for e in rec2.of(ConcurrencyChanged)] == [(0, 2, "config"), (2, 6, "user")]


async def test_timeouts_and_cancel(anyio_backend: str) -> None:
    slow = ScriptedProvider(lambda req: 60.0)
    r, rec = runner(project(2), {"m": slow}, policy=RetryPolicy(max_attempts=2, base_s=0.001, cap_s=0.001),
                    timeout_s=0.05)
    assert await r.run() == "finished"
    assert [(x.error_class, x.attempts) for x in rec.results] == [("timeout", 2)] * 2

    hang = ScriptedProvider(lambda req: 60.0)
    r2, rec2 = runner(project(6), {"m": hang}, concurrency=3)
    async with anyio.create_task_group() as tg:
        tg.start_soon(r2.run)
        await wait_until(lambda: hang.in_flight == 3)
        r2.cancel()
    assert [x.error_class for x in rec2.results] == ["cancelled"] * 3
    assert [e.status for e in rec2.of(RunFinished)] == ["cancelled"]


async def test_a_rate_limited_sim_provider(anyio_backend: str) -> None:
    p = project(8, models=[{"key": "s", "provider": "sim",
                            "sim": {"base_latency_s": 0.001, "per_token_s": 0.0, "jitter": 0.0, "rpm": 600,
                                    "burst": 2.0, "reject_cost": 0.0}}],
                run={"max_attempts": 20, "backoff_base_s": 0.01, "backoff_cap_s": 0.05})
    provider = make_provider(p.models[0], p.run)
    r, rec = runner(p, {"s": provider}, concurrency=4)
    assert await r.run() == "finished"
    assert len(rec.results) == 8 and all(x.error_class is None for x in rec.results)
    assert any(e.reason == "rate_limited" for e in rec.retrying())  # the provider refused, the engine waited


async def test_http_providers_over_the_backends_transport(anyio_backend: str, mock_server: MockServerProcess,
                                                          tmp_path: Path) -> None:
    """`transport = "auto"`: aiohttp on asyncio, httpx on trio; both wire formats, streamed and not."""
    keys = [f"{p}-{v}" for p in PROVIDERS for v in ("ok", "ok-ns")]
    models: list[dict[str, Any]] = [mock_server.models[k] for k in keys]
    proj = write_project(tmp_path / "b.toml", mock_server.url, models, {"trials": 1})
    events: list[Any] = []
    sweep = Sweep(SweepOptions(project=proj, db=tmp_path / "b.db", filters=Filters(limit=2)),
                  extra_sinks=(events.append,))
    assert await sweep.run() == "finished"
    wires = {p.wire.name for p in sweep.providers.values()}  # type: ignore[attr-defined]
    assert wires == {"aiohttp" if anyio_backend == "asyncio" else "httpx"}
    finished = [e.result for e in events if isinstance(e, CallFinished)]
    assert len(finished) == len(keys) * 2 and all(x.status == "passed" for x in finished)
    assert all(x.ttft_ms is not None for x in finished if not x.model_key.endswith("-ns"))
    with Store(tmp_path / "b.db") as store:
        assert store.count_results(sweep.run_id) == len(keys) * 2

"""A healthy model's throughput while another model is told to wait 120 s (issue 9 #16), against it alone.

    python benchmarks/engine_backoff.py [--window 2.0] [--concurrency 16] [--latency 0.01]

Two models share one worker pool: "sick" answers every attempt 429 with Retry-After 120, "well" answers
in --latency seconds. Each run lasts --window seconds and counts well's finished calls; the same is
measured with "well" alone. Prints JSON lines (DESIGN.md, Benchmarks):

- healthy_calls_per_s_beside_backoff / healthy_calls_per_s_alone, and their ratio
  healthy_beside_backoff_over_alone: 1.0 means a model backing off costs the others nothing. While
  calls that backed off slept in their workers, every worker ended up asleep and this was 0.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import anyio

from arenatui.engine import RetryPolicy, Runner
from arenatui.kernel.errors import RateLimited
from arenatui.kernel.events import CallFinished, Event
from arenatui.plan import make_plan
from arenatui.project import project_from_dict
from arenatui.providers.base import Completion, Request


class _Sick:
    async def complete(self, request: Request) -> Completion:
        await anyio.lowlevel.checkpoint()
        raise RateLimited("429 Too Many Requests", retry_after=120.0)

    async def aclose(self) -> None:
        return None


class _Well:
    def __init__(self, latency: float) -> None:
        self.latency = latency

    async def complete(self, request: Request) -> Completion:
        await anyio.sleep(self.latency)
        return Completion(text="yes", input_tokens=1, output_tokens=1)

    async def aclose(self) -> None:
        return None


def healthy_rate(with_sick: bool, window: float, concurrency: int, latency: float) -> float:
    models: list[dict[str, Any]] = [{"key": "well", "provider": "sim"}]
    if with_sick:
        models.insert(0, {"key": "sick", "provider": "sim"})
    raw = {"run": {"seed": 1}, "models": models,
           "cases": [{"id": f"c{i}", "input": "q", "expected": "yes"} for i in range(100_000)]}
    plan = make_plan(project_from_dict(raw, Path("bench.toml")))
    done = [0]

    def count(ev: Event) -> None:
        if type(ev) is CallFinished and ev.result.model_key == "well":
            done[0] += 1

    providers: dict[str, Any] = {"well": _Well(latency), "sick": _Sick()}
    runner = Runner(plan, {k: providers[k] for k in ("well", "sick") if k != "sick" or with_sick},
                    sinks=[count], concurrency=concurrency, rng=random.Random(1),
                    policy=RetryPolicy(max_attempts=5, base_s=0.5, cap_s=30.0, budget_s=600.0))

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.run)
            await anyio.sleep(window)
            runner.cancel()

    anyio.run(main)
    return done[0] / window


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=float, default=2.0)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.01)
    a = ap.parse_args()
    beside = healthy_rate(True, a.window, a.concurrency, a.latency)
    alone = healthy_rate(False, a.window, a.concurrency, a.latency)
    for name, value, unit in (("healthy_calls_per_s_beside_backoff", round(beside, 1), "calls/s"),
                              ("healthy_calls_per_s_alone", round(alone, 1), "calls/s"),
                              ("healthy_beside_backoff_over_alone", round(beside / alone, 3) if alone else 0.0,
                               "ratio")):
        print(json.dumps({"name": name, "value": value, "unit": unit}))


if __name__ == "__main__":
    main()

"""What the live console costs the engine: one zero-latency simulated sweep headless, the same inside the console.

Run: python benchmarks/ui_overhead.py [--models 10] [--cases 5000]
Prints JSON lines (DESIGN.md, Benchmarks); the last is the console/headless throughput ratio (target >= 0.9).
Both runs share this process and machine, so the ratio is the figure to read, not the absolute rates.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import tomli_w

from arenatui.engine.events import CallStarted, Event, RunFinished
from arenatui.sweep import Sweep, SweepOptions


def project(models: int, cases: int, concurrency: int) -> dict[str, Any]:
    return {
        "project": {"name": "ui-overhead"},
        "run": {"concurrency": concurrency, "trials": 1, "seed": 1, "timeout_s": 30.0},
        "models": [{"key": f"sim-{i:02d}", "provider": "sim", "model": f"zero-{i}",
                    "sim": {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0, "output_tokens": 16,
                            "accuracy": 0.8}} for i in range(models)],
        "scorers": [{"name": "exact", "kind": "exact"}],
        "cases": [{"id": f"case-{j:05d}", "input": f"q{j}", "expected": "a"} for j in range(cases)],
    }


class Span:
    """A sink timing the engine from its first call to RunFinished (start-up of either view excluded)."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last: float | None = None

    def __call__(self, ev: Event) -> None:
        if self.first is None and type(ev) is CallStarted:
            self.first = time.perf_counter()
        elif type(ev) is RunFinished:
            self.last = time.perf_counter()

    def seconds(self) -> float:
        assert self.first is not None and self.last is not None
        return self.last - self.first


def make_sweep(path: Path, db: Path) -> tuple[Sweep, Span]:
    span = Span()
    return Sweep(SweepOptions(project=path, db=db), extra_sinks=(span,)), span


def headless(path: Path, db: Path) -> float:
    sweep, span = make_sweep(path, db)
    assert anyio.run(sweep.run) == "finished"
    return sweep.plan.total / span.seconds()


def console(path: Path, db: Path) -> tuple[float, list[float]]:
    from arenatui.tui.app import ArenaApp
    from arenatui.tui.screens import RunScreen

    frames: list[float] = []
    original = RunScreen.refresh_now

    def timed(self: RunScreen, *, everything: bool = False) -> None:
        t0 = time.perf_counter()
        original(self, everything=everything)
        frames.append((time.perf_counter() - t0) * 1000.0)

    RunScreen.refresh_now = timed  # type: ignore[method-assign]
    sweep, span = make_sweep(path, db)

    async def drive() -> None:
        app = ArenaApp(sweep)
        async with app.run_test(size=(160, 48)) as pilot:
            while sweep.status is None:
                await pilot.pause(0.25)  # the harness polls rarely: its cost is not the console's

    try:
        asyncio_run(drive)
    finally:
        RunScreen.refresh_now = original  # type: ignore[method-assign]
    assert sweep.status == "finished", sweep.status
    return sweep.plan.total / span.seconds(), frames


def asyncio_run(fn: Any) -> None:
    import asyncio

    asyncio.run(fn())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3, help="headless/console pairs, alternating")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "project.toml"
        path.write_text(tomli_w.dumps(project(args.models, args.cases, args.concurrency)), encoding="utf-8")
        hs: list[float] = []
        cs: list[float] = []
        frames: list[float] = []
        for i in range(args.repeat):
            hs.append(headless(path, Path(d) / f"h{i}.db"))
            c, f = console(path, Path(d) / f"c{i}.db")
            cs.append(c)
            frames.extend(f)
    calls = args.models * args.cases
    frames.sort()
    # pairs run back to back share the machine's load at that moment: their ratio is the robust figure
    pair_ratios = sorted(c / h for c, h in zip(cs, hs, strict=True))
    out = [
        {"name": "calls_per_sweep", "value": calls, "unit": "calls"},
        {"name": "headless_calls_per_s_median", "value": round(statistics.median(hs), 1), "unit": "calls/s"},
        {"name": "console_calls_per_s_median", "value": round(statistics.median(cs), 1), "unit": "calls/s"},
        {"name": "console_frame_ms_median", "value": round(statistics.median(frames), 2), "unit": "ms"},
        {"name": "console_frame_ms_max", "value": round(frames[-1], 2), "unit": "ms"},
        {"name": "console_frames", "value": len(frames), "unit": "frames"},
        {"name": "console_vs_headless_best", "value": round(max(cs) / max(hs), 3), "unit": "ratio"},
        {"name": "console_vs_headless_throughput", "value": round(statistics.median(pair_ratios), 3),
         "unit": "ratio"},
    ]
    for line in out:
        print(json.dumps(line))


if __name__ == "__main__":
    main()

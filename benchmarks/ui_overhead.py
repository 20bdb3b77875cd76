"""What the live console costs the engine: one zero-latency simulated sweep headless, the same inside the console.

Run: python benchmarks/ui_overhead.py [--models 10] [--cases 20000] [--repeat 3]
Prints JSON lines (DESIGN.md, Benchmarks); the last two are the console/headless throughput ratios
(target >= 0.9): by wall time (median of back-to-back pairs) and by this process's CPU time, which
other processes on a shared machine cannot move.

The default sweep (10 models × 20,000 cases = 200,000 calls, ~8 s) is long enough to measure the
console in steady state. A short one (--cases 5000: 50,000 calls in ~2 s) mostly measures Textual's
start-up (first layout and paint overlap the sweep's first second): on this machine it gave 0.80
where the long sweep gives ~1.0, and with the per-frame callback removed the short one gave 0.97.
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

from arenatui.kernel.events import CallStarted, Event, RunFinished
from arenatui.session.sweep import Sweep, SweepOptions


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
    """A sink timing the engine from its first call to RunFinished (start-up of either view excluded).

    Wall time and this process's CPU time: on a shared machine other processes' load moves the wall
    figure by tens of percent, while CPU seconds per call still show what the console costs.
    """

    def __init__(self) -> None:
        self.first: tuple[float, float] | None = None
        self.last: tuple[float, float] | None = None

    def __call__(self, ev: Event) -> None:
        if self.first is None and type(ev) is CallStarted:
            self.first = (time.perf_counter(), time.process_time())
        elif type(ev) is RunFinished:
            self.last = (time.perf_counter(), time.process_time())

    def seconds(self) -> float:
        assert self.first is not None and self.last is not None
        return self.last[0] - self.first[0]

    def cpu_seconds(self) -> float:
        assert self.first is not None and self.last is not None
        return self.last[1] - self.first[1]


def make_sweep(path: Path, db: Path) -> tuple[Sweep, Span]:
    span = Span()
    return Sweep(SweepOptions(project=path, db=db), extra_sinks=(span,)), span


def headless(path: Path, db: Path) -> tuple[float, float]:
    sweep, span = make_sweep(path, db)
    assert anyio.run(sweep.run) == "finished"
    return sweep.plan.total / span.seconds(), sweep.plan.total / span.cpu_seconds()


def console(path: Path, db: Path) -> tuple[float, float, list[float]]:
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
    return sweep.plan.total / span.seconds(), sweep.plan.total / span.cpu_seconds(), frames


def asyncio_run(fn: Any) -> None:
    import asyncio

    asyncio.run(fn())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3, help="headless/console pairs, alternating")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "project.toml"
        path.write_text(tomli_w.dumps(project(args.models, args.cases, args.concurrency)), encoding="utf-8")
        hs: list[float] = []
        cs: list[float] = []
        hs_cpu: list[float] = []
        cs_cpu: list[float] = []
        frames: list[float] = []
        headless(path, Path(d) / "warm-up.db")  # first-run costs (imports, page cache) count for neither
        for i in range(args.repeat):
            if i % 2:  # alternate the order so drift in the machine's load favours neither
                c, c_cpu, f = console(path, Path(d) / f"c{i}.db")
                h, h_cpu = headless(path, Path(d) / f"h{i}.db")
            else:
                h, h_cpu = headless(path, Path(d) / f"h{i}.db")
                c, c_cpu, f = console(path, Path(d) / f"c{i}.db")
            hs.append(h)
            hs_cpu.append(h_cpu)
            cs.append(c)
            cs_cpu.append(c_cpu)
            frames.extend(f)
    calls = args.models * args.cases
    frames.sort()
    # pairs run back to back share the machine's load at that moment: their ratio is the robust wall figure
    pair_ratios = sorted(c / h for c, h in zip(cs, hs, strict=True))
    cpu_ratios = sorted(c / h for c, h in zip(cs_cpu, hs_cpu, strict=True))
    out = [
        {"name": "calls_per_sweep", "value": calls, "unit": "calls"},
        {"name": "headless_calls_per_s_median", "value": round(statistics.median(hs), 1), "unit": "calls/s"},
        {"name": "console_calls_per_s_median", "value": round(statistics.median(cs), 1), "unit": "calls/s"},
        {"name": "headless_calls_per_cpu_s_median", "value": round(statistics.median(hs_cpu), 1),
         "unit": "calls/cpu-s"},
        {"name": "console_calls_per_cpu_s_median", "value": round(statistics.median(cs_cpu), 1),
         "unit": "calls/cpu-s"},
        {"name": "console_frame_ms_median", "value": round(statistics.median(frames), 2), "unit": "ms"},
        {"name": "console_frame_ms_max", "value": round(frames[-1], 2), "unit": "ms"},
        {"name": "console_frames", "value": len(frames), "unit": "frames"},
        {"name": "console_vs_headless_throughput_wall", "value": round(statistics.median(pair_ratios), 3),
         "unit": "ratio"},
        {"name": "console_vs_headless_throughput_cpu", "value": round(statistics.median(cpu_ratios), 3),
         "unit": "ratio"},
    ]
    for line in out:
        print(json.dumps(line))


if __name__ == "__main__":
    main()

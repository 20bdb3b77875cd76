"""Python solvers: what the engine adds per call, what a process crossing costs, and a pipeline against its ideal.

    python benchmarks/solver_overhead.py [--calls 20000] [--repeat 3] [--parts thread,process,pipeline]

Prints one JSON line per figure (DESIGN.md, Benchmarks); ratios are measured in the same run, because this shared
2-core machine moves ±30% between runs. Targets: thread_solver_over_sim <= 1.5; pipeline_over_ideal >= 0.90.

- sim_cpu_us_per_call, thread_solver_cpu_us_per_call: CPU time of this process per call (engine, provider,
  scoring; the store writer is a child process), zero-latency calls at concurrency 64, persistence on, as `arena
  evaluate --quiet` runs: a sim model against a `thread` python solver that returns at once (an async function, its
  factory called once per trial). thread_solver_over_sim is their ratio (median of --repeat each).
- process_solver_ms_per_call, process_crossing_us_per_call: a `process` solver returning at once, one worker,
  concurrency 1: the wall time per call, and the part of it the crossing adds (process per call − thread per call,
  both at concurrency 1): the pipe both ways, pickling, the worker's wake-up, a thread hop in this process.
- pipeline_trials_per_s, pipeline_over_ideal: a solver making 3 sequential awaited calls to the bundled mock
  server (one shared aiohttp session, 200 ms per call exactly) per trial, at concurrency 64: trials/s from first
  call started to last finished, against the ideal 64 / (3 × 0.2 s). On a loaded machine the server itself runs
  late, so pipeline_over_littles_law divides by 64 / (the trials' measured mean length) instead: how full the
  engine keeps the pipeline, whatever the server's pace.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from engine_overhead import _Span  # benchmarks/ is this script's directory

import arenatui
from arenatui.session.sweep import Sweep, SweepOptions

PIPELINE_LATENCY_S = 0.2


def emit(name: str, value: float, unit: str) -> None:
    print(json.dumps({"name": name, "value": round(value, 3), "unit": unit}), flush=True)


async def instant(req: arenatui.SolverRequest) -> str:
    return "yes"


def make_instant(ctx: arenatui.TrialContext) -> Any:
    return instant


def make_instant_sync(ctx: arenatui.TrialContext) -> Any:
    return lambda req: "yes"


def _project(db_dir: Path, model: arenatui.Model, calls: int, concurrency: int, trials: int = 1) -> arenatui.Project:
    return arenatui.Project(
        name="solver-bench", path=db_dir / "arena.toml", models=(model,),
        cases=tuple(arenatui.Case(id=f"c{j}", input=f"question {j}", expected="yes") for j in range(calls // trials)),
        run=arenatui.RunSettings(concurrency=concurrency, trials=trials, timeout_s=60.0))


def run(project: arenatui.Project, db: Path) -> tuple[float, float, int]:
    """(seconds first call started to last finished, CPU seconds of this process, calls)."""
    from arenatui.api import _validated

    span = _Span()
    sweep = Sweep(SweepOptions(project=_validated(project), db=db), extra_sinks=(span,), live_metrics=False)

    async def go() -> str:
        global SESSION
        try:
            return await sweep.run()
        finally:
            if SESSION is not None:
                await SESSION.close()
                SESSION = None

    c0 = time.process_time()
    status = anyio.run(go)
    cpu = time.process_time() - c0
    assert status == "finished", status
    return span.last - (span.first or span.last), cpu, sweep.plan.total


def thread_part(tmp: Path, calls: int, repeat: int) -> None:
    sim = arenatui.Model(key="sim", provider="sim", sim=arenatui.SimSettings(
        base_latency_s=0.0, per_token_s=0.0, jitter=0.0, accuracy=1.0))
    solver = arenatui.Model(key="solver", solver=make_instant)
    cpu: dict[str, list[float]] = {"sim": [], "solver": []}
    for i in range(repeat):
        for name, model in (("sim", sim), ("solver", solver)):
            _wall, c, n = run(_project(tmp, model, calls, 64, trials=5), tmp / f"{name}{i}.db")
            cpu[name].append(c / n * 1e6)
    s, t = statistics.median(cpu["sim"]), statistics.median(cpu["solver"])
    emit("sim_cpu_us_per_call", s, "us")
    emit("thread_solver_cpu_us_per_call", t, "us")
    emit("thread_solver_over_sim", t / s, "ratio")


def process_part(tmp: Path, calls: int) -> None:
    n = min(calls, 2000)
    thread_wall, _c, k = run(_project(tmp, arenatui.Model(key="t", solver=make_instant_sync), n, 1), tmp / "t1.db")
    proc_wall, _c, k2 = run(_project(tmp, arenatui.Model(key="p", solver=make_instant_sync, concurrency="process",
                                                         processes=1), n, 1), tmp / "p1.db")
    emit("process_solver_ms_per_call", proc_wall / k2 * 1e3, "ms")
    emit("process_crossing_us_per_call", (proc_wall / k2 - thread_wall / k) * 1e6, "us")


SESSION: Any = None


def make_pipeline(ctx: arenatui.TrialContext) -> Any:
    async def solve(req: arenatui.SolverRequest) -> str:
        global SESSION
        if SESSION is None:
            SESSION = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        text = str(req.input)
        for step in range(3):
            async with SESSION.post(f"{BASE}/v1/chat/completions", json={
                    "model": "llm", "max_tokens": 8, "messages": [{"role": "user", "content": f"{text} {step}"}]}) as r:
                body = await r.json()
                text = body["choices"][0]["message"]["content"]
        return text

    return solve


BASE = ""


def pipeline_part(tmp: Path, calls: int) -> None:
    global BASE
    cfg = tmp / "server.toml"
    sim = f"base_latency_s = {PIPELINE_LATENCY_S}, per_token_s = 0.0, jitter = 0.0, exact_timing = true"
    cfg.write_text(f'[[models]]\nkey = "llm"\nsim = {{ {sim}, output_tokens = 4 }}\n\n'
                   '[[cases]]\nid = "x"\ninput = "x"\n')
    proc = subprocess.Popen([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config", str(cfg)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        assert m, line
        BASE = m.group(1)
        trials = max(64 * 4, min(calls // 10, 1280))
        wall, _c, n = run(_project(tmp, arenatui.Model(key="pipe", solver=make_pipeline), trials, 64, trials=1),
                          tmp / "pipe.db")
        with sqlite3.connect(tmp / "pipe.db") as conn:
            mean_s = conn.execute("SELECT AVG(total_ms) FROM results").fetchone()[0] / 1000.0
        rate = n / wall
        emit("pipeline_trials_per_s", rate, "trials/s")
        emit("pipeline_over_ideal", rate / (64 / (3 * PIPELINE_LATENCY_S)), "ratio")
        # the server's own slowness on a loaded machine apart: trials/s against 64 trials of their measured mean
        # length always in flight (Little's law), i.e. how well the engine keeps the pipeline full
        emit("pipeline_trial_mean_ms", mean_s * 1000.0, "ms")
        emit("pipeline_over_littles_law", rate / (64 / mean_s), "ratio")
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parts", default="thread,process,pipeline")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if "thread" in parts:
            thread_part(tmp, args.calls, args.repeat)
        if "process" in parts:
            process_part(tmp, args.calls)
        if "pipeline" in parts:
            pipeline_part(tmp, args.calls)


if __name__ == "__main__":
    main()

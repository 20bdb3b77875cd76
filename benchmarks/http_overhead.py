"""How much the instrument distorts what it measures: client CPU per HTTP call, and recorded vs true latency.

Against `arena mock-server` on loopback, the server in a subprocess so its CPU is not ours:

1. Client CPU per call through our provider path (each transport) and through a bare aiohttp client
   making the same requests, streamed and not, at 16 and 64 calls in flight (the server answers at
   once, so this is all client work). The figure is the ratio to bare aiohttp, measured in the same run.
2. Latency inflation: real sweeps (engine, store, live metrics) against a server whose latency is
   exactly 100 ms (streamed: first token at exactly 50 ms), at 64 and 256 in flight. The p50 and p99
   of the latency and time to first token the sweep records (CallFinished events, the rows the
   store keeps) divided by the true values and by a bare aiohttp client's in the same run; with the
   calls/s reached, the calls/s offered (concurrency / 100 ms), both processes' CPU, and the rate at
   which the client's CPU per call would fill one core (where it saturates). Each is given over every
   call (`_all_calls`) and over the steady state (`_steady`, the targets' basis): without the first two
   waves, whose requests open the connections and then still start in step, so that both processes
   (the server too, and the bare client alike) take them as one burst.

   The same at a fixed offered rate (open loop, `--open-rate`, 800 streamed calls/s): calls start on schedule
   whatever is in flight, as `arena load` offers them.

    python benchmarks/http_overhead.py [--calls 1500] [--transports aiohttp,httpx] [--open-rate 800]
    python benchmarks/http_overhead.py --instructions   # callgrind: instructions per call, ours and bare aiohttp's

JSON lines, one per figure: {"name": ..., "value": ..., "unit": ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
import anyio
import tomli_w
from http_throughput import start_server

from arenatui.kernel.events import CallFinished
from arenatui.kernel.limits import MAX_TRIALS
from arenatui.plan import Filters
from arenatui.project import load_project
from arenatui.providers.base import Request, build_messages
from arenatui.providers.registry import make_provider
from arenatui.session.sweep import Sweep, SweepOptions

TRUE_LATENCY_S = 0.100
TRUE_TTFT_S = 0.050
MODELS: dict[str, dict[str, Any]] = {
    # answers at once: every microsecond measured is the client's
    "zero-json": {"stream": False, "sim": {"base_latency_s": 0.0, "per_token_s": 0.0, "output_tokens": 16}},
    "zero-stream": {"stream": True, "sim": {"base_latency_s": 0.0, "per_token_s": 0.0, "output_tokens": 16}},
    # exactly 100 ms; streamed: first token at 50 ms, then 10 tokens 5 ms apart
    "lat-json": {"stream": False, "sim": {"base_latency_s": TRUE_LATENCY_S, "per_token_s": 0.0,
                                          "output_tokens": 10}},
    "lat-stream": {"stream": True, "sim": {"base_latency_s": TRUE_TTFT_S,
                                           "per_token_s": (TRUE_LATENCY_S - TRUE_TTFT_S) / 10, "output_tokens": 10}},
}
CASE = {"id": "c", "input": "Reply with a short JSON object."}  # no expected answer: a multi-chunk stream


def emit(name: str, value: float, unit: str) -> None:
    print(json.dumps({"name": name, "value": round(value, 4), "unit": unit}), flush=True)


def write_project(path: Path, base: str, keys: list[str], *, transport: str = "auto", trials: int = 1,
                  concurrency: int = 16) -> Path:
    models = [{"key": k, "provider": "openai", "model": k, "base_url": f"{base}/v1", "stream": MODELS[k]["stream"],
               "transport": transport, "sim": {**MODELS[k]["sim"], "jitter": 0.0, "exact_timing": True}}
              for k in keys]
    # more calls than a case may have trials (limits.MAX_TRIALS) go to copies of the case: the same request each
    n_cases = -(-trials // MAX_TRIALS)
    cases = [CASE] if n_cases == 1 else [{**CASE, "id": f"{CASE['id']}{i}"} for i in range(n_cases)]
    doc = {"project": {"name": path.stem}, "defaults": {"max_tokens": 64},
           "run": {"timeout_s": 60.0, "trials": -(-trials // n_cases), "concurrency": concurrency, "max_attempts": 1},
           "models": models, "cases": cases}
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc); 0 where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


async def _drive(call: Any, concurrency: int, calls: int) -> float:
    """CPU ms per call of `calls` calls, `concurrency` at a time, after a warm-up."""
    left = calls

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await call()

    for _ in range(min(100, calls)):
        await call()
    left = calls
    cpu0 = time.process_time()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    return (time.process_time() - cpu0) / calls * 1000.0


async def _open_loop(call: Any, rate: float, calls: int) -> float:
    """CPU ms per call of `calls` calls started `rate` a second whatever is in flight (open loop), after a warm-up."""
    for _ in range(min(100, calls)):
        await call()
    cpu0 = time.process_time()
    t0 = time.monotonic()
    async with anyio.create_task_group() as tg:
        for i in range(calls):
            wait = t0 + i / rate - time.monotonic()
            if wait > 0:
                await anyio.sleep(wait)
            tg.start_soon(call)
    return (time.process_time() - cpu0) / calls * 1000.0


async def provider_cpu(project_path: Path, concurrency: int, calls: int, rate: float | None = None) -> float:
    project = load_project(project_path)
    model = project.models[0]
    provider = make_provider(model, project.run)
    case = project.cases[0]
    req = Request(model=model, case=case, trial=0, attempt=1, messages=build_messages(model, project.defaults, case),
                  max_tokens=64, temperature=0.0, timeout_s=60.0)

    async def call() -> None:
        await provider.complete(req)

    try:
        return await (_drive(call, concurrency, calls) if rate is None else _open_loop(call, rate, calls))
    finally:
        await provider.aclose()


async def bare_aiohttp_cpu(base: str, key: str, concurrency: int, calls: int, rate: float | None = None) -> float:
    """The same requests from a plain aiohttp session: post, read every byte, parse nothing."""
    stream = MODELS[key]["stream"]
    body: dict[str, Any] = {"model": key, "messages": [{"role": "user", "content": CASE["input"]}],
                            "max_tokens": 64, "temperature": 0.0, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    url = f"{base}/v1/chat/completions"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def call() -> None:
            async with session.post(url, json=body) as r:
                async for _ in r.content.iter_any():
                    pass

        return await (_drive(call, concurrency, calls) if rate is None else _open_loop(call, rate, calls))


def measure_cpu(tmp: Path, base: str, transports: list[str], calls: int) -> None:
    for mode in ("stream", "json"):
        key = f"zero-{mode}"
        for c in (16, 64):
            bare = anyio.run(bare_aiohttp_cpu, base, key, c, calls)
            emit(f"http_{mode}_c{c}_bare_aiohttp_cpu_per_call", bare, "ms")
            for t in transports:
                path = write_project(tmp / f"cpu-{key}-{t}.toml", base, [key], transport=t)
                ours = anyio.run(provider_cpu, path, c, calls)
                emit(f"http_{mode}_c{c}_{t}_cpu_per_call", ours, "ms")
                emit(f"http_{mode}_c{c}_{t}_cpu_ratio_to_bare_aiohttp", ours / bare, "x")


def _collected(base: str, who: str, mode: str, calls: int) -> int:
    """Instructions callgrind counts for one child process making `calls` calls (after its 100 warm-up calls)."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, str(Path(__file__)),
           "--child", base, who, mode, str(calls)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    return int(next(ln for ln in p.stderr.splitlines() if "Collected" in ln).split()[-1])


def measure_instructions(base: str) -> None:
    """Instructions per call at 16 in flight, ours (aiohttp wire) and bare aiohttp's, streamed and not: a 1,100-call
    child less a 100-call one (start-up and warm-up cancel)."""
    for mode in ("json", "stream"):
        per: dict[str, float] = {}
        for who in ("bare", "ours"):
            per[who] = (_collected(base, who, mode, 1100) - _collected(base, who, mode, 100)) / 1000
            emit(f"http_{mode}_c16_{'bare_aiohttp' if who == 'bare' else 'aiohttp'}_instructions_per_call",
                 round(per[who]), "instructions")
        emit(f"http_{mode}_c16_aiohttp_instructions_ratio_to_bare_aiohttp", round(per["ours"] / per["bare"], 3), "x")


def measure_open_loop(tmp: Path, base: str, transports: list[str], rate: float, calls: int) -> None:
    """Streamed calls started `rate` a second (open loop, as `arena load` offers them), ours against bare aiohttp."""
    key = "zero-stream"
    bare = anyio.run(bare_aiohttp_cpu, base, key, 0, calls, rate)
    emit(f"http_open_stream_{rate:g}rps_bare_aiohttp_cpu_per_call", bare, "ms")
    for t in transports:
        path = write_project(tmp / f"open-{key}-{t}.toml", base, [key], transport=t)
        ours = anyio.run(provider_cpu, path, 0, calls, rate)
        emit(f"http_open_stream_{rate:g}rps_{t}_cpu_per_call", ours, "ms")
        emit(f"http_open_stream_{rate:g}rps_{t}_cpu_ratio_to_bare_aiohttp", ours / bare, "x")


def q(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(p * 100) - 1]


class Timed(NamedTuple):
    started: float
    """monotonic seconds: orders calls into waves"""
    latency_ms: float
    ttft_ms: float | None


async def bare_aiohttp_latency(base: str, key: str, concurrency: int, calls: int) -> tuple[list[Timed], float]:
    """Latency and time to the first body byte of the same requests from a bare aiohttp client, timed the
    plain way (from calling `post` to the last byte): the reference for what the server and the machine add."""
    body = {"model": key, "messages": [{"role": "user", "content": CASE["input"]}], "max_tokens": 64,
            "stream": MODELS[key]["stream"]}
    url = f"{base}/v1/chat/completions"
    out: list[Timed] = []
    left = calls
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                t0 = time.monotonic()
                async with session.post(url, json=body) as r:
                    t1 = None
                    async for _ in r.content.iter_any():
                        t1 = t1 or time.monotonic()
                now = time.monotonic()
                out.append(Timed(t0, (now - t0) * 1000.0, ((t1 or now) - t0) * 1000.0))

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
    return out, calls / (time.perf_counter() - t0)


def steady(calls: list[Timed], concurrency: int, warmup_waves: int) -> list[Timed]:
    """The calls after the first `warmup_waves` × concurrency to start: every connection's first request
    (TCP set-up at both ends) and the bursts that follow while all calls still start in step."""
    return sorted(calls, key=lambda c: c.started)[warmup_waves * concurrency:]


def emit_latency(name: str, mode: str, calls: list[Timed], bare: dict[str, float] | None = None) -> dict[str, float]:
    """Percentiles over the truth; with `bare`, also over the bare client's (what our client adds on its own)."""
    lat = [c.latency_ms for c in calls]
    ttft = [c.ttft_ms for c in calls if c.ttft_ms is not None]
    figures = {"p50": (q(lat, 0.50), TRUE_LATENCY_S), "p99": (q(lat, 0.99), TRUE_LATENCY_S)}
    if mode == "stream":
        figures |= {"ttft_p50": (q(ttft, 0.50), TRUE_TTFT_S), "ttft_p99": (q(ttft, 0.99), TRUE_TTFT_S)}
    for k, (v, truth) in figures.items():
        emit(f"{name}_{k}_ratio_to_true", v / (truth * 1000), "x")
        if bare is not None:
            emit(f"{name}_{k}_ratio_to_bare_aiohttp", v / bare[k], "x")
    return {k: v for k, (v, _) in figures.items()}


Figures = dict[str, float]


def emit_both(name: str, mode: str, calls: list[Timed], c: int, warmup: int,
              bare: tuple[Figures, Figures] | None = None) -> tuple[Figures, Figures]:
    """Figures over every call, then over the steady state (`_steady`), the targets' basis."""
    every = emit_latency(f"{name}_all_calls", mode, calls, bare[0] if bare else None)
    st = emit_latency(f"{name}_steady", mode, steady(calls, c, warmup), bare[1] if bare else None)
    return every, st


def measure_latency(tmp: Path, base: str, server_pid: int, transports: list[str], waves: int, warmup: int) -> None:
    for mode in ("json", "stream"):
        key = f"lat-{mode}"
        for c in (64, 256):
            timed, rate = anyio.run(bare_aiohttp_latency, base, key, c, c * waves)
            bare = emit_both(f"latency_{mode}_c{c}_bare_aiohttp", mode, timed, c, warmup)
            emit(f"latency_{mode}_c{c}_bare_aiohttp_calls_per_s", rate, "calls/s")
            for t in transports:
                trials = c * waves
                path = write_project(tmp / f"lat-{key}-{t}-{c}.toml", base, [key], transport=t, trials=trials,
                                     concurrency=c)
                finished: list[CallFinished] = []

                def keep(ev: object, out: list[CallFinished] = finished) -> None:
                    if type(ev) is CallFinished:
                        out.append(ev)

                sweep = Sweep(SweepOptions(project=path, db=tmp / f"lat-{t}-{mode}-{c}.db", filters=Filters()),
                              extra_sinks=(keep,))
                cpu0, srv0, t0 = time.process_time(), server_cpu_s(server_pid), time.perf_counter()
                anyio.run(sweep.run)
                wall = time.perf_counter() - t0
                cpu, srv = time.process_time() - cpu0, server_cpu_s(server_pid) - srv0
                ok = [e.result for e in finished if e.result.error_class is None and e.result.latency_ms is not None]
                name = f"latency_{mode}_c{c}_{t}"
                if len(ok) < len(finished):
                    emit(f"{name}_errored_calls", len(finished) - len(ok), "calls")
                # what the sweep records (the rows the store keeps), ordered by when each call started
                emit_both(name, mode, [Timed(r.started_at, r.latency_ms, r.ttft_ms) for r in ok if r.latency_ms],
                          c, warmup, bare)
                connect = [r.connect_ms for r in ok if r.connect_ms is not None]
                if connect:
                    # left out of the latency: connecting (the first wave) and our own queueing before the send
                    emit(f"{name}_connect_p50", q(connect, 0.50), "ms")
                    emit(f"{name}_connect_max", max(connect), "ms")
                emit(f"{name}_calls_per_s", len(finished) / wall, "calls/s")
                emit(f"{name}_offered_calls_per_s", c / TRUE_LATENCY_S, "calls/s")
                emit(f"{name}_client_cpu", cpu / wall, "cores")
                # where this client saturates: the rate at which its CPU per call (whole sweep: engine, HTTP,
                # store, live metrics) fills one core
                emit(f"{name}_client_saturates_at", len(finished) / cpu, "calls/s")
                emit(f"{name}_server_cpu", srv / wall, "cores")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1500, help="calls per CPU figure")
    ap.add_argument("--waves", type=int, default=30, help="latency runs make concurrency × waves calls")
    ap.add_argument("--warmup-waves", type=int, default=2,
                    help="the steady-state figures leave out the first WARMUP_WAVES × concurrency calls to start")
    ap.add_argument("--transports", default="aiohttp,httpx")
    ap.add_argument("--open-rate", type=float, default=800.0, help="open-loop streamed calls started a second")
    ap.add_argument("--open-calls", type=int, default=2400, help="calls in the open-loop CPU figure")
    ap.add_argument("--only", choices=("cpu", "latency"))
    ap.add_argument("--instructions", action="store_true",
                    help="instructions per call under callgrind instead (valgrind; deterministic whatever the load)")
    ap.add_argument("--child", nargs=4, metavar=("BASE", "WHO", "MODE", "CALLS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        base_url, who, mode, n = args.child
        with tempfile.TemporaryDirectory() as child_tmp:
            if who == "bare":
                anyio.run(bare_aiohttp_cpu, base_url, f"zero-{mode}", 16, int(n))
            else:
                path = write_project(Path(child_tmp) / "p.toml", base_url, [f"zero-{mode}"], transport="aiohttp")
                anyio.run(provider_cpu, path, 16, int(n))
        return
    transports = [t for t in args.transports.split(",") if t]
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        cfg = write_project(tmp / "server.toml", "http://127.0.0.1:1", list(MODELS))
        proc, base = start_server(cfg)
        # Other processes on the machine take CPU from both ends and show up as latency: say how busy it was.
        emit("machine_load_avg_1m_at_start", os.getloadavg()[0], "runnable")
        try:
            if args.instructions:
                measure_instructions(base)
                return
            if args.only != "latency":
                measure_cpu(tmp, base, transports, args.calls)
                measure_open_loop(tmp, base, transports, args.open_rate, args.open_calls)
            if args.only != "cpu":
                measure_latency(tmp, base, proc.pid, transports, args.waves, args.warmup_waves)
            emit("machine_load_avg_1m_at_end", os.getloadavg()[0], "runnable")
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    sys.exit(main())

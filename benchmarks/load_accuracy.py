"""How honest `arena load` is, against `arena mock-server` (a subprocess, so its CPU is not ours) with fixed latency.

1. Rate accuracy: a constant 40 requests/s to a server answering in exactly 100 ms (first token at 50 ms):
   achieved / offered (target: within 1%), and recorded TTFT and latency p50 / the truth (within 5%).
2. Coordinated omission: the same at 50/s with at most 8 in flight, against a server that stalls every
   request once for 2 s. The from-schedule p99 shows the stall (what users arriving then waited); the
   from-send p99 does not (only the 8 requests held by the server saw it).
3. Bursty arrivals near saturation: 8 in flight x 100 ms is 80/s of capacity; at 70/s, the from-schedule
   p99 for poisson vs constant (poisson's bursts queue, constant's do not).
4. Saturation: a server that answers at once (streamed), rates doubling until achieved falls below 95%
   of offered, with 1 and with 2 client processes. On a 2-core machine the server shares the cores.

    python benchmarks/load_accuracy.py [--quick] [--parts accuracy,stall,bursty,saturation]

JSON lines, one per figure: {"name": ..., "value": ..., "unit": ...}.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import anyio
import tomli_w

from arenatui.load.arrivals import Arrival
from arenatui.load.metrics import Figures
from arenatui.load.run import LoadOptions, LoadOutcome, LoadRun

TRUE_LATENCY_S = 0.100
TRUE_TTFT_S = 0.050
TOKENS = 10
FIXED = {"base_latency_s": TRUE_TTFT_S, "per_token_s": (TRUE_LATENCY_S - TRUE_TTFT_S) / TOKENS, "jitter": 0.0,
         "output_tokens": TOKENS}
ZERO = {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0, "output_tokens": 8}


def emit(name: str, value: float | None, unit: str) -> None:
    print(json.dumps({"name": name, "value": None if value is None else round(value, 4), "unit": unit}), flush=True)


def start_server(config: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config", str(config),
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"mock-server did not start: {line}")
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return proc, m.group(1)


def write_project(path: Path, base: str | None, sim: dict[str, Any]) -> Path:
    model: dict[str, Any] = {"key": "bench", "provider": "openai", "model": "bench", "stream": True, "sim": sim,
                             "base_url": f"{base}/v1" if base else "http://127.0.0.1:1/v1"}
    doc = {"project": {"name": "load-bench"}, "run": {"timeout_s": 30.0, "seed": 1}, "models": [model],
           "cases": [{"id": "c", "input": "Reply with a short JSON object."}]}
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


def load(project: Path, db: Path, rates: tuple[float, ...], duration: float, arrival: Arrival = Arrival(),
         **kw: Any) -> LoadOutcome:
    run = LoadRun(LoadOptions(project, rates, duration, arrival, db=db, **kw))
    anyio.run(run.run)
    return run.figures()


def saturation(figs: list[Figures]) -> float:
    """The highest achieved rate of any segment: what the client and server sustained."""
    return max(f.achieved_rate for f in figs)


def accuracy(fixed: Path, db: Path, q: float) -> None:
    """1. Rate and latency accuracy below saturation."""
    o = load(fixed, db, (40.0,), 20.0 * q, warmup_s=2.0)
    emit("achieved_over_offered_40rps", o.run.achieved_rate / o.run.offered_rate, "ratio")
    emit("ttft_p50_over_truth", o.run.ttft_send[50.0] / (TRUE_TTFT_S * 1000), "ratio")
    emit("latency_p50_over_truth", o.run.latency_send[50.0] / (TRUE_LATENCY_S * 1000), "ratio")
    emit("latency_p50_from_schedule_over_truth", o.run.latency_schedule[50.0] / (TRUE_LATENCY_S * 1000), "ratio")
    emit("lag_p99_40rps", o.run.lag[99.0], "ms")


def stall(stalled: Path, db: Path) -> None:
    """2. A 2 s stall once: from schedule shows it, from send does not."""
    o = load(stalled, db, (50.0,), 30.0, max_in_flight=8)
    emit("stall_p99_from_schedule", o.run.latency_schedule[99.0], "ms")
    emit("stall_p99_from_send", o.run.latency_send[99.0], "ms")
    emit("stall_p99_schedule_over_send", o.run.latency_schedule[99.0] / o.run.latency_send[99.0], "ratio")
    emit("stall_max_from_send", o.run.latency_send[100.0], "ms")


def bursty(fixed: Path, db: Path, q: float) -> None:
    """3. Poisson vs constant at 70/s against 80/s of capacity (8 in flight x 100 ms)."""
    c = load(fixed, db, (70.0,), 20.0 * q, Arrival("constant"), max_in_flight=8, warmup_s=2.0)
    p = load(fixed, db, (70.0,), 20.0 * q, Arrival("poisson"), max_in_flight=8, warmup_s=2.0)
    emit("near_saturation_constant_p99_from_schedule", c.run.latency_schedule[99.0], "ms")
    emit("near_saturation_poisson_p99_from_schedule", p.run.latency_schedule[99.0], "ms")
    emit("near_saturation_poisson_over_constant_p99", p.run.latency_schedule[99.0] / c.run.latency_schedule[99.0],
         "ratio")


def saturate(zero: Path, db: Path, q: float) -> None:
    """4. Saturation with 1 and 2 client processes against a server that answers at once."""
    rates = (500.0, 700.0, 1000.0, 1400.0, 2000.0, 2800.0, 4000.0, 5600.0)  # x1.4: a finer bracket than doubling
    sustained: dict[int, float] = {}
    for n in (1, 2):
        o = load(zero, db, rates, 4.0 * q, warmup_s=1.0 * q, processes=n)
        sustained[n] = saturation(o.segments)
        emit(f"saturation_rate_{n}_process", sustained[n], "requests/s")
        first = o.saturation  # None: achieved followed offered up to the last rate (the figure is then null)
        emit(f"saturation_point_offered_{n}_process", first.target_rate if first else None, "requests/s")
    emit("saturation_rate_2_over_1_process", sustained[2] / sustained[1], "ratio")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="shorter runs (noisier figures)")
    ap.add_argument("--parts", default="accuracy,stall,bursty,saturation", help="which measurements to run")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    q = 0.5 if args.quick else 1.0
    tmp = Path(tempfile.mkdtemp(prefix="arena-load-bench-"))
    db = tmp / "bench.db"
    server_cfg = write_project(tmp / "server.toml", None, FIXED)
    procs: list[subprocess.Popen[str]] = []

    def server(config: Path, *extra: str) -> str:
        proc, base = start_server(config, *extra)
        procs.append(proc)
        return base

    try:
        if parts & {"accuracy", "bursty"}:
            fixed = write_project(tmp / "fixed.toml", server(server_cfg), FIXED)
            if "accuracy" in parts:
                accuracy(fixed, db, q)
            if "bursty" in parts:
                bursty(fixed, db, q)
        if "stall" in parts:
            stall(write_project(tmp / "stalled.toml", server(server_cfg, "--stall-after", "5", "--stall-for", "2"),
                                FIXED), db)
        if "saturation" in parts:
            zero_base = server(write_project(tmp / "zero-server.toml", None, ZERO))
            saturate(write_project(tmp / "zero.toml", zero_base, ZERO), db, q)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()

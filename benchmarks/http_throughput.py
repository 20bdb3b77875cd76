"""Calls/s through the OpenAI provider against `arena mock-server` on loopback, and the client's CPU per call.

The server runs in a subprocess with zero latency, so the figures measure our client path (httpx,
SSE parsing, the provider), which is measurement error for a benchmarking tool. Run:

    python benchmarks/http_throughput.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import tomli_w

from arenatui.project import load_project
from arenatui.providers.base import build_messages
from arenatui.providers.registry import make_provider


def start_server(config: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"mock-server did not start: {line}")
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return proc, m.group(1)


def write_project(path: Path, base: str, stream: bool) -> Path:
    sim = {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0, "output_tokens": 16}
    doc = {"project": {"name": "bench"}, "run": {"timeout_s": 30.0},
           "models": [{"key": "bench", "provider": "openai", "model": "bench", "base_url": f"{base}/v1",
                       "stream": stream, "sim": sim}],
           "cases": [{"id": "c", "input": "What is 2+2?", "expected": "4"}]}
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


async def drive(project_path: Path, concurrency: int, calls: int) -> tuple[float, float]:
    project = load_project(project_path)
    model = project.models[0]
    provider = make_provider(model, project.run, concurrency_hint=concurrency)
    case = project.cases[0]
    from arenatui.providers.base import Request

    req = Request(model=model, case=case, trial=0, attempt=1, messages=build_messages(model, project.defaults, case),
                  max_tokens=64, temperature=0.0, timeout_s=30.0)
    left = calls

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await provider.complete(req)

    for _ in range(min(50, calls)):  # warm the pool
        await provider.complete(req)
    left = calls
    cpu0, t0 = time.process_time(), time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await provider.aclose()
    return calls / wall, cpu / calls * 1000.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = write_project(Path(tmp) / "server.toml", "http://127.0.0.1:1", True)
        proc, base = start_server(cfg)
        try:
            for stream in (True, False):
                path = write_project(Path(tmp) / f"client-{stream}.toml", base, stream)
                mode = "stream" if stream else "json"
                for c in (16, 64):
                    rate, cpu_ms = anyio.run(drive, path, c, args.calls)
                    print(json.dumps({"name": f"http_openai_{mode}_c{c}_calls_per_s", "value": round(rate, 1),
                                      "unit": "calls/s"}), flush=True)
                    print(json.dumps({"name": f"http_openai_{mode}_c{c}_client_cpu_per_1000_calls",
                                      "value": round(cpu_ms, 3), "unit": "s"}), flush=True)
        finally:
            proc.terminate()
            proc.wait(5)


if __name__ == "__main__":
    main()

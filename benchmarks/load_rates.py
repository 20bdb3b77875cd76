"""Memory and Ctrl-C of `arena load` at rates far past what the client or the server can serve.

A simulated model that answers in 0.5 s (so at most max-in-flight / 0.5 s answers per second) is offered
1,000, 10,000 and 100,000 requests/s for a few seconds. Before issue 20 a rate of 100,000/s grew without bound
(23 GB, killed) and ignored SIGINT for 89 s; now requests in flight are capped (DEFAULT_MAX_IN_FLIGHT), late ones
are dropped and counted, and the dispatcher yields. Figures: each rate's peak RSS (MB), wall time over the
planned duration, and the share of offered requests dropped; then the seconds from SIGINT to exit at 100,000/s.
Last, a trace of --trace-lines lines (streamed: never read whole): seconds from starting `arena load` to its first
stored request, and the peak RSS of a few seconds of it (before issue 20, 10M lines: 60 s and 1.7 GB).

    python benchmarks/load_rates.py [--duration 5] [--trace-lines 2000000]

JSON lines, one per figure: {"name": ..., "value": ..., "unit": ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = """\
[project]
name = "load-rates"
[[models]]
key = "m"
provider = "sim"
sim = { base_latency_s = 0.5, per_token_s = 0.0, jitter = 0.0, output_tokens = 4, accuracy = 1.0 }
[[cases]]
id = "c1"
input = "q"
expected = "a"
"""


def emit(name: str, value: float, unit: str) -> None:
    print(json.dumps({"name": name, "value": round(value, 3), "unit": unit}), flush=True)


def run(tmp: Path, rate: int, duration: float, *, interrupt_after: float | None = None) -> tuple[float, float, str]:
    """(peak RSS in MB, wall seconds, stdout+stderr) of one `arena load` process."""
    cmd = [sys.executable, "-m", "arenatui", "load", "--project", str(tmp / "p.toml"), "--db",
           str(tmp / f"r{rate}.db"), "--rate", str(rate), "--duration", f"{duration:g}", "--quiet"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if interrupt_after is not None:
        time.sleep(interrupt_after)
        t0 = time.monotonic()
        os.kill(p.pid, signal.SIGINT)
    out = p.stdout.read() if p.stdout else ""
    _, _, usage = os.wait4(p.pid, 0)
    p.returncode = 0  # reaped here: Popen must not wait for it again
    wall = time.monotonic() - t0
    return usage.ru_maxrss / 1024.0, wall, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--trace-lines", type=int, default=2_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "p.toml").write_text(PROJECT, encoding="utf-8")
        for rate in (1_000, 10_000, 100_000):
            rss, wall, out = run(tmp, rate, args.duration)
            m = re.search(r"warning: (\d+) requests \(([\d.]+)% of those offered\) were dropped", out)
            emit(f"load_peak_rss_{rate}_per_s", rss, "MB")
            emit(f"load_wall_over_duration_{rate}_per_s", wall / args.duration, "ratio")
            emit(f"load_dropped_share_{rate}_per_s", float(m.group(2)) / 100.0 if m else 0.0, "share")
        _, to_exit, _ = run(tmp, 100_000, 60.0, interrupt_after=3.0)
        emit("load_sigint_to_exit_100000_per_s", to_exit, "s")
        small, _ = first_trace_request(tmp, 1_000)  # the same start-up with a trace read whole: the baseline
        first, rss = first_trace_request(tmp, args.trace_lines)
        emit(f"load_trace_{args.trace_lines}_lines_first_request", first, "s")
        emit(f"load_trace_{args.trace_lines}_lines_first_request_over_1000_lines", first / small, "ratio")
        emit(f"load_trace_{args.trace_lines}_lines_peak_rss", rss, "MB")


def first_trace_request(tmp: Path, lines: int) -> tuple[float, float]:
    """(seconds from start to the first stored request, peak RSS in MB after a few seconds) for a big trace."""
    import sqlite3

    trace = tmp / f"trace{lines}.jsonl"
    with open(trace, "w", encoding="utf-8") as f:  # 1,000 requests/s for lines/1000 seconds
        for i in range(lines):
            f.write(f'{{"offset": {i / 1000:.3f}}}\n')
    db = tmp / f"trace{lines}.db"
    cmd = [sys.executable, "-m", "arenatui", "load", "--project", str(tmp / "p.toml"), "--db", str(db),
           "--arrival", f"trace:{trace}", "--quiet"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = float("nan")
    while time.monotonic() - t0 < 120:
        time.sleep(0.01)
        try:
            with sqlite3.connect(db) as c:
                if c.execute("SELECT COUNT(*) FROM load_requests").fetchone()[0]:
                    first = time.monotonic() - t0
                    break
        except sqlite3.Error:
            pass
    time.sleep(3.0)
    os.kill(p.pid, signal.SIGINT)  # not Popen.send_signal: its poll() would reap the child before wait4 reads it
    _, _, usage = os.wait4(p.pid, 0)
    p.returncode = 0
    return first, usage.ru_maxrss / 1024.0


if __name__ == "__main__":
    main()

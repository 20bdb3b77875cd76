"""Engine overhead: calls/s for zero-latency simulated calls with persistence on, and wall/ideal at 50 ms.

    python benchmarks/engine_overhead.py [--calls 100000] [--concurrency 64]

Prints one JSON line per figure (DESIGN.md, Benchmarks). Targets on a 2-core machine:
engine_calls_per_s >= 30,000 with persistence; wall_over_ideal <= 1.10.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from arenatui.config import project_from_dict
from arenatui.sweep import Sweep, SweepOptions


def _project(n_models: int, n_cases: int, trials: int, latency_s: float, concurrency: int) -> dict[str, Any]:
    return {
        "project": {"name": "bench"},
        "run": {"concurrency": concurrency, "trials": trials, "timeout_s": 60.0},
        "models": [{"key": f"m{i}", "provider": "sim",
                    "sim": {"base_latency_s": latency_s, "per_token_s": 0.0, "jitter": 0.0, "accuracy": 0.5}}
                   for i in range(n_models)],
        "cases": [{"id": f"c{j}", "input": f"question {j}", "expected": "yes"} for j in range(n_cases)],
    }


def run_sweep(raw: dict[str, Any], db: Path) -> tuple[float, Sweep]:
    toml = db.with_suffix(".toml")
    import tomli_w

    toml.write_text(tomli_w.dumps(raw))
    sweep = Sweep(SweepOptions(project=toml, db=db))
    t0 = time.perf_counter()
    anyio.run(sweep.run)
    return time.perf_counter() - t0, sweep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    figures: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        # 1. zero-latency calls, persistence on
        n_models, trials = 4, 10
        n_cases = math.ceil(args.calls / (n_models * trials))
        raw = _project(n_models, n_cases, trials, 0.0, args.concurrency)
        project_from_dict(raw, Path("bench.toml"))  # validate before timing
        wall, _ = run_sweep(raw, Path(tmp) / "zero.db")
        import sqlite3

        stored = sqlite3.connect(Path(tmp) / "zero.db").execute("SELECT COUNT(*) FROM results").fetchone()[0]
        calls = n_models * n_cases * trials
        assert stored == calls, (stored, calls)
        figures.append({"name": "engine_zero_latency_calls", "value": calls, "unit": "calls"})
        figures.append({"name": "engine_wall_s", "value": round(wall, 3), "unit": "s"})
        figures.append({"name": "engine_calls_per_s", "value": round(calls / wall, 1), "unit": "calls/s"})

        # 2. 2,000 calls of 50 ms at concurrency 256
        conc, n, lat = 256, 2000, 0.05
        raw = _project(4, n // 4, 1, lat, conc)
        wall, _ = run_sweep(raw, Path(tmp) / "fifty.db")
        ideal = math.ceil(n / conc) * lat
        figures.append({"name": "latency_sweep_wall_s", "value": round(wall, 4), "unit": "s"})
        figures.append({"name": "latency_sweep_ideal_s", "value": round(ideal, 4), "unit": "s"})
        figures.append({"name": "wall_over_ideal", "value": round(wall / ideal, 3), "unit": "ratio"})
    for f in figures:
        print(json.dumps(f))


if __name__ == "__main__":
    main()

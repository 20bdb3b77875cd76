"""The auto-tuner against the oracle level and a plain AIMD baseline, on simulated providers with a known optimum.

    python benchmarks/tuner.py [--calls 1500] [--scenarios rpm,ceiling,serial,halving] [--budget 400]

Scenarios (one simulated model each, latencies of tens of ms so a run takes seconds):
- rpm: a hosted model with a rate limit (200 req/s, 50 ms calls, a bucket of 10 so bursts cannot beat the
  rate): oracle level = rpm/60 × latency ≈ 10.
- ceiling: a provider that answers 429 past 8 requests at once: oracle 8.
- serial: a local server that serves one request at a time and queues the rest: oracle 1 (the same
  goodput at any level, with the lowest latency at 1).
- halving: the rpm model whose limit halves when half the calls are done: the oracle holds 10, then 5.

For each, the same sweep is run three times: capped at the oracle level, with the tuner (`--tune`,
starting from 2), and with AIMD (halve on a 429 at most once per latency, +1 after each window of
`level` answered calls without a 429), implemented here as a sink on the same runner controls.

Figures (JSON lines): <scenario>_tuner_wall_ratio and <scenario>_aimd_wall_ratio (wall clock over the
oracle run's; target <= 1.15 for the tuner), <scenario>_tuner_retried_share and <scenario>_aimd_retried_share
(calls that needed more than one attempt; target < 5%), <scenario>_*_p95_ratio (answered latency p95 over the
oracle's), and <scenario>_tune_recommended beside <scenario>_oracle_level (`arena tune`, --budget calls;
target within one level).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import tomli_w

from arenatui.engine.events import CallFinished, CallRetrying, Event
from arenatui.live import percentile
from arenatui.providers.sim import SimProvider
from arenatui.sweep import Sweep, SweepOptions

SCENARIOS: dict[str, dict[str, Any]] = {
    "rpm": {"base_latency_s": 0.05, "per_token_s": 0.0, "jitter": 0.1, "rpm": 12000, "burst": 10, "accuracy": 1.0},
    "ceiling": {"base_latency_s": 0.04, "per_token_s": 0.0, "jitter": 0.1, "max_concurrent": 8, "accuracy": 1.0},
    "serial": {"base_latency_s": 0.01, "per_token_s": 0.0, "jitter": 0.1, "serial": True, "accuracy": 1.0},
    "halving": {"base_latency_s": 0.05, "per_token_s": 0.0, "jitter": 0.1, "rpm": 12000, "burst": 10, "accuracy": 1.0},
}
START = 2


def oracle_level(sim: dict[str, Any]) -> int:
    from arenatui.config.schema import SimSettings

    return max(1, math.floor(SimSettings(**sim).ideal_concurrency()))


def write_project(dirpath: Path, name: str, calls: int, cap: int | None = None) -> Path:
    model: dict[str, Any] = {"key": name, "provider": "sim", "model": name, "sim": SCENARIOS[name]}
    if cap is not None:
        model["max_concurrency"] = cap
    raw = {
        "project": {"name": f"tuner-{name}"},
        "run": {"concurrency": START, "trials": calls // 10, "timeout_s": 30.0, "max_attempts": 30,
                "backoff_base_s": 0.05, "backoff_cap_s": 2.0, "seed": 11},
        "models": [model],
        "scorers": [{"name": "exact", "kind": "exact"}],
        "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "yes"} for i in range(10)],
    }
    p = dirpath / f"{name}-{cap}.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


class Outcome:
    """A sink: calls retried, answered latencies, and the halving trigger."""

    def __init__(self, total: int, on_half: Callable[[], None] | None) -> None:
        self.total = total
        self.done = 0
        self.retried = 0
        self.latencies: list[float] = []
        self.on_half = on_half

    def __call__(self, ev: Event) -> None:
        if type(ev) is CallFinished:
            r = ev.result
            self.done += 1
            self.retried += r.attempts > 1
            if r.status != "errored" and r.latency_ms is not None:
                self.latencies.append(r.latency_ms)
            if self.on_half is not None and self.done == self.total // 2:
                self.on_half()


class Aimd:
    """The baseline: halve on a 429 (once per latency), +1 after `level` answered calls without one."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.level = START
        self.good = 0
        self.last_cut = -1e9
        self.sweep: Sweep | None = None

    def __call__(self, ev: Event) -> None:
        sweep = self.sweep
        if sweep is None:
            return
        if type(ev) is CallRetrying and ev.reason == "rate_limited":
            if ev.t - self.last_cut > 0.1:
                self.last_cut = ev.t
                self._set(max(1, self.level // 2))
            self.good = 0
        elif type(ev) is CallFinished and ev.result.status != "errored":
            self.good += 1
            if self.good >= self.level:
                self.good = 0
                self._set(self.level + 1)

    def _set(self, n: int) -> None:
        assert self.sweep is not None
        if n != self.level:
            self.level = n
            self.sweep.runner.set_model_cap(self.key, n, source="aimd")
            self.sweep.runner.set_concurrency(n, source="aimd")


def halve_limit(sweep: Sweep, key: str) -> Callable[[], None]:
    def go() -> None:
        prov = sweep.providers[key]
        assert isinstance(prov, SimProvider)
        core = prov.core
        core.s = dataclasses.replace(core.s, rpm=(core.s.rpm or 0) / 2)
        core.rate /= 2
        core.burst = max(1.0, core.rate)
        core.level = min(core.level, core.burst)
    return go


def run_one(dirpath: Path, name: str, mode: str, db: Path, calls: int) -> dict[str, float]:
    oracle = oracle_level(SCENARIOS[name])
    # the oracle and AIMD start capped (at the oracle level, at START); the tuner from START with no user cap
    project = write_project(dirpath, name, calls, {"oracle": oracle, "aimd": START}.get(mode))
    aimd = Aimd(name) if mode == "aimd" else None
    extra: list[Callable[[Event], None]] = []
    concurrency = oracle if mode == "oracle" else START
    sweep_holder: list[Sweep] = []

    def on_half() -> None:
        if name != "halving":
            return
        s = sweep_holder[0]
        halve_limit(s, name)()
        if mode == "oracle":  # the oracle knows: it follows the new optimum at once
            s.runner.set_model_cap(name, max(1, oracle // 2), source="oracle")
            s.runner.set_concurrency(max(1, oracle // 2), source="oracle")

    outcome = Outcome(calls, on_half)
    extra.append(outcome)
    if aimd is not None:
        extra.append(aimd)
    sweep = Sweep(SweepOptions(project=project, db=db, concurrency=concurrency, tune=mode == "tuner"),
                  extra_sinks=extra, live_metrics=False)
    sweep_holder.append(sweep)
    if aimd is not None:
        aimd.sweep = sweep
    t0 = time.monotonic()
    anyio.run(sweep.run)
    wall = time.monotonic() - t0
    lat = sorted(outcome.latencies)
    final = sweep.runner.model_cap(name) or 0
    return {"wall": wall, "retried": outcome.retried / max(1, outcome.done), "p95": percentile(lat, 0.95) or 0.0,
            "final": float(final)}


def emit(name: str, value: float, unit: str) -> None:
    print(json.dumps({"name": name, "value": round(value, 4), "unit": unit}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1500)
    ap.add_argument("--scenarios", default="rpm,ceiling,serial,halving")
    ap.add_argument("--budget", type=int, default=600, help="calls per model for the `arena tune` check")
    args = ap.parse_args()
    from arenatui.tuning.drivers import tune

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for name in args.scenarios.split(","):
            db = d / f"{name}.db"
            res = {mode: run_one(d, name, mode, db, args.calls) for mode in ("oracle", "tuner", "aimd")}
            base = res["oracle"]
            emit(f"{name}_oracle_level", oracle_level(SCENARIOS[name]), "level")
            emit(f"{name}_oracle_wall_s", base["wall"], "s")
            for mode in ("tuner", "aimd"):
                r = res[mode]
                emit(f"{name}_{mode}_wall_ratio", r["wall"] / base["wall"], "ratio")
                emit(f"{name}_{mode}_retried_share", r["retried"], "share")
                emit(f"{name}_{mode}_p95_ratio", r["p95"] / base["p95"] if base["p95"] else 0.0, "ratio")
                emit(f"{name}_{mode}_final_level", r["final"], "level")
            emit(f"{name}_oracle_retried_share", base["retried"], "share")
            if name != "halving":
                rec = tune(write_project(d, name, args.calls), budget=args.budget, db=db)
                emit(f"{name}_tune_recommended", rec.recommended[name], "level")


if __name__ == "__main__":
    main()

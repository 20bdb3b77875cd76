"""Coverage of the auto-tuner and its verdict against the oracle level, beside plain AIMD, over provider shapes whose
optimum is computable (issue 19).

    python benchmarks/tuner.py [--seeds 20] [--calls 800] [--shapes rpm,slow429,ceiling,serial,halving,jitter,tiny]
        [--modes tuner,aimd[,climb]] [--verbose]
    python benchmarks/tuner.py --shapes serial --fixed 1,2,4,16 --seeds 6   # a shape held at fixed levels

At the default 800 calls a run at the oracle level lasts about 1.6 s, and the tuner's fixed minimum window (0.5 s:
25 latencies of these, under one of a hosted model) is a third of it: a run holds about three full windows, which
is what wall_ratio then mostly charges (declared_low) and what a verdict needing a second measured level runs out
of (rpm, halving). --calls 2000 gives windows a share nearer a real sweep's.

Shapes (one simulated model each, latencies of a few tens of ms so a run takes about a second):
- rpm: a rate limit of 500 requests/s (a bucket of 10), 20 ms calls, 429s answered at once: oracle 10
  (800 calls a run, about 1.6 s at the oracle level).
- slow429: the same, but a refusal takes 2 latencies to come back (a gateway that is slow to say no): oracle 10.
- ceiling: 429 past 8 requests at once, 20 ms calls: oracle 8.
- serial: a local server that serves one request at a time (5 ms) and queues the rest: oracle 1 (300 calls).
- halving: the rpm model whose limit halves when half the calls are done: the oracle holds 10, then 5 (the
  recommendation is judged against 5).
- jitter: no limit, latency 20 ms with a lognormal jitter of sigma 0.4 (about ±50%), the project capping the
  model at 16: oracle 16 (the cap).
- tiny: the rpm model with a budget of 60 calls: too few for a verdict, so the right answer is "not enough
  evidence" (never a confident wrong one); within-one-level is not expected here.
- serial_small: a server answering one call at a time in 50 ms, with a budget of 60 calls: oracle 1, and a verdict
  expected ("optimum ≈ 1: the server queues above 1").
- declared: the rpm model whose every answer and refusal states its limit (x-ratelimit-limit-requests and what is
  left, as sim.declared_rpm states it): oracle 10, targets 429s per call <= 1% and within one >= 95%.
- declared_low / declared_high: the same with headers that lie (half / four times the true limit): evidence must
  win, no worse than the rpm shape without headers.

For each shape and seed, the same sweep runs with the tuner (from 2) and with AIMD (from 2: halve on a 429 at most once
per latency, +1 after `level` answered calls without one, never above the project's cap, as the tuner); the oracle
run (capped at the oracle level) runs on 3 seeds and its mean wall clock is the reference; for a rate limit the oracle
level is rate × the mean latency measured: each run is judged against its own (a busy machine stretches a 20 ms call
by a few ms, and by different amounts minutes apart, which moves the optimum by a level or two), and also against the
oracle runs' (the _vs_oracle_runs lines). Both modes' recommendation is the one verdict (`tuning.evidence.verdict`)
over the levels the run held, so they differ only in how they moved. On the tiny shape a third mode, climb, doubles
from 2 after each level's worth of answers up to the oracle level and never past it: no climber that starts at 2
without knowing the limit can finish a budget sooner, so its wall ÷ oracle is that shape's floor.

Per shape and mode, JSON lines: <shape>_<mode>_within_one (share of seeds whose verdict names a level within one of
the oracle: target >= 0.95), <shape>_<mode>_wrong_confident (an optimum, a cap or a rate limit more than one level
off: target 0), <shape>_<mode>_wall_ratio (mean wall clock over the oracle's: target <= 1.10) and
<shape>_<mode>_retried_share (calls that needed more than one attempt: target < 0.03) and <shape>_<mode>_refused_share
(attempts answered 429 per call), each with mc_se, its Monte Carlo standard error over the seeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import tomli_w

from arenatui.kernel.errors import RateLimited
from arenatui.kernel.events import CallFinished, CallRetrying, Event
from arenatui.providers.sim import SimProvider
from arenatui.session.sweep import Sweep, SweepOptions

LAT = 0.02
RPM: dict[str, Any] = {"base_latency_s": LAT, "per_token_s": 0.0, "jitter": 0.1, "rpm": 30000, "burst": 10,
                       "accuracy": 1.0}


@dataclasses.dataclass(frozen=True)
class Shape:
    sim: dict[str, Any]
    oracle: int
    """The level to recommend (after a halving: the new one)."""
    start_oracle: int | None = None
    """The oracle run's level before a halving."""
    cap: int | None = None
    refusal_s: float = 0.0
    calls: int | None = None
    halving: bool = False
    declared_rpm: float | None = None
    """Every answer and refusal states this rate limit (``sim.declared_rpm``, as a hosted API's headers do): the
    sim's own rpm for honest headers, another figure for headers that lie."""


SHAPES: dict[str, Shape] = {
    "rpm": Shape(RPM, 10),
    "slow429": Shape(RPM, 10, refusal_s=2 * LAT),
    "ceiling": Shape({"base_latency_s": LAT, "per_token_s": 0.0, "jitter": 0.1, "max_concurrent": 8,
                      "accuracy": 1.0}, 8),
    "serial": Shape({"base_latency_s": 0.005, "per_token_s": 0.0, "jitter": 0.1, "serial": True, "accuracy": 1.0}, 1,
                    calls=300),
    "halving": Shape(RPM, 5, start_oracle=10, halving=True),
    "jitter": Shape({"base_latency_s": LAT, "per_token_s": 0.0, "jitter": 0.4, "accuracy": 1.0}, 16, cap=16),
    "tiny": Shape(RPM, 10, calls=60),
    "serial_small": Shape({"base_latency_s": 0.05, "per_token_s": 0.0, "jitter": 0.1, "serial": True,
                           "accuracy": 1.0}, 1, calls=60),
    "declared": Shape(RPM, 10, declared_rpm=RPM["rpm"]),
    "declared_low": Shape(RPM, 10, declared_rpm=RPM["rpm"] / 2),
    "declared_high": Shape(RPM, 10, declared_rpm=RPM["rpm"] * 4),
}
START = 2
MODEL = "m"


def write_project(dirpath: Path, name: str, shape: Shape, calls: int, cap: int | None) -> Path:
    sim = shape.sim if shape.declared_rpm is None else {**shape.sim, "declared_rpm": shape.declared_rpm}
    model: dict[str, Any] = {"key": MODEL, "provider": "sim", "model": name, "sim": sim}
    if cap is not None:
        model["max_concurrency"] = cap
    raw = {
        "project": {"name": f"tuner-{name}"},
        "run": {"concurrency": START, "trials": max(1, calls // 10), "timeout_s": 30.0, "max_attempts": 30,
                "backoff_base_s": 0.05, "backoff_cap_s": 2.0, "seed": 11},
        "models": [model],
        "scorers": [{"name": "exact", "kind": "exact"}],
        "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "yes"} for i in range(10)],
    }
    p = dirpath / f"{name}-{cap}.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


class Outcome:
    """A sink: calls retried, and the halving trigger."""

    def __init__(self, total: int, on_half: Callable[[], None] | None) -> None:
        self.total = total
        self.done = 0
        self.retried = 0
        self.refused = 0
        """Attempts answered 429 (each a retry, or a call given up)."""
        self.latencies: list[float] = []
        self.on_half = on_half

    def __call__(self, ev: Event) -> None:
        if type(ev) is CallRetrying and ev.reason == "rate_limited":
            self.refused += 1
        if type(ev) is CallFinished:
            self.done += 1
            self.refused += ev.result.error_class == "rate_limited"
            self.retried += ev.result.attempts > 1
            if ev.result.status != "errored" and ev.result.latency_ms is not None and len(self.latencies) < 400:
                self.latencies.append(ev.result.latency_ms / 1000)
            if self.on_half is not None and self.done == self.total // 2:
                self.on_half()


class Aimd:
    """The baseline: halve on a 429 (once per latency), +1 after `level` answered calls without one, never above the
    project's cap (a user's max_concurrency binds AIMD as it binds the tuner)."""

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        self.level = START
        self.good = 0
        self.last_cut = -1e9
        self.sweep: Sweep | None = None

    def __call__(self, ev: Event) -> None:
        sweep = self.sweep
        if sweep is None:
            return
        if type(ev) is CallRetrying and ev.reason == "rate_limited":
            if ev.t - self.last_cut > 5 * LAT:
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
        if self.cap is not None:
            n = min(n, self.cap)
        if n != self.level:
            self.level = n
            self.sweep.runner.set_model_cap(MODEL, n, source="aimd")
            self.sweep.runner.set_concurrency(n, source="aimd")


class Climb(Aimd):
    """The floor for any climber from START on a shape it knows nothing of: double after each level's worth of answers
    (about one latency a step), never past the oracle level, so never a 429 (`--modes climb`; the tiny shape runs it
    by default: its wall ÷ oracle is the least a start at 2 costs on a budget that ends during the climb)."""

    def __call__(self, ev: Event) -> None:
        if self.sweep is not None and type(ev) is CallFinished and ev.result.status != "errored":
            self.good += 1
            if self.good >= self.level:
                self.good = 0
                self._set(self.level * 2)


def halve_limit(sweep: Sweep) -> None:
    prov = sweep.providers[MODEL]
    assert isinstance(prov, SimProvider)
    core = prov.core
    core.s = dataclasses.replace(core.s, rpm=(core.s.rpm or 0) / 2)
    core.rate /= 2
    core.burst = max(1.0, core.burst / 2)
    core.level = min(core.level, core.burst)


def slow_refusals(prov: SimProvider, delay: float) -> None:
    """Refusals that take `delay` seconds to come back (the provider instance's own method, wrapped)."""
    inner = prov.complete

    async def complete(request: Any) -> Any:
        try:
            return await inner(request)
        except RateLimited:
            await anyio.sleep(delay)
            raise

    prov.complete = complete  # type: ignore[method-assign]


def run_one(dirpath: Path, name: str, shape: Shape, mode: str, seed: int, db: Path, calls: int) -> dict[str, Any]:
    first = shape.start_oracle or shape.oracle
    cap = first if mode in ("oracle", "climb") else shape.cap
    if shape.cap is not None and cap is not None:
        cap = min(cap, shape.cap)
    project = write_project(dirpath, name, shape, calls, cap)
    holder: list[Sweep] = []

    def on_half() -> None:
        if not shape.halving:
            return
        s = holder[0]
        halve_limit(s)
        if mode == "oracle":  # the oracle knows: it follows the new optimum at once
            s.runner.set_model_cap(MODEL, shape.oracle, source="oracle")
            s.runner.set_concurrency(shape.oracle, source="oracle")

    outcome = Outcome(calls, on_half)
    extra: list[Callable[[Event], None]] = [outcome]
    aimd = Aimd(cap) if mode == "aimd" else Climb(cap) if mode == "climb" else None
    if aimd is not None:
        extra.append(aimd)
    sweep = Sweep(SweepOptions(project=project, db=db, concurrency=first if mode == "oracle" else START,
                               tune=mode == "tuner", seed=seed), extra_sinks=extra, live_metrics=False)
    holder.append(sweep)
    if aimd is not None:
        aimd.sweep = sweep
        sweep.runner.set_model_cap(MODEL, START, source="aimd")
    if shape.refusal_s:
        prov = sweep.providers[MODEL]
        assert isinstance(prov, SimProvider)
        slow_refusals(prov, shape.refusal_s)
    t0 = time.monotonic()
    anyio.run(sweep.run)
    wall = time.monotonic() - t0
    (ro,) = [r for r in sweep.tuner.readouts() if r.model_key == MODEL]
    return {"wall": wall, "retried": outcome.retried / max(1, outcome.done),
            "refused": outcome.refused / max(1, outcome.done), "verdict": ro.verdict, "readout": ro,
            "latency": statistics.mean(outcome.latencies) if outcome.latencies else None}


def oracle_of(shape: Shape, oracle_latency_s: float | None) -> int:
    """The optimum on this machine: for a rate limit, Little's law with the latency measured (a busy machine stretches
    20 ms calls by a few ms, which moves rate × latency by a level); else the shape's."""
    rpm = shape.sim.get("rpm")
    if rpm is None or oracle_latency_s is None:
        return shape.oracle
    rate = rpm / 60 / (2 if shape.halving else 1)
    return max(1, math.floor(rate * oracle_latency_s))


def judge(v: Any, oracle: int) -> tuple[bool, bool]:
    """(within one level, wrong and confident) for a verdict."""
    level = v.level if v.kind in ("optimum", "capped", "rising", "rate") else None
    return (level is not None and abs(level - oracle) <= 1,
            v.conclusive and (v.level is None or abs(v.level - oracle) > 1))


def emit(name: str, value: float, unit: str, se: float | None = None) -> None:
    """One figure; `se`: its Monte Carlo standard error over the seeds."""
    line: dict[str, Any] = {"name": name, "value": round(value, 4), "unit": unit}
    if se is not None:
        line["mc_se"] = round(se, 4)
    print(json.dumps(line), flush=True)


def share_se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n) if n else float("nan")


def mean_se(xs: list[float]) -> float:
    return statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--calls", type=int, default=800)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--modes", default="tuner,aimd",
                    help="which of tuner,aimd,climb to run beside the oracle (the tiny shape adds climb)")
    ap.add_argument("--verbose", action="store_true", help="print each run's verdict")
    ap.add_argument("--fixed", default="", help="instead: each shape held at these levels (e.g. 1,2,4,16), the median "
                                                "wall clock over the seeds as <shape>_fixed_<level>_wall_s")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if args.fixed:
            for name in args.shapes.split(","):
                for level in (int(x) for x in args.fixed.split(",")):
                    shape = dataclasses.replace(SHAPES[name], oracle=level, start_oracle=None)
                    walls = [run_one(d, name, shape, "oracle", s, d / f"{name}-{level}.db", shape.calls or args.calls)
                             ["wall"] for s in range(args.seeds)]
                    emit(f"{name}_fixed_{level}_wall_s", statistics.median(walls), "s")
            return
        for name in args.shapes.split(","):
            shape = SHAPES[name]
            calls = shape.calls or args.calls
            db = d / f"{name}.db"
            oracle_runs = [run_one(d, name, shape, "oracle", s, db, calls) for s in range(min(3, args.seeds))]
            base = statistics.mean(r["wall"] for r in oracle_runs)
            lats = [r["latency"] for r in oracle_runs if r["latency"] is not None]
            oracle = oracle_of(shape, statistics.mean(lats) if lats else None)
            emit(f"{name}_oracle_level", oracle, "level")
            emit(f"{name}_oracle_wall_s", base, "s")
            modes = args.modes.split(",")
            if name == "tiny" and "climb" not in modes and args.modes == ap.get_default("modes"):
                modes.append("climb")
            for mode in modes:
                runs = [run_one(d, name, shape, mode, s, db, calls) for s in range(args.seeds)]
                # a run is judged against rate × the latency it measured itself: on a machine shared with other work
                # a 20 ms call takes 20 ms in one run and 24 ms in the next, minutes apart, which moves a rate limit's
                # optimum by two levels; the oracle runs' figure (above) is judged too, as _vs_oracle_runs
                own = [oracle_of(shape, r["latency"]) if r["latency"] is not None else oracle for r in runs]
                judged = [judge(r["verdict"], o) for r, o in zip(runs, own, strict=True)]
                fixed = [judge(r["verdict"], oracle) for r in runs]
                if args.verbose:
                    for s, r in enumerate(runs):
                        levels = " ".join(f"{lv.level}:{lv.answered}/{lv.attempts}{'*' if lv.measured else ''}"
                                          for lv in r["readout"].levels)
                        print(f"# {name} {mode} seed {s}: {r['verdict'].text} (oracle {own[s]}; "
                              f"{r['wall'] / base:.2f}x, "
                              f"{r['retried']:.1%} retried; answered/attempts by level, * measured: {levels})",
                              flush=True)
                n = len(runs)
                for what, js in (("", judged), ("_vs_oracle_runs", fixed)):
                    if what and own == [oracle] * n:
                        continue
                    within, wrong = sum(j[0] for j in js) / n, sum(j[1] for j in js) / n
                    emit(f"{name}_{mode}_within_one{what}", within, "share", share_se(within, n))
                    emit(f"{name}_{mode}_wrong_confident{what}", wrong, "share", share_se(wrong, n))
                walls = [r["wall"] / base for r in runs]
                emit(f"{name}_{mode}_wall_ratio", statistics.mean(walls), "ratio", mean_se(walls))
                for what in ("retried", "refused"):
                    xs = [r[what] for r in runs]
                    emit(f"{name}_{mode}_{what}_share", statistics.mean(xs), "share", mean_se(xs))
                if math.isnan(base):
                    raise SystemExit("oracle wall clock is not a number")


if __name__ == "__main__":
    main()

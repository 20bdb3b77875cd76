"""`arena tune` and `arena sweep`: find each model's optimum with the tuner, or time a matrix at fixed levels.

Both run ordinary stored sweeps (headless, quiet) through `arenatui.sweep.Sweep`, so every call they make
is in the results database like any other run's.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from arenatui.config import load_project
from arenatui.engine.events import CallFinished, CallRetrying, Event
from arenatui.errors import ArenaError
from arenatui.limits import MAX_CONCURRENCY
from arenatui.live import percentile
from arenatui.plan import Filters
from arenatui.tuning.controller import TunerSettings
from arenatui.tuning.levels import ERROR_SHARE, FLAT, LevelReadout, ModelReadout, provider_answered


@dataclass(frozen=True, slots=True)
class TuneResult:
    run_id: str
    readouts: tuple[ModelReadout, ...]
    recommended: dict[str, int]
    """Per model: where the tuner settled (a probe not counted)."""
    decisions: tuple[str, ...]
    wall_s: float


def tune(project: str | Path, *, models: Sequence[str] = (), budget: int = 200, db: str | Path | None = None,
         seed: int | None = None, settings: TunerSettings | None = None,
         started: Callable[[], None] | None = None) -> TuneResult:
    """Spend at most `budget` calls per model (the project's cases, cycled as trials) with the tuner on; `started`
    is called once the project and the models asked for are known good, before the first call."""
    from arenatui.sweep import Sweep, SweepOptions

    proj = load_project(project)
    n_cases = len(proj.cases)
    if n_cases == 0:
        raise ArenaError(f"{proj.path}: no cases to tune with")
    filters = Filters(models=tuple(models), limit=min(budget, n_cases), trials=max(1, budget // n_cases))
    sweep = Sweep(SweepOptions(project=project, filters=filters, db=db, seed=seed, tune=True), live_metrics=False)
    if settings is not None:
        sweep.tuner.settings = settings
    if started is not None:
        started()
    t0 = time.monotonic()
    anyio.run(sweep.run)
    wall = time.monotonic() - t0
    readouts = tuple(sweep.tuner.tracker.readouts())
    rec = {}
    for ro in readouts:
        # the tuner's own level where it has one: it re-measures what the readout only glanced at
        ctl = sweep.tuner.controllers.get(ro.model_key)
        rec[ro.model_key] = (ctl.held_level if ctl is not None else None) or ro.best or 1
    return TuneResult(sweep.run_id, readouts, rec, tuple(d.reason for d in sweep.tuner.decisions), wall)


def stored_readouts(run_id: str, db: str | Path | None = None) -> tuple[str, list[ModelReadout]]:
    """A stored run's per-level readout (every run keeps one, tuned or not): (run id, readouts)."""
    from arenatui.store import Store

    with Store(db, read_only=True) as store:
        rec = store.get_run(run_id)
        rows = store.tuning_levels(rec.run_id)
    by_model: dict[str, list[tuple[Any, ...]]] = {}
    for r in rows:
        by_model.setdefault(r[0], []).append(r)
    out = []
    for key, rs in by_model.items():
        levels = tuple(LevelReadout(r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], bool(r[11]),
                                    bool(r[12])) for r in rs)
        best = next((lv.level for lv in levels if lv.best), None)
        out.append(ModelReadout(key, levels, best, str(rs[0][13])))
    return rec.run_id, out


@dataclass(frozen=True, slots=True)
class LevelRun:
    level: int
    run_id: str
    wall_s: float
    answered: int
    errored: int
    attempts: int
    rate_limited: int
    p95_ms: float | None
    knee: bool = False

    @property
    def goodput(self) -> float:
        return self.answered / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def limited_share(self) -> float:
        return self.rate_limited / self.attempts if self.attempts else 0.0


class _Count:
    """A sink counting what a fixed-level sweep did (attempts, 429s, answered latencies)."""

    def __init__(self) -> None:
        self.attempts = self.limited = self.answered = self.errored = 0
        self.latencies: list[float] = []

    def __call__(self, ev: Event) -> None:
        if type(ev) is CallFinished:
            r = ev.result
            if r.error_class == "cancelled":
                return
            self.attempts += 1
            if not provider_answered(r):
                self.errored += 1
                self.limited += r.error_class == "rate_limited"
            else:
                self.answered += 1
                if r.latency_ms is not None:
                    self.latencies.append(r.latency_ms)
        elif type(ev) is CallRetrying:
            self.attempts += 1
            self.limited += ev.reason == "rate_limited"


def knee(runs: Sequence[LevelRun]) -> int | None:
    """The lowest level whose goodput is within FLAT of the best among clean levels: no call gave up and 429s
    under ERROR_SHARE of attempts (else among all)."""
    clean = [r for r in runs if r.errored == 0 and r.limited_share <= ERROR_SHARE] or list(runs)
    if not clean:
        return None
    top = max(r.goodput for r in clean)
    return min(r.level for r in clean if r.goodput >= top * (1 - FLAT))


def sweep_levels(project: str | Path, levels: Sequence[int], *, models: Sequence[str] = (), limit: int | None = None,
                 trials: int | None = None, db: str | Path | None = None,
                 seed: int | None = None) -> tuple[str, list[LevelRun]]:
    """The same matrix at each level, one stored run per level; returns (group id, runs with the knee marked)."""
    from arenatui.store import Store
    from arenatui.sweep import Sweep, SweepOptions

    bad = [n for n in levels if not 1 <= n <= MAX_CONCURRENCY]
    if not levels or bad:
        raise ArenaError(f"--levels: expected whole numbers from 1 to {MAX_CONCURRENCY}, comma-separated "
                         f"(e.g. 1,2,4,8,16); got {', '.join(map(str, bad)) or 'none'}")
    group = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
    runs: list[LevelRun] = []
    for n in levels:
        count = _Count()
        sweep = Sweep(SweepOptions(project=project, filters=Filters(models=tuple(models), limit=limit, trials=trials),
                                   db=db, concurrency=n, seed=seed), extra_sinks=(count,), live_metrics=False)
        t0 = time.monotonic()
        anyio.run(sweep.run)
        wall = time.monotonic() - t0
        lat = sorted(count.latencies)
        runs.append(LevelRun(n, sweep.run_id, wall, count.answered, count.errored, count.attempts, count.limited,
                             percentile(lat, 0.95)))
        db_path = sweep.db_path
    k = knee(runs)
    runs = [dataclasses.replace(r, knee=r.level == k) for r in runs]
    with Store(db_path) as store:
        store.write_level_sweep(group, [(r.level, r.run_id, r.wall_s, r.answered, r.errored, r.goodput,
                                         r.limited_share, r.p95_ms, int(r.knee)) for r in runs])
    return group, runs


def fmt_share(x: float) -> str:
    return f"{x:.0%}" if x >= 0.005 or x == 0 else "<1%"


def fmt_ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}"

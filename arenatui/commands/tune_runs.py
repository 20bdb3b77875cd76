"""`arena tune` and `arena sweep`: find each model's optimum with the tuner, or time a matrix at fixed levels.

Both run ordinary stored sweeps (headless, quiet) through `arenatui.session.sweep.Sweep`, so every call they make
is in the results database like any other run's.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from arenatui.kernel.errors import ArenaError
from arenatui.kernel.events import CallFinished, CallRetrying, Event, TunerDecided
from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.plan import Filters
from arenatui.project import load_project
from arenatui.stats.percentiles import percentile
from arenatui.tuning.controller import TunerSettings
from arenatui.tuning.evidence import LevelEvidence, Verdict, verdict
from arenatui.tuning.levels import ModelReadout, provider_answered, readouts_from_rows


@dataclass(frozen=True, slots=True)
class TuneResult:
    run_id: str
    readouts: tuple[ModelReadout, ...]
    """Per model: its levels and its verdict; the recommendation is the verdict's (`ro.verdict.optimum`)."""
    decisions: tuple[str, ...]
    wall_s: float
    budget_spent: bool
    """The budget ran out before every model had a conclusive verdict."""

    @property
    def optima(self) -> dict[str, int]:
        """The measured optima: what `--write` records (a model without one is left alone)."""
        return {ro.model_key: ro.verdict.optimum for ro in self.readouts if ro.verdict.optimum is not None}


class _UntilConclusive:
    """A sink that stops a tuning run once every model's verdict is conclusive (checked every `every` calls: a
    readout sorts latencies), and reports progress as it goes: one line per tuner decision and per verdict that
    changed (`progress`), each with the calls made of the budget."""

    def __init__(self, every: int = 25, progress: Callable[[str], object] | None = None, total: int = 0) -> None:
        self.every = every
        self.n = 0
        self.sweep: Any = None
        self.stopped = False
        self.progress = progress
        self.total = total
        self._said: dict[str, str] = {}

    def _made(self) -> str:
        return f"{self.n} of {self.total} calls" if self.total else f"{self.n} calls"

    def __call__(self, ev: Event) -> None:
        if self.sweep is None or self.stopped:
            return
        if type(ev) is TunerDecided and self.progress is not None and ev.model_key is not None and ev.new:
            self.progress(f"  {self._made()} · {ev.reason}")
            return
        if type(ev) is not CallFinished:
            return
        self.n += 1
        if self.n % self.every:
            return
        readouts = self.sweep.tuner.readouts()
        if self.progress is not None:
            for ro in readouts:
                said = ro.verdict.line(ro.model_key)
                if self._said.get(ro.model_key) != said:
                    self._said[ro.model_key] = said
                    self.progress(f"  {self._made()} · {ro.model_key}: {said}")
        if all(ro.verdict.conclusive for ro in readouts):
            self.stopped = True
            self.sweep.control.cancel()


def tune(project: str | Path, *, models: Sequence[str] = (), budget: int = 400, db: str | Path | None = None,
         seed: int | None = None, settings: TunerSettings | None = None,
         started: Callable[[], object] | None = None, progress: Callable[[str], object] | None = None,
         live: Any = None) -> TuneResult:
    """Spend at most `budget` calls per model (the project's cases, cycled as trials; fewer calls than cases: a
    seeded sample of them) with the tuner on, stopping
    early once every model's verdict is conclusive (an optimum, a cap, a rate limit). `progress` gets one line per
    tuner decision and per verdict that changed; `live`: a terminal's console, to show the same live progress line
    `arena evaluate` has (calls made of the budget, ETA) under those lines."""
    from arenatui.session.sweep import Sweep, SweepOptions

    proj = load_project(project)
    n_cases = len(proj.cases)
    if n_cases == 0:
        raise ArenaError(f"{proj.path}: no cases to tune with")
    # at most `budget` calls per model, its prompt variants included (each variant is a lane of its own calls)
    chosen = [m for m in proj.models if not models or m.key in models]
    variants = max((len(proj.variants_of(m)) for m in chosen), default=0) or 1
    per_lane = max(1, budget // variants)
    # fewer calls than cases: a seeded sample of the cases (a sorted case file's first ones are no fair mix)
    filters = Filters(models=tuple(models), limit=min(per_lane, n_cases), trials=max(1, per_lane // n_cases),
                      sample_seed=proj.run.seed if seed is None else seed)
    until = _UntilConclusive(progress=progress)
    sweep = Sweep(SweepOptions(project=project, filters=filters, db=db, seed=seed, tune=True, started_by="tune"),
                  live_metrics=live is not None, extra_sinks=(until,))
    until.sweep = sweep
    until.total = sweep.plan.total
    if settings is not None:
        sweep.tuner.settings = settings
    if started is not None:  # the project and the models asked for are known good: say what happens next
        started()
    t0 = time.monotonic()
    if live is not None:
        from arenatui.commands.headless import run_headless

        anyio.run(lambda: run_headless(sweep, quiet=False, console=live))
    else:
        anyio.run(sweep.run)
    wall = time.monotonic() - t0
    readouts = tuple(sweep.tuner.readouts())
    return TuneResult(sweep.run_id, readouts, tuple(d.reason for d in sweep.tuner.decisions), wall,
                      not until.stopped and not all(ro.verdict.conclusive for ro in readouts))


def stored_readouts(run_id: str, db: str | Path | None = None) -> tuple[str, list[ModelReadout]]:
    """A stored run's per-level readout (every run keeps one, tuned or not), its verdicts re-derived by today's rules
    from the stored counts: (run id, readouts)."""
    from arenatui.store import Store

    with Store(db, read_only=True) as store:
        rec = store.get_run(run_id)
        rows = store.tuning_levels(rec.run_id)
        declared = {k: limits for k, (_at, limits) in store.declared_limits(rec.run_id).items()}
    return rec.run_id, readouts_from_rows(rows, declared)


@dataclass(frozen=True, slots=True)
class LevelRun:
    level: int
    run_id: str
    wall_s: float
    errored: int
    evidence: LevelEvidence
    """The level's evidence over its whole run (held = the run's wall clock)."""

    @property
    def answered(self) -> int:
        return self.evidence.answered


@dataclass(frozen=True, slots=True)
class LevelSweep:
    group: str
    runs: list[LevelRun]
    verdict: Verdict
    """The one verdict over the levels' evidence (at the top level: still rising, try higher)."""
    notes: list[str]
    """What bounded the levels (per-model caps in the project file)."""

    @property
    def knee(self) -> int | None:
        return self.verdict.level if self.verdict.kind in ("optimum", "rising", "capped") else None


class _Count:
    """A sink counting what a fixed-level sweep did (attempts, 429s, transients, answered latencies)."""

    def __init__(self) -> None:
        self.attempts = self.limited = self.transient = self.answered = self.errored = self.retries = 0
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
                self.transient += r.error_class in ("transient", "timeout")
            else:
                self.answered += 1
                if r.latency_ms is not None:
                    self.latencies.append(r.latency_ms)
        elif type(ev) is CallRetrying:
            self.attempts += 1
            self.retries += 1
            self.limited += ev.reason == "rate_limited"
            self.transient += ev.reason in ("transient", "timeout")

    def evidence(self, level: int, wall_s: float) -> LevelEvidence:
        lat = sorted(self.latencies)
        return LevelEvidence(level, wall_s, self.answered, self.attempts, self.limited, self.transient, self.retries,
                             self.errored, len(lat), percentile(lat, 50), percentile(lat, 95))


def cap_notes(project: str | Path, levels: Sequence[int], models: Sequence[str] = ()) -> list[str]:
    """Per-model caps in the project file that bound the levels: above a cap, that model's calls stay at it."""
    proj = load_project(project)
    top = max(levels)
    return [f"{m.key}: max_concurrency = {m.max_concurrency} in {proj.path} bounds its calls at levels above "
            f"{m.max_concurrency} (remove it to sweep that model past it)"
            for m in proj.models if (not models or m.key in models) and m.max_concurrency is not None
            and m.max_concurrency < top]


def sweep_levels(project: str | Path, levels: Sequence[int], *, models: Sequence[str] = (), limit: int | None = None,
                 trials: int | None = None, db: str | Path | None = None, seed: int | None = None,
                 on_level: Callable[[LevelRun, int], None] | None = None,
                 on_start: Callable[[int, int], None] | None = None) -> LevelSweep:
    """The same matrix at each level, one stored run per level; the verdict over the levels names the knee.
    `on_level(run, i)` is called as each level ends (a progress line)."""
    from arenatui.session.sweep import Sweep, SweepOptions
    from arenatui.store import Store

    bad = [n for n in levels if not 1 <= n <= MAX_CONCURRENCY]
    if not levels or bad:
        raise ArenaError(f"--levels: expected whole numbers from 1 to {MAX_CONCURRENCY}, comma-separated "
                         f"(e.g. 1,2,4,8,16); got {', '.join(map(str, bad)) or 'none'}")
    notes = cap_notes(project, levels, models)
    group = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
    runs: list[LevelRun] = []
    for i, n in enumerate(levels, 1):
        if on_start is not None:  # a level can take minutes: say it started
            on_start(n, i)
        count = _Count()
        sweep = Sweep(SweepOptions(project=project, filters=Filters(models=tuple(models), limit=limit, trials=trials),
                                   db=db, concurrency=n, seed=seed, started_by="sweep"), extra_sinks=(count,),
                      live_metrics=False)
        t0 = time.monotonic()
        anyio.run(sweep.run)
        wall = time.monotonic() - t0
        runs.append(LevelRun(n, sweep.run_id, wall, count.errored, count.evidence(n, wall)))
        if on_level is not None:
            on_level(runs[-1], i)
        db_path = sweep.db_path
    res = LevelSweep(group, runs, verdict([r.evidence for r in runs]), notes)
    with Store(db_path) as store:
        store.write_level_sweep(group, [(r.level, r.run_id, r.wall_s, r.answered, r.errored, r.evidence.goodput or 0.0,
                                         r.evidence.limited_share or 0.0, r.evidence.p95_ms, int(r.level == res.knee))
                                        for r in runs])
    return res

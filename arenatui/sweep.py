"""One sweep from start to end, for any view: plan it, record the run, wire engine → sinks, finish the record.

The headless CLI and the console both drive a `Sweep`; neither talks to the store or the providers
directly while it runs.
"""

from __future__ import annotations

import dataclasses
import gc
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from arenatui.config import Project, load_project, project_from_dict, project_to_dict
from arenatui.engine.client_load import CpuSampler
from arenatui.engine.events import Event, RunStatus
from arenatui.engine.runner import Runner, Sink
from arenatui.errors import ArenaError
from arenatui.live import LiveMetrics
from arenatui.plan import Filters, Plan, make_plan
from arenatui.providers.base import Provider, make_provider
from arenatui.store import ResultWriter, Store, default_db_path


@dataclass(frozen=True, slots=True)
class SweepOptions:
    project: str | Path | None = None
    filters: Filters = field(default_factory=Filters)
    db: str | Path | None = None
    resume: str | None = None
    """A run id, or 'last'."""
    concurrency: int | None = None
    seed: int | None = None
    tune: bool = False
    """Start with the auto-tuner on (arenatui.tuning)."""


def _with_seed(project: Project, seed: int | None) -> Project:
    if seed is None:
        return project
    return dataclasses.replace(project, run=dataclasses.replace(project.run, seed=seed))


class Sweep:
    """Prepared in the constructor (errors surface before anything starts); `await run()` runs it."""

    def __init__(self, opts: SweepOptions, *, extra_sinks: Sequence[Sink] = (), live_metrics: bool = True) -> None:
        self.db_path = Path(opts.db) if opts.db is not None else default_db_path()
        fresh: Plan | None = None
        if opts.resume is None:
            # Validate the project before the database is touched: bad input leaves nothing behind.
            if opts.project is None:
                raise ArenaError("no project: pass --project FILE (or a directory holding arena.toml), or "
                                 "--resume RUN_ID|last")
            fresh = make_plan(_with_seed(load_project(opts.project), opts.seed), opts.filters)
        store = Store(self.db_path)
        try:
            stored: list[tuple[str, str, int, str, float | None]] = []
            if fresh is None:
                assert opts.resume is not None
                rec = store.get_run(opts.resume)
                project = project_from_dict(rec.config, Path(rec.project_path or f"run {rec.run_id}"))
                self.filters = Filters.from_dict(rec.filters)
                self.run_id = rec.run_id
                self.plan = make_plan(project, self.filters, store.done_keys(rec.run_id))
                stored = [(r[0], r[1], r[2], r[3], r[4]) for r in store.results(
                    rec.run_id, ("model_key", "case_id", "trial", "status", "score", "error_class"))
                    if r[5] != "cancelled"]
                self.resumed = True
            else:
                self.filters = opts.filters
                self.plan = fresh
                self.resumed = False
            self.project = self.plan.project
            plan: Plan = self.plan
            concurrency = opts.concurrency or self.project.run.concurrency
            # Providers first: a missing API key variable must fail before any run is recorded.
            self.providers: dict[str, Provider] = {
                m.key: make_provider(m, self.project.run, concurrency_hint=concurrency) for m in plan.models}
            if self.resumed:
                store.mark_run(self.run_id, "running")
            else:
                self.run_id = store.create_run(self.project.name, str(self.project.path), project_to_dict(self.project),
                                               self.filters.to_dict(), self.plan.total)
        finally:
            store.close()
        self.live = LiveMetrics([m.key for m in plan.models], [c.id for c in plan.cases], plan.trials)
        self.live.preload(stored)
        self.writer = ResultWriter(self.db_path, self.run_id)
        # Nobody reads live metrics in a quiet headless run; folding them costs ~10 us a call at zero latency.
        watched = (self.live.on_event,) if live_metrics else ()
        from arenatui.tuning.controller import Tuner

        self.tune_at_start = opts.tune
        # Last sink: its decisions emit events of their own, which every other sink must see after this one.
        self.tuner = Tuner([m.key for m in plan.models], set_level=self._set_level, set_total=self._set_total,
                           emit=self._emit, caps=lambda k: self.runner.model_cap(k),
                           user_caps={m.key: m.max_concurrency for m in plan.models})
        """Per-level readout (always) and the auto-tuner (when on); `a` in the console toggles it."""
        sinks = (self.writer.on_event, *watched, *extra_sinks, self.tuner.on_event)
        self.runner = Runner(plan, self.providers, sinks=sinks, concurrency=concurrency)
        self.cpu = CpuSampler(self.runner.emit)
        """The client's own CPU load beside the engine: stored with the run, shown live, warned about."""
        self.status: RunStatus | None = None

    def _set_level(self, key: str, n: int) -> None:
        self.runner.set_model_cap(key, n, source="tuner")

    def _set_total(self, n: int) -> None:
        self.runner.set_concurrency(n, source="tuner")

    def _emit(self, ev: Event) -> None:
        self.runner.emit(ev)

    def toggle_tuner(self) -> bool:
        """Switch the auto-tuner on (each model from its cap, or the calls it has in flight) or off."""
        starts = {}
        for m in self.live.models:
            cap = self.runner.model_cap(m.key)
            starts[m.key] = cap or max(1, m.in_flight or self.runner.target // max(1, len(self.live.models)))
        return self.tuner.toggle(starts)

    def resume_in(self, command: str) -> str:
        """The command line that continues this run with `arena COMMAND` ('evaluate' or 'run')."""
        db = f" --db {shlex.quote(str(self.db_path))}" if self.db_path != default_db_path() else ""
        return f"arena {command} --resume {self.run_id}{db}"

    @property
    def resume_command(self) -> str:
        return self.resume_in("evaluate")

    async def run(self) -> RunStatus:
        """Run to the end, cancellation, or failure; the run record says which and every finished call is stored."""
        status: RunStatus = "failed"
        message: str | None = None
        # A full collection scans every live object, the imported HTTP stack included (~20 ms measured), and
        # that pause lands inside every call in flight. Objects alive now live for the whole run: leave them
        # out of the collector's scans (until the run ends), so collections see only what the run allocates.
        # Providers create their sessions first (HTTP: the aiohttp import, the TLS context), so those are frozen too.
        for p in self.providers.values():
            prepare = getattr(p, "prepare", None)
            if prepare is not None:
                try:
                    prepare()
                except Exception:  # the same error reaches each call, which records it per call
                    pass
        gc.collect()
        gc.freeze()
        if self.tune_at_start and not self.tuner.enabled:
            n = max(1, len(self.plan.models))
            # from the model's share of the global level (at least 2: one more look than a serial server needs)
            self.tuner.enable({m.key: self.runner.model_cap(m.key) or max(2, self.runner.target // n)
                               for m in self.plan.models})
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.writer.run)
                tg.start_soon(self.cpu.run)
                try:
                    status = await self.runner.run()
                finally:
                    self.cpu.stop()  # before the writer stops, so the last sample is stored
                    self.writer.stop()
        except BaseException as e:
            status = "cancelled" if isinstance(e, (anyio.get_cancelled_exc_class(), KeyboardInterrupt)) \
                or self.runner.cancelled else "failed"
            message = None if status == "cancelled" else f"{type(e).__name__}: {e}"
            raise
        finally:
            gc.unfreeze()
            self.status = status
            with anyio.CancelScope(shield=True):
                for p in self.providers.values():
                    try:
                        await p.aclose()
                    except Exception:
                        pass
            self.writer.close()
            from arenatui.tuning.levels import readout_rows

            with Store(self.db_path) as store:
                store.write_tuning_levels(self.run_id, readout_rows(
                    {r.model_key: r for r in self.tuner.tracker.readouts()}))
                store.mark_run(self.run_id, status, message)
        return status

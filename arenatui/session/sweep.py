"""One sweep from start to end, for any view: plan it, record the run, wire engine → sinks, finish the record.

The headless CLI and the console both drive a `Sweep`; neither talks to the store or the providers
directly while it runs.
"""

from __future__ import annotations

import dataclasses
import gc
import shlex
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from arenatui.config import Project
from arenatui.engine.client_load import CpuSampler
from arenatui.engine.control import SweepControl
from arenatui.engine.runner import Runner, Sink, bucket_level
from arenatui.kernel.errors import ArenaError, ConfigError, StoreError, unwrap
from arenatui.kernel.events import VARIANT_SEP, Event, RunStatus
from arenatui.plan import Filters, Plan, make_plan
from arenatui.project import load_project, project_to_dict
from arenatui.providers.base import Provider, estimate_tokens, prepared
from arenatui.providers.registry import make_provider
from arenatui.session.live import LiveMetrics, judge_lanes
from arenatui.session.resume import ResumeState, read_resume
from arenatui.store import ResultWriter, Store, default_db_path
from arenatui.store.db import sql_errors_explained
from arenatui.store.live_state import LaneLive, end_live_state
from arenatui.store.run_shards import finish_shard, record_shard

if TYPE_CHECKING:
    from arenatui.scoring.code_exec import SandboxReport


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals a view turns into a clean stop: Ctrl-C, and SIGTERM and SIGHUP (`timeout`, CI cancellation,
    `docker stop`, a closed terminal), except those ignored when arena started (`nohup` ignores SIGHUP)."""
    out = [signal.SIGINT]
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
            out.append(sig)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class SweepOptions:
    project: str | Path | Project | None = None
    """A project file (or directory holding arena.toml), or a Project already validated (arenatui.api)."""
    filters: Filters = field(default_factory=Filters)
    db: str | Path | None = None
    resume: str | None = None
    """A run id, or 'last'."""
    concurrency: int | None = None
    seed: int | None = None
    retry_errored: bool = False
    """With resume: run again the calls that ended errored (rate-limited, timed out ...), not only cancelled ones."""
    tune: bool = False
    """Start with the auto-tuner on (arenatui.tuning)."""
    solvers: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Python models' solver factories given from Python, by model key (arenatui.api): a resumed run gets them back
    from here, since a function is stored only by its name."""
    run_id: str | None = None
    """`--run-id`: record the run under this id (the shards of a run share it, see `arena merge`)."""
    started_by: str | None = None
    """The command that started the run, in its own word (run, evaluate, demo, bench, tune): stored with a new run
    for `arena runs`' kind column."""


def _with_seed(project: Project, seed: int | None) -> Project:
    if seed is None:
        return project
    return dataclasses.replace(project, run=dataclasses.replace(project.run, seed=seed))


def _project_of(opts: SweepOptions) -> Project:
    if opts.project is None:
        raise ArenaError("no project: pass --project FILE (or a directory holding arena.toml), or "
                         "--resume RUN_ID|last")
    return opts.project if isinstance(opts.project, Project) else load_project(opts.project)


def _checked_sandbox(project: Project) -> SandboxReport | None:
    """What guards model-written code when a code_exec scorer runs it (None: no such scorer); refused, before
    anything is recorded, when weaker than the project allows."""
    if not any(s.kind == "code_exec" for s in project.scorers):
        return None
    from arenatui.scoring.code_exec import sandbox_report

    sandbox = sandbox_report()
    if not sandbox.strong and not project.run.allow_weak_sandbox:  # never weaker without saying
        raise ConfigError(str(project.path), "run.allow_weak_sandbox", sandbox.refusal())
    return sandbox


def _providers(plan: Plan, concurrency: int) -> dict[str, Provider]:
    """One provider per lane's model: the candidates, the judges and the escalation targets. A simulated model's
    prompt variants share its limits, as a real provider's do."""
    project = plan.project
    out = {m.key: make_provider(m, project.run, concurrency_hint=concurrency, project=project)
           for m in (*plan.models, *(j.model for j in plan.judges if j.model not in plan.models),
                     *(t for t in plan.escalations.values() if all(t.key != m.key for m in plan.models)))}
    first: dict[str, Provider] = {}
    for key, provider in out.items():
        share = getattr(provider, "share_limits", None)  # a simulated model's (no import of it for the others)
        if share is not None:
            lead = first.setdefault(key.partition(VARIANT_SEP)[0], provider)
            if lead is not provider and type(lead) is type(provider):
                share(lead)
    return out


class Sweep:
    """Prepared in the constructor (errors surface before anything starts); `await run()` runs it."""

    def __init__(self, opts: SweepOptions, *, extra_sinks: Sequence[Sink] = (), live_metrics: bool = True) -> None:
        self.db_path = Path(opts.db) if opts.db is not None else default_db_path()
        self.notices: list[str] = []
        """Things the person should know before the run starts (the project file changed since, ...)."""
        self.stopped_by: int | None = None
        """The signal (SIGINT, SIGTERM, SIGHUP) that stopped the run, set by the view that caught it."""
        self.error: ArenaError | None = None
        """Why the run failed, when it was the store's fault (disk full, a corrupt file): said to the person."""
        self.status: RunStatus | None = None
        self.tune_at_start = opts.tune
        # Validate the project before the database is touched: bad input leaves nothing behind.
        fresh = None if opts.resume is not None else make_plan(_with_seed(_project_of(opts), opts.seed), opts.filters)
        with Store(self.db_path) as store:
            state = None if fresh is not None else read_resume(
                store, str(opts.resume), retry_errored=opts.retry_errored, prompts=opts.filters.prompts,
                solvers=opts.solvers)
            self.resumed = state is not None
            self.plan: Plan = state.plan if state is not None else cast(Plan, fresh)
            self.filters = state.filters if state is not None else opts.filters
            self.run_id = state.run_id if state is not None else ""
            self.project = self.plan.project
            self.notices += state.notices if state is not None else ()
            sandbox = _checked_sandbox(self.project)
            if sandbox is not None:
                self.notices.append(sandbox.describe())  # which guards model-written code runs under
            concurrency = opts.concurrency or self.project.run.concurrency
            # Providers first: a missing API key variable must fail before any run is recorded.
            self.providers: dict[str, Provider] = _providers(self.plan, concurrency)
            self._record_run(store, opts.run_id, opts.started_by, sandbox)
        self._wire(opts, extra_sinks, live_metrics, concurrency, state)

    def _record_run(self, store: Store, run_id: str | None, started_by: str | None,
                    sandbox: SandboxReport | None) -> None:
        """A new run recorded (its shard too), or a resumed one claimed; the sandbox stored with it; the run id
        given to each python solver (its TrialContext carries it)."""
        if self.resumed:
            store.claim_run(self.run_id, self.resume_command)
        else:
            self.run_id = store.create_run(self.project.name, str(self.project.path), project_to_dict(self.project),
                                           self.filters.to_dict(), self.plan.total, run_id=run_id,
                                           started_by=started_by)
            if self.filters.shard is not None:
                record_shard(store, self.run_id, self.filters.shard.index, self.filters.shard.count)
        if sandbox is not None:  # stored with the run: the report, results view and bake-off page show it
            store.set_sandbox(self.run_id, sandbox.describe(), sandbox.strong)
        for p in self.providers.values():
            bind = getattr(p, "bind_run", None)
            if bind is not None:
                bind(self.run_id)

    def _wire(self, opts: SweepOptions, extra_sinks: Sequence[Sink], live_metrics: bool, concurrency: int,
              resumed: ResumeState | None) -> None:
        """Engine → sinks: live metrics (from the stored figures on a resume), the store's writer, the tuner, the
        runner (its rate limiters where the earlier session left them) and the client's CPU sampler."""
        plan = self.plan
        self.live = LiveMetrics([m.key for m in plan.models], [c.id for c in plan.cases], plan.trials,
                                judges=judge_lanes(plan), cells=plan.shard_cells() if plan.shard is not None else None)
        if resumed is not None:
            self.live.preload(resumed.live_rows, elapsed_s=resumed.elapsed_s)
        self.live.rate_limits = client_rate_limits(plan, self.project.defaults.max_tokens)
        self.writer = ResultWriter(self.db_path, self.run_id, retry_errored=opts.retry_errored)
        # Nobody reads live metrics in a quiet headless run; folding them costs ~10 us a call at zero latency.
        watched = (self.live.on_event,) if live_metrics else ()
        from arenatui.tuning.controller import Tuner

        # Last sink: its decisions emit events of their own, which every other sink must see after this one.
        self.tuner = Tuner([m.key for m in plan.models], set_level=self._set_level, set_total=self._set_total,
                           emit=self._emit, caps=lambda k: self.runner.model_cap(k),
                           user_caps={m.key: m.max_concurrency for m in plan.models})
        """Per-level readout (always) and the auto-tuner (when on); `a` in the console toggles it."""
        sinks = (self.writer.on_event, *watched, *extra_sinks, self.tuner.sink)
        self._hear_starts = (*watched, *extra_sinks)
        """The sinks that hear each CallStarted: not the store's, and the tuner's only while it is on (the level
        tracker reads the engine's counts of calls in flight instead)."""
        self.runner = Runner(plan, self.providers, sinks=sinks, started_sinks=self._hear_starts,
                             concurrency=concurrency)
        self.tuner.tracker.read_counts(self.runner.lanes)
        if resumed is not None and resumed.recent:  # the client's rpm/tpm limiters go on where they were left
            self.runner.seed_rate_limits(limit_levels(plan, resumed.recent, time.time(),
                                                      self.project.defaults.max_tokens))
        from arenatui.engine.live_channel import LiveChannel

        self.channel = LiveChannel(self.db_path, self.run_id, self.writer, self.runner, lanes=self._lanes_live,
                                   shard=None if plan.shard is None else str(plan.shard), tuner=self.tuner,
                                   toggle_tuner=self.toggle_tuner)
        """The run's live state for `arena watch`, and control requests from other processes (arena control)."""
        self.cpu = CpuSampler(self.runner.emit)
        """The client's own CPU load beside the engine: stored with the run, shown live, warned about."""

    @property
    def control(self) -> SweepControl:
        """What a view may steer and read of the running sweep: the narrow surface, never the runner itself."""
        return self.runner

    def _lanes_live(self) -> dict[str, LaneLive]:
        return {k: LaneLive(lane.in_flight, len(lane.parked), lane.cap) for k, lane in self.runner.lanes.items()}

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
        on = self.tuner.toggle(starts, self._calls_left())
        self._route_starts()
        return on

    def _route_starts(self) -> None:
        """The auto-tuner, while on, hears each CallStarted (it counts answers by the level their call was sent at)."""
        self.runner.started_sinks = (*self._hear_starts, self.tuner.sink) if self.tuner.enabled else self._hear_starts

    def _calls_left(self) -> dict[str, int]:
        """Each model's calls still to make (stored ones and this session's finished ones left out): the tuner tries
        no level they cannot fill."""
        return {m.key: max(0, m.planned - m.done) for m in self.live.models}

    def resume_in(self, command: str) -> str:
        """The command line that continues this run with `arena COMMAND` ('evaluate' or 'run')."""
        db = f" --db {shlex.quote(str(self.db_path))}" if self.db_path != default_db_path() else ""
        return f"arena {command} --resume {self.run_id}{db}"

    def store_warnings(self) -> list[str]:
        """What the results writer had to repair or leave out, in words (empty when every row went in as sent)."""
        out = []
        for line in self.writer.problems:
            kind, _, text = line.partition(" ")
            if kind == "sink-repaired":
                out.append(f"{text} in {self.db_path}")
            elif kind == "sink-dropped":
                out.append(f"{text} in {self.db_path}; their calls run again on resume")
        return out

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
        for p in self.providers.values():  # each awaited before the first call (a local server's template probe)
            await prepared(p)
        gc.freeze()  # no collection first: it cost ~25 ms before the first request, to free little; what the imports
        # left behind is collected after the run's gc.unfreeze()
        if self.tune_at_start and not self.tuner.enabled:
            n = max(1, len(self.plan.models))
            # from the model's share of the global level (at least 2: one more look than a serial server needs)
            self.tuner.enable({m.key: self.runner.model_cap(m.key) or max(2, self.runner.target // n)
                               for m in self.plan.models}, self._calls_left())
            self._route_starts()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.writer.run)
                tg.start_soon(self.cpu.run)
                tg.start_soon(self.channel.run)
                try:
                    status = await self.runner.run()
                finally:
                    self.channel.stop()
                    self.cpu.stop()  # before the writer stops, so the last sample is stored
                    self.writer.stop()
        except BaseException as e:
            leaf = unwrap(e)
            status = "cancelled" if isinstance(leaf, (anyio.get_cancelled_exc_class(), KeyboardInterrupt)) \
                or (self.runner.cancelled and not isinstance(leaf, ArenaError)) else "failed"
            message = None if status == "cancelled" else f"{type(leaf).__name__}: {leaf}"
            if isinstance(leaf, ArenaError):
                self.error = leaf
                raise leaf from None  # one paragraph for the person, not an ExceptionGroup
            raise
        finally:
            gc.unfreeze()
            with anyio.CancelScope(shield=True):
                for p in self.providers.values():
                    try:
                        await p.aclose()
                    except Exception:
                        pass
            # Whatever happens while closing, the run's end is recorded: never left 'running'.
            try:
                self.writer.close()
            except StoreError as e:
                if self.error is None:
                    self.error = e
                    status, message = "failed", str(e)
            self.status = status
            self._record_end(status, message)
        if self.error is not None:
            raise self.error
        return status

    def _record_end(self, status: RunStatus, message: str | None) -> None:
        try:
            from arenatui.tuning.levels import readout_rows

            with sql_errors_explained(self.db_path), Store(self.db_path) as store:
                store.mark_run(self.run_id, status, message)  # first: the run's end matters most
                end_live_state(store.conn, self.run_id, status)  # a watcher says how it ended at once
                if self.filters.shard is not None:
                    finish_shard(store, self.run_id, status, (None, None, None))
                store.write_tuning_levels(self.run_id, readout_rows(
                    {r.model_key: r for r in self.tuner.readouts()}, self.tuner.caps()))
        except StoreError as e:
            # The process exits next, so `arena runs` shows the run interrupted all the same; say why here.
            if self.error is None:
                self.error = e


def client_rate_limits(plan: Plan, default_max_tokens: int) -> dict[str, float]:
    """Per model with an rpm or tpm, the most calls/s they allow: rpm/60, and tpm/60 over what the runner takes
    from the tpm bucket per call (its prompt's estimated tokens plus max_tokens, averaged over the cases)."""
    out: dict[str, float] = {}
    prompts = [estimate_tokens(c.prompt_text()) for c in plan.cases] or [1]
    for m in plan.models:
        limits = []
        if m.rpm:
            limits.append(m.rpm / 60.0)
        if m.tpm:
            per_call = sum(prompts) / len(prompts) + (m.max_tokens or default_max_tokens)
            limits.append(m.tpm / 60.0 / min(per_call, m.tpm))
        if limits:
            out[m.key] = min(limits)
    return out


def limit_levels(plan: Plan, recent: Sequence[tuple[str, str, float]], now: float,
                 default_max_tokens: int) -> dict[str, tuple[float, float]]:
    """Per model with an rpm or tpm, the (rpm, tpm) capacity its recent attempts still hold (`bucket_level`): each
    attempt took one request and, from tpm, what the runner takes (the prompt's estimated tokens + max_tokens)."""
    models = {m.key: m for m in (*plan.models, *(j.model for j in plan.judges))}
    prompts = {c.id: estimate_tokens(c.prompt_text()) for c in plan.cases}
    out: dict[str, tuple[float, float]] = {}
    for key, m in models.items():
        if not (m.rpm or m.tpm):
            continue
        mine = [(t, c) for k, c, t in recent if k == key]
        rpm = bucket_level(((t, 1.0) for t, _ in mine), now, m.rpm / 60.0) if m.rpm else 0.0
        need = m.max_tokens or default_max_tokens
        tpm = bucket_level(((t, float(min(prompts.get(c, 1) + need, m.tpm))) for t, c in mine), now,
                           m.tpm / 60.0) if m.tpm else 0.0
        if rpm or tpm:
            out[key] = (rpm, tpm)
    return out

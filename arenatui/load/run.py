"""One load run from start to end, for any view: validate, record the run, wire driver -> store and samples.

The headless command and the console both drive a `LoadRun`; neither talks to the store or providers.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import math
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from arenatui.config.schema import ModelConfig, Project
from arenatui.engine.client_load import CpuSampler, OverloadTracker
from arenatui.kernel.errors import ArenaError, ConfigError, unwrap
from arenatui.kernel.events import ClientLoadSampled, RunStatus
from arenatui.load.arrivals import Arrival
from arenatui.load.driver import LoadPlan, OpenLoopDriver, SegmentStarted
from arenatui.load.live import WINDOW_S, LoadSnapshot, snapshot
from arenatui.load.metrics import LoadOutcome as LoadOutcome  # re-exported: it lives with the figures now
from arenatui.load.metrics import LoadRequest, Samples, Slo, Window, compute, mark_saturation, per_segment
from arenatui.load.store import request_row, segment_row
from arenatui.plan import Shard
from arenatui.project import load_project, project_to_dict
from arenatui.providers.base import Provider, prepared
from arenatui.providers.registry import make_provider
from arenatui.store import ResultWriter, Store, default_db_path
from arenatui.store.live_state import ControlRequest, end_live_state
from arenatui.store.load_queries import INSERT_LOAD_REQUEST, UPSERT_LOAD_SEGMENT, mark_load_run
from arenatui.store.run_shards import finish_shard, record_shard

RATE_LIMIT_WINDOW_S = 60.0
"""An rpm limit (and every hosted API's) is metered per minute: a shorter segment never exhausts it."""


@dataclass(frozen=True, slots=True)
class LoadOptions:
    project: str | Path
    rates: tuple[float, ...]
    duration_s: float
    arrival: Arrival = field(default_factory=Arrival)
    model: str | None = None
    max_in_flight: int | None = None
    warmup_s: float = 0.0
    slo: Slo | None = None
    processes: int = 1
    db: str | Path | None = None
    seed: int | None = None
    shard: Shard | None = None
    """`--shard K/N`: this machine sends the requests whose schedule index is K modulo N (rates stay the total)."""
    run_id: str | None = None
    """`--run-id`: every shard of a run records the same id, so `arena merge` can join them."""
    start_at: float | None = None
    """The start barrier (epoch seconds): the schedule's zero on every machine."""

    def to_dict(self) -> dict[str, Any]:
        """What the run record keeps of the options (filters_json): enough to read the run back."""
        slo = None if self.slo is None else dataclasses.asdict(self.slo)
        out = {"kind": "load", "model": self.model, "rates": list(self.rates), "duration_s": self.duration_s,
               "arrival": self.arrival.describe(), "max_in_flight": self.max_in_flight,
               "warmup_s": self.warmup_s, "slo": slo, "processes": self.processes}
        if self.shard is not None:
            out["shard"] = [self.shard.index, self.shard.count]
        if self.start_at is not None:
            out["start_at"] = self.start_at
        return out


class LoadEngine(Protocol):
    """What a view steers: the in-process driver, or the shards of `--processes N`."""

    rate: float
    windows: list[Window]
    t0: float | None
    """The schedule's zero on the monotonic clock: set before `run` (a start barrier), else when it starts."""

    @property
    def in_flight(self) -> int: ...

    @property
    def sent(self) -> int: ...

    def now_s(self) -> float: ...

    def change_rate(self, rate: float, at_s: float | None = None) -> None: ...

    def cancel(self) -> None: ...

    async def run(self) -> None: ...


def pick_model(project: Project, key: str | None) -> ModelConfig:
    keys = [m.key for m in project.models]
    if key is None:
        if len(keys) == 1:
            return project.models[0]
        raise ConfigError(str(project.path), "models", f"--model KEY naming one of {', '.join(keys)} (a load run "
                                                      "offers load to one model)")
    for m in project.models:
        if m.key == key:
            return m
    raise ConfigError(str(project.path), "models", f"--model {key!r}: no such model key; expected one of "
                                                  f"{', '.join(keys)}")


def rate_limit_warning(model: ModelConfig, segment_s: float) -> str | None:
    """A segment shorter than the provider's rate-limit window measures a provider that never ran out: said where a
    limit is declared (the model's or the simulation's rpm/tpm) or exists (a hosted API; a server on this machine or
    a private network has none unless declared)."""
    from arenatui.providers.openai import local_server

    metered = model.rpm or model.tpm or model.sim.rpm or (model.provider != "sim" and not local_server(model.base_url))
    if not metered or segment_s >= RATE_LIMIT_WINDOW_S:
        return None
    return (f"each segment lasts {segment_s:g} s, shorter than the provider's {RATE_LIMIT_WINDOW_S:.0f} s rate-limit "
            "window (an rpm limit): a run that never exhausts its allowance measures nothing; use --duration 60 or "
            "more (a production test: 15 minutes at the expected peak rate)")


class LoadRun:
    """Prepared in the constructor (bad input fails before anything is recorded); `await run()` runs it."""

    def __init__(self, opts: LoadOptions) -> None:
        self.opts = opts
        project = load_project(opts.project)
        if opts.seed is not None:
            project = dataclasses.replace(project, run=dataclasses.replace(project.run, seed=opts.seed))
        self.project = project
        self.model = pick_model(project, opts.model)
        if opts.arrival.kind == "trace":
            known = {c.id for c in project.cases}
            # a streamed trace: its first rows now (a later unknown id cycles through the cases, as one naming none)
            head = itertools.islice(opts.arrival.rows(), 1000) if opts.arrival.trace_file else opts.arrival.trace
            unknown = sorted({r.case_id for r in head if r.case_id and r.case_id not in known})
            if unknown:
                raise ConfigError(opts.arrival.source or "--arrival trace", "case",
                                  f"expected the id of a case in {project.path}; unknown: {', '.join(unknown[:5])}")
        if opts.warmup_s >= opts.duration_s and opts.arrival.kind != "trace":
            raise ArenaError(f"--warmup {opts.warmup_s:g}s leaves nothing of each {opts.duration_s:g}s segment to "
                             "measure; make it shorter than --duration")
        self.plan = LoadPlan(self.model, project.cases, project.defaults, opts.arrival, opts.rates, opts.duration_s,
                             opts.warmup_s, opts.max_in_flight, project.run.timeout_s, project.run.seed)
        self.db_path = Path(opts.db) if opts.db is not None else default_db_path()
        hint = opts.max_in_flight or 64
        # Built here even when shards build their own: a missing API key fails before a run is recorded.
        self.provider: Provider = make_provider(self.model, project.run, concurrency_hint=hint, project=project)
        with Store(self.db_path) as store:
            self.run_id = store.create_run(project.name, str(project.path), project_to_dict(project), opts.to_dict(),
                                           self.plan.planned_requests(), run_id=opts.run_id)
            mark_load_run(store, self.run_id)
            if opts.shard is not None:
                record_shard(store, self.run_id, opts.shard.index, opts.shard.count, opts.start_at)
        self.samples = Samples()
        self.writer = ResultWriter(self.db_path, self.run_id)
        self.overload = OverloadTracker()
        self.client_cpu: float | None = None
        self.cpu = CpuSampler(self._on_cpu)
        self.engine: LoadEngine
        if opts.processes > 1:
            from arenatui.load.processes import ShardSet

            # Each shard's samples go to its own tracker in the ShardSet (interleaved, no streak means anything).
            self.engine = ShardSet(self.plan, project, opts.processes, on_request=self.on_request,
                                   on_segment=self.on_segment, on_cpu=self.writer.on_event, machine=opts.shard)
        else:
            shard = opts.shard or Shard(0, 1)
            self.engine = OpenLoopDriver(self.plan, self.provider, on_request=self.on_request,
                                         on_segment=self.on_segment, shard=shard.index, shards=shard.count)
        self.status: RunStatus | None = None
        self._sent_history: deque[tuple[float, int]] = deque()
        """(seconds, requests sent) at each snapshot over the last window: the live sent rate."""
        self._snapshot_lock = threading.Lock()
        """The console samples from a worker thread, the live state from the event loop."""
        from arenatui.engine.live_channel import LiveChannel

        self.channel = LiveChannel(self.db_path, self.run_id, self.writer, None, lanes=dict, kind="load",
                                   shard=None if opts.shard is None else str(opts.shard),
                                   extra=lambda: {"load": dataclasses.asdict(self.snapshot())},
                                   apply_other=self._apply_request)
        """The run's live state for `arena watch` (the load screen's figures), and rate requests (arena control)."""

    # ---- sinks -----------------------------------------------------------------------------------

    def on_request(self, r: LoadRequest) -> None:
        self.samples.add(r)
        self.writer.on_rows(INSERT_LOAD_REQUEST, [request_row(self.run_id, r)])

    def on_segment(self, s: SegmentStarted) -> None:
        self.writer.on_rows(UPSERT_LOAD_SEGMENT, [segment_row(self.run_id, s.window, s.source)])

    def _on_cpu(self, ev: ClientLoadSampled) -> None:
        self.client_cpu = ev.cpu
        self.overload.add(ev.cpu, ev.interval_s)
        self.writer.on_event(ev)

    # ---- steering and reading --------------------------------------------------------------------

    def change_rate(self, rate: float) -> None:
        self.engine.change_rate(rate)

    def _apply_request(self, req: ControlRequest) -> tuple[str, str | None]:
        """A request from another process (arena watch's + and -, arena control --rate): only the rate applies."""
        from arenatui.kernel.limits import MAX_RPM

        if req.action != "rate":
            return "refused", f"a load run has no {req.action} to change: ask for its offered rate (--rate R)"
        if req.value is None or not 0 < req.value <= MAX_RPM / 60.0:
            return "refused", f"an offered rate must be above 0 and at most {MAX_RPM / 60.0:g} req/s"
        try:
            self.change_rate(req.value)
        except ValueError as e:  # a trace's times are fixed
            return "refused", str(e)
        return "applied", f"offered rate {req.value:g} req/s"

    def cancel(self) -> None:
        self.engine.cancel()

    def snapshot(self) -> LoadSnapshot:
        """Live figures (the views sample a few times a second, the live state once a second)."""
        with self._snapshot_lock:
            return self._snapshot()

    def _snapshot(self) -> LoadSnapshot:
        e = self.engine
        now, sent = e.now_s(), e.sent
        hist = self._sent_history
        hist.append((now, sent))
        while len(hist) > 2 and hist[1][0] <= now - WINDOW_S:
            hist.popleft()
        t_then, sent_then = hist[0]
        sent_rate = (sent - sent_then) / (now - t_then) if now > t_then else 0.0
        return snapshot(self.samples, now_s=now, total_s=self.plan.total_s if self.plan.arrival.kind != "trace"
                        else self.plan.arrival.trace_duration_s, segment=e.windows[-1].segment if e.windows else 0,
                        target_rate=e.rate, in_flight=e.in_flight, sent_rate=sent_rate, client_cpu=self.client_cpu,
                        rate_held_s=now - e.windows[-1].start_s if e.windows else None)

    def figures(self) -> LoadOutcome:
        windows = list(self.engine.windows)
        run = compute(self.samples, windows, self.opts.slo)
        segs = per_segment(self.samples, windows, self.opts.slo)
        sat = mark_saturation(segs) if len(segs) > 1 else None
        warnings = list(run.warnings)
        segment_s = self.plan.arrival.trace_duration_s if self.plan.arrival.kind == "trace" else self.opts.duration_s
        w = rate_limit_warning(self.model, segment_s)
        if w:
            warnings.append(w)
        busiest = max([self.overload, *getattr(self.engine, "overload", [])], key=lambda t: t.overload_s)
        if busiest.overload_s > 0:
            warnings.append(f"the client's CPU was above 80% of a core for {busiest.overload_s:.0f} s (peak "
                            f"{busiest.peak:.0%}): the client was part of the latencies it recorded; try "
                            "--processes 2 or a lower rate")
        if run.requests and run.outcomes.get("timeout", 0):
            warnings.append(f"{run.share('timeout'):.1%} of requests timed out after {self.plan.timeout_s:g} s: "
                            "their latency is not in the percentiles (see the timeout column)")
        return LoadOutcome(self.status or "failed", run, segs, sat, warnings)

    async def run(self) -> RunStatus:
        status: RunStatus = "failed"
        message: str | None = None
        if self.opts.processes == 1:  # before the schedule's zero: no request waits for it
            await prepared(self.provider)
        gc.collect()
        gc.freeze()  # as in a sweep: collections scan only what the run allocates
        if self.opts.start_at is not None:  # the barrier: every machine's schedule has its zero at that instant
            from arenatui.load.barrier import monotonic_at

            self.engine.t0 = monotonic_at(self.opts.start_at)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.writer.run)
                tg.start_soon(self.cpu.run)
                tg.start_soon(self.channel.run)
                try:
                    await self.engine.run()
                    status = "cancelled" if getattr(self.engine, "cancelled", False) else "finished"
                finally:
                    self.channel.stop()
                    self.cpu.stop()
                    self.writer.stop()
        except BaseException as e:
            status = "cancelled" if isinstance(e, (anyio.get_cancelled_exc_class(), KeyboardInterrupt)) \
                or getattr(self.engine, "cancelled", False) else "failed"
            # the paragraph the person sees (cli renders the error inside a task group's ExceptionGroup), not the
            # group's own "unhandled errors in a TaskGroup"
            shown = unwrap(e)
            message = None if status == "cancelled" else \
                str(shown) if isinstance(shown, ArenaError) else f"{type(shown).__name__}: {shown}"
            if status == "failed":
                raise
        finally:
            gc.unfreeze()
            self.status = status
            with anyio.CancelScope(shield=True):
                try:
                    await self.provider.aclose()
                except Exception:
                    pass
            self.writer.close()
            with Store(self.db_path) as store:
                store.mark_run(self.run_id, status, message)
                end_live_state(store.conn, self.run_id, status)
                if self.opts.shard is not None:
                    from arenatui.load.barrier import clock_estimate

                    finish_shard(store, self.run_id, status, clock_estimate())
        return status


MAX_SEGMENTS = 1000
"""The most rates one load run walks (--rates, --rate-sweep STEPS): 100,000 steps of a second were 28 hours."""


def parse_rates(rate: float | None, rates: str | None, sweep: str | None) -> tuple[float, ...]:
    """--rate R, --rates 1,2,4 or --rate-sweep START:STOP:STEPS (geometric when START>0) into segment rates."""
    from arenatui.kernel.limits import MAX_RPM

    max_rate = MAX_RPM / 60.0
    given = [n for n, v in (("--rate", rate), ("--rates", rates), ("--rate-sweep", sweep)) if v is not None]
    if len(given) > 1:
        raise ArenaError(f"give one of --rate, --rates and --rate-sweep, not {' and '.join(given)}")
    out: list[float] = []
    where = given[0] if given else "--rate"
    try:
        if rate is not None:
            out = [float(rate)]
        elif rates is not None:
            out = [float(x) for x in rates.split(",") if x.strip()]
        elif sweep is not None:
            parts = sweep.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop, steps = float(parts[0]), float(parts[1]), int(parts[2])
            if steps > MAX_SEGMENTS:  # before a list of that many rates is built
                raise ArenaError(f"--rate-sweep {sweep!r}: at most {MAX_SEGMENTS} steps (segments), as --repeat is "
                                 f"bounded; {steps} steps of --duration each would run for days")
            if steps < 2 or start <= 0 or stop <= start:
                raise ArenaError(f"--rate-sweep {sweep!r}: expected START:STOP:STEPS with 0 < START < STOP and "
                                 "STEPS >= 2, e.g. 1:64:7")
            ratio = (stop / start) ** (1.0 / (steps - 1))
            out = [round(start * ratio**i, 6) for i in range(steps)]
    except ValueError:
        raise ArenaError(f"{where}: expected requests per second as numbers (--rate 5, --rates 1,2,4,8 or "
                         f"--rate-sweep 1:64:7), got {rate if rate is not None else rates or sweep!r}") from None
    if not out:
        raise ArenaError("no rate: pass --rate R (requests/s), --rates 1,2,4,8 or --rate-sweep START:STOP:STEPS")
    if len(out) > MAX_SEGMENTS:
        raise ArenaError(f"{where}: at most {MAX_SEGMENTS} rates (segments), as --repeat is bounded; got "
                         f"{len(out)}")
    for r in out:
        if not (math.isfinite(r) and 0 < r <= max_rate):
            raise ArenaError(f"{where}: a rate above 0 and at most {max_rate:g} requests/s, got {r:g}")
    return tuple(out)

"""The headless view: a Rich progress line fed from live-metric snapshots a few times a second."""

from __future__ import annotations

import sys

import anyio
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column
from rich.text import Text

from arenatui.kernel.errors import ArenaError, unwrap
from arenatui.kernel.events import RunStatus
from arenatui.kernel.units import money
from arenatui.present.columns import fit_line
from arenatui.session.live import LiveSnapshot
from arenatui.session.sweep import Sweep, stop_signals

REFRESH_S = 0.25


def _eta(s: float | None) -> str:
    if s is None:
        return "ETA -"
    s = int(s + 0.5)
    return f"ETA {s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"ETA {s // 60}:{s % 60:02d}"


def _stats(snap: LiveSnapshot, *, eta: bool, width: int = 1_000) -> str:
    """The figures beside the bar, the least useful left out first when they do not fit in `width`."""
    parts = [(f"in flight {snap.in_flight:>3}", 9), (f"  backoff {snap.backing_off:>3}", 4),
             (f"  retries {snap.retries:>4}", 7), (f"  {snap.calls_per_s:7.1f} calls/s", 8)]
    if snap.judge_planned:  # the judge calls' share of the bar (which counts them) and their spend
        parts.append((f"  judged {snap.judge_done}/{snap.judge_planned} ({money(snap.judge_cost)} of "
                       f"{money(snap.cost)})", 5))
    if eta:
        parts.append((f"  {_eta(snap.eta_s)}", 6))
    if snap.client_cpu is not None:  # the client's own CPU load, and a warning while it is the bottleneck
        parts.append((f"  client CPU {snap.client_cpu:4.0%}", 3))
        if snap.client_overloaded:
            parts.append(("  (client-bound: latencies inflated)", 6))
    return fit_line([(Text(t), p) for t, p in parts], width).plain


async def run_headless(sweep: Sweep, *, quiet: bool, console: Console) -> RunStatus:
    """Run the sweep; Ctrl-C, SIGTERM or SIGHUP cancels it cleanly, a second one stops waiting for calls in flight.

    Either way the writer commits every finished call and the run's end is recorded.
    """
    progress = None
    if not quiet:
        progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(bar_width=20),
            MofNCompleteColumn(table_column=Column(no_wrap=True)),
            TextColumn("{task.fields[stats]}", table_column=Column(no_wrap=True)), TimeElapsedColumn(),
            console=console, transient=False, auto_refresh=False,
        )
    status: RunStatus = "failed"

    async def watch_signals(sweep_scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(*stop_signals()) as signals:
            async for signum in signals:
                if sweep.stopped_by is None:
                    sweep.stopped_by = int(signum)
                if not sweep.control.cancelled:
                    sweep.control.cancel()
                    try:
                        console.print("\nStopping: finished calls are stored; calls in flight are cancelled.",
                                      highlight=False, markup=False)
                    except OSError:
                        pass  # the terminal is gone (SIGHUP): stopping matters, saying so cannot
                else:
                    # Stop waiting: cancelling the sweep's scope still runs its cleanup (writer, run record).
                    sweep_scope.cancel()

    task = progress.add_task("sweep", total=sweep.live.planned, stats="") if progress is not None else None
    # what the description, the bar, "done/planned" (never cut: issue 22) and the elapsed time leave of the line
    n = sweep.live.planned
    stats_width = max(20, console.width - len("sweep") - 20 - len(f"{n}/{n}") - len("0:00:00") - 5)

    async def show() -> None:
        assert progress is not None and task is not None
        while True:
            snap = sweep.live.snapshot()
            progress.update(task, completed=snap.done, stats=_stats(snap, eta=True, width=stats_width))
            progress.refresh()
            await anyio.sleep(REFRESH_S)

    sweep_scope = anyio.CancelScope()
    try:
        async with anyio.create_task_group() as tg:
            if sys.platform != "win32":
                tg.start_soon(watch_signals, sweep_scope)
            if progress is not None:
                progress.start()
                tg.start_soon(show)
            try:
                with sweep_scope:
                    status = await sweep.run()
                if sweep_scope.cancelled_caught:
                    status = sweep.status or "cancelled"
            finally:
                tg.cancel_scope.cancel()
                if progress is not None and task is not None:
                    snap = sweep.live.snapshot()
                    progress.update(task, completed=snap.done, stats=_stats(snap, eta=False, width=stats_width))
                    progress.refresh()
                    progress.stop()
    except BaseExceptionGroup as group:  # the store failed mid-run: one paragraph, not a task group's traceback
        leaf = unwrap(group)
        if isinstance(leaf, ArenaError):
            raise leaf from None
        raise
    return status

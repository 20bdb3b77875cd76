"""`arena load`: its flags, their validation (exit 2 with one paragraph), and the headless run."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from arenatui.kernel.errors import ArenaError
from arenatui.kernel.limits import MAX_CONCURRENCY

if TYPE_CHECKING:
    from rich.console import Console

    from arenatui.kernel.events import RunStatus
    from arenatui.load.run import LoadRun

PROGRESS_S = 1.0


def add_load_parser(sub: Any, console: Callable[[LoadRun, str | None], None] | None = None) -> None:
    """`arena load`. `console` opens the live load console on a run (the entry point passes it in: nothing below
    the UI imports the UI); without it a run in a terminal prints its progress line instead."""
    p = sub.add_parser("load", help="an open-loop load run: requests on a schedule, latency from schedule and send")
    p.add_argument("--project", "-p", help="project TOML file, or a directory holding arena.toml")
    p.add_argument("--show", metavar="RUN_ID", help="print the tables of a stored load run ('last' for the newest)")
    p.add_argument("--json", action="store_true", help="with --show: print JSON (into a pipe without it: "
                                                         "tab-separated columns)")
    p.add_argument("--model", "-m", help="the model key to load (needed when the project has several)")
    p.add_argument("--rate", "-r", help="requests per second")
    p.add_argument("--rates", help="one segment per rate, e.g. 1,2,4,8 (the saturation point is marked)")
    p.add_argument("--rate-sweep", metavar="START:STOP:STEPS", help="STEPS rates from START to STOP, geometric")
    p.add_argument("--duration", "-d", default="60s", help="each segment's length, e.g. 90s or 15m (default 60s)")
    p.add_argument("--arrival", default="constant", help="constant, poisson, gamma:CV or trace:FILE (JSONL or CSV)")
    p.add_argument("--max-in-flight", help="cap on requests at once (default 4096); late requests wait and their lag "
                   "is reported; one more than 1 s late is dropped unsent and counted")
    p.add_argument("--warmup", default="0", help="seconds at the start of each segment left out of the figures")
    p.add_argument("--slo", help="goodput terms, e.g. ttft=500ms,latency=5s,itl=50ms (times from schedule)")
    p.add_argument("--processes", default="1", help="engine processes sharing the schedule (default 1)")
    p.add_argument("--seed", help="seed for the arrival process and simulated models")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.add_argument("--quiet", "-q", action="store_true", help="headless, no progress line (the tables still print)")
    p.add_argument("--theme", help="console theme")
    p.add_argument("--repeat", help="run the same profile N times, linked as one series (`arena compare` on it)")
    p.add_argument("--every", help="with --repeat: time between starts, e.g. 4h, 30m, 90s (the first starts now)")
    p.add_argument("--at", help="with --repeat: local times of day to start at, across days, e.g. 09:00,14:00,22:00")
    p.add_argument("--series", help="link this run to a series by name (runs started by cron or a systemd timer); "
                   "`arena compare NAME` compares the series")
    from arenatui.commands.shards import add_shard_args

    add_shard_args(p, barrier=True)
    p.set_defaults(func=cmd_load, load_console=console)


def _int(value: str | None, flag: str, lo: int, hi: int) -> int | None:
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        raise ArenaError(f"{flag}: expected a whole number from {lo} to {hi}, got {value!r}") from None
    if not lo <= n <= hi:
        raise ArenaError(f"{flag}: expected a whole number from {lo} to {hi}, got {n}")
    return n


def load_options(args: argparse.Namespace) -> Any:
    from arenatui.load.arrivals import parse_arrival
    from arenatui.load.metrics import duration, parse_slo
    from arenatui.load.run import LoadOptions, parse_rates

    rate: float | None = None
    if args.rate is not None:
        try:
            rate = float(args.rate)
        except ValueError:
            raise ArenaError(f"--rate: expected requests per second (a number above 0), got {args.rate!r}") from None
    arrival = parse_arrival(args.arrival)
    if arrival.kind == "trace":
        if args.rate is not None or args.rates is not None or args.rate_sweep is not None:
            raise ArenaError("--arrival trace:FILE sets its own times: drop --rate, --rates and --rate-sweep")
        rates: tuple[float, ...] = (1.0,)
    else:
        rates = parse_rates(rate, args.rates, args.rate_sweep)
    seed = _int(args.seed, "--seed", -(2**63), 2**63 - 1)
    from arenatui.commands.shards import shard_options

    shard, run_id, start_at = shard_options(args)
    return LoadOptions(
        project=args.project, rates=rates, duration_s=duration(args.duration, "--duration"), arrival=arrival,
        model=args.model, max_in_flight=_int(args.max_in_flight, "--max-in-flight", 1, MAX_CONCURRENCY),
        warmup_s=duration(args.warmup, "--warmup", zero_ok=True),
        slo=parse_slo(args.slo) if args.slo is not None else None,
        processes=_int(args.processes, "--processes", 1, os.cpu_count() or 1) or 1, db=args.db, seed=seed,
        shard=shard, run_id=run_id, start_at=start_at,
    )


async def run_headless(run: LoadRun, *, quiet: bool, err: Console) -> RunStatus:
    """Run to the end; Ctrl-C or SIGTERM stops it (requests in flight are stored as cancelled)."""
    from arenatui.commands.load_report import progress_line

    async def watch_signals() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                err.print("\nStopping: finished requests are stored.", markup=False)
                run.cancel()

    async def show() -> None:
        while True:
            await anyio.sleep(PROGRESS_S)
            err.print(progress_line(run.snapshot()), markup=False, highlight=False)

    status: RunStatus = "failed"
    async with anyio.create_task_group() as tg:
        if sys.platform != "win32":
            tg.start_soon(watch_signals)
        if not quiet:
            tg.start_soon(show)
        try:
            status = await run.run()
        finally:
            tg.cancel_scope.cancel()
    return status


def _width() -> int | None:
    """The terminal's width (or COLUMNS); piped or in CI, 200 columns: the segment table has 19."""
    from arenatui.present.terminal import width_for

    return width_for(sys.stdout, piped=200)


def _consoles(width: int | None) -> tuple[Console, Console]:
    """stdout's and stderr's consoles (quiet when stdout's reader goes away)."""
    from arenatui.present.terminal import err_console, out_console

    return out_console(width=width), err_console(width=width)


def _print_for_scripts(out: Console, err: Console, run_id: str, outcome: Any, *, as_json: bool) -> None:
    """`load --show` for a script: the report's JSON document (--json), or into a pipe every table's columns
    tab-separated (the segment table, a blank line, the percentile table), the saturation and notes as lines under
    them, warnings on stderr (issue 37 item 10: the percentile table was left out)."""
    import json
    import sys

    from arenatui.commands.load_files import load_report_dict
    from arenatui.commands.load_report import print_notes
    from arenatui.present.load_tables import percentile_cells, segment_cells
    from arenatui.present.terminal import tab_separated

    if as_json:
        sys.stdout.write(json.dumps(load_report_dict(run_id, "", outcome), indent=2, ensure_ascii=False) + "\n")
        return
    sys.stdout.write("\n\n".join(tab_separated(*cells) for cells in (segment_cells(outcome),
                                                                  percentile_cells(outcome))) + "\n\n")
    sys.stdout.flush()
    print_notes(out, err, outcome)


def cmd_load(args: argparse.Namespace) -> int:
    from arenatui.commands.load_report import print_outcome
    from arenatui.load.run import LoadRun
    from arenatui.store import default_db_path

    if args.show:
        from arenatui.commands.load_report import stored_outcome

        if args.show == "last":
            from arenatui.commands.stored import chosen_last

            args.show = chosen_last(args.db, "load")

        run_id, stored = stored_outcome(args.db or default_db_path(), args.show)
        out, err = _consoles(_width())
        from arenatui.present.terminal import plain_listing

        if args.json or plain_listing():  # for a script: JSON (as `arena report RUN -f json`), or tab-separated
            _print_for_scripts(out, err, run_id, stored, as_json=args.json)
            if args.json:
                return 0
        else:
            print_outcome(out, err, stored)
        out.print(f"Run id: {run_id} ({stored.status})", markup=False)
        return 0
    if not args.project:
        raise ArenaError("no project: pass --project FILE (or a directory holding arena.toml), or --show RUN_ID")
    if args.series is not None and (not args.series.strip() or len(args.series) > 80):
        raise ArenaError(f"--series: expected a name of 1 to 80 characters, got {args.series!r}"[:200])
    if args.repeat is not None or args.every is not None or args.at is not None:
        return _repeated(args)
    opts = load_options(args)
    run = LoadRun(opts)
    if args.series is not None:
        _join_series(run, args.series)
    wide = _width()
    out, err = _consoles(wide)
    console = getattr(args, "load_console", None)
    if not args.quiet and sys.stdout.isatty() and console is not None:
        console(run, args.theme)
        status = run.status or "cancelled"
    else:
        if not args.quiet:
            err.print(f"Load run {run.run_id}: {run.model.key}, {opts.arrival.describe()} arrivals, rates "
                      f"{', '.join(f'{r:g}' for r in opts.rates)}/s, {opts.duration_s:g}s each", markup=False)
            from arenatui.commands.shards import barrier_line

            line = barrier_line(opts.shard, opts.start_at)
            if line:
                err.print(line, markup=False)
        status = anyio.run(lambda: run_headless(run, quiet=args.quiet, err=err))
    print_outcome(out, err, run.figures())
    out.print(f"Run id: {run.run_id} ({status})", markup=False)
    return {"finished": 0, "cancelled": 130}.get(status, 1)


def _repeated(args: argparse.Namespace) -> int:
    """`--repeat N --every 4h` / `--at 09:00,14:00`: the same profile N times, each its own stored load run, linked
    as one series; between runs the process waits, saying when the next one starts."""
    import secrets
    import time
    from functools import partial

    from arenatui.bakeoff import series
    from arenatui.commands.load_report import print_outcome
    from arenatui.load.run import LoadRun
    repeat = _int(args.repeat, "--repeat", 1, 10_000)
    if repeat is None:
        raise ArenaError("--every and --at set when repetitions start: pass --repeat N too")
    if args.every is not None and args.at is not None:
        raise ArenaError("give one of --every and --at, not both")
    if repeat > 1 and args.every is None and args.at is None:
        raise ArenaError(f"--repeat {repeat}: say when each repetition starts, with --every 4h or --at 09:00,14:00")
    if args.shard is not None or args.start_at is not None:
        raise ArenaError("--repeat runs on one machine; schedule sharded runs with cron or systemd timers instead "
                         "(README: Repeated load runs)")
    every = series.parse_every(args.every) if args.every is not None else None
    at = series.parse_at(args.at) if args.at is not None else ()
    opts = load_options(args)
    clock = series.CLOCK
    starts = series.start_times(clock.now(), repeat, every_s=every, at=at)
    series_id = args.series or "series-" + time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
    out, err = _consoles(_width())
    worst = 0
    def waiting(i: int, start: float) -> Callable[[float], None]:
        """On a terminal one line counting down; in a log the first line, then one every SHOW_LOG_S."""
        said: list[float] = []

        def show(left: float) -> None:
            line = series.waiting_line(i, repeat, start, left)
            if args.quiet:
                return
            if err.is_terminal:
                err.file.write("\r" + line + " " * 4)
                err.file.flush()
                drawn.append(i)
            elif not said or said[-1] - left >= series.SHOW_LOG_S:
                err.print(line, markup=False, highlight=False)
                said.append(left)
        return show

    drawn: list[int] = []
    """Repetitions whose countdown was drawn on the terminal's line (it ends with a newline)."""
    for i, start in enumerate(starts):
        series.wait_until(start, clock, waiting(i, start))
        if i in drawn:
            err.file.write("\n")
        run = LoadRun(opts)
        _join_series(run, series_id)
        if not args.quiet:
            err.print(f"Load run {run.run_id} ({i + 1} of {repeat}, series {series_id}): {run.model.key}, "
                      f"rates {', '.join(f'{r:g}' for r in opts.rates)}/s, {opts.duration_s:g}s each", markup=False)
        status = anyio.run(partial(run_headless, run, quiet=args.quiet, err=err))
        print_outcome(out, err, run.figures())
        out.print(f"Run id: {run.run_id} ({status}; {i + 1} of {repeat} in series {series_id})", markup=False)
        code = {"finished": 0, "cancelled": 130}.get(status, 1)
        worst = max(worst, code)
        if status == "cancelled":
            break
    out.print(f"Series {series_id}: compare its runs with  arena compare {series_id}", markup=False)
    return worst


def _join_series(run: LoadRun, series_id: str) -> None:
    from arenatui.store import Store
    from arenatui.store.bakeoff_queries import set_series

    with Store(run.db_path) as store:
        set_series(store, run.run_id, series_id)

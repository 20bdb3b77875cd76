"""The `arena` command: argparse front door to every job. Errors for people: one paragraph, exit code 2."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from arenatui.kernel.errors import ArenaError, render_error, unwrap
from arenatui.kernel.limits import MAX_CONCURRENCY, MAX_PORT, MAX_SQL_INT, MAX_TRIALS, MIN_PORT

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_READER_GONE = 128 + 13
"""The reader of stdout went away (`arena export | head`): the shell's code for a death by SIGPIPE, said quietly."""


def exit_for(signum: int | None) -> int:
    """The shell's convention for a run stopped by a signal: 128 + its number (SIGTERM 143, SIGHUP 129)."""
    return 128 + signum if signum else EXIT_INTERRUPTED


class _Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP before or after the event loop watches signals: handled like Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop_like_ctrl_c(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


def _hold_stop_signals() -> list[int]:
    """From here on, Ctrl-C, SIGTERM and SIGHUP are noted, not raised: the run has recorded its end, and what is
    left (the summary and the resume command, well under a second) must not be cut short by the second of two
    quick Ctrl-C. Returns the list the signals are noted in."""
    from arenatui.session.sweep import stop_signals

    noted: list[int] = []
    for sig in {signal.SIGINT, *stop_signals()}:
        previous = signal.signal(sig, lambda signum, _frame: noted.append(signum))
        # `arena` exits right after; called in-process (tests, scripts), the caller gets its handlers back
        _held_handlers.append((sig, previous))
    return noted


_held_handlers: list[tuple[int, object]] = []
"""Signal handlers replaced by _hold_stop_signals, put back when the command returns (see main)."""


def _handle_stop_signals() -> None:
    from arenatui.session.sweep import stop_signals

    for sig in stop_signals():
        if sig != signal.SIGINT:  # Python's own Ctrl-C handling raises KeyboardInterrupt already
            signal.signal(sig, _stop_like_ctrl_c)


def demo_project_path() -> Path:
    """The bundled demo project (sample_configs/demo.toml in a checkout links to the same file)."""
    return Path(__file__).parent / "data" / "demo.toml"


def _csv(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _whole_number(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number in [lo, hi] (bounds: arenatui.kernel.limits), else a usage error (exit 2)."""
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if n < lo:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {lo}, got {n}")
        if hi is not None and n > hi:
            raise argparse.ArgumentTypeError(f"expected a whole number <= {hi}, got {n}")
        return n
    return parse


_positive_int = _whole_number(1)
_trials = _whole_number(1, MAX_TRIALS)
_concurrency = _whole_number(1, MAX_CONCURRENCY)
_port = _whole_number(MIN_PORT, MAX_PORT)


def _share(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {value!r}") from None
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {x:g}")
    return x


def _add_sweep_args(p: argparse.ArgumentParser, *, project_required: bool = False) -> None:
    p.add_argument("--project", "-p", help="project TOML file, or a directory holding arena.toml")
    p.add_argument("--models", type=_csv, default=(), help="only these model keys (comma-separated)")
    p.add_argument("--tags", type=_csv, default=(), help="only cases with any of these tags or strata")
    p.add_argument("--limit", type=_positive_int, help="only the first N cases (after --tags)")
    p.add_argument("--prompts", type=_csv, default=(),
                   help="only these [[prompts]] variants (comma-separated); with --resume, what this session runs")
    p.add_argument("--trials", type=_trials, help="trials per (model, case), overriding [run].trials")
    p.add_argument("--concurrency", "-c", type=_concurrency, help="starting global concurrency")
    p.add_argument("--seed", type=int, help="seed for simulated models and jitter, overriding [run].seed")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.add_argument("--resume", metavar="RUN_ID", help="continue a stored run ('last' for the newest)")
    p.add_argument("--retry-errored", action="store_true",
                   help="with --resume: run again the calls that ended errored (one row per call is kept)")


def _cluster_by(value: str) -> str:
    if value in ("cluster", "stratum") or (value.startswith("tag:") and len(value) > 4):
        return value
    raise argparse.ArgumentTypeError(f"expected cluster, stratum or tag:NAME, got {value!r}")


def _add_cluster_by(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster-by", type=_cluster_by, metavar="cluster|stratum|tag:NAME",
                   help="intervals resample clusters, not cases: the cases' cluster field (the default when any case "
                        "has one), their stratum, or their tag NAME:<value>")


def _sweep_options(args: argparse.Namespace) -> object:
    from arenatui.plan import Filters
    from arenatui.session.sweep import SweepOptions

    if args.resume and (args.models or args.tags or args.limit or args.trials or args.project
                        or args.seed is not None):
        raise ArenaError("--resume continues a run with the project, seed and filters it was started with (stored "
                         "with the run); drop --project, --seed, --models, --tags, --limit and --trials")
    if args.retry_errored and not args.resume:
        raise ArenaError("--retry-errored runs a stored run's errored calls again: pass --resume RUN_ID (or last)")
    from arenatui.commands.shards import shard_options

    shard, run_id, _start = shard_options(args)
    if args.resume and (shard or run_id):
        raise ArenaError("--resume continues a run as its shard and id were (stored with the run); drop --shard and "
                         "--run-id")
    return SweepOptions(
        project=args.project, filters=Filters(models=args.models, tags=args.tags, limit=args.limit,
                                              trials=args.trials, shard=shard, prompts=getattr(args, "prompts", ())),
        db=args.db, resume=args.resume, concurrency=args.concurrency, seed=args.seed,
        retry_errored=args.retry_errored,
        tune=getattr(args, "tune", False), run_id=run_id,
        started_by=getattr(args, "command", None),  # run, evaluate or demo: what `arena runs` calls the run
    )


def cmd_evaluate(args: argparse.Namespace) -> int:
    import anyio

    from arenatui.commands.headless import run_headless
    from arenatui.present.terminal import err_console, out_console
    from arenatui.session.sweep import Sweep

    out, err = out_console(), err_console()
    _handle_stop_signals()
    sweep = Sweep(_sweep_options(args), live_metrics=not args.quiet)  # type: ignore[arg-type]
    plan = sweep.plan
    for notice in sweep.notices:
        err.print(render_error(notice, prefix="note"), markup=False, soft_wrap=True)
    if not args.quiet:
        what = "Resuming" if sweep.resumed else "Run"
        err.print(f"{what} {sweep.run_id}: {plan.describe()}, {plan.remaining} to make", markup=False)
    t0 = time.monotonic()
    try:
        status = anyio.run(lambda: run_headless(sweep, quiet=args.quiet, console=err))
    except ArenaError as e:  # the store failed mid-run (disk full, a corrupt file): what was committed is kept
        err.print(render_error(e), markup=False, soft_wrap=True)
        err.print(f"The run {sweep.run_id} failed; every call committed before is stored. Resume with:\n"
                  f"  {sweep.resume_command}", markup=False, soft_wrap=True)
        return e.exit_code
    except KeyboardInterrupt as e:  # a signal before or after the loop watched them: the sweep recorded its end
        if isinstance(e, _Stopped):
            sweep.stopped_by = e.signum
        status = sweep.status or "cancelled"
    late = _hold_stop_signals()
    elapsed = time.monotonic() - t0
    # Imported after the run: the report brings numpy (stats, the store's result arrays), ~0.15 s that would
    # otherwise stand between `arena evaluate` and its first request (benchmarks/startup.py).
    from arenatui.commands.evaluate import error_failure, print_summary

    for problem in sweep.store_warnings():
        err.print(render_error(problem, prefix="warning"), markup=False, style="bold yellow", soft_wrap=True)
    results = print_summary(out, err, sweep, status, elapsed, report=not args.no_report and status == "finished")
    out.print(f"Run id: {sweep.run_id}", markup=False)
    if status != "finished":
        err.print(f"The run was {status}; every finished call is stored. Resume with:\n  {sweep.resume_command}",
                  markup=False, soft_wrap=True)  # never cut: the command is what the person copies
        return exit_for(sweep.stopped_by or (late[0] if late and late[0] != signal.SIGINT else None)) \
            if status == "cancelled" else EXIT_FAILED
    failure = error_failure(results, args.fail_on_error)
    if failure:
        err.print(f"Failing: {failure}.", markup=False, style="bold red")
        return EXIT_FAILED
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    """The live console over one sweep; everything is validated before the app starts."""
    from arenatui.session.sweep import Sweep

    if getattr(args, "demo", False):
        args.project = str(demo_project_path())
    _handle_stop_signals()
    sweep = Sweep(_sweep_options(args))  # type: ignore[arg-type]
    notes = [render_error(n, prefix="note") for n in sweep.notices]
    for note in notes:
        print(note, file=sys.stderr)

    from arenatui.tui.app import ArenaApp

    # the demo teaches the tuning loop on a model whose simulated provider has a limit (the banner)
    lesson = next((m.key for m in sweep.plan.models if m.provider == "sim" and (m.sim.max_concurrent or m.sim.rpm)),
                  None) if getattr(args, "demo", False) else None
    status = ArenaApp(sweep, theme=args.theme, lesson=lesson).run()
    final = sweep.status or status
    for note in notes:  # again: the console's screen hid the first time
        print(note, file=sys.stderr)
    for problem in sweep.store_warnings():
        print(render_error(problem, prefix="warning"), file=sys.stderr)
    if sweep.error is not None:
        print(render_error(sweep.error), file=sys.stderr)
    print(f"Run id: {sweep.run_id} ({final or 'not started'})")
    if final != "finished":
        print(f"Every finished call is stored. Resume with:\n  {sweep.resume_in('run')}")
        if sweep.error is not None:
            return sweep.error.exit_code
        return exit_for(sweep.stopped_by) if final in ("cancelled", None) else EXIT_FAILED
    return EXIT_OK


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A verb's driver in `arenatui.commands.<module>`, imported when the verb runs (start-up time)."""
    def run(args: argparse.Namespace) -> int:
        from importlib import import_module

        return int(getattr(import_module(f"arenatui.commands.{module}"), name)(args))
    return run


def cmd_browse(args: argparse.Namespace) -> int:
    from arenatui.tui.browse import browse

    if args.run == "last":
        from arenatui.commands.stored import chosen_last

        args.run = chosen_last(args.db, None)
    return browse(args.db, args.run, args.theme)


def cmd_compare(args: argparse.Namespace) -> int:
    from arenatui.commands.compare import run_compare
    from arenatui.commands.load_series import compare_load_runs
    from arenatui.present.terminal import out_console

    sweep_flags = [f for f, on in (("--a", args.a), ("--b", args.b), ("--all", args.all),
                                    ("--fail-on-regression", args.fail_on_regression),
                                    ("--cluster-by", args.cluster_by)) if on]
    run = args.run
    if run == "last":  # the newest run, or the newest sweep where a load run cannot be what is meant
        from arenatui.commands.load_series import compared_last
        from arenatui.commands.stored import say_chosen
        from arenatui.store import Store

        with Store(args.db, read_only=True) as store:
            run = compared_last(store, args.other, sweep_flags)
            say_chosen(store, run)
    loads = compare_load_runs(args.db, run, args.other, args.json, out_console(soft_wrap=args.json),
                              sweep_flags=sweep_flags)
    if loads is not None:  # load runs: two, or a series (arena load --repeat)
        return loads
    return run_compare(args.db, run, args.other, args.a, args.b, args.all, args.json,
                       out_console(soft_wrap=args.json),
                       fail_on_regression=args.fail_on_regression, cluster_by=args.cluster_by)


def cmd_init(args: argparse.Namespace) -> int:
    from arenatui.commands.init import write_starter

    written = write_starter(Path(args.dir), force=args.force)
    for p in written:
        print(f"wrote {p}")
    print(f"Next: arena run --project {args.dir}   (or: arena evaluate --project {args.dir})")
    return EXIT_OK


def cmd_mock_server(args: argparse.Namespace) -> int:
    import asyncio

    from arenatui.mockserver import serve
    from arenatui.mockserver.faults import Stall
    from arenatui.project import load_project

    project = load_project(args.config) if args.config else None
    stall = None
    if args.stall_for is not None:
        if not (args.stall_for > 0 and args.stall_after >= 0):
            raise ArenaError("--stall-for needs seconds above 0 and --stall-after seconds >= 0")
        stall = Stall(args.stall_after, args.stall_for)
    try:
        asyncio.run(serve(project, args.host, args.port, seed=args.seed,
                          announce=lambda line: print(line, flush=True), stall=stall))
    except BrokenPipeError:
        raise  # stdout's reader went away, not the port: main stops quietly
    except OSError as e:  # the port is taken, the host is not ours
        raise ArenaError(f"mock-server cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    return EXIT_OK


def _levels(value: str) -> tuple[int, ...]:
    from arenatui.kernel.limits import MAX_CONCURRENCY

    try:
        levels = tuple(int(v) for v in _csv(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas (1,2,4,8), got {value!r}") \
            from None
    if not levels or any(not 1 <= n <= MAX_CONCURRENCY for n in levels):
        raise argparse.ArgumentTypeError(f"expected whole numbers from 1 to {MAX_CONCURRENCY}, got {value!r}")
    return tuple(sorted(set(levels)))


def build_parser() -> argparse.ArgumentParser:
    from arenatui.kernel import __version__

    parser = argparse.ArgumentParser(prog="arena", description="Benchmark LLMs live in the terminal.")
    parser.add_argument("--version", action="version", version=f"arenatui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("evaluate", help="run a sweep headless (CI, scripts) and print the leaderboard")
    _add_sweep_args(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    p.add_argument("--no-report", action="store_true", help="no leaderboard at the end")
    p.add_argument("--fail-on-error", type=_share, metavar="RATE",
                   help="exit 1 when more than this share (0-1) of calls errored (default: when a model had every "
                        "call errored)")
    p.add_argument("--tune", action="store_true", help="auto-tune each model's concurrency while it runs")
    from arenatui.commands.shards import add_merge_parser, add_shard_args

    add_shard_args(p, barrier=False)  # --shard K/N, --run-id: one machine's share of a sweep (arena merge joins them)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("run", help="run a sweep in the live console (watch it, tune concurrency by hand)")
    _add_sweep_args(p)
    p.add_argument("--theme", help="console theme: dark, light, high-contrast, or a user theme (remembered)")
    p.add_argument("--tune", action="store_true", help="start with the auto-tuner on (a toggles it)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="the bundled offline demo sweep in the live console")
    p.add_argument("--theme", help="console theme: dark, light, high-contrast, or a user theme (remembered)")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.add_argument("--concurrency", "-c", type=_concurrency, help="starting global concurrency")
    p.add_argument("--trials", type=_trials, help="trials per (model, case): more for a longer run")
    p.add_argument("--seed", type=int, help="seed for the simulated models")
    p.add_argument("--tune", action="store_true", help="start with the auto-tuner on (a toggles it)")
    p.set_defaults(func=cmd_run, demo=True, project=None, models=(), tags=(), limit=None, resume=None,
                   retry_errored=False)

    p = sub.add_parser("tune", help="find each model's concurrency optimum with the auto-tuner (and record it)")
    p.add_argument("--project", "-p", help="project TOML file, or a directory holding arena.toml")
    p.add_argument("--show", metavar="RUN_ID", help="print a stored run's per-level readout ('last' for the newest)")
    p.add_argument("--json", action="store_true", help="with --show: print JSON (into a pipe without it: "
                                                         "tab-separated columns)")
    p.add_argument("--models", type=_csv, default=(), help="only these model keys (comma-separated)")
    p.add_argument("--budget", type=_positive_int, default=400, help="at most this many calls per model; it stops "
                   "sooner once every model has a verdict (default 400)")
    p.add_argument("--write", nargs="?", const="all", metavar="SETTINGS",
                   help="record the recommendations that rest on enough evidence in the project file: each model's "
                   "measured optimum as max_concurrency and its max_tokens; or only the ones named, from "
                   "concurrency,max_tokens,timeout_s ([run] timeout_s is written only when named: measured on this "
                   "run's answers, it is a suggestion). Comments, layout, line endings, mode and owner kept; a "
                   "symlink is written through; a read-only file is refused")
    p.add_argument("--seed", type=int, help="seed for simulated models and jitter, overriding [run].seed")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.add_argument("--verbose", "-v", action="store_true", help="also print every tuner decision (with --show: "
                   "the stored ones)")
    p.set_defaults(func=_command("tune", "cmd_tune"))

    p = sub.add_parser("sweep", help="run the same matrix at several concurrency levels and mark the knee")
    p.add_argument("--project", "-p", required=True, help="project TOML file, or a directory holding arena.toml")
    p.add_argument("--levels", type=_levels, default=(1, 2, 4, 8, 16), help="levels to run (default 1,2,4,8,16)")
    p.add_argument("--models", type=_csv, default=(), help="only these model keys (comma-separated)")
    p.add_argument("--limit", type=_positive_int, help="only the first N cases")
    p.add_argument("--trials", type=_positive_int, help="trials per (model, case), overriding [run].trials")
    p.add_argument("--seed", type=int, help="seed for simulated models and jitter, overriding [run].seed")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.set_defaults(func=_command("tune", "cmd_sweep"))

    p = sub.add_parser("runs", help="list stored runs")
    p.add_argument("--db", help="results database")
    p.add_argument("--limit", type=_whole_number(1, MAX_SQL_INT), default=50, help="newest N runs (default: 50)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table (into a pipe without it: "
                                                         "tab-separated columns)")
    p.set_defaults(func=_command("runs", "cmd_runs"))

    p = sub.add_parser("browse", help="the results view of stored runs: leaderboard, compare, strata, cases, frontier")
    p.add_argument("run", nargs="?", metavar="RUN_ID", help="the run to open ('last' for the newest); else the list")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.add_argument("--theme", help="console theme: dark, light, high-contrast, or a user theme")
    p.set_defaults(func=cmd_browse)

    p = sub.add_parser("compare", help="paired bootstrap: two models of a run, every pair (Holm), or two runs")
    p.add_argument("run", metavar="RUN", help="a run id, or 'last' (the newest run; the newest sweep when the newest "
                                              "is a load run that cannot be meant: --a/--b/--all given, or alone)")
    p.add_argument("other", metavar="OTHER_RUN", nargs="?",
                   help="a second run of the same project: compare model by model (new − old)")
    p.add_argument("--a", metavar="MODEL", help="first model (default: the top two by quality)")
    p.add_argument("--b", metavar="MODEL", help="second model")
    p.add_argument("--all", action="store_true", help="every pair of models, Holm-adjusted")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="two runs: exit 1 when any model regressed, overall or in a stratum, naming it; one 5%% "
                        "error rate for the whole decision (Holm over the whole family: every model's overall "
                        "and stratum tests together; the family size is printed)")
    _add_cluster_by(p)
    p.add_argument("--db", help="results database")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("report", help="a run's decision report: leaderboard, verdicts, strata, cost, frontier")
    p.add_argument("run", metavar="RUN", help="a run id, or 'last'")
    p.add_argument("--format", "-f", choices=("md", "json", "html"), default="md")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--db", help="results database")
    p.add_argument("--load", type=_csv, metavar="LOAD_RUN[,...]",
                   help="load runs of the same project: each model's figures at [bakeoff] target_rate beside its "
                        "quality and cost")
    _add_cluster_by(p)
    p.set_defaults(func=_command("stored", "cmd_report"))

    p = sub.add_parser("export", help="a run's calls as JSON lines or CSV (sealed cases as aggregates only)")
    p.add_argument("run", metavar="RUN", help="a run id, or 'last'")
    p.add_argument("--format", "-f", choices=("jsonl", "csv"), default="jsonl")
    p.add_argument("--raw", action="store_true", help="CSV: keep cells starting with = + - @ as written (by default "
                   "they get a leading ' so a spreadsheet does not run them as formulas)")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--db", help="results database")
    p.set_defaults(func=_command("stored", "cmd_export"))

    p = sub.add_parser("init", help="write a starter project (arena.toml and cases.jsonl)")
    p.add_argument("dir", nargs="?", default=".", help="directory to write into (default: here)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("mock-server", help="serve simulated models over the OpenAI and Anthropic HTTP APIs (offline)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)")
    p.add_argument("--port", type=_port, default=8765, help="port to listen on (default: 8765; 0 picks a free one)")
    p.add_argument("--config", help="project TOML whose [[models]] (sim settings, [mock] faults) and cases to serve")
    p.add_argument("--seed", type=int, help="seed for the simulation (default: the project's [run].seed)")
    p.add_argument("--stall-for", type=float, help="stall every request once for this many seconds (a GC pause)")
    p.add_argument("--stall-after", type=float, default=5.0, help="seconds after the first request the stall starts")
    p.set_defaults(func=cmd_mock_server)

    from arenatui.commands.power_plan import add_plan_parser

    add_plan_parser(sub)  # `arena plan`: power before a run (arenatui/commands/power_plan.py)

    from arenatui.commands.load import add_load_parser

    add_load_parser(sub, _load_console)  # `arena load`: open-loop load runs (arenatui/commands/load.py)
    add_merge_parser(sub)  # `arena merge`: the shards of a run joined into one database (arenatui/commands/shards.py)

    from arenatui.commands.bakeoff import add_bakeoff_parser

    add_bakeoff_parser(sub)  # `arena bakeoff`: the bake-off page and its saved decision (arenatui/commands/bakeoff.py)

    from arenatui.commands.judge_check import add_judge_check_parser

    add_judge_check_parser(sub)  # `arena judge-check`: a judge's agreement with known verdicts

    from arenatui.commands.watch import add_watch_parsers

    add_watch_parsers(sub, _watch_console)  # `arena watch`, `arena control`: a run another process runs

    return parser


def _watch_console(run: Any, theme: str | None) -> int:
    """The live console attached to a run another process is running (`arena watch`)."""
    from arenatui.session.watch import WatchedLoad

    if isinstance(run, WatchedLoad):  # the load screen, its figures the running process's, + and - its rate
        from arenatui.tui.load_app import LoadApp

        LoadApp(run, theme=theme).run()
        return EXIT_OK
    from arenatui.tui.watch_app import WatchApp

    WatchApp(run, theme=theme).run()
    return EXIT_OK


def _load_console(run: Any, theme: str | None) -> None:
    """The live console of a load run (`arena load` in a terminal)."""
    from arenatui.tui.load_app import LoadApp

    LoadApp(run, theme=theme).run()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        try:
            return _run_command(args)
        finally:
            while _held_handlers:
                sig, previous = _held_handlers.pop()
                signal.signal(sig, previous)  # type: ignore[arg-type]
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """Stdout's reader closed the pipe (`| head`): stop quietly. Whatever is still buffered for stdout goes to
    /dev/null, so the interpreter's last flush cannot fail again ("Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (called in-process, captured)
        pass
    return EXIT_READER_GONE


def _run_command(args: argparse.Namespace) -> int:
    try:
        try:
            return int(args.func(args))
        except BaseExceptionGroup as group:  # a task group's wrapping: the person hears the error inside
            raise unwrap(group) from None
        except Exception as e:  # a query outside the store's own checks met a corrupt, locked or full file
            from arenatui.store.db import sql_error_explained  # only now: `arena init` never loads the store

            explained = sql_error_explained(e, getattr(args, "db", None) or None)
            if explained is None:
                raise
            raise explained from None
    except ArenaError as e:
        print(render_error(e), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        print("\ninterrupted", file=sys.stderr)
        return exit_for(e.signum) if isinstance(e, _Stopped) else EXIT_INTERRUPTED

"""The `arena` command: argparse front door to every job. Errors for people: one paragraph, exit code 2."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from arenatui.errors import ArenaError, render_error

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def demo_project_path() -> Path:
    """The bundled demo project (sample_configs/demo.toml in a checkout links to the same file)."""
    return Path(__file__).parent / "data" / "demo.toml"


def _csv(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {n}")
    return n


def _add_sweep_args(p: argparse.ArgumentParser, *, project_required: bool = False) -> None:
    p.add_argument("--project", "-p", help="project TOML file, or a directory holding arena.toml")
    p.add_argument("--models", type=_csv, default=(), help="only these model keys (comma-separated)")
    p.add_argument("--tags", type=_csv, default=(), help="only cases with any of these tags or strata")
    p.add_argument("--limit", type=_positive_int, help="only the first N cases (after --tags)")
    p.add_argument("--trials", type=_positive_int, help="trials per (model, case), overriding [run].trials")
    p.add_argument("--concurrency", "-c", type=_positive_int, help="starting global concurrency")
    p.add_argument("--seed", type=int, help="seed for simulated models and jitter, overriding [run].seed")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.add_argument("--resume", metavar="RUN_ID", help="continue a stored run ('last' for the newest)")


def _sweep_options(args: argparse.Namespace) -> object:
    from arenatui.plan import Filters
    from arenatui.sweep import SweepOptions

    if args.resume and (args.models or args.tags or args.limit or args.trials):
        raise ArenaError("--resume continues a run with the filters it was started with; drop --models, --tags, "
                         "--limit and --trials")
    return SweepOptions(
        project=args.project, filters=Filters(models=args.models, tags=args.tags, limit=args.limit,
                                              trials=args.trials),
        db=args.db, resume=args.resume, concurrency=args.concurrency, seed=args.seed,
        tune=getattr(args, "tune", False),
    )


def cmd_evaluate(args: argparse.Namespace) -> int:
    import anyio
    from rich.console import Console

    from arenatui.headless import run_headless
    from arenatui.report import client_load_warning, print_leaderboard, spend_line, summary_line
    from arenatui.store import Store
    from arenatui.sweep import Sweep

    # Piped into a CI log, Rich would assume 80 columns and squeeze the leaderboard into ellipses.
    def width(stream: object) -> int | None:
        return None if getattr(stream, "isatty", lambda: False)() or os.environ.get("COLUMNS") else 160

    out = Console(highlight=False, width=width(sys.stdout))
    err = Console(stderr=True, highlight=False, width=width(sys.stderr))
    sweep = Sweep(_sweep_options(args), live_metrics=not args.quiet)  # type: ignore[arg-type]
    plan = sweep.plan
    if not args.quiet:
        what = "Resuming" if sweep.resumed else "Run"
        err.print(f"{what} {sweep.run_id}: {plan.describe()}, {plan.remaining} to make", markup=False)
    t0 = time.monotonic()
    status = anyio.run(lambda: run_headless(sweep, quiet=args.quiet, console=err))
    elapsed = time.monotonic() - t0
    with Store(sweep.db_path) as store:
        spend = sum(r[0] for r in store.results(sweep.run_id, ("cost",)))
        out.print(summary_line(len(plan.models), len(plan.cases), plan.trials, elapsed), markup=False)
        stored = sum(len(keys) for keys in store.done_keys(sweep.run_id).values())
        if stored < plan.total:
            out.print(f"Stored: {stored} of {plan.total} calls", markup=False)
        out.print(spend_line(spend), markup=False)
        if not args.no_report and status == "finished":
            print_leaderboard(out, store, sweep.run_id)
        warning = client_load_warning(store, sweep.run_id)
        if warning:
            err.print(warning, markup=False, style="bold yellow")
    out.print(f"Run id: {sweep.run_id}", markup=False)
    if status != "finished":
        err.print(f"The run was {status}; every finished call is stored. Resume with:\n  {sweep.resume_command}",
                  markup=False)
        return EXIT_INTERRUPTED if status == "cancelled" else EXIT_FAILED
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    """The live console over one sweep; everything is validated before the app starts."""
    from arenatui.sweep import Sweep

    if getattr(args, "demo", False):
        args.project = str(demo_project_path())
    sweep = Sweep(_sweep_options(args))  # type: ignore[arg-type]

    from arenatui.tui.app import ArenaApp

    status = ArenaApp(sweep, theme=args.theme).run()
    final = sweep.status or status
    print(f"Run id: {sweep.run_id} ({final or 'not started'})")
    if final != "finished":
        print(f"Every finished call is stored. Resume with:\n  {sweep.resume_in('run')}")
        return EXIT_INTERRUPTED if final in ("cancelled", None) else EXIT_FAILED
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from arenatui.safe_text import literal
    from arenatui.store import Store

    with Store(args.db) as store:
        runs = store.list_runs(args.limit)
    con = Console(highlight=False)
    if not runs:
        con.print(f"No runs stored in {store.path} yet. Try: arena demo", markup=False)
        return EXIT_OK
    t = Table(header_style="bold")
    for col in ("run id", "project", "started", "status", "stored", "planned"):
        t.add_column(col, justify="right" if col in ("stored", "planned") else "left")
    for r in runs:
        t.add_row(r.run_id, literal(r.project, newlines=False),
                  time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started_at)), r.status, str(r.stored),
                  str(r.planned))
    con.print(t)
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from arenatui.init_project import write_starter

    written = write_starter(Path(args.dir), force=args.force)
    for p in written:
        print(f"wrote {p}")
    print(f"Next: arena run --project {args.dir}   (or: arena evaluate --project {args.dir})")
    return EXIT_OK


def cmd_mock_server(args: argparse.Namespace) -> int:
    import asyncio

    from arenatui.config import load_project
    from arenatui.mockserver import serve

    project = load_project(args.config) if args.config else None
    try:
        asyncio.run(serve(project, args.host, args.port, seed=args.seed,
                          announce=lambda line: print(line, flush=True)))
    except OSError as e:  # the port is taken, the host is not ours
        raise ArenaError(f"mock-server cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    return EXIT_OK


def cmd_tune(args: argparse.Namespace) -> int:
    from arenatui.tuning.commands import cmd_tune as run

    return run(args)


def cmd_sweep(args: argparse.Namespace) -> int:
    from arenatui.tuning.commands import cmd_sweep as run

    return run(args)


def _levels(value: str) -> tuple[int, ...]:
    from arenatui.limits import MAX_CONCURRENCY

    try:
        levels = tuple(int(v) for v in _csv(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas (1,2,4,8), got {value!r}") \
            from None
    if not levels or any(not 1 <= n <= MAX_CONCURRENCY for n in levels):
        raise argparse.ArgumentTypeError(f"expected whole numbers from 1 to {MAX_CONCURRENCY}, got {value!r}")
    return tuple(sorted(set(levels)))


def build_parser() -> argparse.ArgumentParser:
    from arenatui import __version__

    parser = argparse.ArgumentParser(prog="arena", description="Benchmark LLMs live in the terminal.")
    parser.add_argument("--version", action="version", version=f"arenatui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("evaluate", help="run a sweep headless (CI, scripts) and print the leaderboard")
    _add_sweep_args(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    p.add_argument("--no-report", action="store_true", help="no leaderboard at the end")
    p.add_argument("--tune", action="store_true", help="auto-tune each model's concurrency while it runs")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("run", help="run a sweep in the live console (watch it, tune concurrency by hand)")
    _add_sweep_args(p)
    p.add_argument("--theme", help="console theme: dark, light, high-contrast, or a user theme (remembered)")
    p.add_argument("--tune", action="store_true", help="start with the auto-tuner on (a toggles it)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="the bundled offline demo sweep in the live console")
    p.add_argument("--theme", help="console theme: dark, light, high-contrast, or a user theme (remembered)")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.add_argument("--concurrency", "-c", type=_positive_int, help="starting global concurrency")
    p.add_argument("--trials", type=_positive_int, help="trials per (model, case): more for a longer run")
    p.add_argument("--seed", type=int, help="seed for the simulated models")
    p.add_argument("--tune", action="store_true", help="start with the auto-tuner on (a toggles it)")
    p.set_defaults(func=cmd_run, demo=True, project=None, models=(), tags=(), limit=None, resume=None)

    p = sub.add_parser("tune", help="find each model's concurrency optimum with the auto-tuner (and record it)")
    p.add_argument("--project", "-p", help="project TOML file, or a directory holding arena.toml")
    p.add_argument("--show", metavar="RUN_ID", help="print a stored run's per-level readout ('last' for the newest)")
    p.add_argument("--models", type=_csv, default=(), help="only these model keys (comma-separated)")
    p.add_argument("--budget", type=_positive_int, default=200, help="at most this many calls per model (default 200)")
    p.add_argument("--write", action="store_true", help="record each model's max_concurrency in the project file "
                   "(comments and layout kept)")
    p.add_argument("--seed", type=int, help="seed for simulated models and jitter, overriding [run].seed")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.add_argument("--verbose", "-v", action="store_true", help="also print every tuner decision (with --show: "
                   "the stored ones)")
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("sweep", help="run the same matrix at several concurrency levels and mark the knee")
    p.add_argument("--project", "-p", required=True, help="project TOML file, or a directory holding arena.toml")
    p.add_argument("--levels", type=_levels, default=(1, 2, 4, 8, 16), help="levels to run (default 1,2,4,8,16)")
    p.add_argument("--models", type=_csv, default=(), help="only these model keys (comma-separated)")
    p.add_argument("--limit", type=_positive_int, help="only the first N cases")
    p.add_argument("--trials", type=_positive_int, help="trials per (model, case), overriding [run].trials")
    p.add_argument("--seed", type=int, help="seed for simulated models and jitter, overriding [run].seed")
    p.add_argument("--db", help="results database (default: in the user data directory)")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("runs", help="list stored runs")
    p.add_argument("--db", help="results database")
    p.add_argument("--limit", type=_positive_int, default=50)
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("init", help="write a starter project (arena.toml and cases.jsonl)")
    p.add_argument("dir", nargs="?", default=".", help="directory to write into (default: here)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("mock-server", help="serve simulated models over the OpenAI and Anthropic HTTP APIs (offline)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default: 8765; 0 picks a free one)")
    p.add_argument("--config", help="project TOML whose [[models]] (sim settings, [mock] faults) and cases to serve")
    p.add_argument("--seed", type=int, help="seed for the simulation (default: the project's [run].seed)")
    p.set_defaults(func=cmd_mock_server)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except ArenaError as e:
        print(render_error(e), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

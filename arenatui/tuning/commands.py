"""The bodies of `arena tune` and `arena sweep`: run the drivers and print their tables for people."""

from __future__ import annotations

import argparse
import time

from rich.console import Console, RenderableType
from rich.text import Text

from arenatui.config.write import writable_target, write_max_concurrency
from arenatui.errors import ArenaError
from arenatui.figures import HEADLINE, Column, Fitted, ms, pct, table_for_width
from arenatui.safe_text import literal, printable
from arenatui.tuning.drivers import (
    LevelRun,
    stored_readouts,
    sweep_levels,
    tune,
)
from arenatui.tuning.levels import LevelReadout, ModelReadout

READOUT_COLUMNS: tuple[Column[LevelReadout], ...] = (
    Column("level", lambda r: r.level, priority=HEADLINE),
    Column("held s", lambda r: f"{r.seconds:.1f}", priority=4),
    Column("answered", lambda r: r.answered, priority=5),
    Column("goodput/s", lambda r: f"{r.goodput:.1f}", priority=HEADLINE),
    Column("429 %", lambda r: r.limited_share, pct, priority=8),
    Column("transient %", lambda r: r.transient_share, pct, priority=6, short="trans %"),
    Column("retries/s", lambda r: f"{r.retries_per_s:.1f}", priority=3),
    Column("gave up", lambda r: r.given_up, priority=7),
    Column("p50 ms", lambda r: r.p50_ms, ms, priority=2),
    Column("p95 ms", lambda r: r.p95_ms, ms, priority=7),
    Column("", lambda r: "◀ best" if r.best else ("" if r.enough else "not enough evidence yet"), priority=HEADLINE,
           right=False),
)


def readout_table(ro: ModelReadout) -> RenderableType:
    title = f"{printable(ro.model_key, newlines=False)}: {ro.verdict}"
    return Fitted(READOUT_COLUMNS, ro.levels, title=title)


def _not_a_load_run(run_id: str, db: str | None) -> None:
    from arenatui.store import Store
    from arenatui.store.load_queries import run_kinds

    with Store(db) as store:
        if run_kinds(store, [run_id])[run_id][0] == "load":
            raise ArenaError(f"run {run_id} is a load run: it holds requests at offered rates, not concurrency "
                             f"levels; its figures: arena load --show {run_id}")


def _out() -> Console:
    from arenatui.terminal import out_console

    return out_console()


def cmd_tune(args: argparse.Namespace) -> int:
    out = _out()
    err = Console(stderr=True, highlight=False)
    if args.show:
        run_id, stored = stored_readouts(args.show, args.db)
        _not_a_load_run(run_id, args.db)
        if not stored:
            out.print(f"Run {run_id} kept no per-level readout (no level was held long enough, or it ran before "
                      "arenatui stored one).", markup=False)
        for ro in stored:
            out.print(readout_table(ro))
        _print_budgets(out, run_id, args.db)
        if args.verbose:
            from arenatui.store import Store

            with Store(args.db) as store:
                for at, _key, _old, _new, reason in store.tuning_decisions(run_id):
                    line = Text(time.strftime("%H:%M:%S ", time.localtime(at)))
                    line.append(literal(reason, newlines=False))
                    out.print(line)
        return 0
    if not args.project:
        raise ArenaError("arena tune: pass --project FILE to tune, or --show RUN_ID to print a stored run's readout")
    if args.write:
        writable_target(args.project)  # a read-only file is refused before minutes of tuning, not after
    res = tune(args.project, models=args.models, budget=args.budget, db=args.db, seed=args.seed,
               started=lambda: err.print(f"Tuning with at most {args.budget} calls per model…", markup=False))
    for ro in res.readouts:
        out.print(readout_table(ro))
        line = Text("recommended max_concurrency for ")
        line.append(literal(ro.model_key, "bold", newlines=False))
        line.append(f": {res.recommended[ro.model_key]}\n")
        out.print(line)
    if args.verbose:
        for d in res.decisions:
            out.print(literal(d, newlines=False))
    _print_budgets(out, res.run_id, args.db)
    out.print(f"Run id: {res.run_id} ({res.wall_s:.1f} s)", markup=False)
    if args.write:
        written = write_max_concurrency(args.project, res.recommended)
        out.print(f"wrote max_concurrency for {len(res.recommended)} model(s) into {written.describe()}",
                  markup=False)
    return 0


def _print_budgets(out: Console, run_id: str, db: str | None) -> None:
    """Steps 2 and 4 of the tuning order beside the concurrency optimum: max_tokens and timeout_s."""
    from arenatui.tuning.budget_commands import budgets_for_run, print_budgets

    out.print(Text("max_tokens and timeout_s, from this run's answers", "bold"))
    print_budgets(out, budgets_for_run(run_id, db))


def cmd_sweep(args: argparse.Namespace) -> int:
    out = _out()
    err = Console(stderr=True, highlight=False)
    levels: tuple[int, ...] = args.levels
    err.print(f"Sweeping concurrency {', '.join(map(str, levels))}: one stored run per level…", markup=False)
    group, runs = sweep_levels(args.project, levels, models=args.models, limit=args.limit, trials=args.trials,
                               db=args.db, seed=args.seed)
    # errored calls sit beside the wall clock: a level that looks faster because calls gave up says so
    columns: tuple[Column[LevelRun], ...] = (
        Column("level", lambda r: r.level, priority=HEADLINE),
        Column("wall s", lambda r: f"{r.wall_s:.2f}", priority=9),
        Column("errored", lambda r: r.errored, priority=9),
        Column("answered", lambda r: r.answered, priority=5),
        Column("goodput/s", lambda r: f"{r.goodput:.1f}", priority=HEADLINE),
        Column("429 %", lambda r: r.limited_share, pct, priority=7),
        Column("p95 ms", lambda r: r.p95_ms, ms, priority=6),
        Column("run id", lambda r: r.run_id, priority=4, right=False),
        Column("", lambda r: "◀ knee" if r.knee else ("faster only because calls gave up"
                                                       if r.errored and _faster(r, runs) else ""),
               priority=HEADLINE, right=False),
    )
    out.print(table_for_width(columns, runs, out.width, title=f"sweep {group}", elsewhere=" (arena runs lists the "
                                                                                          "runs)"))
    k = next((r.level for r in runs if r.knee), None)
    out.print(f"knee: {k} (the lowest level within 5% of the best goodput with no call given up and under 5% "
              "429s)", markup=False)
    return 0


def _faster(r: LevelRun, runs: list[LevelRun]) -> bool:
    """Whether a level with errored calls has a shorter wall clock than the knee."""
    knee = next((x for x in runs if x.knee), None)
    return knee is not None and r.wall_s < knee.wall_s

"""The bodies of `arena tune` and `arena sweep`: run the drivers and print their tables for people."""

from __future__ import annotations

import argparse
import os
import sys
import time

from rich.console import Console
from rich.table import Table
from rich.text import Text

from arenatui.errors import ArenaError
from arenatui.safe_text import literal
from arenatui.tuning.drivers import (
    LevelRun,
    fmt_ms,
    fmt_share,
    stored_readouts,
    sweep_levels,
    tune,
    write_max_concurrency,
)
from arenatui.tuning.levels import ModelReadout


def readout_table(ro: ModelReadout) -> Table:
    title = Text("")
    title.append(literal(ro.model_key, "bold", newlines=False))
    title.append(": ")
    title.append(ro.verdict)
    t = Table(title=title, title_justify="left", header_style="bold")
    for col in ("level", "held s", "answered", "goodput/s", "429 %", "transient %", "retries/s", "gave up", "p50 ms",
                "p95 ms", ""):
        t.add_column(col, justify="left" if col == "" else "right")
    for r in ro.levels:
        t.add_row(str(r.level), f"{r.seconds:.1f}", str(r.answered), f"{r.goodput:.1f}", fmt_share(r.limited_share),
                  fmt_share(r.transient_share), f"{r.retries_per_s:.1f}", str(r.given_up), fmt_ms(r.p50_ms),
                  fmt_ms(r.p95_ms), "◀ best" if r.best else ("" if r.enough else "not enough evidence yet"))
    return t


def _out() -> Console:
    # piped into a log, Rich would assume 80 columns and squeeze the tables into ellipses
    return Console(highlight=False, width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160)


def cmd_tune(args: argparse.Namespace) -> int:
    out = _out()
    err = Console(stderr=True, highlight=False)
    if args.show:
        run_id, stored = stored_readouts(args.show, args.db)
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
    err.print(f"Tuning with at most {args.budget} calls per model…", markup=False)
    res = tune(args.project, models=args.models, budget=args.budget, db=args.db, seed=args.seed)
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
        path = write_max_concurrency(args.project, res.recommended)
        out.print(f"wrote max_concurrency for {len(res.recommended)} model(s) into {path}", markup=False)
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
    t = Table(title=f"sweep {group}", title_justify="left", header_style="bold")
    # errored calls sit beside the wall clock: a level that looks faster because calls gave up says so
    for col in ("level", "wall s", "errored", "answered", "goodput/s", "429 %", "p95 ms", "run id", ""):
        t.add_column(col, justify="left" if col in ("run id", "") else "right")
    for r in runs:
        t.add_row(str(r.level), f"{r.wall_s:.2f}", str(r.errored), str(r.answered), f"{r.goodput:.1f}",
                  fmt_share(r.limited_share), fmt_ms(r.p95_ms), r.run_id,
                  "◀ knee" if r.knee else ("faster only because calls gave up" if r.errored and _faster(r, runs)
                                           else ""))
    out.print(t)
    k = next((r.level for r in runs if r.knee), None)
    out.print(f"knee: {k} (the lowest level within 5% of the best goodput with no call given up and under 5% "
              "429s)", markup=False)
    return 0


def _faster(r: LevelRun, runs: list[LevelRun]) -> bool:
    """Whether a level with errored calls has a shorter wall clock than the knee."""
    knee = next((x for x in runs if x.knee), None)
    return knee is not None and r.wall_s < knee.wall_s

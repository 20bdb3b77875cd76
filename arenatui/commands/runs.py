"""`arena runs`: the stored runs, newest first, with each model's concurrency optimum where a stored readout
establishes one; the run id and every model's name are never cut."""

from __future__ import annotations

import argparse
import time


def cmd_runs(args: argparse.Namespace) -> int:
    from arenatui.kernel.units import plural
    from arenatui.present.columns import HEADLINE, Column, table_for_width
    from arenatui.present.terminal import out_console
    from arenatui.store import Store
    from arenatui.store.db import default_db_path
    from arenatui.store.load_queries import run_kinds
    from arenatui.store.queries import RunListing, list_runs

    if args.db is None and not default_db_path().exists():  # a fresh install: nothing stored is no error
        out_console().print(f"No runs stored yet (no database at {default_db_path()}). Try: arena demo", markup=False)
        return 0
    with Store(args.db, read_only=True) as store:  # a --db that does not exist: NoSuchDatabase, no file made
        runs = list_runs(store, args.limit)
        kinds = run_kinds(store, [r.run_id for r in runs])  # a load run stores requests, not results
        from arenatui.commands.shards import shards_label
        from arenatui.store.run_shards import shard_counts
        from arenatui.tuning.levels import readouts_from_rows

        sharded = shard_counts(store, [r.run_id for r in runs])  # a merged run is one run with its shard count
        from arenatui.commands.load_series import series_labels

        in_series, series_legend = series_labels(store, [r.run_id for r in runs])  # arena load --repeat/--series
        # a model whose stored readout establishes an optimum (re-derived by today's rules) shows it: "sim-limited ≈3"
        optima = {r.run_id: {ro.model_key: ro.verdict.optimum
                             for ro in readouts_from_rows(store.tuning_levels(r.run_id))
                             if ro.verdict.optimum is not None} for r in runs}
    con = out_console()
    if not runs:
        con.print(f"No runs stored in {store.path} yet. Try: arena demo", markup=False)
        return 0

    def calls(r: RunListing) -> str:
        kind, load_stored = kinds.get(r.run_id, ("sweep", 0))
        # a load run's arrivals are random: it has requests sent, never a plan to be short of
        return plural(load_stored, "request") if kind == "load" else f"{r.calls}/{r.planned}"

    # The run id (what --resume needs) and every model's name are never cut: a name per line; lower-priority
    # columns are left out first on a narrow terminal, and below that each run is a block of its own.
    columns: tuple[Column[RunListing], ...] = (
        Column("run id", lambda r: r.run_id, priority=HEADLINE, right=False),
        Column("status", lambda r: r.status + (" (load)" if kinds.get(r.run_id, ("sweep",))[0] == "load" else "")
               + shards_label(sharded.get(r.run_id)), priority=9, right=False),
        Column("calls", calls, priority=8),
        Column("models (≈ concurrency optimum)", lambda r: "\n".join(
            m + (f" ≈{optima[r.run_id][m]}" if m in optima[r.run_id] else "") for m in r.models),
            priority=HEADLINE, right=False, short="models"),
        Column("started", lambda r: time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started_at)), priority=6,
               right=False),
        Column("project", lambda r: r.project, priority=7, right=False),
    )
    if in_series:  # after calls: a load run's series is what `arena compare` takes
        columns = (*columns[:3], Column("series", lambda r: in_series.get(r.run_id, ""), priority=9, right=False),
                   *columns[3:])
    con.print(table_for_width(columns, runs, con.width, elsewhere=""))
    for line in series_legend:
        con.print(line, markup=False, highlight=False)
    return 0

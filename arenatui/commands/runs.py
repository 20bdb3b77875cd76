"""`arena runs`: the stored runs, newest first, with each run's kind and each model's concurrency optimum where a
stored readout establishes one; the run id and every model's name are never cut. `--json` for scripts, and
tab-separated columns when stdout is not a terminal."""

from __future__ import annotations

import argparse
import time


def cmd_runs(args: argparse.Namespace) -> int:
    from arenatui.kernel.units import plural
    from arenatui.present.columns import HEADLINE, Column
    from arenatui.present.terminal import out_console, plain_listing, print_listing
    from arenatui.store import Store
    from arenatui.store.db import default_db_path
    from arenatui.store.load_queries import run_kinds
    from arenatui.store.queries import RunListing, list_runs, run_origins

    if args.db is None and not default_db_path().exists():  # a fresh install: nothing stored is no error
        out_console().print(f"No runs stored yet (no database at {default_db_path()}). Try: arena demo", markup=False)
        return 0
    with Store(args.db, read_only=True) as store:  # a --db that does not exist: NoSuchDatabase, no file made
        runs = list_runs(store, args.limit)
        kinds = run_kinds(store, [r.run_id for r in runs])  # a load run stores requests, not results
        origins = run_origins(store, [r.run_id for r in runs])
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
    if not runs and not args.json:
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
        Column("kind", lambda r: origins.get(r.run_id, "run"), priority=8, right=False),
        Column("status", lambda r: ("▶ " if r.status == "running" else "") + r.status
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
        columns = (*columns[:4], Column("series", lambda r: in_series.get(r.run_id, ""), priority=9, right=False),
                   *columns[4:])
    as_json = [{"run_id": r.run_id, "kind": origins.get(r.run_id, "run"), "status": r.status,
                "calls": kinds.get(r.run_id, ("sweep", 0))[1] if kinds.get(r.run_id, ("sweep",))[0] == "load"
                else r.calls, "planned": r.planned, "models": list(r.models),
                "optimum": optima[r.run_id], "started_at": r.started_at, "project": r.project,
                "series": in_series.get(r.run_id) or None, "shards": sharded.get(r.run_id)} for r in runs]
    print_listing(con, columns, runs, as_json=as_json, json_wanted=args.json, elsewhere="")
    if args.json or plain_listing():
        return 0
    notes = [*series_legend]
    if any(optima.values()):  # the ≈ had its column header shortened away on a narrow terminal (issue 37)
        notes.append("≈N after a model: the concurrency optimum its stored per-level readout establishes")
    if any(r.status == "running" for r in runs):
        notes.append("▶ running: its process is still at work (another run started later may be newer)")
    for line in notes:
        con.print(line, markup=False, highlight=False)
    return 0

"""`arena report` and `arena export` of a stored run: the view that renders it (a sweep's, or a load run's tables
and requests), written to a file or to stdout."""

from __future__ import annotations

import argparse
import sys

from arenatui.kernel.errors import ArenaError
from arenatui.kernel.units import plural
from arenatui.present.terminal import write_output
from arenatui.store import Store
from arenatui.store.load_queries import load_run_named


def chosen_last(db: str | None, kind: str | None) -> str:
    """'last' for a command that reads runs of `kind` ('sweep', 'load', None: either): the newest such run that is
    not still running (store.queries.last_run), said first, on stderr, so a person sees which run the figures are
    of (on a database every job shares, the newest run can be someone else's); returns its id."""
    from arenatui.store.queries import last_run

    with Store(db, read_only=True) as store:
        rec = last_run(store, kind)
        say_chosen(store, rec.run_id)
    return rec.run_id


def say_chosen(store: Store, run_id: str) -> None:
    """The line that names the run 'last' chose: its id, kind, status and start."""
    import time

    from arenatui.store.queries import run_origins

    rec = store.get_run(run_id)
    kind = run_origins(store, [run_id]).get(run_id, "run")
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(rec.started_at))
    still = "; it is still running, so its figures are what is stored so far" if rec.status == "running" else ""
    print(f"last = run {rec.run_id} ({kind}, {rec.status}, started {started}, project {rec.project}){still}",
          file=sys.stderr)


def cmd_report(args: argparse.Namespace) -> int:
    from arenatui.commands.report import build_report, render

    if args.run == "last":
        args.run = chosen_last(args.db, "sweep" if args.load else None)

    with Store(args.db, read_only=True) as store:
        # beside load runs, 'last' is the newest sweep (the load runs were made after it): build_report reads it
        load = None if args.load and args.run == "last" else load_run_named(store, args.run)
        db_path = store.path
        if load is not None and args.load:
            raise ArenaError(f"--load sets load runs beside a sweep's quality; run {load[0]} is itself a load run: "
                             "pass the sweep's run id")
        rep = build_report(store, args.run, cluster_by=args.cluster_by, load=args.load) if load is None else None
    if args.output is None and args.format == "md" and sys.stdout.isatty():  # a person: tables fitted
        from arenatui.present.terminal import out_console, print_document

        if load is not None:
            from arenatui.commands.load_files import load_report_of

            doc = load_report_of(db_path, load[0], load[1])
        else:
            from arenatui.commands.report_doc import report_document

            assert rep is not None
            doc = report_document(rep, terminal=True)
        print_document(out_console(), doc, elsewhere=f" (arena report {args.run} -o FILE, or piped, has every column)")
        return 0
    if load is not None:  # a load run: its segment and percentile tables, recomputed from the stored requests
        from arenatui.commands.load_files import load_report

        text = load_report(db_path, load[0], load[1], args.format)
    else:
        assert rep is not None
        text = render(rep, args.format, terminal=args.output is None and sys.stdout.isatty())
    write_output(args.output, lambda f, tty: f.write(text))
    if args.output:
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from arenatui.commands.export import write_export

    if args.run == "last":
        args.run = chosen_last(args.db, None)

    with Store(args.db, read_only=True) as store:
        rows: list[int] = []
        load = load_run_named(store, args.run)
        if load is not None:  # a load run: one row per stored request
            from arenatui.commands.load_files import write_load_export

            write_output(args.output, lambda f, tty: rows.append(write_load_export(store, load[0], args.format, f,
                                                                                    terminal=tty, raw=args.raw)))
        else:
            write_output(args.output, lambda f, tty: rows.append(write_export(store, args.run, args.format, f,
                                                                               terminal=tty, raw=args.raw)))
    if args.output:
        print(f"wrote {plural(rows[0], 'row')} to {args.output}", file=sys.stderr)
    return 0

"""`arena bakeoff RUN [--load ...] [-o FILE] [--format md|html|json]` and `arena bakeoff --show RUN`."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from arenatui.kernel.errors import ArenaError, ReadOnlyDatabase


def add_bakeoff_parser(sub: Any) -> None:
    p = sub.add_parser("bakeoff", help="one page deciding between candidates: margin, load, errors, terms; saved")
    p.add_argument("run", nargs="?", metavar="RUN", help="the sweep's run id, or 'last' (the newest sweep)")
    p.add_argument("--load", metavar="LOAD_RUN[,...]",
                   help="load runs of the same project (default: each model's newest finished load run)")
    p.add_argument("--show", metavar="RUN", help="print the decision saved with a run again ('last': the newest saved)")
    p.add_argument("--format", "-f", choices=("md", "json", "html"), default="md",
                   help="md (the default), html (a page for a browser, a phone's too) or json")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--db", help="results database")
    p.set_defaults(func=cmd_bakeoff)


def cmd_bakeoff(args: argparse.Namespace) -> int:
    from arenatui.commands.bakeoff_page import render
    from arenatui.store import Store
    from arenatui.store.bakeoff_queries import save_decision, stored_decision
    from arenatui.store.db import sql_errors_explained
    from arenatui.store.queries import resolve_run

    if (args.run is None) == (args.show is None):
        raise ArenaError("arena bakeoff: pass a sweep's RUN id to decide, or --show RUN to print its saved decision")
    shown = None
    unsaved: ReadOnlyDatabase | None = None
    if args.show:
        if args.load:
            raise ArenaError("--show prints the decision as it was saved, with its load runs: drop --load")
        with Store(args.db, read_only=True) as store:
            run_id = args.show if args.show == "last" else resolve_run(store, args.show).run_id
            made_at, page = stored_decision(store, run_id)
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(made_at))
        shown = f"The decision saved with run {page['run']['run_id']} at {when} (local time), shown again"
    else:
        from arenatui.commands.bakeoff_build import build_page
        from arenatui.commands.stored import chosen_last

        if args.run == "last":
            args.run = chosen_last(args.db, "sweep")

        load = tuple(x.strip() for x in args.load.split(",") if x.strip()) if args.load is not None else None
        if load == ():
            raise ArenaError("--load: expected load run ids separated by commas, got none")
        try:
            store = Store(args.db, create=False)  # decides on a stored run: never a new file
        except ReadOnlyDatabase as e:  # a shared or archived file: the page is still the point; saving it is not
            store, unsaved = Store(args.db, read_only=True), e
        with store:
            page = build_page(store, args.run, load)
            if unsaved is None:
                try:
                    with sql_errors_explained(store.path):
                        save_decision(store, page["run"]["run_id"], page["load_runs"], page)
                except ReadOnlyDatabase as e:
                    unsaved = e
    saved = f"the decision is saved with run {page['run']['run_id']} (arena bakeoff --show {page['run']['run_id']})"
    if unsaved is not None:
        saved = (f"the decision is NOT saved with run {page['run']['run_id']}, so arena bakeoff --show cannot print "
                 f"it again: the results database {str(store.path)!r} cannot be written here. Keep the "
                 "page with -o FILE, or decide on a copy you can write")
    if args.output is None:
        if args.format == "md" and sys.stdout.isatty():  # a person: rendered, tables fitted (a pipe: the Markdown)
            from arenatui.commands.bakeoff_page import page_document
            from arenatui.present.terminal import out_console, print_document

            print_document(out_console(), page_document(page, shown=shown),
                           elsewhere=f" (arena bakeoff --show {page['run']['run_id']} -o FILE, or piped, has every "
                                     "column)")
        else:
            sys.stdout.write(render(page, args.format, terminal=sys.stdout.isatty(), shown=shown))
        if shown is None:  # beside the page, not in it: a pipe gets the page alone
            print(saved[0].upper() + saved[1:] + ".", file=sys.stderr)
        return 0
    try:
        with open(args.output, "w", encoding="utf-8", newline="") as f:
            f.write(render(page, args.format, shown=shown))
    except OSError as e:
        raise ArenaError(f"-o {args.output}: cannot write the file: {e.strerror or e}") from None
    print(f"wrote {args.output}; {saved}", file=sys.stderr)
    return 0

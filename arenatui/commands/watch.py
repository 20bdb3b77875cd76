"""`arena watch` and `arena control`: follow and steer a run another process is running, through its database(s)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from arenatui.kernel.errors import ArenaError
from arenatui.kernel.limits import MAX_CONCURRENCY

if TYPE_CHECKING:  # the parser is built on every start: the watcher's modules load when a verb runs
    from arenatui.session.watch import WatchedLoad, WatchedRun

EXIT_OK, EXIT_REFUSED = 0, 1


def add_watch_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                      console: Callable[[WatchedRun | WatchedLoad, str | None], int]) -> None:
    p = sub.add_parser("watch", help="the live console of a run another process is running (headless, a shard, a "
                                     "load run), read from its database; + - c [ ] p a steer it")
    p.add_argument("run", nargs="?", default="last", metavar="RUN", help="a run id, or 'last' (default)")
    p.add_argument("--db", action="append", metavar="PATH",
                   help="results database; again for each shard of one run (or a directory of *.db, or a pattern)")
    p.add_argument("--theme", help="console theme: dark, light, high-contrast, or a user theme")

    def watch(args: argparse.Namespace) -> int:
        run = open_watched(args.db, args.run)
        try:
            return console(run, args.theme)
        finally:
            run.close()
    p.set_defaults(func=watch)

    p = sub.add_parser("control", help="steer a run another process is running: concurrency, caps, pause, the "
                                       "auto-tuner (a request row in its database, applied within a second)")
    p.add_argument("run", metavar="RUN", help="a run id, or 'last'")
    p.add_argument("--db", action="append", metavar="PATH",
                   help="results database; again for each shard (each gets the request), or a directory or pattern")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--concurrency", type=int, metavar="N", help=f"the global level (1-{MAX_CONCURRENCY}); with "
                      "several shards, N is split between them")
    what.add_argument("--cap", metavar="MODEL=N", help="one model's cap (0: no cap)")
    what.add_argument("--pause", action="store_true", help="no new calls start; calls in flight finish")
    what.add_argument("--resume", action="store_true", help="start calls again after --pause")
    what.add_argument("--tune", choices=("on", "off"), help="switch the auto-tuner on or off")
    what.add_argument("--rate", type=float, metavar="R", help="a load run's offered rate (requests/s)")
    p.add_argument("--wait", type=float, default=5.0, metavar="S",
                   help="seconds to wait for the run's answer (default 5; 0: send and leave)")
    p.set_defaults(func=cmd_control)


def _dbs(given: list[str] | None) -> list[Path]:
    from arenatui.session.watch import shard_paths
    from arenatui.store.db import default_db_path

    return shard_paths(given) if given else [default_db_path()]


def open_watched(db: list[str] | None, run: str) -> WatchedRun | WatchedLoad:
    from arenatui.session.watch import open_run

    return open_run(_dbs(db), run, read_now=False)  # the console reads the stored rows once it shows


def _request(args: argparse.Namespace) -> tuple[str, float | None, str | None]:
    if args.concurrency is not None:
        if not 1 <= args.concurrency <= MAX_CONCURRENCY:
            raise ArenaError(f"--concurrency {args.concurrency}: expected a whole number from 1 to {MAX_CONCURRENCY}")
        return "concurrency", args.concurrency, None
    if args.cap is not None:
        model, sep, n = args.cap.rpartition("=")
        if not sep or not model or not n.strip().isdigit() or int(n) > MAX_CONCURRENCY:
            raise ArenaError(f"--cap {args.cap!r}: expected MODEL=N, N a whole number from 0 (no cap) to "
                             f"{MAX_CONCURRENCY}, e.g. --cap gpt-4o-mini=8")
        return "cap", int(n), model
    if args.rate is not None:
        if not 0 < args.rate < float("inf"):
            raise ArenaError(f"--rate {args.rate:g}: expected requests per second above 0")
        return "rate", args.rate, None
    if args.pause:
        return "pause", None, None
    if args.resume:
        return "resume", None, None
    return "tune", 1 if args.tune == "on" else 0, None


def cmd_control(args: argparse.Namespace) -> int:
    """Write the request to every database of the run, then print each shard's answer."""
    from arenatui.store.db import Store
    from arenatui.store.live_state import answers, ask, open_for_requests, read_live_state
    from arenatui.store.queries import resolve_run

    action, value, model = _request(args)
    paths = _dbs(args.db)
    targets: list[tuple[Path, str]] = []
    run = args.run
    for path in paths:
        open_for_requests(path).close()  # a database this process cannot write: said first (exit 2), whatever else
        with Store(path, read_only=True) as store:
            rec = resolve_run(store, run)
            run = rec.run_id  # 'last' is the first database's newest run; the other shards hold the same id
            state = read_live_state(store.conn, rec.run_id)
        if rec.status != "running" or state is None or not state.alive():
            seen = "" if state is None else f", last seen {time.time() - state.heartbeat_at:.0f} s ago"
            how = rec.status if rec.status != "running" else "not running"
            print(f"run {rec.run_id} in {path} is {how}{seen}: nothing would apply the request, so none was sent",
                  file=sys.stderr)
            return EXIT_REFUSED
        targets.append((path, rec.run_id))
    values: list[float | None] = [value] * len(targets)
    if action == "concurrency" and value is not None and len(targets) > 1:
        n, total = len(targets), int(value)
        values = [max(1, total // n + (1 if i < total % n else 0)) for i in range(n)]
    elif action == "rate" and value is not None:  # the whole load run's rate: each shard its share, as the watcher
        values = [value / len(targets)] * len(targets)
    sent: list[tuple[Path, int]] = []
    for (path, run_id), v in zip(targets, values, strict=True):
        conn = open_for_requests(path)
        try:
            sent.append((path, ask(conn, run_id, action, v, model)))
        finally:
            conn.close()
    if args.wait <= 0:
        for path, rid in sent:
            print(f"{path}: request {rid} sent")
        return EXIT_OK
    deadline = time.monotonic() + args.wait
    pending = dict(sent)
    code = EXIT_OK
    while pending and time.monotonic() < deadline:
        for path, rid in list(pending.items()):
            with Store(path, read_only=True) as store:
                status, reply = answers(store.conn, [rid]).get(rid, ("pending", None))
            if status != "pending":
                del pending[path]
                print(f"{path}: {status}" + (f": {reply}" if reply else ""))
                code = code if status == "applied" else EXIT_REFUSED
        if pending:
            time.sleep(0.1)
    for path, rid in pending.items():
        print(f"{path}: request {rid} not answered within {args.wait:g} s (it is applied when the run next polls, "
              "if it still runs)", file=sys.stderr)
        code = EXIT_REFUSED
    return code

"""Runs on more than one machine: the `--shard K/N`, `--run-id` and start-barrier flags, and `arena merge`."""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arenatui.kernel.errors import ArenaError

if TYPE_CHECKING:
    from rich.console import Console

    from arenatui.plan import Shard
    from arenatui.store.merge import Merged

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
START_BASE_ENV = "ARENA_START_BASE"
RESERVED_RUN_IDS = ("last",)
"""Words a command reads in place of a run id: never a run's own id."""


def add_shard_args(p: argparse.ArgumentParser, *, barrier: bool) -> None:
    p.add_argument("--shard", metavar="K/N", help="make only shard K of N (0-based K, e.g. $JOB_COMPLETION_INDEX/10); "
                   "`arena merge` joins the shards' databases")
    p.add_argument("--run-id", metavar="ID", help="record the run under this id (every shard of a run: the same one)")
    if barrier:
        p.add_argument("--start-at", metavar="INSTANT", help="start the schedule at this wall-clock instant on every "
                       "shard: ISO 8601 with a zone (2026-12-01T12:00:00Z) or epoch seconds")
        p.add_argument("--start-in", metavar="DURATION", help="start this long after --start-base (e.g. 30s, 2m)")
        p.add_argument("--start-base", metavar="INSTANT", help=f"the instant --start-in counts from, the same for "
                       f"every shard (default: ${START_BASE_ENV})")


def run_id_option(value: str | None) -> str | None:
    if value is None:
        return None
    if value.lower() in RESERVED_RUN_IDS:
        raise ArenaError(f"--run-id {value}: that word is reserved (RUN 'last' means the newest run, so a run named "
                         "so could never be addressed); give the run another id")
    if not _RUN_ID.match(value):
        raise ArenaError(f"--run-id: expected 1-64 letters, digits, '.', '_' or '-' starting with a letter or digit "
                         f"(it names the run in `arena runs` and in every shard's database), got {value!r}")
    return value


def shard_options(args: argparse.Namespace) -> tuple[Shard | None, str | None, float | None]:
    """(--shard, --run-id, the start barrier's instant) from the parsed flags, validated (exit 2 when wrong)."""
    from arenatui.plan import parse_shard

    shard = parse_shard(args.shard) if getattr(args, "shard", None) else None
    run_id = run_id_option(getattr(args, "run_id", None))
    if shard is not None and shard.count > 1 and run_id is None:
        raise ArenaError(f"--shard {shard}: pass --run-id ID too (the same on every shard), so `arena merge` can tell "
                         "the shards of one run from other runs")
    start_at = None
    start_in = getattr(args, "start_in", None)
    if getattr(args, "start_at", None) is not None or start_in is not None:
        from arenatui.load.barrier import start_instant
        from arenatui.load.metrics import duration

        start_at = start_instant(args.start_at, duration(start_in, "--start-in", zero_ok=True)
                                 if start_in is not None else None,
                                 args.start_base if args.start_base is not None else os.environ.get(START_BASE_ENV))
    return shard, run_id, start_at


def barrier_line(shard: Shard | None, start_at: float | None) -> str | None:
    """What a shard says before it starts: which shard, and when the barrier lets it go."""
    from arenatui.load.barrier import format_instant

    parts = []
    if shard is not None:
        parts.append(f"shard {shard}")
    if start_at is not None:
        ahead = start_at - time.time()
        parts.append(f"starts at {format_instant(start_at)} "
                     + (f"(in {ahead:.1f} s)" if ahead >= 0 else f"({-ahead:.1f} s late: its first requests go out "
                                                                  "late and their lag says so)"))
    return ", ".join(parts) or None


def shards_label(counts: tuple[int, int, int] | None) -> str:
    """After a run's kind in `arena runs`: ', 4 shards' (merged), ', shard 2/4' (one machine's), or ''."""
    if counts is None:
        return ""
    held, n, lowest = counts
    if held == 1 and n > 1:
        return f", shard {lowest}/{n}"
    return f", {n} shards" if held == n else f", {held} of {n} shards"


def add_merge_parser(sub: Any) -> None:
    p = sub.add_parser("merge", help="join the shards of one run (each its own --db) into one database, exactly")
    p.add_argument("out", metavar="OUT.db", help="the database to merge into (other runs in it are kept)")
    p.add_argument("inputs", metavar="IN.db", nargs="+", help="the shards' databases")
    p.add_argument("--run", metavar="RUN_ID", help="the run to merge (default: the one run every input holds)")
    p.add_argument("--quiet", "-q", action="store_true", help="no figures after merging")
    p.set_defaults(func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    from arenatui.present.terminal import err_console, out_console
    from arenatui.store.merge import merge

    t0 = time.monotonic()
    merged = merge(args.out, args.inputs, args.run)
    out, err = out_console(), err_console()
    _print_merged(out, err, merged, Path(args.out), time.monotonic() - t0, figures=not args.quiet)
    return 0


def _print_merged(out: Console, err: Console, m: Merged, db: Path, elapsed: float, *, figures: bool) -> None:
    rows = ", ".join(f"{n} {table.replace('_', ' ')}" for table, n in m.rows.items() if n)
    brought = "; ".join(f"{path}: shard{'s' if len(s) != 1 else ''} {', '.join(map(str, s)) or '(unsharded)'}"
                        for path, s in m.added)
    out.print(f"Merged run {m.run_id} ({m.kind}) into {db} in {elapsed:.1f} s: {rows or 'no rows'}", markup=False,
              soft_wrap=True)
    out.print(f"From {brought}", markup=False, soft_wrap=True)
    if m.shard_count > 1:
        held = f"{len(m.present)} of {m.shard_count} shards"
        out.print(f"{db} now holds {held}" + (f"; missing: {', '.join(map(str, m.missing))} (merge them in "
                                               "later: arena merge adds shards to a merged run)" if m.missing else ""),
                  markup=False, soft_wrap=True)
    if m.status != "finished":
        err.print(f"The merged run is {m.status}: a shard did not finish (resume that shard, then merge it again "
                  "into a fresh file)", markup=False, style="bold yellow", soft_wrap=True)
    if not figures:
        return
    if m.kind == "load":  # the figures, recomputed from every shard's raw requests
        from arenatui.commands.load_report import print_outcome, stored_outcome

        _rid, outcome = stored_outcome(db, m.run_id)
        print_outcome(out, err, outcome)
    else:
        from arenatui.commands.evaluate import print_leaderboard
        from arenatui.results.runs import read_results
        from arenatui.store import Store

        with Store(db) as store:
            print_leaderboard(out, read_results(store, m.run_id, latency=True))
    out.print(f"Run id: {m.run_id}", markup=False)

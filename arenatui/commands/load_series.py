"""`arena compare` on load runs: two load runs, or a series (`arena load --repeat`), per run p50/p95/p99 from
schedule, error and 429 shares, and the spread (max/min p95 with the runs' times)."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from arenatui.bakeoff.atload import at_target
from arenatui.bakeoff.series import SeriesRun, spread
from arenatui.kernel.errors import PlanError
from arenatui.kernel.units import ms, pct, plural
from arenatui.present.columns import HEADLINE, Column, table_for_width
from arenatui.results.read import read_run
from arenatui.stats.jsonable import finite as _num
from arenatui.store import Store
from arenatui.store.bakeoff_queries import newest_sweep, series_of, series_of_runs, series_runs
from arenatui.store.load_queries import run_kinds
from arenatui.store.queries import resolve_run


def compared_last(store: Store, other: str | None, sweep_flags: Sequence[str]) -> str:
    """What 'last' names for `arena compare`: the newest run, unless that is a load run it cannot mean (the flags
    given compare a sweep's models, the other run is a sweep, or it stands alone in no series): then the newest
    sweep, as for a bake-off, since the load runs of a bake-off are made after its sweep."""
    rec = resolve_run(store, "last")
    kinds = run_kinds(store, [rec.run_id])
    if kinds[rec.run_id][0] != "load":
        return rec.run_id
    if not sweep_flags:
        if other is not None:
            rec2 = resolve_run(store, other)
            if run_kinds(store, [rec2.run_id])[rec2.run_id][0] == "load":
                return rec.run_id
        elif series_of(store, rec.run_id) is not None:
            return rec.run_id
    try:
        return newest_sweep(store)
    except PlanError:
        return rec.run_id  # no sweep at all: the load run, and what is said of it


def load_ids(store: Store, run: str, other: str | None) -> list[str] | None:
    """The load runs `arena compare RUN [OTHER]` names: a series id, a run of a series (the whole series), or two
    load runs; None when RUN is a sweep (the usual comparison)."""
    members = series_runs(store, run)
    if members:
        if other is not None:
            raise PlanError(f"compare: {run} is a series of load runs, compared together; drop {other}")
        return members
    rec = resolve_run(store, run)
    if run_kinds(store, [rec.run_id])[rec.run_id][0] != "load":
        return None
    if other is None:
        sid = series_of(store, rec.run_id)
        if sid is None:
            raise PlanError(f"compare: load run {rec.run_id} is in no series; pass a second load run to compare it "
                            "with, or a series id (arena load --repeat)")
        return series_runs(store, sid)
    rec2 = resolve_run(store, other)
    if run_kinds(store, [rec2.run_id])[rec2.run_id][0] != "load":
        raise PlanError(f"compare: {rec.run_id} is a load run and {rec2.run_id} a sweep; compare two load runs, or "
                        "two sweeps")
    if rec2.run_id == rec.run_id:
        raise PlanError(f"compare: both runs are {rec.run_id}; pass two different runs")
    return sorted([rec.run_id, rec2.run_id], key=lambda r: (store.get_run(r).started_at, r))


def series_labels(store: Store, run_ids: list[str]) -> tuple[dict[str, str], list[str]]:
    """What `arena runs` shows of series: per run in one, a label that fits any terminal ("S1 2/3": series S1, its
    second run of three, oldest first), and a line per series naming it in full (a generated id is 27 characters)
    and how to compare one."""
    of = series_of_runs(store, run_ids)
    keys: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    for rid in run_ids:  # numbered as the listing meets them
        if rid in of and of[rid] not in keys:
            keys[of[rid]] = f"S{len(keys) + 1}"
            members[of[rid]] = series_runs(store, of[rid])
    labels = {rid: f"{keys[sid]} {members[sid].index(rid) + 1}/{len(members[sid])}" for rid, sid in of.items()}
    legend = [f"{k} = series {sid} ({plural(len(members[sid]), 'load run')})"
              for sid, k in keys.items()]
    # the command with a real series id: the label (S1) is this listing's, not a name `arena compare` knows
    return labels, [*legend, f"Compare a series' runs by its name: arena compare {next(iter(keys))}"] if legend else []


def series_rows(store: Store, ids: Sequence[str]) -> list[SeriesRun]:
    """Each load run's figures at its project's target load ([bakeoff], else its fastest segment)."""
    out = []
    for rid in ids:
        run = read_run(store, rid)
        if run.load is None:
            continue
        bk = run.record.config.get("bakeoff") or {}
        at = at_target(run.load, bk.get("target_rate"), bk.get("target_concurrency"))
        model = str(run.record.filters.get("model") or (run.plan.models[0] if run.plan.models else ""))
        out.append(SeriesRun(run.run_id, run.record.started_at, model, at.figures))
    return out


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


COLUMNS: tuple[Column[SeriesRun], ...] = (
    Column("run id", lambda r: r.run_id, priority=HEADLINE, right=False),
    Column("started", lambda r: _when(r.started_at), priority=9, right=False),
    Column("model", lambda r: r.model, priority=6, right=False),
    Column("rate/s", lambda r: f"{r.figures.target_rate:g}", priority=5),
    Column("p50 ms", lambda r: ms(r.figures.latency_schedule.get(50.0)), priority=7),
    Column("p95 ms", lambda r: ms(r.p95), priority=HEADLINE),
    Column("p99 ms", lambda r: ms(r.figures.latency_schedule.get(99.0)), priority=8),
    Column("errors", lambda r: pct(r.figures.error_share, decimals=1), priority=9),
    Column("429s", lambda r: pct(r.figures.share("rate_limited"), decimals=1), priority=9),
)


def compare_load_runs(db: str | None, run: str, other: str | None, as_json: bool, console: Console, *,
                      sweep_flags: Sequence[str] = ()) -> int | None:
    """Print the comparison of load runs; None when RUN is a sweep (the caller compares sweeps). `sweep_flags`: the
    flags given that only a comparison of sweeps reads (refused here, not ignored)."""
    with Store(db, read_only=True) as store:
        ids = load_ids(store, run, other)
        if ids is None:
            return None
        if sweep_flags:
            raise PlanError(f"compare: {', '.join(sweep_flags)} compare the models of sweeps; load runs are compared "
                            "run by run: drop them")
        rows = series_rows(store, ids)
    models = {r.model for r in rows}
    s = spread(rows) if len(models) == 1 else None
    columns = COLUMNS if len(models) == 1 else tuple(  # runs of different models: which is which comes first
        dataclasses.replace(c, priority=HEADLINE) if c.title == "model" else c for c in COLUMNS)
    if as_json:
        out: dict[str, Any] = {"runs": [{
            "run_id": r.run_id, "started_at": r.started_at, "model": r.model, "rate": _num(r.figures.target_rate),
            "latency_ms": {f"p{p:g}": _num(r.figures.latency_schedule.get(p)) for p in (50.0, 95.0, 99.0)},
            "error_share": _num(r.figures.error_share), "rate_limited_share": _num(r.figures.share("rate_limited")),
        } for r in rows], "spread": None if s is None else {
            "ratio": _num(s.ratio), "slowest": s.slowest.run_id, "fastest": s.fastest.run_id, "text": s.words}}
        console.print(json.dumps(out, indent=2), markup=False, highlight=False)
        return 0
    console.print("Load runs, latencies from schedule (what a user arriving then waited):", markup=False)
    console.print(table_for_width(columns, rows, console.width, elsewhere=""))
    if s is not None:
        console.print(f"Spread: {s.words}", markup=False, soft_wrap=True)
    elif len(models) > 1:
        console.print(f"No spread: the runs loaded different models ({', '.join(sorted(models))}).", markup=False)
    else:
        console.print("No spread: fewer than two runs measured a p95.", markup=False)
    return 0

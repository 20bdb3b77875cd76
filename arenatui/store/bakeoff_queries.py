"""The SQL of bake-offs: load runs linked as a series, a saved decision, and refusals per case.

A series of load runs is every run with the same `runs.series_id` (`arena load --repeat`); users may list one:

    SELECT run_id, started_at, status FROM runs WHERE series_id = '<id>' ORDER BY started_at;
"""

from __future__ import annotations

import json
import time
from typing import Any

from arenatui.kernel.errors import PlanError
from arenatui.store.db import Store


def set_series(store: Store, run_id: str, series_id: str) -> None:
    store.conn.execute("UPDATE runs SET series_id = ? WHERE run_id = ?", (series_id, run_id))


def series_of(store: Store, run_id: str) -> str | None:
    row = store.conn.execute("SELECT series_id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return None if row is None else row[0]


def series_runs(store: Store, series_id: str) -> list[str]:
    """The run ids of a series, oldest first."""
    return [r[0] for r in store.conn.execute("SELECT run_id FROM runs WHERE series_id = ? ORDER BY started_at, rowid",
                                             (series_id,))]


def series_of_runs(store: Store, run_ids: list[str]) -> dict[str, str]:
    """Per run id of those in a series: its series id."""
    out: dict[str, str] = {}
    for rid in run_ids:
        sid = series_of(store, rid)
        if sid:
            out[rid] = sid
    return out


def load_runs_of_project(store: Store, project: str, model_key: str | None = None) -> list[str]:
    """Finished load runs of a project (optionally of one model), newest first."""
    rows = store.conn.execute("SELECT run_id, filters_json FROM runs WHERE kind = 'load' AND project = ? AND status = "
                              "'finished' ORDER BY started_at DESC, rowid DESC", (project,)).fetchall()
    return [rid for rid, f in rows if model_key is None or json.loads(f).get("model") == model_key]


def newest_sweep(store: Store) -> str:
    """The newest sweep's run id: what 'last' means where only a sweep will do (a bake-off, a report beside load
    runs), since the load runs made after the sweep are newer; none stored is bad input (exit 2)."""
    from arenatui.store.queries import last_run

    if store.conn.execute("SELECT 1 FROM runs WHERE kind != 'load' LIMIT 1").fetchone() is None:
        raise PlanError(f"no sweep is stored in {str(store.path)!r}, so there is no 'last' one to decide on; run "
                        "one first (arena evaluate --project P), or pass --db to the database that holds it")
    return last_run(store, "sweep").run_id


def save_decision(store: Store, run_id: str, load_runs: list[str], page: dict[str, Any]) -> None:
    """Keep a bake-off's page with the sweep it judged (the latest replaces an earlier one)."""
    with store.conn:
        store.conn.execute("INSERT OR REPLACE INTO bakeoff_decisions (run_id, made_at, load_runs, page_json) VALUES "
                           "(?, ?, ?, ?)", (run_id, time.time(), json.dumps(load_runs),
                                            json.dumps(page, allow_nan=False)))


def stored_decision(store: Store, run_id: str) -> tuple[float, dict[str, Any]]:
    """(when it was made, the page) of a run's saved bake-off ('last': the newest saved); none saved is bad input
    (exit 2)."""
    if run_id == "last":
        last = store.conn.execute("SELECT run_id FROM bakeoff_decisions ORDER BY made_at DESC LIMIT 1").fetchone()
        if last is None:
            raise PlanError(f"no bake-off decision is saved in {str(store.path)!r} yet; make one with: arena bakeoff "
                            "RUN [--load LOAD_RUN,...]")
        run_id = last[0]
    row = store.conn.execute("SELECT made_at, page_json FROM bakeoff_decisions WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise PlanError(f"run {run_id} has no saved bake-off decision; make one with: arena bakeoff {run_id} "
                        "[--load LOAD_RUN,...]")
    return float(row[0]), json.loads(row[1])


def modes_by_case(store: Store, run_id: str, mode: str) -> dict[str, dict[str, int]]:
    """Per model, per case id: its calls that ended in failure mode `mode` (a refusal, say)."""
    out: dict[str, dict[str, int]] = {}
    for mk, cid, n in store.conn.execute("SELECT model_key, case_id, COUNT(*) FROM results WHERE run_id = ? AND "
                                         "failure_mode = ? GROUP BY 1, 2", (run_id, mode)):
        out.setdefault(str(mk), {})[str(cid)] = int(n)
    return out

"""The watcher's reads of a run another process is writing: each table's new rows by rowid (a WAL reader never blocks
the writer), the rows a resume rewrites in place, and the run's recorded end."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from arenatui.kernel.events import CallResult
from arenatui.store.schema import RESULT_COLUMNS

FOLD_BATCH = 20_000
"""Rows read per table per refresh at most: a watcher opened on a long run shows at once and catches up over the
next refreshes (reading and folding a stored call costs ~30 us: 20,000 keep a frame under ~0.6 s)."""

CALL_FIELDS = tuple(f for f in CallResult._fields[1:] if f in RESULT_COLUMNS and f != "reasoning")
"""A CallResult's fields after its lane key that the results table holds as they are (its reasoning, which no live
figure reads, is left out); a prefix of CallResult's fields, so a row builds one positionally."""
assert CallResult._fields[1:len(CALL_FIELDS) + 1] == CALL_FIELDS, "a results column moved within CallResult"
_UNREAD = ("output", "score_detail")
"""Columns no live figure reads, read as NULL: an answer can be kilobytes, and a watcher reads every row."""
_RESULT = "model_key, variant, " + ", ".join("NULL" if f in _UNREAD else f for f in CALL_FIELDS)
_RETRY = "model_key, variant, case_id, trial, attempt, error_class, delay_s, message, at, http_status"
_JUDGMENT = ("model_key, variant, case_id, trial, judge_key, status, score, passed, error_class, error_message, "
             "NULL, attempts, latency_ms, total_ms, input_tokens, output_tokens, cost, started_at, finished_at, "
             "score_detail")

FOLLOWED = ("results", "failed_attempts", "judgments", "concurrency_changes", "tuning_decisions", "client_load")
"""The tables a watcher follows, each with its own rowid cursor."""


def rows_since(conn: sqlite3.Connection, table: str, columns: str, run_id: str, after: int,
               where: str = "", limit: int = FOLD_BATCH) -> list[tuple[Any, ...]]:
    """(rowid, *columns) of `table`'s rows of the run with a rowid above `after`, in rowid order."""
    assert table in (*FOLLOWED, "load_requests")
    # `+run_id`: keeps SQLite off the (run_id, ...) key's index, which would scan every row of the run each time;
    # the rowid range is a seek to the new rows only (1,000,000 stored calls cost a watcher nothing per refresh)
    return conn.execute(f"SELECT rowid, {columns} FROM {table} WHERE rowid > ? AND +run_id = ? {where} "
                        f"ORDER BY rowid LIMIT ?", (after, run_id, limit)).fetchall()


def new_results(conn: sqlite3.Connection, run_id: str, after: int) -> list[tuple[Any, ...]]:
    """(rowid, model_key, variant, *CALL_FIELDS) of the run's results stored after rowid `after`."""
    return rows_since(conn, "results", _RESULT, run_id, after)


def resumed_results(conn: sqlite3.Connection, rowids: Sequence[int]) -> list[tuple[Any, ...]]:
    """new_results' rows of calls stored 'cancelled' that now hold a result (a resume rewrote them in place)."""
    marks = ", ".join("?" for _ in rowids)
    return conn.execute(f"SELECT rowid, {_RESULT} FROM results WHERE rowid IN ({marks}) "
                        "AND error_class IS NOT 'cancelled'", tuple(rowids)).fetchall()


def new_retries(conn: sqlite3.Connection, run_id: str, after: int) -> list[tuple[Any, ...]]:
    """(rowid, model_key, variant, case_id, trial, attempt, reason, delay_s, message, at, http_status) of the run's
    retried attempts (those that slept before the next one) stored after rowid `after`."""
    return rows_since(conn, "failed_attempts", _RETRY, run_id, after, "AND delay_s IS NOT NULL")


def new_judgments(conn: sqlite3.Connection, run_id: str, after: int) -> list[tuple[Any, ...]]:
    """(rowid, model_key, variant, case_id, trial, judge_key, then the judge call's CallResult fields from status)."""
    return rows_since(conn, "judgments", _JUDGMENT, run_id, after)


def new_concurrency_changes(conn: sqlite3.Connection, run_id: str, after: int) -> list[tuple[Any, ...]]:
    """(rowid, at, old, new, model_key, source)."""
    return rows_since(conn, "concurrency_changes", "at, old, new, model_key, source", run_id, after)


def new_tuning_decisions(conn: sqlite3.Connection, run_id: str, after: int) -> list[tuple[Any, ...]]:
    """(rowid, at, model_key, old, new, reason)."""
    return rows_since(conn, "tuning_decisions", "at, model_key, old, new, reason", run_id, after)


def new_client_load(conn: sqlite3.Connection, run_id: str, after: int) -> list[tuple[Any, ...]]:
    """(rowid, at, cpu, interval_s)."""
    return rows_since(conn, "client_load", "at, cpu, interval_s", run_id, after)


def run_end(conn: sqlite3.Connection, run_id: str) -> str | None:
    """How the run ended as its runs row says ('finished', 'cancelled', 'failed'); None while it runs (a resume
    runs it again) or when the row is missing."""
    row = conn.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return None if row is None or row[0] == "running" else str(row[0])

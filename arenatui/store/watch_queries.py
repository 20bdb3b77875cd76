"""The watcher's reads of a run another process is writing: each table's new rows by rowid (a WAL reader never blocks
the writer), the rows a resume rewrites in place, and the run's recorded end."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
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


TAIL = 5_000
"""The newest stored calls a watcher opening on a run folds one by one (the rates over the 10 s window, the per-lane
sparklines, the newest latencies: whole at up to 500 calls/s), every older one it reads as SQL aggregates."""


@dataclass(frozen=True, slots=True)
class StoredSoFar:
    """A run's rows up to the moment a watcher opens, as aggregates read in one read transaction (one snapshot, so
    a verdict and the candidate row it rewrote are both in it or both not), and where to follow from."""

    cursors: dict[str, int]
    """Per followed table, the last rowid the aggregates hold: new_* reads go on from there."""
    results: list[tuple[Any, ...]]
    """Per cell (model_key, variant, case_id): calls passed, failed, errored, unscored, unreachable, cancelled;
    then, cancelled calls left out, cost, input_tokens, output_tokens, reasoning_tokens, estimated, truncated,
    score_sum; and failed calls whose failure mode is one of `no_text` (an answer with no text: the matrix's ∅)."""
    misses: list[tuple[Any, ...]]
    """Calls that did not pass (cancelled ones left out) per (model_key, variant, status, failure_mode, error_class,
    an errored call's error_message), and how many."""
    done_per_s: list[tuple[int, int]]
    """(second since `t0`, calls finished in it)."""
    retries: list[tuple[str, str, int, int]]
    """Retried attempts per lane: (model_key, variant, retries, of which rate limited)."""
    retries_per_s: list[tuple[int, int]]
    judgments: list[tuple[Any, ...]]
    """Judge calls per (judge_key, case_id, status): (judge_key, case_id, status, error_class, calls, cost,
    input_tokens, output_tokens, attempts)."""
    awaiting: list[tuple[str, str, str, int]]
    """(model_key, variant, case_id, trial) of answers stored unscored, awaiting their judge's verdict."""
    cancelled: list[tuple[Any, ...]]
    """new_results' rows of the calls stored 'cancelled' (a resume rewrites them in place: followed one by one)."""
    open_retries: list[tuple[Any, ...]]
    """new_retries' rows of calls with no result among the aggregated ones (backing off, or finished in the tail)."""


def stored_so_far(conn: sqlite3.Connection, run_id: str, t0: float, truncated: Sequence[str],
                  no_text: Sequence[str] = ()) -> StoredSoFar:
    """The run's stored rows as StoredSoFar, all but the newest TAIL calls (`truncated`: the finish reasons of an
    answer cut at the token limit; `no_text`: the failure modes of an answer with no text)."""
    conn.execute("BEGIN")  # one snapshot for every read below (a WAL reader's transaction never blocks the writer)
    try:
        top = {t: conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {t}").fetchone()[0] for t in FOLLOWED}
        # results: up to the TAIL-th newest of the run's rows (a backward seek over rowids)
        row = conn.execute("SELECT rowid FROM results WHERE +run_id = ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                           (run_id, TAIL)).fetchone()
        upto = row[0] if row is not None else 0
        marks = ", ".join("?" for _ in truncated) or "NULL"
        where = "WHERE rowid <= ? AND +run_id = ?"
        # per cell, through the key's index (its order is the grouping: no sort of a million rows, 0.4 s against
        # 1.1 s grouped by status too); cancelled calls are read one by one (a resume rewrites them in place)
        kept = "error_class IS NOT 'cancelled'"
        results = conn.execute(
            f"SELECT model_key, variant, case_id, SUM(status = 'passed'), SUM(status = 'failed'), "
            f"SUM(status = 'errored' AND {kept}), SUM(status = 'unscored'), SUM(status = 'unreachable'), "
            f"SUM(NOT {kept}), SUM(IIF({kept}, cost, 0)), SUM(IIF({kept}, input_tokens, 0)), "
            f"SUM(IIF({kept}, output_tokens, 0)), SUM(IIF({kept}, COALESCE(reasoning_tokens, 0), 0)), "
            f"SUM(IIF({kept}, tokens_estimated, 0)), SUM({kept} AND finish_reason IN ({marks})), "
            f"SUM(IIF({kept}, COALESCE(score, 0), 0)), "
            f"SUM(status = 'failed' AND failure_mode IN ({', '.join('?' for _ in no_text) or 'NULL'})) "
            f"FROM results WHERE run_id = ? AND rowid <= ? "
            f"GROUP BY model_key, variant, case_id", (*truncated, *no_text, run_id, upto)).fetchall()
        # what the calls that did not pass were: their failure modes and errors
        misses = conn.execute(
            f"SELECT model_key, variant, status, failure_mode, error_class, IIF(status IN ('errored', "
            f"'unreachable'), error_message, NULL), COUNT(*) FROM results WHERE run_id = ? AND rowid <= ? AND "
            f"status != 'passed' AND {kept} GROUP BY 1, 2, 3, 4, 5, 6", (run_id, upto)).fetchall()
        done_per_s = conn.execute(f"SELECT CAST(MAX(0, finished_at - ?) AS INTEGER), COUNT(*) FROM results {where} "
                                  f"AND {kept} GROUP BY 1", (t0, upto, run_id)).fetchall()
        where_all = "WHERE rowid <= ? AND +run_id = ?"
        # a retried attempt of a call whose result is among the aggregated ones is a count; one of a call still
        # backing off (or whose result is in the tail) is folded as the event it was, which puts the call in backoff
        settled = ("EXISTS (SELECT 1 FROM results r WHERE r.run_id = f.run_id AND r.model_key = f.model_key AND "
                   "r.variant = f.variant AND r.case_id = f.case_id AND r.trial = f.trial AND r.rowid <= ?)")
        retries = conn.execute(f"SELECT model_key, variant, COUNT(*), SUM(error_class = 'rate_limited') FROM "
                               f"failed_attempts f {where_all} AND delay_s IS NOT NULL AND {settled} GROUP BY 1, 2",
                               (top["failed_attempts"], run_id, upto)).fetchall()
        retries_per_s = conn.execute(f"SELECT CAST(MAX(0, at - ?) AS INTEGER), COUNT(*) FROM failed_attempts f "
                                     f"{where_all} AND delay_s IS NOT NULL AND {settled} GROUP BY 1",
                                     (t0, top["failed_attempts"], run_id, upto)).fetchall()
        open_retries = conn.execute(f"SELECT rowid, {_RETRY} FROM failed_attempts f {where_all} AND delay_s IS NOT "
                                    f"NULL AND NOT {settled} ORDER BY rowid",
                                    (top["failed_attempts"], run_id, upto)).fetchall()
        judgments = conn.execute(f"SELECT judge_key, case_id, status, error_class, COUNT(*), SUM(cost), "
                                 f"SUM(input_tokens), SUM(output_tokens), SUM(attempts) FROM judgments {where_all} "
                                 "GROUP BY 1, 2, 3, 4", (top["judgments"], run_id)).fetchall()
        awaiting = conn.execute(f"SELECT model_key, variant, case_id, trial FROM results {where} "
                                "AND status = 'unscored' AND failure_mode = 'awaiting_judge'", (upto, run_id)
                                ).fetchall() if any(r[6] for r in results) else []
        cancelled_rows = conn.execute(f"SELECT rowid, {_RESULT} FROM results {where} AND error_class = 'cancelled'",
                                      (upto, run_id)).fetchall() if any(r[8] for r in results) else []
    finally:
        conn.execute("COMMIT")
    cursors = dict.fromkeys(FOLLOWED, 0)
    cursors.update(results=upto, failed_attempts=top["failed_attempts"], judgments=top["judgments"])
    return StoredSoFar(cursors, results, misses, done_per_s, retries, retries_per_s, judgments, awaiting,
                       cancelled_rows, open_retries)



def new_load_requests(conn: sqlite3.Connection, run_id: str, after: int) -> list[tuple[Any, ...]]:
    """(rowid, segment, warmup, scheduled_s, sent_s, finished_s, outcome, ttft_ms, latency_ms, output_tokens) of a
    load run's requests stored after rowid `after`."""
    return rows_since(conn, "load_requests", "segment, warmup, scheduled_s, sent_s, finished_s, outcome, ttft_ms, "
                      "latency_ms, output_tokens", run_id, after)

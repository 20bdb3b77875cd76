"""The SQL of load runs: one row per request (`load_requests`), one per segment, and the run kind.

Users may query these tables directly, like `results`. The load requests of a run, slowest first by what
a user waited (from schedule):

    SELECT seq, outcome, latency_ms, (sent_s - scheduled_s) * 1000 AS lag_ms,
           latency_ms + (sent_s - scheduled_s) * 1000 AS from_schedule_ms
    FROM load_requests WHERE run_id = '<id>' ORDER BY from_schedule_ms DESC LIMIT 20;
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arenatui.store.db import Store

LOAD_REQUEST_COLUMNS = (
    "run_id", "seq", "segment", "shard", "case_id", "warmup", "scheduled_s", "sent_s", "finished_s", "outcome",
    "ttft_ms", "latency_ms", "input_tokens", "output_tokens", "error_message",
)
INSERT_LOAD_REQUEST = (f"INSERT OR REPLACE INTO load_requests ({', '.join(LOAD_REQUEST_COLUMNS)}) "
                       f"VALUES ({', '.join('?' for _ in LOAD_REQUEST_COLUMNS)})")
UPSERT_LOAD_SEGMENT = ("INSERT OR REPLACE INTO load_segments (run_id, segment, rate, start_s, end_s, warmup_s, source, "
                       "dropped) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")


def mark_load_run(store: Store, run_id: str) -> None:
    store.conn.execute("UPDATE runs SET kind = 'load' WHERE run_id = ?", (run_id,))


def run_kinds(store: Store, run_ids: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Per run id: its kind ('sweep' or 'load') and, for a load run, how many requests are stored."""
    out: dict[str, tuple[str, int]] = {}
    for rid in run_ids:
        row = store.conn.execute("SELECT kind FROM runs WHERE run_id = ?", (rid,)).fetchone()
        kind = row[0] if row else "sweep"
        n = 0
        if kind == "load":
            (n,) = store.conn.execute("SELECT COUNT(*) FROM load_requests WHERE run_id = ? AND outcome != "
                                      "'cancelled'", (rid,)).fetchone()
        out[rid] = (kind, int(n))
    return out


def read_requests(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """Every stored request of a load run in LOAD_REQUEST_COLUMNS order (without run_id), by finish time."""
    cols = ", ".join(LOAD_REQUEST_COLUMNS[1:])
    return store.conn.execute(f"SELECT {cols} FROM load_requests WHERE run_id = ? ORDER BY finished_s, seq",
                              (run_id,)).fetchall()


def read_segments(store: Store, run_id: str) -> list[tuple[int, float, float, float, float, str, int]]:
    """(segment, rate, start_s, end_s, warmup_s, source, dropped) of a load run, in order."""
    return store.conn.execute("SELECT segment, rate, start_s, end_s, warmup_s, source, dropped FROM load_segments "
                              "WHERE run_id = ? ORDER BY segment", (run_id,)).fetchall()


def load_run_named(store: Store, run: str) -> tuple[str, str] | None:
    """(run id, project) when RUN names a load run, else None (a sweep)."""
    from arenatui.store.queries import resolve_run

    rec = resolve_run(store, run)
    return (rec.run_id, rec.project) if run_kinds(store, [rec.run_id])[rec.run_id][0] == "load" else None

"""The SQL of sharded runs: each shard's own row (`run_shards`), its start-barrier figures, and shard counts.

A shard writes one row about itself when its run is recorded and completes it when the run ends; `arena merge`
carries every shard's row into the merged database, so a merged run knows its shards and their start skew:

    SELECT shard, shards, host, status, start_lag_s * 1000 AS lag_ms, clock_offset_s * 1000 AS offset_ms
    FROM run_shards WHERE run_id = '<id>' ORDER BY shard;
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass

from arenatui.store.db import Store

SHARD_COLUMNS = ("run_id", "shard", "shards", "host", "status", "planned_start", "start_lag_s", "clock_offset_s",
                 "clock_error_s", "clock_source")


@dataclass(frozen=True, slots=True)
class ShardRecord:
    """One shard of a run, as the shard recorded it."""

    shard: int
    shards: int
    host: str | None
    status: str | None
    planned_start: float | None
    """The start barrier's instant (epoch seconds), None without one."""
    start_lag_s: float | None
    """How late the shard sent its first request after its scheduled time (its own clock), None for a sweep."""
    clock_offset_s: float | None
    """The shard's clock offset estimate (the kernel's NTP discipline), None when unknown."""
    clock_error_s: float | None
    """The estimate's own error bound, None when unknown."""
    clock_source: str | None


def record_shard(store: Store, run_id: str, shard: int, shards: int, planned_start: float | None = None) -> None:
    store.conn.execute(
        "INSERT OR REPLACE INTO run_shards (run_id, shard, shards, host, status, planned_start) "
        "VALUES (?, ?, ?, ?, 'running', ?)", (run_id, shard, shards, socket.gethostname(), planned_start))


def finish_shard(store: Store, run_id: str, status: str,
                 clock: tuple[float | None, float | None, str | None]) -> None:
    """The shard's end: its status, its clock estimate (offset, error, source), and for a load shard its start
    lag, measured from its stored requests (the earliest scheduled one: how late it went out)."""
    lag = store.conn.execute(
        "SELECT sent_s - scheduled_s FROM load_requests WHERE run_id = ? ORDER BY scheduled_s, seq LIMIT 1",
        (run_id,)).fetchone()
    store.conn.execute(
        "UPDATE run_shards SET status = ?, start_lag_s = ?, clock_offset_s = ?, clock_error_s = ?, clock_source = ? "
        "WHERE run_id = ?", (status, lag[0] if lag else None, *clock, run_id))


def run_shards(store: Store, run_id: str) -> list[ShardRecord]:
    rows = store.conn.execute(f"SELECT {', '.join(SHARD_COLUMNS[1:])} FROM run_shards WHERE run_id = ? "
                              "ORDER BY shard", (run_id,)).fetchall()
    return [ShardRecord(*r) for r in rows]


def shard_counts(store: Store, run_ids: Sequence[str]) -> dict[str, tuple[int, int, int]]:
    """Per sharded run id: (shards held here, the run's shard count, the lowest shard index held)."""
    out: dict[str, tuple[int, int, int]] = {}
    for rid in run_ids:
        row = store.conn.execute("SELECT COUNT(*), MAX(shards), MIN(shard) FROM run_shards WHERE run_id = ?",
                                 (rid,)).fetchone()
        if row and row[0]:
            out[rid] = (int(row[0]), int(row[1]), int(row[2]))
    return out

"""Persist finished calls off the event path: rows queue in memory and a thread commits them in groups.

Group commit: when the writer is idle a row is committed at once; under load rows gather while the
previous batch commits, with at least `min_interval_s` between commits. So at low rates nothing
waits, and at 100,000 calls/s SQLite sees a few dozen `executemany` batches a second.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio

from arenatui.engine.events import CallFinished, ConcurrencyChanged, Event
from arenatui.store.db import Store, result_row


class ResultWriter:
    def __init__(self, db_path: Path | str, run_id: str, *, min_interval_s: float = 0.02) -> None:
        self.store = Store(db_path)
        self.run_id = run_id
        self.min_interval_s = min_interval_s
        self._rows: list[tuple[Any, ...]] = []
        self._changes: list[ConcurrencyChanged] = []
        self._wake = anyio.Event()
        self._signalled = False
        self._closing = False
        self.written = 0
        self.batches = 0

    def on_event(self, ev: Event) -> None:
        """Sink for the engine: O(1), no I/O."""
        if type(ev) is CallFinished:
            self._rows.append(result_row(self.run_id, ev.result))
        elif type(ev) is ConcurrencyChanged:
            self._changes.append(ev)
        else:
            return
        if not self._signalled:
            self._signalled = True
            self._wake.set()

    def _write(self, rows: list[tuple[Any, ...]], changes: list[ConcurrencyChanged]) -> None:
        if changes:
            for ch in changes:
                self.store.write_concurrency_change(self.run_id, ch)
        self.store.write_rows(rows)
        self.written += len(rows)
        self.batches += 1

    def _take(self) -> tuple[list[tuple[Any, ...]], list[ConcurrencyChanged]]:
        rows, self._rows = self._rows, []
        changes, self._changes = self._changes, []
        self._signalled = False
        self._wake = anyio.Event()
        return rows, changes

    async def run(self) -> None:
        """Commit until `stop()`; whatever is queued when this ends (even by cancellation) is committed."""
        try:
            while not self._closing:
                await self._wake.wait()
                rows, changes = self._take()
                t = time.monotonic()
                if rows or changes:
                    await anyio.to_thread.run_sync(self._write, rows, changes)
                rest = self.min_interval_s - (time.monotonic() - t)
                if rest > 0 and not self._closing:
                    await anyio.sleep(rest)
        finally:
            self.flush()

    def flush(self) -> None:
        """Commit what is queued, synchronously (used at shutdown and by tests)."""
        rows, changes = self._take()
        if rows or changes:
            self._write(rows, changes)

    def stop(self) -> None:
        self._closing = True
        self._wake.set()

    def close(self) -> None:
        self.flush()
        self.store.close()

"""Persist finished calls off the event path: results queue in memory and a writer process commits them.

Why a process: SQLite costs ≈ 40,000 instructions per result row (21 columns, a unique key), a
fifth of everything the engine does per call at zero latency. A thread does not help (the busy
event loop holds the GIL, and the thread needs it back after every row: in a 100,000-call run it
managed 3 commits). A child process commits on the other core; this side only `marshal`s each
batch (≈ 6,000 instructions a row) and writes it to a pipe.

It also makes finished calls safer: when the engine's process dies, even by SIGKILL, the writer
process still commits every batch it was sent. What is lost is at most the last
`min_interval_s` of results not yet sent, plus the calls in flight.

Group commit: when the writer is idle a result is sent at once; under load results gather for
at least `min_interval_s` between batches.
"""

from __future__ import annotations

import fcntl
import marshal
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from arenatui.engine.events import (
    CallFinished,
    CallResult,
    CallRetrying,
    ClientLoadSampled,
    ConcurrencyChanged,
    Event,
    TunerDecided,
)
from arenatui.errors import StoreError
from arenatui.store.db import (
    INSERT_CLIENT_LOAD,
    INSERT_CONCURRENCY_CHANGE,
    INSERT_FAILED_ATTEMPT,
    INSERT_TUNING_DECISION,
    UPSERT_RESULT,
    Store,
    client_load_row,
    concurrency_change_row,
    final_attempt_row,
    result_row,
    retry_row,
)

_SINK = Path(__file__).with_name("sink_process.py")
_PIPE_BYTES = 1 << 20
"""Pipe buffer asked of Linux (F_SETPIPE_SZ): a second of results at 30,000 calls/s never blocks the loop."""


class ResultWriter:
    def __init__(self, db_path: Path | str, run_id: str, *, min_interval_s: float = 0.02) -> None:
        self.db_path = Path(db_path)
        Store(self.db_path).close()  # create and migrate before the child opens it
        self.run_id = run_id
        self.min_interval_s = min_interval_s
        self._rows: list[CallResult] = []
        self._changes: list[ConcurrencyChanged | ClientLoadSampled] = []
        """Rare run-level events, written in order with the next batch."""
        self._retries: list[tuple[CallRetrying, float]] = []
        """Failed attempts that were retried, with the epoch time they failed."""
        self._decisions: list[tuple[Any, ...]] = []
        """The auto-tuner's decisions as rows (rare: a few a minute)."""
        self._wake: anyio.Event | None = None
        self._signalled = False
        self._closing = False
        self._closed = False
        self.written = 0
        """Results handed to the writer process."""
        self.batches = 0
        self._acked = 0
        self._proc = subprocess.Popen(
            [sys.executable, str(_SINK), str(self.db_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._in = self._proc.stdin
        self._out_fd = self._proc.stdout.fileno()
        os.set_blocking(self._out_fd, False)
        try:
            fcntl.fcntl(self._in.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_BYTES)
        except OSError:
            pass  # a smaller pipe only means a busy writer can briefly block a send

    def on_event(self, ev: Event) -> None:
        """Sink for the engine: O(1), no I/O."""
        if type(ev) is CallFinished:
            self._rows.append(ev.result)  # the row is built when the batch is sent, off the event path
        elif type(ev) is ConcurrencyChanged or type(ev) is ClientLoadSampled:
            self._changes.append(ev)
        elif type(ev) is CallRetrying:
            self._retries.append((ev, time.time()))
        elif type(ev) is TunerDecided:
            self._decisions.append((self.run_id, time.time(), ev.model_key, ev.old, ev.new, ev.reason))
        else:
            return
        if not self._signalled:
            self._signalled = True
            if self._wake is not None:
                self._wake.set()

    def _send(self, results: list[CallResult], changes: list[ConcurrencyChanged | ClientLoadSampled],
              retries: Sequence[tuple[CallRetrying, float]] = ()) -> None:
        run_id = self.run_id
        statements: list[tuple[str, list[tuple[Any, ...]]]] = []
        cc = [concurrency_change_row(run_id, ch) for ch in changes if type(ch) is ConcurrencyChanged]
        if cc:
            statements.append((INSERT_CONCURRENCY_CHANGE, cc))
        loads = [client_load_row(run_id, ch) for ch in changes if type(ch) is ClientLoadSampled]
        if loads:
            statements.append((INSERT_CLIENT_LOAD, loads))
        if results:
            statements.append((UPSERT_RESULT, [result_row(run_id, r) for r in results]))
        # every failed attempt: the retried ones, then the one that ended each errored call
        attempts = [retry_row(run_id, ev, at) for ev, at in retries]
        attempts += [final_attempt_row(run_id, r) for r in results
                     if r.error_class is not None and r.error_class != "cancelled"]
        if attempts:
            statements.append((INSERT_FAILED_ATTEMPT, attempts))
        if self._decisions:
            decisions, self._decisions = self._decisions, []
            statements.append((INSERT_TUNING_DECISION, decisions))
        payload = marshal.dumps(statements)
        try:
            self._in.write(len(payload).to_bytes(4, "little") + payload)
            self._in.flush()
        except (BrokenPipeError, ValueError):
            raise self._failed() from None
        self.written += len(results)
        self.batches += 1

    def _failed(self) -> StoreError:
        self._proc.wait(timeout=10)
        err = self._proc.stderr.read().decode(errors="replace").strip() if self._proc.stderr else ""
        last = err.splitlines()[-1] if err else f"exit code {self._proc.returncode}"
        return StoreError(f"the results writer for {str(self.db_path)!r} stopped ({last}); results not yet "
                          "committed are lost, everything before is stored")

    def _read_acks(self) -> None:
        try:
            got = os.read(self._out_fd, 65536)
        except BlockingIOError:
            return
        if not got and self._proc.poll() is not None:
            raise self._failed()
        self._acked += len(got)

    def _take(self) -> tuple[list[CallResult], list[ConcurrencyChanged | ClientLoadSampled],
                             list[tuple[CallRetrying, float]]]:
        rows, self._rows = self._rows, []
        changes, self._changes = self._changes, []
        retries, self._retries = self._retries, []
        self._signalled = False
        self._wake = None
        return rows, changes, retries

    async def run(self) -> None:
        """Send until `stop()`; whatever is queued when this ends (even by cancellation) is committed."""
        try:
            while not self._closing:
                if not self._signalled:
                    self._wake = anyio.Event()
                    await self._wake.wait()
                rows, changes, retries = self._take()
                t = time.monotonic()
                if rows or changes or retries or self._decisions:
                    self._send(rows, changes, retries)
                self._read_acks()
                rest = self.min_interval_s - (time.monotonic() - t)
                if rest > 0 and not self._closing:
                    await anyio.sleep(rest)
        finally:
            self.flush()

    def flush(self) -> None:
        """Send what is queued and wait until the writer process has committed everything sent."""
        rows, changes, retries = self._take()
        if rows or changes or retries or self._decisions:
            self._send(rows, changes, retries)
        deadline = time.monotonic() + 60.0
        while self._acked < self.batches:
            if self._proc.poll() is not None:
                self._read_acks()
                if self._acked < self.batches:
                    raise self._failed()
                break
            if time.monotonic() > deadline:
                raise StoreError(f"the results writer for {str(self.db_path)!r} did not commit within 60 s")
            try:
                self._acked += len(os.read(self._out_fd, 65536))
            except BlockingIOError:
                time.sleep(0.001)

    def stop(self) -> None:
        self._closing = True
        if self._wake is not None:
            self._wake.set()

    def close(self) -> None:
        """Commit everything and end the writer process."""
        if self._closed:
            return
        self._closed = True
        try:
            self.flush()
        finally:
            try:
                self._in.close()
            except BrokenPipeError:
                pass
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            if self._proc.stdout:
                self._proc.stdout.close()
            if self._proc.stderr:
                self._proc.stderr.close()

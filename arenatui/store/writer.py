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

A row the database refuses never costs its batch: the writer process retries it row by row and
reports what it repaired or left out (`problems`, read at `close`). A failure of the file itself
(disk full, corrupt, locked) ends it and reaches the person through `db.explain`. Every
HEARTBEAT_S a batch also renews the run's claim (Store.claim_run), so another host can tell a
live holder from a dead one. Once a second the sweep also `publish`es its live state (store.live_state),
sent with the next batch, a newer one replacing an unsent one: `arena watch` reads it.
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

from arenatui.kernel.errors import StoreError
from arenatui.kernel.events import (
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    Event,
    JudgeFinished,
    StepFinished,
    TunerDecided,
)
from arenatui.store.db import (
    EVENT_ROWS,
    HEARTBEAT,
    HEARTBEAT_S,
    INSERT_FAILED_ATTEMPT,
    INSERT_STEP,
    INSERT_TUNING_DECISION,
    JUDGED,
    UPSERT_JUDGMENT,
    UPSERT_RESULT,
    UPSERT_RETRYING,
    Store,
    explain,
    final_attempt_row,
    judgment_rows,
    result_rows,
    retry_row,
    step_row,
)

_SINK = Path(__file__).with_name("sink_process.py")
_PIPE_BYTES = 1 << 20
"""Pipe buffer asked of Linux (F_SETPIPE_SZ): a second of results at 30,000 calls/s never blocks the loop."""


class ResultWriter:
    def __init__(self, db_path: Path | str, run_id: str, *, min_interval_s: float = 0.02,
                 retry_errored: bool = False) -> None:
        self.db_path = Path(db_path)
        Store(self.db_path).close()  # create and migrate before the child opens it
        self.run_id = run_id
        self._upsert = UPSERT_RETRYING if retry_errored else UPSERT_RESULT
        """With --retry-errored, a call's new result replaces its stored errored one."""
        self.min_interval_s = min_interval_s
        self._rows: list[CallResult] = []
        self._hints: dict[tuple[str, str, int], tuple[float, str | None]] = {}
        """The retry-after of an errored call's last attempt (rare), by (model key, case, trial)."""
        self._changes: list[Event] = []
        """Rare run-level events, written in order with the next batch."""
        self._other: list[tuple[str, list[tuple[Any, ...]]]] = []
        """Rows of other tables (a load run's requests and segments) as (SQL, rows), committed with the next batch."""
        self._retries: list[tuple[CallRetrying, float]] = []
        """Failed attempts that were retried, with the epoch time they failed."""
        self._judged: list[JudgeFinished] = []
        """Judge calls that ended: their judgments, and their verdicts onto candidates' rows (after the results of
        the same batch, which may hold the candidate's row)."""
        self._steps: list[StepFinished] = []
        """Steps of calls with repairs or an escalation (call_steps): their rows are built when the batch is sent."""
        self._wake: anyio.Event | None = None
        self._signalled = False
        self._closing = False
        self._closed = False
        self.written = 0
        """Results handed to the writer process."""
        self.batches = 0
        self._acked = 0
        self.unclean_batches = 0
        """Batches the writer process committed only after repairing or leaving out some rows."""
        self.problems: list[str] = []
        """What the writer process reported when it ended: rows repaired or left out (read by `close`)."""
        self._beat_due = time.monotonic() + HEARTBEAT_S
        self._live: tuple[str, tuple[Any, ...]] | None = None
        """The run's latest live state (store.live_state), sent with the next batch: a newer one replaces it."""
        self._proc = subprocess.Popen(
            [sys.executable, str(_SINK), str(self.db_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
            # Its own process group: Ctrl-C, a closed terminal or `kill -- -PGID` reach only the engine's
            # process, which decides; the child also ignores those signals once started (sink_process.py).
            process_group=0,
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
            if ev.retry_after is not None:
                r = ev.result
                self._hints[r.model_key, r.case_id, r.trial] = (ev.retry_after, ev.retry_after_source)
            if ev.step is not None:  # the last step of a call with repairs or an escalation
                self._steps.append(ev.step)
        elif type(ev) is CallStarted:  # as common as CallFinished, and nothing to store
            return
        elif type(ev) is StepFinished:  # a step of a call that went on to a repair or an escalation
            self._steps.append(ev)
        elif type(ev) in EVENT_ROWS:
            self._changes.append(ev)
        elif type(ev) is CallRetrying:
            self._retries.append((ev, time.time()))
        elif type(ev) is JudgeFinished:
            self._judged.append(ev)
        elif type(ev) is TunerDecided:  # rare (a few a minute): a row of its own table
            self.on_rows(INSERT_TUNING_DECISION, [(self.run_id, time.time(), ev.model_key, ev.old, ev.new, ev.reason)])
            return
        else:
            return
        if not self._signalled:
            self._signalled = True
            if self._wake is not None:
                self._wake.set()

    def on_rows(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Queue rows of another table (SQL from arenatui.store): O(1), no I/O, committed with the next batch."""
        if self._other and self._other[-1][0] == sql:
            self._other[-1][1].extend(rows)  # one executemany per table and batch, not one per request
        else:
            self._other.append((sql, list(rows)))
        if not self._signalled:
            self._signalled = True
            if self._wake is not None:
                self._wake.set()

    def publish(self, sql: str, row: tuple[Any, ...]) -> None:
        """Queue the run's live state (one row, upserted): O(1), no I/O; only the latest is sent."""
        self._live = (sql, row)
        if not self._signalled:
            self._signalled = True
            if self._wake is not None:
                self._wake.set()

    def _send(self, results: list[CallResult], changes: list[Event],
              other: list[tuple[str, list[tuple[Any, ...]]]] | None = None,
              retries: Sequence[tuple[CallRetrying, float]] = (), judged: Sequence[JudgeFinished] = ()) -> None:
        run_id = self.run_id
        n = len(results)
        statements: list[tuple[str, list[tuple[Any, ...]]]] = list(other or ())
        by_kind: dict[type, list[tuple[Any, ...]]] = {}
        for ch in changes:  # in the order each kind first appeared
            by_kind.setdefault(type(ch), []).append(EVENT_ROWS[type(ch)][1](run_id, ch))
        statements += [(EVENT_ROWS[kind][0], rows) for kind, rows in by_kind.items()]
        # every failed attempt: the retried ones, then the one that ended each errored call
        attempts = [retry_row(run_id, ev, at) for ev, at in retries]
        hints = self._hints
        attempts += [final_attempt_row(run_id, r, hints.pop((r.model_key, r.case_id, r.trial), None) if hints else None)
                     for r in results
                     if r.error_class is not None and r.error_class != "cancelled"]
        if results:
            statements.append((self._upsert, result_rows(run_id, results)))
            # Emptied (the caller's list): the rows then hold the only references to the results' fresh values,
            # and marshal keeps a reference table only for objects referred to more than once (1.9k of the
            # engine's instructions per call, benchmarks/engine_against.py --instructions).
            results.clear()
        if attempts:
            statements.append((INSERT_FAILED_ATTEMPT, attempts))
        pairs = [p for p in (judgment_rows(run_id, ev) for ev in judged) if p is not None]
        if pairs:
            statements.append((UPSERT_JUDGMENT, [j for j, _u in pairs]))
            statements.append((JUDGED, [u for _j, u in pairs]))
        now = time.monotonic()
        if now >= self._beat_due:
            self._beat_due = now + HEARTBEAT_S
            statements.append((HEARTBEAT, [(time.time(), run_id, os.getpid())]))
        payload = marshal.dumps(statements)
        try:
            self._in.write(len(payload).to_bytes(4, "little") + payload)
            self._in.flush()
        except (BrokenPipeError, ValueError):
            raise self._failed() from None
        self.written += n
        self.batches += 1

    def _failed(self) -> StoreError:
        self._proc.wait(timeout=10)
        self._read_problems()
        for line in self.problems:
            if line.startswith("sink-error "):  # "sink-error SQLITE_FULL: database or disk is full"
                name, _, message = line.removeprefix("sink-error ").partition(": ")
                return explain(self.db_path, name, message)
        last = self.problems[-1] if self.problems else f"exit code {self._proc.returncode}"
        return StoreError(f"the results writer for {str(self.db_path)!r} stopped ({last}); results not yet "
                          "committed are lost, everything before is stored")

    def _read_problems(self) -> None:
        if self._proc.stderr is None or self._proc.stderr.closed:
            return
        err = self._proc.stderr.read().decode(errors="replace")
        self.problems += [line.strip() for line in err.splitlines() if line.strip()]

    def _count(self, acks: bytes) -> None:
        self._acked += len(acks)
        self.unclean_batches += acks.count(b"!")

    def _read_acks(self) -> None:
        try:
            got = os.read(self._out_fd, 65536)
        except BlockingIOError:
            return
        if not got and self._proc.poll() is not None:
            raise self._failed()
        self._count(got)

    def _take(self) -> tuple[list[CallResult], list[Event], list[tuple[str, list[tuple[Any, ...]]]],
                             list[tuple[CallRetrying, float]], list[JudgeFinished]]:
        rows, self._rows = self._rows, []
        changes, self._changes = self._changes, []
        other, self._other = self._other, []
        if self._live is not None:
            other.append((self._live[0], [self._live[1]]))
            self._live = None
        if self._steps:
            steps, self._steps = self._steps, []
            run_id = self.run_id
            other.append((INSERT_STEP, [step_row(run_id, ev) for ev in steps]))
        retries, self._retries = self._retries, []
        judged, self._judged = self._judged, []
        self._signalled = False
        self._wake = None
        return rows, changes, other, retries, judged

    async def run(self) -> None:
        """Send until `stop()`; whatever is queued when this ends (even by cancellation) is committed."""
        try:
            while not self._closing:
                if not self._signalled:
                    self._wake = anyio.Event()
                    with anyio.move_on_after(max(0.0, self._beat_due - time.monotonic())):
                        await self._wake.wait()
                rows, changes, other, retries, judged = self._take()
                t = time.monotonic()
                if rows or changes or other or retries or judged or t >= self._beat_due:
                    self._send(rows, changes, other, retries, judged)
                self._read_acks()
                rest = self.min_interval_s - (time.monotonic() - t)
                if rest > 0 and not self._closing:
                    await anyio.sleep(rest)
        finally:
            self.flush()

    def flush(self) -> None:
        """Send what is queued and wait until the writer process has committed everything sent."""
        rows, changes, other, retries, judged = self._take()
        if rows or changes or other or retries or judged:
            self._send(rows, changes, other, retries, judged)
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
                self._count(os.read(self._out_fd, 65536))
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
                self._proc.wait()
            self._read_problems()
            if self._proc.stdout:
                self._proc.stdout.close()
            if self._proc.stderr:
                self._proc.stderr.close()

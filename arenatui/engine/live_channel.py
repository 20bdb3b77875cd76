"""The running run's side of `arena watch`: its live state published once a second through the results writer, and
control requests from other processes (`arena control`, a watcher's keys) applied through the same `SweepControl`
the console steers with, each answered once ('applied' or 'refused' and why).

Cost to the engine: one small row a second and one indexed SELECT a second, in a worker thread (a WAL reader never
waits for the writer process).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from arenatui.engine.control import SweepControl
from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.store.db import Connection, connect_read_only
from arenatui.store.live_state import (
    ANSWER_REQUEST,
    HEARTBEAT_AT,
    LIVE_EVERY_S,
    UPSERT_LIVE_STATE,
    ControlRequest,
    LaneLive,
    live_state_row,
    pending_requests,
)

if TYPE_CHECKING:
    from arenatui.store.writer import ResultWriter
    from arenatui.tuning.controller import Tuner

Answer = tuple[str, str | None]
"""('applied' | 'refused', what was done or why not)."""


class LiveChannel:
    """`await run()` publishes and polls every `every_s` until `stop()`; `beat()` publishes at once."""

    def __init__(self, db_path: Path, run_id: str, writer: ResultWriter, control: SweepControl | None, *,
                 lanes: Callable[[], Mapping[str, LaneLive]], shard: str | None = None, kind: str = "sweep",
                 tuner: Tuner | None = None, toggle_tuner: Callable[[], bool] | None = None,
                 extra: Callable[[], Mapping[str, Any]] | None = None,
                 apply_other: Callable[[ControlRequest], Answer | None] | None = None,
                 every_s: float = LIVE_EVERY_S) -> None:
        self.db_path = db_path
        self.run_id = run_id
        self.writer = writer
        self.control = control
        self.lanes = lanes
        self.shard = shard
        self.kind = kind
        self.tuner = tuner
        self.toggle_tuner = toggle_tuner
        self.extra = extra
        self.apply_other = apply_other
        """A load run's own requests (its offered rate): None when the request is not one of them."""
        self.every_s = every_s
        self.started_at = time.time()
        self.answered: list[tuple[ControlRequest, Answer]] = []
        """Every request this session answered, in order."""
        self._last_id = 0
        self._conn: Connection | None = None
        self._stopped = False
        self._wake = anyio.Event()
        self.failures = 0
        self._said: tuple[Any, ...] | None = None
        """What the last beat's row says, but its time."""
        self._row: tuple[Any, ...] | None = None
        """Polls that could not read the database (a busy or moved file): the run goes on, unsteered."""

    def beat(self) -> None:
        c = self.control
        tuner = self.tuner
        tuning: list[tuple[object, ...]] = []
        extra: dict[str, Any] = dict(self.extra()) if self.extra is not None else {}
        if tuner is not None:
            from arenatui.tuning.levels import readout_rows

            tuning = readout_rows({r.model_key: r for r in tuner.readouts()}, tuner.caps())
            if tuner.enabled:
                extra["tuner_levels"] = {k: tuner.level(k) for k in tuner.caps()}
                extra["suspended"] = sorted(tuner.suspended)
        state = "running" if c is None else "stopping" if c.cancelled else "paused" if c.paused else "running"
        lanes = self.lanes()
        now = time.time()
        said = (state, None if c is None else c.target, c is not None and c.paused,
                bool(tuner is not None and tuner.enabled), lanes, tuning, extra)
        if self._row is not None and said == self._said:
            # nothing but the time changed (most seconds of a steady run): the row serialised last time, re-dated
            row = (*self._row[:HEARTBEAT_AT], now, *self._row[HEARTBEAT_AT + 1:])
        else:
            row = live_state_row(self.run_id, kind=self.kind, shard=self.shard, state=state, target=said[1],
                                 paused=said[2], tuner=said[3], lanes=lanes, tuning_rows=tuning, extra=extra, at=now)
            self._said = said
        self._row = row
        self.writer.publish(UPSERT_LIVE_STATE, row)

    async def run(self) -> None:
        while not self._stopped:
            self.beat()
            await self.poll()
            with anyio.move_on_after(self.every_s):
                await self._wake.wait()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    def _read(self) -> list[ControlRequest]:
        if self._conn is None:
            self._conn = connect_read_only(self.db_path)
        return pending_requests(self._conn, self.run_id, self._last_id)

    async def poll(self) -> None:
        """Apply the requests written since the last poll, in order, each once."""
        try:
            requests = await anyio.to_thread.run_sync(self._read)
        except Exception:  # the store's own failures reach the person through the writer; steering just waits
            self.failures += 1
            return
        for req in requests:
            if self._stopped:
                return
            self._last_id = req.id
            answer = self.apply(req)
            self.answered.append((req, answer))
            self.writer.on_rows(ANSWER_REQUEST, [(answer[0], answer[1], time.time(), req.id)])
        if requests:
            self.beat()  # the watcher sees the new level with the answer, not a second later

    def apply(self, req: ControlRequest) -> Answer:
        """One request through the control surface; the source of a level change names who asked."""
        c = self.control
        if req.asked_at < self.started_at - 1.0:
            return "refused", "asked before this session of the run started: ask again"
        if c is not None and c.cancelled:
            return "refused", "the run is stopping"
        if self.apply_other is not None:
            other = self.apply_other(req)
            if other is not None:
                return other
        if c is None:
            return "refused", f"this {self.kind} run takes no {req.action} request"
        source = f"control by {req.who}"
        value = None if req.value is None or req.value != int(req.value) else int(req.value)
        if req.action == "concurrency":
            if value is None or not 1 <= value <= MAX_CONCURRENCY:
                return "refused", f"concurrency must be a whole number from 1 to {MAX_CONCURRENCY}"
            c.set_concurrency(value, source=source)
            return "applied", f"concurrency {c.target}"
        if req.action == "cap":
            if req.model_key is None or req.model_key not in self.lanes():
                return "refused", f"no model {req.model_key!r} in this run"
            if value is None or not 0 <= value <= MAX_CONCURRENCY:
                return "refused", f"a cap must be a whole number from 1 to {MAX_CONCURRENCY} (0: no cap)"
            try:
                c.set_model_cap(req.model_key, value or None, source=source)
            except KeyError:
                return "refused", f"{req.model_key} is a judge lane: it has no cap of its own"
            cap = c.model_cap(req.model_key)
            return "applied", f"{req.model_key} cap {cap if cap is not None else 'none'}"
        if req.action == "pause":
            if c.paused:
                return "applied", "already paused"
            c.pause()
            return "applied", "paused"
        if req.action == "resume":
            if not c.paused:
                return "applied", "already running"
            c.resume()
            return "applied", "resumed"
        if req.action == "tune":
            if self.tuner is None or self.toggle_tuner is None:
                return "refused", "this run has no auto-tuner"
            want = bool(req.value)
            if self.tuner.enabled == want:
                return "applied", f"auto-tuner already {'on' if want else 'off'}"
            self.toggle_tuner()
            return "applied", f"auto-tuner {'on' if self.tuner.enabled else 'off'}"
        if req.action == "rate":
            return "refused", "a sweep has no offered rate (that is a load run's): ask for --concurrency"
        return "refused", f"unknown request {req.action!r} (this arenatui knows concurrency, cap, pause, resume, tune)"

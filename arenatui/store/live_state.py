"""The database as the channel to a running run: the live-state row its process publishes once a second, the control
requests a watcher (`arena watch`, `arena control`) writes for it, and the incremental reads a watcher follows the
run's rows with. No network listener: it works wherever the file is shared (a volume, `kubectl exec`, NFS)."""

from __future__ import annotations

import getpass
import json
import os
import socket
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arenatui.kernel.errors import ReadOnlyDatabase, StoreError
from arenatui.store.db import explain_error, no_such_database, wait_s

LIVE_EVERY_S = 1.0
"""How often a running run publishes its live state."""
STALE_S = 10.0
"""A live state older than this is a process that stopped publishing: shown "not running (last seen …)". Ten missed
beats, not three: a beat is dated when the process writes it, and a busy disk or a starved writer process can hold its
commit back for seconds (7 s seen on a 2-core CI machine running the test suite), which must not make a running run
look dead and have `arena control` refuse to send."""

UPSERT_LIVE_STATE = (
    "INSERT INTO live_state (run_id, kind, shard, host, pid, user, heartbeat_at, state, target, paused, tuner, "
    "models_json, tuning_json, extra_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id) DO UPDATE SET kind = excluded.kind, shard = excluded.shard, host = excluded.host, "
    "pid = excluded.pid, user = excluded.user, heartbeat_at = excluded.heartbeat_at, state = excluded.state, "
    "target = excluded.target, paused = excluded.paused, tuner = excluded.tuner, models_json = excluded.models_json, "
    "tuning_json = excluded.tuning_json, extra_json = excluded.extra_json")
HEARTBEAT_AT = 6
"""The heartbeat time's place in an UPSERT_LIVE_STATE row."""
ANSWER_REQUEST = "UPDATE control_requests SET status = ?, reply = ?, done_at = ? WHERE id = ? AND status = 'pending'"
"""A request answered once: 'applied' or 'refused' and why (a second answer to the same request changes nothing)."""

ACTIONS = ("concurrency", "cap", "pause", "resume", "tune", "rate")
"""What a control request asks: the global level (value), a model's cap (model_key, value; 0 = no cap), pause,
resume, the auto-tuner on or off (value 1 or 0); of a load run, its offered rate (value, requests/s)."""


_ME: dict[int, tuple[str, int, str]] = {}


def who_am_i() -> tuple[str, int, str]:
    """(host, pid, user) of this process: who asked, recorded with every request (found once per process: a live
    state names it every second)."""
    pid = os.getpid()  # the key: a forked child is someone else
    me = _ME.get(pid)
    if me is None:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):  # no passwd entry (a container running as an arbitrary uid)
            user = f"uid {os.getuid()}"
        me = _ME[pid] = (socket.gethostname(), pid, user)
    return me


@dataclass(frozen=True, slots=True)
class LaneLive:
    """One model's (or judge lane's) figures that only the running process knows."""

    in_flight: int = 0
    backing_off: int = 0
    cap: int | None = None


@dataclass(frozen=True, slots=True)
class LiveState:
    """A run's published live state, as read back."""

    run_id: str
    kind: str
    """'sweep' or 'load'."""
    shard: str | None
    host: str
    pid: int
    user: str
    heartbeat_at: float
    state: str
    """'running', 'paused', or how it ended ('finished', 'cancelled', 'failed')."""
    target: int | None
    paused: bool
    tuner: bool
    lanes: Mapping[str, LaneLive]
    tuning_rows: tuple[tuple[Any, ...], ...] = ()
    """The tuner's readout as tuning_levels rows (tuning.levels.readout_rows)."""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def age(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.heartbeat_at)

    def alive(self, now: float | None = None) -> bool:
        """Whether the process is still publishing: running or paused, and heard from within STALE_S."""
        return self.state in ("running", "paused") and self.age(now) < STALE_S


def live_state_row(run_id: str, *, kind: str, shard: str | None, state: str, target: int | None, paused: bool,
                   tuner: bool, lanes: Mapping[str, LaneLive], tuning_rows: Sequence[Sequence[Any]] = (),
                   extra: Mapping[str, Any] | None = None, at: float | None = None) -> tuple[Any, ...]:
    """The UPSERT_LIVE_STATE row of this process for its run."""
    host, pid, user = who_am_i()
    models = {k: [v.in_flight, v.backing_off, v.cap] for k, v in lanes.items()}
    return (run_id, kind, shard, host, pid, user, time.time() if at is None else at, state, target, int(paused),
            int(tuner), json.dumps(models), json.dumps([list(r) for r in tuning_rows]) if tuning_rows else None,
            json.dumps(dict(extra)) if extra else None)


def read_live_state(conn: sqlite3.Connection, run_id: str) -> LiveState | None:
    """A run's live state, None when its process never published one (an older arenatui, or not started yet)."""
    row = conn.execute(
        "SELECT run_id, kind, shard, host, pid, user, heartbeat_at, state, target, paused, tuner, models_json, "
        "tuning_json, extra_json FROM live_state WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    models = json.loads(row[11] or "{}")
    lanes = {str(k): LaneLive(int(v[0]), int(v[1]), None if v[2] is None else int(v[2])) for k, v in models.items()}
    tuning = tuple(tuple(r) for r in json.loads(row[12])) if row[12] else ()
    return LiveState(row[0], row[1], row[2], row[3] or "?", int(row[4] or 0), row[5] or "?", float(row[6]), row[7],
                     row[8], bool(row[9]), bool(row[10]), lanes, tuning, json.loads(row[13]) if row[13] else {})


def end_live_state(conn: sqlite3.Connection, run_id: str, status: str) -> None:
    """The run's end in its live state (its process writes it once the run is recorded as ended)."""
    conn.execute("UPDATE live_state SET state = ?, heartbeat_at = ? WHERE run_id = ?", (status, time.time(), run_id))


@dataclass(frozen=True, slots=True)
class ControlRequest:
    id: int
    run_id: str
    action: str
    value: float | None
    model_key: str | None
    host: str
    pid: int
    user: str
    asked_at: float

    @property
    def who(self) -> str:
        """Who asked, as the run's events name them."""
        return f"{self.user}@{self.host} pid {self.pid}"

    def words(self) -> str:
        if self.action == "concurrency":
            return f"concurrency {self.value}"
        if self.action == "cap":
            return f"{self.model_key} cap {self.value or 'none'}"
        if self.action == "tune":
            return f"auto-tuner {'on' if self.value else 'off'}"
        if self.action == "rate":
            return f"offered rate {self.value:g} req/s"
        return self.action


def open_for_requests(path: Path | str) -> sqlite3.Connection:
    """A connection that can write control requests: ReadOnlyDatabase (one paragraph) when this process cannot."""
    path = Path(path)
    if not path.is_file():
        raise no_such_database(path)
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        raise ReadOnlyDatabase(f"the results database {str(path)!r} cannot be written by this process (user "
                               f"{who_am_i()[2]}): a control request is a row in it, so none can be sent from here. "
                               "Watching works read-only (arena watch); to steer, run the command as a user who can "
                               "write the file and its directory")
    try:
        conn = sqlite3.connect(path, timeout=wait_s(), isolation_level=None, check_same_thread=False)
        conn.execute("SELECT 1 FROM control_requests LIMIT 1")
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            raise StoreError(f"the results database {str(path)!r} was written by an older arenatui (no "
                             "control_requests table): the run in it cannot be steered from another process") from None
        raise explain_error(path, e) from None
    return conn


def ask(conn: sqlite3.Connection, run_id: str, action: str, value: float | None = None,
        model_key: str | None = None) -> int:
    """Write one control request for the run's process; its id (requests are applied in id order, once)."""
    assert action in ACTIONS, action
    host, pid, user = who_am_i()
    try:
        cur = conn.execute("INSERT INTO control_requests (run_id, asked_at, action, value, model_key, host, pid, "
                           "user) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (run_id, time.time(), action, value, model_key, host, pid, user))
    except sqlite3.Error as e:
        raise explain_error(getattr(conn, "path", "the results database"), e) from None
    assert cur.lastrowid is not None
    return cur.lastrowid


_REQUEST_COLUMNS = "id, run_id, action, value, model_key, host, pid, user, asked_at"


def _request(r: Sequence[Any]) -> ControlRequest:
    return ControlRequest(r[0], r[1], r[2], r[3], r[4], r[5] or "?", int(r[6] or 0), r[7] or "?", r[8])


def pending_requests(conn: sqlite3.Connection, run_id: str, after_id: int = 0) -> list[ControlRequest]:
    """The run's unanswered requests after `after_id`, oldest first."""
    rows = conn.execute(f"SELECT {_REQUEST_COLUMNS} FROM control_requests WHERE run_id = ? AND id > ? "
                        "AND status = 'pending' ORDER BY id", (run_id, after_id)).fetchall()
    return [_request(r) for r in rows]


def request(conn: sqlite3.Connection, request_id: int) -> ControlRequest:
    """One request as written (ask's id): who asked what, when."""
    return _request(conn.execute(f"SELECT {_REQUEST_COLUMNS} FROM control_requests WHERE id = ?",
                                 (request_id,)).fetchone())


def answers(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[str, str | None]]:
    """(status, reply) of requests by id: 'pending', 'applied' or 'refused' (reply says why)."""
    if not ids:
        return {}
    marks = ", ".join("?" for _ in ids)
    return {r[0]: (r[1], r[2]) for r in conn.execute(
        f"SELECT id, status, reply FROM control_requests WHERE id IN ({marks})", tuple(ids))}


def request_log(conn: sqlite3.Connection, run_id: str) -> list[tuple[Any, ...]]:
    """Every request for a run: (id, asked_at, action, value, model_key, host, pid, user, status, reply, done_at)."""
    return conn.execute("SELECT id, asked_at, action, value, model_key, host, pid, user, status, reply, done_at "
                        "FROM control_requests WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()

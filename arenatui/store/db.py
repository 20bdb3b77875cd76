"""Open, migrate and query the SQLite results database (WAL mode)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arenatui.engine.events import CallResult, CallRetrying, ClientLoadSampled, ConcurrencyChanged
from arenatui.errors import PlanError, StoreError
from arenatui.store.schema import MIGRATIONS, RESULT_COLUMNS

_PLACEHOLDERS = ", ".join("?" for _ in RESULT_COLUMNS)
_UPDATES = ", ".join(f"{c} = excluded.{c}" for c in RESULT_COLUMNS[4:])
# A stored final result is never overwritten; a 'cancelled' one is replaced when resume runs the call again.
UPSERT_RESULT = (
    f"INSERT INTO results ({', '.join(RESULT_COLUMNS)}) VALUES ({_PLACEHOLDERS}) "
    f"ON CONFLICT (run_id, model_key, case_id, trial) DO UPDATE SET {_UPDATES} "
    "WHERE results.error_class = 'cancelled'"
)


INSERT_CONCURRENCY_CHANGE = (
    "INSERT INTO concurrency_changes (run_id, at, old, new, model_key, source) VALUES (?, ?, ?, ?, ?, ?)")
INSERT_CLIENT_LOAD = "INSERT INTO client_load (run_id, at, cpu, interval_s) VALUES (?, ?, ?, ?)"
INSERT_FAILED_ATTEMPT = (
    "INSERT INTO failed_attempts (run_id, model_key, case_id, trial, attempt, error_class, http_status, "
    "retry_after_s, delay_s, at, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
INSERT_TUNING_DECISION = (
    "INSERT INTO tuning_decisions (run_id, at, model_key, old, new, reason) VALUES (?, ?, ?, ?, ?, ?)")
FAILED_ATTEMPT_COLUMNS = ("attempt", "error_class", "http_status", "retry_after_s", "delay_s", "at", "message")


def retry_row(run_id: str, ev: CallRetrying, at: float) -> tuple[Any, ...]:
    """A failed attempt that was retried; `at` is epoch seconds."""
    return (run_id, ev.model_key, ev.case_id, ev.trial, ev.attempt, ev.reason, ev.http_status, ev.retry_after,
            ev.delay, at, ev.message)


def final_attempt_row(run_id: str, r: CallResult) -> tuple[Any, ...]:
    """The failed attempt that ended an errored call (no retry followed, so nothing was slept)."""
    return (run_id, r.model_key, r.case_id, r.trial, r.attempts, r.error_class, None, None, None, r.finished_at,
            r.error_message)


def concurrency_change_row(run_id: str, ev: ConcurrencyChanged) -> tuple[Any, ...]:
    return (run_id, ev.at, ev.old, ev.new, ev.model_key, ev.source)


def client_load_row(run_id: str, ev: ClientLoadSampled) -> tuple[Any, ...]:
    return (run_id, ev.at, ev.cpu, ev.interval_s)


_RUN_COLUMNS = ("r.run_id, r.project, r.project_path, r.config_json, r.filters_json, r.planned, r.started_at, "
                "r.finished_at, r.status, r.message, r.pid, r.host")


def _process_alive(pid: int | None, host: str | None) -> bool:
    """Whether the process recorded for a running run still exists; unknowable elsewhere: assume so."""
    if pid is None or host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def default_db_path() -> Path:
    from arenatui.paths import data_dir

    return data_dir() / "arena.db"


def result_row(run_id: str, r: CallResult) -> tuple[Any, ...]:
    """The results-table row: CallResult's fields are RESULT_COLUMNS after run_id, in order (a test checks it)."""
    return (run_id, *r)


def connect(path: Path | str) -> sqlite3.Connection:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30.0, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a commit survives a crash or SIGKILL of this process (not a power cut).
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
    except (sqlite3.Error, OSError) as e:
        raise StoreError(f"cannot open the results database {str(path)!r}: {e}") from None
    return conn


def migrate(conn: sqlite3.Connection, path: Path | str) -> None:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version > len(MIGRATIONS):
        raise StoreError(f"the results database {str(path)!r} has schema version {version}, newer than this "
                         f"arenatui knows ({len(MIGRATIONS)}); upgrade arenatui or pass another --db")
    for i in range(version, len(MIGRATIONS)):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _split(MIGRATIONS[i]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {i + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


@dataclass(frozen=True, slots=True)
class RunRecord:
    run_id: str
    project: str
    project_path: str | None
    config: dict[str, Any]
    filters: dict[str, Any]
    planned: int
    started_at: float
    finished_at: float | None
    status: str
    message: str | None
    stored: int = 0


class Store:
    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.conn = connect(self.path)
        try:
            migrate(self.conn, self.path)
        except sqlite3.Error as e:
            raise StoreError(f"the results database {str(self.path)!r} cannot be used: {e}") from None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- runs ----------------------------------------------------------------------------------

    def create_run(self, project: str, project_path: str | None, config: dict[str, Any], filters: dict[str, Any],
                   planned: int) -> str:
        from arenatui import __version__

        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        self.conn.execute(
            "INSERT INTO runs (run_id, project, project_path, config_json, filters_json, planned, started_at, status,"
            " arenatui_version, pid, host) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)",
            (run_id, project, project_path, json.dumps(config), json.dumps(filters), planned, time.time(),
             __version__, os.getpid(), socket.gethostname()),
        )
        return run_id

    def mark_run(self, run_id: str, status: str, message: str | None = None) -> None:
        if status == "running":  # (re)started by this process, e.g. on resume
            self.conn.execute("UPDATE runs SET status = ?, message = ?, finished_at = NULL, pid = ?, host = ? "
                              "WHERE run_id = ?", (status, message, os.getpid(), socket.gethostname(), run_id))
            return
        self.conn.execute("UPDATE runs SET status = ?, message = ?, finished_at = ? WHERE run_id = ?",
                          (status, message, time.time(), run_id))

    def _record(self, row: Sequence[Any]) -> RunRecord:
        """Row: the run columns of _RUN_COLUMNS, then optionally the stored count."""
        status = row[8]
        if status == "running" and not _process_alive(row[10], row[11]):
            status = "interrupted"  # its process died without saying so (SIGKILL, a crash, power loss)
        return RunRecord(run_id=row[0], project=row[1], project_path=row[2], config=json.loads(row[3]),
                         filters=json.loads(row[4]), planned=row[5], started_at=row[6], finished_at=row[7],
                         status=status, message=row[9], stored=row[12] if len(row) > 12 else 0)

    def get_run(self, run_id: str) -> RunRecord:
        """A run by id, or the newest with 'last'."""
        cols = f"SELECT {_RUN_COLUMNS} FROM runs r"
        if run_id == "last":
            row = self.conn.execute(cols + " ORDER BY r.started_at DESC, r.rowid DESC LIMIT 1").fetchone()
            if row is None:
                raise PlanError(f"no runs stored in {str(self.path)!r} yet, so there is no 'last' run to resume")
        else:
            row = self.conn.execute(cols + " WHERE r.run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise PlanError(f"no run {run_id!r} in {str(self.path)!r}; `arena runs` lists the stored runs")
        return self._record(row)

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        rows = self.conn.execute(
            f"SELECT {_RUN_COLUMNS},"
            " (SELECT COUNT(*) FROM results x WHERE x.run_id = r.run_id AND"
            "  (x.error_class IS NULL OR x.error_class != 'cancelled'))"
            " FROM runs r ORDER BY r.started_at DESC, r.rowid DESC LIMIT ?", (limit,)).fetchall()
        return [self._record(r) for r in rows]

    # ---- results -------------------------------------------------------------------------------

    def write_results(self, run_id: str, results: Iterable[CallResult]) -> None:
        rows = [result_row(run_id, r) for r in results]
        self.write_rows(rows)

    def write_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        if not rows:
            return
        c = self.conn
        c.execute("BEGIN")
        try:
            c.executemany(UPSERT_RESULT, rows)
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def write_concurrency_change(self, run_id: str, ev: ConcurrencyChanged) -> None:
        self.conn.execute(INSERT_CONCURRENCY_CHANGE, concurrency_change_row(run_id, ev))

    def write_client_load(self, run_id: str, samples: Sequence[ClientLoadSampled]) -> None:
        self.conn.executemany(INSERT_CLIENT_LOAD, [client_load_row(run_id, ev) for ev in samples])

    def client_load(self, run_id: str) -> list[tuple[float, float, float]]:
        """The client's CPU samples of a run, oldest first: (epoch seconds, fraction of one core, interval s)."""
        return self.conn.execute("SELECT at, cpu, interval_s FROM client_load WHERE run_id = ? ORDER BY at",
                                 (run_id,)).fetchall()

    def done_keys(self, run_id: str) -> dict[str, set[tuple[str, int]]]:
        """Per model, the (case id, trial) pairs with a final result: what resume must not call again."""
        out: dict[str, set[tuple[str, int]]] = {}
        for mk, cid, trial in self.conn.execute(
                "SELECT model_key, case_id, trial FROM results WHERE run_id = ? AND "
                "(error_class IS NULL OR error_class != 'cancelled')", (run_id,)):
            out.setdefault(mk, set()).add((cid, trial))
        return out

    def count_results(self, run_id: str) -> int:
        (n,) = self.conn.execute("SELECT COUNT(*) FROM results WHERE run_id = ?", (run_id,)).fetchone()
        return int(n)

    def results(self, run_id: str, columns: Sequence[str] = RESULT_COLUMNS) -> list[tuple[Any, ...]]:
        for c in columns:
            if c not in RESULT_COLUMNS:
                raise ValueError(c)
        return self.conn.execute(
            f"SELECT {', '.join(columns)} FROM results WHERE run_id = ? ORDER BY model_key, case_id, trial",
            (run_id,)).fetchall()

    def result(self, run_id: str, model_key: str, case_id: str, trial: int) -> dict[str, Any] | None:
        row = self.conn.execute(
            f"SELECT {', '.join(RESULT_COLUMNS)} FROM results WHERE run_id = ? AND model_key = ? AND case_id = ? "
            "AND trial = ?", (run_id, model_key, case_id, trial)).fetchone()
        return dict(zip(RESULT_COLUMNS, row, strict=True)) if row else None

    def concurrency_changes(self, run_id: str) -> list[tuple[float, int, int, str | None, str]]:
        return self.conn.execute(
            "SELECT at, old, new, model_key, source FROM concurrency_changes WHERE run_id = ? ORDER BY at",
            (run_id,)).fetchall()

    # ---- failed attempts and the tuning readout --------------------------------------------------

    def failed_attempts(self, run_id: str, model_key: str, case_id: str, trial: int) -> list[dict[str, Any]]:
        """One call's failed attempts, first first."""
        rows = self.conn.execute(
            f"SELECT {', '.join(FAILED_ATTEMPT_COLUMNS)} FROM failed_attempts WHERE run_id = ? AND model_key = ? "
            "AND case_id = ? AND trial = ? ORDER BY attempt, at", (run_id, model_key, case_id, trial)).fetchall()
        return [dict(zip(FAILED_ATTEMPT_COLUMNS, r, strict=True)) for r in rows]

    def write_tuning_levels(self, run_id: str, rows: Sequence[Sequence[Any]]) -> None:
        """Replace a run's per-level readout (rows as `tuning.levels.readout_rows` makes them)."""
        c = self.conn
        c.execute("BEGIN")
        try:
            c.execute("DELETE FROM tuning_levels WHERE run_id = ?", (run_id,))
            c.executemany(
                "INSERT INTO tuning_levels (run_id, model_key, level, seconds, answered, goodput, limited_share, "
                "transient_share, retries_per_s, given_up, p50_ms, p95_ms, enough, best, verdict) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [(run_id, *r) for r in rows])
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def tuning_decisions(self, run_id: str) -> list[tuple[float, str | None, int, int, str]]:
        """The auto-tuner's decisions, oldest first: (epoch seconds, model key, old, new, reason)."""
        return self.conn.execute("SELECT at, model_key, old, new, reason FROM tuning_decisions WHERE run_id = ? "
                                 "ORDER BY at, rowid", (run_id,)).fetchall()

    def tuning_levels(self, run_id: str) -> list[tuple[Any, ...]]:
        """A run's per-level readout: (model_key, level, seconds, answered, goodput, limited_share,
        transient_share, retries_per_s, given_up, p50_ms, p95_ms, enough, best, verdict)."""
        return self.conn.execute(
            "SELECT model_key, level, seconds, answered, goodput, limited_share, transient_share, retries_per_s, "
            "given_up, p50_ms, p95_ms, enough, best, verdict FROM tuning_levels WHERE run_id = ? "
            "ORDER BY model_key, level", (run_id,)).fetchall()

    def write_level_sweep(self, sweep_id: str, rows: Sequence[Sequence[Any]]) -> None:
        """`arena sweep`'s runs, one per level: (level, run_id, wall_s, answered, errored, goodput, limited_share,
        p95_ms, knee)."""
        self.conn.executemany(
            "INSERT INTO level_sweeps (sweep_id, level, run_id, wall_s, answered, errored, goodput, limited_share, "
            "p95_ms, knee) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [(sweep_id, *r) for r in rows])

    def level_sweep(self, sweep_id: str) -> list[tuple[Any, ...]]:
        return self.conn.execute(
            "SELECT level, run_id, wall_s, answered, errored, goodput, limited_share, p95_ms, knee FROM level_sweeps "
            "WHERE sweep_id = ? ORDER BY level", (sweep_id,)).fetchall()

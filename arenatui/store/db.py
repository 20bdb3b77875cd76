"""Open, migrate and query the SQLite results database (WAL mode)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import secrets
import socket
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from arenatui.kernel.errors import DiskFullError, NoSuchDatabase, PlanError, ReadOnlyDatabase, StoreError
from arenatui.kernel.events import (
    DEADLINE,
    JUDGE_LANE_PREFIX,
    VARIANT_SEP,
    AwaitingJudge,
    CallResult,
    CallRetrying,
    ClientLoadSampled,
    ConcurrencyChanged,
    DeclaredLimits,
    JudgeFinished,
    LimitsDeclared,
    OpenStep,
    StepFinished,
    lane_key,
    split_lane,
)
from arenatui.store.schema import JUDGMENT_COLUMNS, MIGRATIONS, RESULT_COLUMNS

_PLACEHOLDERS = ", ".join("?" for _ in RESULT_COLUMNS)
_SPENT = ("attempts", "input_tokens", "output_tokens", "cost")
_UPDATES = ", ".join(f"{c} = results.{c} + excluded.{c}" if c in _SPENT else f"{c} = excluded.{c}"
                     for c in RESULT_COLUMNS[4:])
# A stored final result is never overwritten; a 'cancelled' one is replaced when resume runs the call again, and
# with --retry-errored (UPSERT_RETRYING) every errored one is. Either way one row per call key is kept, and what
# the earlier attempts spent stays counted in attempts, tokens and cost (DESIGN.md: cost counts every attempt).
UPSERT_RESULT = (
    f"INSERT INTO results ({', '.join(RESULT_COLUMNS)}) VALUES ({_PLACEHOLDERS}) "
    f"ON CONFLICT (run_id, model_key, variant, case_id, trial) DO UPDATE SET {_UPDATES} "
    "WHERE results.error_class = 'cancelled'"
)
UPSERT_RETRYING = UPSERT_RESULT.replace("WHERE results.error_class = 'cancelled'", "WHERE results.status = 'errored'")


# A judgment replaces an earlier one of the same call (--retry-errored judges judge_error calls again) and adds its
# spend to what the earlier judge calls cost, like results do.
UPSERT_JUDGMENT = (
    f"INSERT INTO judgments ({', '.join(JUDGMENT_COLUMNS)}) VALUES ({', '.join('?' for _ in JUDGMENT_COLUMNS)}) "
    "ON CONFLICT (run_id, model_key, variant, case_id, trial) DO UPDATE SET "
    + ", ".join(f"{c} = judgments.{c} + excluded.{c}" if c in _SPENT else f"{c} = excluded.{c}"
                for c in JUDGMENT_COLUMNS[4:])
)
JUDGED = (
    "UPDATE results SET status = ?, score = ?, passed = ?, error_class = ?, error_message = ?, failure_mode = ?, "
    "score_detail = ? WHERE run_id = ? AND model_key = ? AND case_id = ? AND trial = ? AND variant = ? "
    "AND (status = 'unscored' OR error_class = 'judge_error')"
)
"""A judge's verdict onto the candidate's stored row (never onto a row that is scored already)."""
INSERT_CONCURRENCY_CHANGE = (
    "INSERT INTO concurrency_changes (run_id, at, old, new, model_key, source) VALUES (?, ?, ?, ?, ?, ?)")
INSERT_CLIENT_LOAD = "INSERT INTO client_load (run_id, at, cpu, interval_s) VALUES (?, ?, ?, ?)"
HEARTBEAT = "UPDATE runs SET heartbeat_at = ? WHERE run_id = ? AND pid = ?"
"""The running process's claim on its run, renewed every HEARTBEAT_S (see Store.claim_run)."""
INSERT_FAILED_ATTEMPT = (
    "INSERT INTO failed_attempts (run_id, model_key, case_id, trial, attempt, error_class, http_status, "
    "retry_after_s, delay_s, at, message, retry_after_source, ttft_ms, stream, variant) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
INSERT_STEP = (
    "INSERT OR REPLACE INTO call_steps (run_id, model_key, variant, case_id, trial, step, kind, answered_by, status, "
    "passed, score, failure_mode, error_class, error_message, score_detail, output, attempts, input_tokens, "
    "output_tokens, cost, total_ms, latency_ms, started_at, finished_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
INSERT_TUNING_DECISION = (
    "INSERT INTO tuning_decisions (run_id, at, model_key, old, new, reason) VALUES (?, ?, ?, ?, ?, ?)")


def judgment_rows(run_id: str, ev: JudgeFinished) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """The judgments row of a judge call and the candidate's update (JUDGED), or None for a cancelled one (the
    candidate stays awaiting its judge)."""
    r = ev.result
    if r.error_class == "cancelled":
        return None
    judge_key = r.model_key.removeprefix(JUDGE_LANE_PREFIX)
    model, variant = split_lane(ev.model_key)
    judgment = (run_id, model, ev.case_id, ev.trial, judge_key, r.status, r.score, int(r.passed),
                r.error_class, r.error_message, r.output, r.attempts, r.latency_ms, r.total_ms, r.input_tokens,
                r.output_tokens, r.cost, r.started_at, r.finished_at, r.score_detail, variant)
    update = (r.status, r.score, int(r.passed), r.error_class, r.error_message, r.failure_mode, r.score_detail,
              run_id, model, ev.case_id, ev.trial, variant)
    return judgment, update


def retry_row(run_id: str, ev: CallRetrying, at: float) -> tuple[Any, ...]:
    """A failed attempt that was retried; `at` is epoch seconds."""
    model, variant = split_lane(ev.model_key)
    return (run_id, model, ev.case_id, ev.trial, ev.attempt, ev.reason, ev.http_status, ev.retry_after,
            ev.delay, at, ev.message, ev.retry_after_source, ev.first_token_ms, 1 if ev.streamed_timeout else None,
            variant)


def final_attempt_row(run_id: str, r: CallResult, hint: tuple[float, str | None] | None = None
                      ) -> tuple[Any, ...]:
    """The failed attempt that ended an errored call (no retry followed, so nothing was slept), with the
    retry-after it was answered with (`hint`: seconds, header). A streamed attempt that timed out says so with
    finish_reason DEADLINE, and its first token (if one came) in ttft_ms."""
    streamed = r.finish_reason == DEADLINE
    model, variant = split_lane(r.model_key)
    after, source = hint if hint is not None else (None, None)
    return (run_id, model, r.case_id, r.trial, r.attempts, r.error_class, r.http_status, after, None,
            r.finished_at, r.error_message, source, r.ttft_ms if streamed else None, 1 if streamed else None, variant)


def step_row(run_id: str, ev: StepFinished) -> tuple[Any, ...]:
    """A step of a call with repairs or an escalation (call_steps). Unpacked, not read field by field: a third
    cheaper, and a field added to CallResult fails here loudly instead of being left out."""
    r, step, kind, answered_by, _t = ev
    (key, case_id, trial, status, output, score, passed, error_class, error_message, attempts, latency_ms, total_ms,
     _ttft, in_tok, out_tok, cost, _finish, _estimated, started_at, finished_at, _connect, failure_mode, detail, _http,
     _repairs, _escalated_to, _first_passed, _reasoning_tokens, _answer_ttft, _reasoning) = r
    model, _, variant = key.partition(VARIANT_SEP)
    return (run_id, model, variant, case_id, trial, step, kind, answered_by, status, int(passed), score, failure_mode,
            error_class, error_message, detail, output, attempts, in_tok, out_tok, cost, total_ms, latency_ms,
            started_at, finished_at)


def concurrency_change_row(run_id: str, ev: ConcurrencyChanged) -> tuple[Any, ...]:
    return (run_id, ev.at, ev.old, ev.new, ev.model_key, ev.source)


def client_load_row(run_id: str, ev: ClientLoadSampled) -> tuple[Any, ...]:
    return (run_id, ev.at, ev.cpu, ev.interval_s)


INSERT_DECLARED_LIMITS = (
    "INSERT OR REPLACE INTO declared_limits (run_id, model_key, at, requests_limit, requests_remaining, "
    "requests_reset_s, tokens_limit, tokens_remaining, tokens_reset_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
"""The latest rate limits a model's provider declared in this run (one row per model: the last one wins)."""


def declared_limits_row(run_id: str, ev: LimitsDeclared) -> tuple[Any, ...]:
    return (run_id, ev.model_key, ev.at, *ev.limits)


EVENT_ROWS: dict[type, tuple[str, Callable[[str, Any], tuple[Any, ...]]]] = {
    ConcurrencyChanged: (INSERT_CONCURRENCY_CHANGE, concurrency_change_row),
    ClientLoadSampled: (INSERT_CLIENT_LOAD, client_load_row),
    LimitsDeclared: (INSERT_DECLARED_LIMITS, declared_limits_row),
}
"""Run-level events the results writer stores besides finished calls: event type → (INSERT, row of run id and
event). A new kind of row is one entry here (and its table in a migration); the writer and its process need
no change."""


_RUN_COLUMNS = ("r.run_id, r.project, r.project_path, r.config_json, r.filters_json, r.planned, r.started_at, "
                "r.finished_at, r.status, r.message, r.pid, r.host, r.heartbeat_at, r.case_set, r.sandbox, "
                "r.sandbox_strong")

HEARTBEAT_S = 5.0
"""How often a running run's process renews its claim (the results writer sends it with its batches)."""
LEASE_S = 30.0
"""A run on another host whose heartbeat is older than this has no live holder: it may be resumed."""
QUICK_CHECK_BYTES = 64 << 20
"""Files up to this size are checked for corruption on open (60 ms for 61 MB measured, from the page cache)."""


_CHECKED: set[Path] = set()
"""Files this process has checked already: a command opens its database several times (~60 ms per 64 MB)."""


def wait_s() -> float:
    """How long to wait for another process's lock on the database (ARENATUI_DB_WAIT_S, default 10 s)."""
    try:
        return max(0.0, float(os.environ.get("ARENATUI_DB_WAIT_S", "10")))
    except ValueError:
        return 10.0


def explain(path: Path | str, name: str, message: str) -> StoreError:
    """A SQLite failure as a paragraph for a person: what happened to which file and what to do.

    `name` is SQLite's error name (SQLITE_FULL, ...) when known, else the exception's class name.
    """
    where = repr(str(path))
    low = message.lower()
    if name.startswith("SQLITE_FULL") or "database or disk is full" in low:
        return DiskFullError(f"disk full: the results database {where} cannot grow ({message}). Free space on that "
                             "disk, or pass --db with a file on another one; every call committed before is kept")
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in low or "not a database" in low:
        return StoreError(f"the results database {where} is corrupt ({message}). Move it away or restore it from a "
                          "backup, and arenatui starts a new one; to rescue what it holds: "
                          f"sqlite3 {str(path)!r} .recover | sqlite3 recovered.db")
    if name.startswith("SQLITE_READONLY") or "readonly database" in low:
        return ReadOnlyDatabase(f"the results database {where} is read-only ({message}): this command writes to it. "
                          "Commands that only read it (runs, report, export, browse, compare, load --show) work; "
                          "to run, pass --db with a file you can write")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in low:
        return StoreError(f"the results database {where} is locked by another process (waited {wait_s():g} s; "
                          "ARENATUI_DB_WAIT_S sets how long). Let the other process finish or stop it, or pass --db "
                          "with another file")
    return StoreError(f"the results database {where} cannot be used: {message}")


SQL_ERRORS = (sqlite3.Error, UnicodeDecodeError)
"""What a call into SQLite raises when the file fails it: SQLite's errors, and UnicodeDecodeError where a corrupt file
holds bytes that are not UTF-8 where text belongs (Python's sqlite3 raises it for a text result, and for an error
message quoting them: 'malformed database schema (<the corrupt name>)')."""


def explain_error(path: Path | str, e: sqlite3.Error | UnicodeDecodeError) -> StoreError:
    if isinstance(e, UnicodeDecodeError):
        return explain(path, "SQLITE_CORRUPT", f"it holds bytes that are not UTF-8 where text belongs: {e}")
    return explain(path, getattr(e, "sqlite_errorname", "") or type(e).__name__, str(e))


@contextlib.contextmanager
def sql_errors_explained(path: Path | str | None) -> Iterator[None]:
    """The one boundary where SQLite's errors become the store's: a `sqlite3.Error` raised inside (a locked, full,
    corrupt or read-only file) leaves as the `StoreError` that explains it (`path` None: the default database).
    Every Store method that writes runs under it, and so do the sweep's last write and a saved bake-off decision;
    what still escapes a command the entry point maps with `sql_error_explained`, so nothing above the store names
    sqlite3."""
    try:
        yield
    except SQL_ERRORS as e:
        raise explain_error(default_db_path() if path is None else path, e) from None


def sql_error_explained(e: BaseException, path: Path | str | None) -> StoreError | None:
    """`e` as the StoreError that explains it when it is SQLite's (as `sql_errors_explained` maps it), else None:
    for a caller that must not load the store before an error (the entry point's start-up)."""
    return explain_error(default_db_path() if path is None else path, e) if isinstance(e, sqlite3.Error) else None


def _process_alive(pid: int | None, host: str | None, heartbeat_at: float | None = None) -> bool:
    """Whether the process recorded for a running run still exists; elsewhere, whether its heartbeat is fresh."""
    if pid is None:
        return True
    if host != socket.gethostname():
        return heartbeat_at is None or time.time() - heartbeat_at < LEASE_S
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:  # the pid may since belong to another program (a reboot, pids wrapping around)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc (macOS) or not ours to read: trust the pid
    return not cmdline or b"arena" in cmdline  # empty while a process starts: trust the pid


def default_db_path() -> Path:
    from arenatui.kernel.paths import data_dir

    return data_dir() / "arena.db"


def no_such_database(path: Path) -> NoSuchDatabase:
    """What a reader says of a database path that does not exist (it never creates one)."""
    default = default_db_path()
    if path.absolute() == default.absolute():
        return NoSuchDatabase(f"no runs stored yet: there is no results database at {str(path)!r} (the default); "
                              "run a sweep first (arena demo), or pass --db with the database that holds your runs")
    said = f"no such database: {str(path)!r} does not exist (a command that only reads never creates one)"
    if default.is_file():
        return NoSuchDatabase(f"{said}. Runs are stored in {str(default)!r} unless a sweep was given --db: leave "
                              "--db out to read it, or check the path (arena runs --db FILE lists a file's runs)")
    return NoSuchDatabase(f"{said}, nor does the default one ({str(default)!r}): check the path (arena runs --db FILE "
                          "lists a file's runs), or run a sweep first (arena demo)")


def _call_where(run_id: str, key: str, case_id: str, trial: int) -> tuple[str, tuple[Any, ...]]:
    """WHERE clause and arguments for one call by its lane key: a variant lane's names its variant; a model's key
    alone finds its call under the first variant (the only one, in a run without variants)."""
    model, variant = split_lane(key)
    where = "run_id = ? AND model_key = ? AND case_id = ? AND trial = ?"
    if variant:
        return f"{where} AND variant = ?", (run_id, model, case_id, trial, variant)
    return f"{where} ORDER BY variant LIMIT 1", (run_id, model, case_id, trial)


def result_row(run_id: str, r: CallResult) -> tuple[Any, ...]:
    """The results-table row: CallResult's fields are RESULT_COLUMNS after run_id, in order (its `reasoning` the
    reasoning's text), then whether its reasoning tokens are estimated, then the variant, split from a variant lane's
    key (a test checks it)."""
    return result_rows(run_id, (r,))[0]


def result_rows(run_id: str, results: Sequence[CallResult]) -> list[tuple[Any, ...]]:
    """`result_row` of each result, built in one comprehension (the writer's batch: no call per row); a plain
    answer's row is the result as it is, with no reasoning and no variant."""
    return [(run_id, *r, 0, "") if VARIANT_SEP not in r[0] and r[-1] is None else _spread_row(run_id, r)
            for r in results]


def _spread_row(run_id: str, r: CallResult) -> tuple[Any, ...]:
    """A row whose lane key holds a variant, or whose answer reasoned (the text, then whether its tokens are
    estimated)."""
    model, _, variant = r[0].partition(VARIANT_SEP)
    kept = r.reasoning
    if kept is None:
        return (run_id, model, *r[1:], 0, variant)
    return (run_id, model, *r[1:-1], kept.text, int(kept.estimated), variant)


def _busy_retry(conn: sqlite3.Connection, sql: str) -> None:
    """Run `sql`, retrying while another process holds the lock SQLite needs for it: switching a new file to WAL
    takes an exclusive lock that SQLite's busy timeout does not always wait for (two processes creating one
    database at once)."""
    deadline = time.monotonic() + wait_s()
    while True:
        try:
            conn.execute(sql)
            return
        except sqlite3.OperationalError as e:
            busy = (getattr(e, "sqlite_errorname", "") or "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) \
                or "locked" in str(e)
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


Connection = sqlite3.Connection
"""A database connection, for modules above the store that hold one the store opened (they never import sqlite3)."""


def connect_read_only(path: Path | str) -> sqlite3.Connection:
    """A connection that never writes: a database on a read-only mount or another user's file can be read.

    `mode=ro` first (it sees a live writer's WAL); where SQLite cannot create the WAL's shared-memory file beside a
    read-only WAL database (a read-only directory), `immutable=1`, which reads the file as it is."""
    from urllib.parse import quote

    path = Path(path)
    base = "file:" + quote(str(path.resolve()))
    try:
        conn = sqlite3.connect(base + "?mode=ro", uri=True, timeout=wait_s(), check_same_thread=False,
                               isolation_level=None)
        try:
            conn.execute("PRAGMA user_version").fetchone()
        except sqlite3.OperationalError:
            conn.close()
            conn = sqlite3.connect(base + "?mode=ro&immutable=1", uri=True, timeout=wait_s(),
                                   check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA user_version").fetchone()
        if _small_unchecked(path):
            _quick_check(conn, path)
    except SQL_ERRORS as e:
        raise explain_error(path, e) from None
    return conn


def connect(path: Path | str) -> sqlite3.Connection:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        small = _small_unchecked(path)
    except OSError as e:
        raise StoreError(f"cannot open the results database {str(path)!r}: {e}") from None
    try:
        conn = sqlite3.connect(path, timeout=wait_s(), check_same_thread=False, isolation_level=None)
        _busy_retry(conn, "PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a commit survives a crash or SIGKILL of this process (not a power cut).
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        pages = os.environ.get("ARENATUI_MAX_PAGE_COUNT")
        if pages:  # a full disk, simulated for tests: SQLite refuses to grow the file past this many pages
            conn.execute(f"PRAGMA max_page_count = {int(pages)}")
        if small:
            _quick_check(conn, path)
    except SQL_ERRORS as e:
        if path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            raise explain(path, "SQLITE_READONLY", str(e)) from None  # a read-only mount: "unable to open"
        raise explain_error(path, e) from None
    return conn


def _small_unchecked(path: Path) -> bool:
    return path.exists() and path.stat().st_size <= QUICK_CHECK_BYTES and path.resolve() not in _CHECKED


def _quick_check(conn: sqlite3.Connection, path: Path) -> None:
    """A corrupt page found on open is one clear message, not a traceback from some later query."""
    problems = [r[0] for r in conn.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        conn.close()
        found = " ".join(" ".join(problems).replace("*** in database main ***", "").split())
        raise explain(path, "SQLITE_CORRUPT", found if len(found) <= 160 else found[:157] + "...")
    _CHECKED.add(path.resolve())


def _schema_version(conn: sqlite3.Connection, path: Path | str) -> int:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version > len(MIGRATIONS):
        raise StoreError(f"the results database {str(path)!r} has schema version {version}, newer than this "
                         f"arenatui knows ({len(MIGRATIONS)}); upgrade arenatui or pass another --db")
    return int(version)


def migrate(conn: sqlite3.Connection, path: Path | str) -> None:
    """Bring the schema up to date in one write transaction. The version is read again once the write lock is held:
    two processes opening a new database at once both see version 0, and the second, having waited for the
    first's lock, must find the tables made instead of creating them again ("table runs already exists")."""
    if _schema_version(conn, path) == len(MIGRATIONS):
        return
    _busy_retry(conn, "BEGIN IMMEDIATE")
    try:
        for i in range(_schema_version(conn, path), len(MIGRATIONS)):
            for statement in _split(MIGRATIONS[i]):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)  # a Ctrl-C may land after COMMIT: then there is nothing to roll back
        raise


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:  # SQLite ends some transactions itself (a full disk), and a Ctrl-C may follow COMMIT
        conn.execute("ROLLBACK")


def _split(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _explained(method: Callable[_P, _T]) -> Callable[_P, _T]:
    """A Store method whose SQLite failures (locked, full, corrupt) reach the person as one clear paragraph."""
    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        with sql_errors_explained(args[0].path):  # type: ignore[attr-defined]
            return method(*args, **kwargs)
    return wrapper


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
    sandbox: str | None = None
    """The code_exec sandbox its answers ran in, as start-up said it (None: no code_exec scorer)."""
    sandbox_strong: bool | None = None
    """Whether that sandbox had its namespaces (False: the weak one, which the project allowed)."""


class Store:
    def __init__(self, path: Path | str | None = None, *, read_only: bool = False, create: bool | None = None) -> None:
        """`read_only`: for commands that only read (runs, report, export, browse, compare, load --show): an
        existing database with the current schema is opened read-only, so a read-only mount or another user's file
        works. One written by an older arenatui is migrated first, which needs write access.

        `create`: whether a database that does not exist is made (default: unless `read_only`). Only writers of
        runs (evaluate, run, demo, tune, sweep, load, merge) make one; any other command given a path that does not
        exist raises NoSuchDatabase and leaves no file behind."""
        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = False
        makes = not read_only if create is None else create
        if not makes and not self.path.exists():
            raise no_such_database(self.path)
        if read_only and self.path.is_file():
            conn = connect_read_only(self.path)
            try:
                current = _schema_version(conn, self.path) == len(MIGRATIONS)
            except SQL_ERRORS as e:
                conn.close()
                raise explain_error(self.path, e) from None
            except StoreError:
                conn.close()
                raise
            if current:
                self.conn, self.read_only = conn, True
                return
            conn.close()
        self.conn = connect(self.path)
        try:
            migrate(self.conn, self.path)
        except SQL_ERRORS as e:
            self.conn.close()
            raise explain_error(self.path, e) from None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- runs ----------------------------------------------------------------------------------

    @_explained
    def create_run(self, project: str, project_path: str | None, config: dict[str, Any], filters: dict[str, Any],
                   planned: int, run_id: str | None = None, started_by: str | None = None) -> str:
        """Record a new run; `run_id` names it (`--run-id`: every shard of a run writes the same one); `started_by`
        is the command that started it (`arena runs`' kind column)."""
        from arenatui.kernel import __version__

        if run_id is None:
            run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        elif self.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
            raise PlanError(f"--run-id {run_id}: {str(self.path)!r} already holds a run with that id; continue it "
                            f"with --resume {run_id}, or give each run its own id (each shard its own --db)")
        config = dict(config)
        cases = config.pop("cases", None)
        digest = None
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            if cases is not None:  # once per content: ten runs of one project store its cases once
                cases_json = json.dumps(cases, sort_keys=True, separators=(",", ":"))
                digest = hashlib.sha256(cases_json.encode()).hexdigest()
                c.execute("INSERT OR IGNORE INTO case_sets (digest, cases_json) VALUES (?, ?)", (digest, cases_json))
            now = time.time()
            c.execute(
                "INSERT INTO runs (run_id, project, project_path, config_json, filters_json, planned, started_at,"
                " status, arenatui_version, pid, host, case_set, heartbeat_at, started_by)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
                (run_id, project, project_path, json.dumps(config), json.dumps(filters), planned, now,
                 __version__, os.getpid(), socket.gethostname(), digest, now, started_by),
            )
            c.execute("COMMIT")
        except BaseException:
            _rollback(c)
            raise
        return run_id

    @_explained
    def claim_run(self, run_id: str, resume_hint: str = "") -> None:
        """Make this process the holder of a stored run, or refuse while another live process holds it.

        In one write transaction, so of two resumes started at once exactly one wins and the other
        sees the winner as the live holder. A holder on this host is alive while its pid is; one on
        another host while its heartbeat is younger than LEASE_S.
        """
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            row = c.execute("SELECT status, pid, host, heartbeat_at, started_at FROM runs WHERE run_id = ?",
                            (run_id,)).fetchone()
            if row is None:
                raise PlanError(f"no run {run_id!r} in {str(self.path)!r}; `arena runs` lists the stored runs")
            status, pid, host, beat, started = row
            if status == "running" and pid != os.getpid() and _process_alive(pid, host, beat or started):
                here = host == socket.gethostname()
                since = f", last heartbeat {time.time() - (beat or started):.0f} s ago" if not here else ""
                raise PlanError(
                    f"run {run_id} is still being run by process {pid} on {host}{since}; a second process would "
                    "make its remaining calls twice. Wait for it to end, or stop it (Ctrl-C in its terminal"
                    + (f", or kill {pid}" if here else "") + ")" + (f", then: {resume_hint}" if resume_hint else ""))
            c.execute("UPDATE runs SET status = 'running', message = NULL, finished_at = NULL, pid = ?, host = ?, "
                      "heartbeat_at = ? WHERE run_id = ?", (os.getpid(), socket.gethostname(), time.time(), run_id))
            c.execute("COMMIT")
        except BaseException:
            _rollback(c)
            raise

    @_explained
    def set_sandbox(self, run_id: str, said: str, strong: bool) -> None:
        """Record the code_exec sandbox this session runs answers in; a resume under another one keeps both words
        and counts as weak if either was."""
        row = self.conn.execute("SELECT sandbox, sandbox_strong FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is not None and row[0] and row[0] != said:
            said = f"{row[0]}; resumed under: {said}"
            strong = strong and bool(row[1])
        self.conn.execute("UPDATE runs SET sandbox = ?, sandbox_strong = ? WHERE run_id = ?",
                          (said, int(strong), run_id))

    @_explained
    def mark_run(self, run_id: str, status: str, message: str | None = None) -> None:
        if status == "running":
            self.claim_run(run_id)
            return
        self.conn.execute("UPDATE runs SET status = ?, message = ?, finished_at = ? WHERE run_id = ?",
                          (status, message, time.time(), run_id))

    def _record(self, row: Sequence[Any], case_sets: dict[str, Any] | None = None) -> RunRecord:
        """Row: the run columns of _RUN_COLUMNS, then optionally the stored count."""
        status = row[8]
        if status == "running" and not _process_alive(row[10], row[11], row[12]):
            status = "interrupted"  # its process died without saying so (SIGKILL, a crash, power loss)
        config = json.loads(row[3])
        digest = row[13]
        if digest is not None:  # stored once per content since schema 5; older runs hold their cases inline
            cache = case_sets if case_sets is not None else {}
            if digest not in cache:
                found = self.conn.execute("SELECT cases_json FROM case_sets WHERE digest = ?", (digest,)).fetchone()
                if found is None:
                    raise explain(self.path, "SQLITE_CORRUPT", f"run {row[0]}'s case set {digest[:12]} is missing")
                cache[digest] = json.loads(found[0])
            config["cases"] = cache[digest]
        return RunRecord(run_id=row[0], project=row[1], project_path=row[2], config=config,
                         filters=json.loads(row[4]), planned=row[5], started_at=row[6], finished_at=row[7],
                         status=status, message=row[9], stored=row[16] if len(row) > 16 else 0, sandbox=row[14],
                         sandbox_strong=None if row[15] is None else bool(row[15]))

    @_explained
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

    @_explained
    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        rows = self.conn.execute(
            f"SELECT {_RUN_COLUMNS},"
            " (SELECT COUNT(*) FROM results x WHERE x.run_id = r.run_id AND"
            "  (x.error_class IS NULL OR x.error_class != 'cancelled'))"
            " FROM runs r ORDER BY r.started_at DESC, r.rowid DESC LIMIT ?", (limit,)).fetchall()
        case_sets: dict[str, Any] = {}
        return [self._record(r, case_sets) for r in rows]

    # ---- results -------------------------------------------------------------------------------

    @_explained
    def write_results(self, run_id: str, results: Iterable[CallResult]) -> None:
        rows = [result_row(run_id, r) for r in results]
        self.write_rows(rows)

    @_explained
    def write_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        if not rows:
            return
        c = self.conn
        c.execute("BEGIN")
        try:
            c.executemany(UPSERT_RESULT, rows)
            c.execute("COMMIT")
        except BaseException:
            _rollback(c)
            raise

    @_explained
    def write_concurrency_change(self, run_id: str, ev: ConcurrencyChanged) -> None:
        self.conn.execute(INSERT_CONCURRENCY_CHANGE, concurrency_change_row(run_id, ev))

    @_explained
    def write_client_load(self, run_id: str, samples: Sequence[ClientLoadSampled]) -> None:
        self.conn.executemany(INSERT_CLIENT_LOAD, [client_load_row(run_id, ev) for ev in samples])

    @_explained
    def client_load(self, run_id: str) -> list[tuple[float, float, float]]:
        """The client's CPU samples of a run, oldest first: (epoch seconds, fraction of one core, interval s)."""
        return self.conn.execute("SELECT at, cpu, interval_s FROM client_load WHERE run_id = ? ORDER BY at",
                                 (run_id,)).fetchall()

    @_explained
    def done_keys(self, run_id: str, *, retry_errored: bool = False) -> dict[str, set[tuple[str, int]]]:
        """Per model, the (case id, trial) pairs with a final result: what resume must not call again.

        With retry_errored, only answered calls count as done, so every errored call runs again (a judge_error one
        was answered: its judge runs again, see awaiting_judge)."""
        out: dict[str, set[tuple[str, int]]] = {}
        final = ("(status NOT IN ('errored', 'unreachable') OR error_class = 'judge_error')" if retry_errored
                 else "(error_class IS NULL OR error_class != 'cancelled')")
        for mk, variant, cid, trial in self.conn.execute(
                f"SELECT model_key, variant, case_id, trial FROM results WHERE run_id = ? AND {final}", (run_id,)):
            out.setdefault(lane_key(mk, variant), set()).add((cid, trial))
        return out

    @_explained
    def open_steps(self, run_id: str) -> dict[str, list[OpenStep]]:
        """Per lane, the stored steps of calls with repairs or an escalation whose result is not stored (or was
        cancelled): (case id, trial, step, kind, answered by, the step as a CallResult), for resume to go on."""
        out: dict[str, list[OpenStep]] = {}
        for row in self.conn.execute(
                "SELECT s.model_key, s.variant, s.case_id, s.trial, s.step, s.kind, s.answered_by, s.status, s.output, "
                "s.score, s.passed, s.error_class, s.error_message, s.attempts, s.latency_ms, s.total_ms, "
                "s.input_tokens, s.output_tokens, s.cost, s.started_at, s.finished_at, s.failure_mode, s.score_detail "
                "FROM call_steps s LEFT JOIN results r ON r.run_id = s.run_id AND r.model_key = s.model_key AND "
                "r.variant = s.variant AND r.case_id = s.case_id AND r.trial = s.trial WHERE s.run_id = ? AND "
                "(r.run_id IS NULL OR r.error_class = 'cancelled') ORDER BY s.step", (run_id,)):
            mk, variant, cid, trial, step, kind, by, status, output, score, passed, ec, em, att, lat, tot, i, o, cost, \
                t0, t1, fm, detail = row
            key = lane_key(mk, variant)
            r = CallResult(key, cid, int(trial), status, output, score, bool(passed), ec, em, int(att), lat, tot,
                           None, int(i), int(o), float(cost), None, False, t0, t1, None, fm, detail)
            out.setdefault(key, []).append(OpenStep(cid, int(trial), int(step), kind, by, r))
        return out

    @_explained
    def chain_outcomes(self, run_id: str, case_ids: Collection[str], *, retry_errored: bool = False
                       ) -> dict[str, list[tuple[str, int, tuple[bool, str | None]]]]:
        """Per model, (case id, trial, (passed, answer)) of the stored final calls of `case_ids` (the cases others
        depend on): what a resumed chained run fills its dependents' inputs from. Calls that resume makes again
        (errored ones, with retry_errored) are left out."""
        again = " AND status NOT IN ('errored', 'unreachable')" if retry_errored else ""
        out: dict[str, list[tuple[str, int, tuple[bool, str | None]]]] = {}
        wanted = set(case_ids)
        for mk, variant, cid, trial, status, output in self.conn.execute(
                "SELECT model_key, variant, case_id, trial, status, output FROM results WHERE run_id = ? AND "
                f"(error_class IS NULL OR error_class != 'cancelled'){again}", (run_id,)):
            if cid in wanted:
                out.setdefault(lane_key(mk, variant), []).append((cid, int(trial), (status == "passed", output)))
        return out

    @_explained
    def awaiting_judge(self, run_id: str, *, retry_errored: bool = False) -> list[AwaitingJudge]:
        """Stored answers still to be judged: unscored ones awaiting their judge (an interrupted run), and with
        retry_errored those whose judging failed (judge_error)."""
        also = " OR error_class = 'judge_error'" if retry_errored else ""
        rows = self.conn.execute(
            "SELECT model_key, variant, case_id, trial, output, finish_reason FROM results WHERE run_id = ? AND "
            f"((status = 'unscored' AND failure_mode = 'awaiting_judge'){also}) ORDER BY model_key, variant, case_id, "
            "trial", (run_id,)).fetchall()
        return [AwaitingJudge(lane_key(mk, v), cid, int(t), out or "", fr) for mk, v, cid, t, out, fr in rows]

    @_explained
    def count_results(self, run_id: str) -> int:
        (n,) = self.conn.execute("SELECT COUNT(*) FROM results WHERE run_id = ?", (run_id,)).fetchone()
        return int(n)

    @_explained
    def results(self, run_id: str, columns: Sequence[str] = RESULT_COLUMNS) -> list[tuple[Any, ...]]:
        for c in columns:
            if c not in RESULT_COLUMNS:
                raise ValueError(c)
        return self.conn.execute(
            f"SELECT {', '.join(columns)} FROM results WHERE run_id = ? ORDER BY model_key, case_id, trial",
            (run_id,)).fetchall()

    @_explained
    def result(self, run_id: str, model_key: str, case_id: str, trial: int) -> dict[str, Any] | None:
        """One result; `model_key` may be a variant lane's (``model · variant``): then that variant's."""
        where, args = _call_where(run_id, model_key, case_id, trial)
        row = self.conn.execute(f"SELECT {', '.join(RESULT_COLUMNS)} FROM results WHERE {where}", args).fetchone()
        return dict(zip(RESULT_COLUMNS, row, strict=True)) if row else None

    @_explained
    def save_output(self, run_id: str, model_key: str, case_id: str, trial: int, dest: Path) -> int | None:
        """Write one result's whole output to `dest` as UTF-8, a megabyte at a time (never all of it in memory).
        Returns the bytes written, or None when the call has no output (not stored, or errored). `model_key` may be a
        variant lane's (``model · variant``): then that variant's."""
        where, args = _call_where(run_id, model_key, case_id, trial)
        found = self.conn.execute(f"SELECT rowid FROM results WHERE output IS NOT NULL AND {where}", args).fetchone()
        if found is None:
            return None
        written = 0
        with self.conn.blobopen("results", "output", found[0], readonly=True) as blob, open(dest, "wb") as f:
            while chunk := blob.read(1 << 20):
                f.write(chunk)
                written += len(chunk)
        return written

    @_explained
    def concurrency_changes(self, run_id: str) -> list[tuple[float, int, int, str | None, str]]:
        return self.conn.execute(
            "SELECT at, old, new, model_key, source FROM concurrency_changes WHERE run_id = ? ORDER BY at",
            (run_id,)).fetchall()

    # ---- the tuning readout --------------------------------------------------

    def write_tuning_levels(self, run_id: str, rows: Sequence[Sequence[Any]]) -> None:
        """Replace a run's per-level readout (rows as `tuning.levels.readout_rows` makes them)."""
        c = self.conn
        c.execute("BEGIN")
        try:
            c.execute("DELETE FROM tuning_levels WHERE run_id = ?", (run_id,))
            c.executemany(
                "INSERT INTO tuning_levels (run_id, model_key, level, seconds, answered, goodput, limited_share, "
                "transient_share, retries_per_s, given_up, p50_ms, p95_ms, enough, best, verdict, attempts, "
                "rate_limited, transient, retries, latencies, cap) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, *r, *(None,) * (20 - len(r))) for r in rows])
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise

    def tuning_decisions(self, run_id: str) -> list[tuple[float, str | None, int, int, str]]:
        """The auto-tuner's decisions, oldest first: (epoch seconds, model key, old, new, reason)."""
        return self.conn.execute("SELECT at, model_key, old, new, reason FROM tuning_decisions WHERE run_id = ? "
                                 "ORDER BY at, rowid", (run_id,)).fetchall()

    def declared_limits(self, run_id: str) -> dict[str, tuple[float, DeclaredLimits]]:
        """The rate limits each model's provider declared last in a run: model key → (epoch seconds, limits)."""
        try:
            rows = self.conn.execute(
                "SELECT model_key, at, requests_limit, requests_remaining, requests_reset_s, tokens_limit, "
                "tokens_remaining, tokens_reset_s FROM declared_limits WHERE run_id = ? ORDER BY model_key",
                (run_id,)).fetchall()
        except sqlite3.OperationalError:  # a read-only database from before schema 18: no limits stored
            return {}
        return {r[0]: (r[1], DeclaredLimits(*r[2:])) for r in rows}

    def tuning_levels(self, run_id: str) -> list[tuple[Any, ...]]:
        """A run's per-level readout: (model_key, level, seconds, answered, goodput, limited_share,
        transient_share, retries_per_s, given_up, p50_ms, p95_ms, enough, best, verdict, attempts, rate_limited,
        transient, retries, latencies, cap); the last six are None in rows stored before schema 14."""
        return self.conn.execute(
            "SELECT model_key, level, seconds, answered, goodput, limited_share, transient_share, retries_per_s, "
            "given_up, p50_ms, p95_ms, enough, best, verdict, attempts, rate_limited, transient, retries, latencies, "
            "cap FROM tuning_levels WHERE run_id = ? "
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

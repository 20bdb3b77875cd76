"""The results writer's own process: commits frames of rows that the engine's process sends it.

Run as ``python path/to/sink_process.py DB``: by path, so starting it imports nothing of arenatui
(a third of the start-up time of ``-m``). Reads frames from stdin, each a 4-byte little-endian
length and a `marshal` payload: a list of (SQL, rows) pairs committed together in
one transaction, then answers one byte on stdout: ``.`` when every row was committed as sent,
``!`` when some rows had to be repaired or could not be stored (see below). It knows no schema:
the SQL comes from arenatui.store.db, the only module that writes it. New kinds of rows are new
(SQL, rows) pairs: nothing here changes.

A frame that fails as a whole (one row with a lone surrogate, one row a constraint refuses, one number
too large for SQLite's 64-bit integers) is
not lost: it is retried row by row, a row that cannot be encoded is stored with its text made
safe (lone surrogates written as ``\\udXXX`` escapes), and a row that still fails is left out
and counted. At the end it writes one summary line per kind of problem to stderr, which the
engine's process reads when it closes the writer. A failure no row can survive (disk full, a
corrupt or locked file) ends it with exit code 3 and one line ``sink-error SQLITE_NAME: message``.

It runs in its own process group (a signal to the engine's group does not reach it), and ignores
SIGINT, SIGTERM and SIGHUP besides (sent to it directly, or by a supervisor that signals every
process it started): the engine's process decides what to do and closes it. It ends at end of
input: when the engine's process exits or is killed, every frame it finished sending is
committed, and a frame cut off half-way is dropped whole.
"""

from __future__ import annotations

import marshal
import os
import signal
import sqlite3
import sys
from typing import Any

FATAL = 3
"""Exit code for a failure no row survives."""


def _safe(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


class _Problems:
    def __init__(self) -> None:
        self.repaired = 0
        self.dropped = 0
        self.first_drop = ""

    def summary(self) -> list[str]:
        out = []
        if self.repaired:
            out.append(f"sink-repaired {_rows(self.repaired)} stored with text that could not be encoded made "
                       "safe (lone surrogates written as \\udXXXX)")
        if self.dropped:
            out.append(f"sink-dropped {_rows(self.dropped)} could not be stored ({self.first_drop})")
        return out


def _fatal(e: sqlite3.Error) -> bool:
    """Errors that are the file's or the disk's, not one row's: retrying row by row cannot help."""
    name = getattr(e, "sqlite_errorname", "")
    return name.startswith(("SQLITE_FULL", "SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_IOERR", "SQLITE_BUSY",
                            "SQLITE_LOCKED", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_NOMEM"))


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:  # SQLite rolls back by itself on some errors (a full disk)
        conn.execute("ROLLBACK")


def _commit(conn: sqlite3.Connection, statements: list[tuple[str, list[tuple[Any, ...]]]],
            problems: _Problems) -> bool:
    """Commit one frame; True when every row went in as sent."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, rows in statements:
            conn.executemany(sql, rows)
        conn.execute("COMMIT")
        return True
    except (sqlite3.Error, UnicodeError, ValueError, OverflowError) as e:
        _rollback(conn)
        if isinstance(e, sqlite3.Error) and _fatal(e):
            raise
    # One bad row must not cost the others: row by row, repairing what can be repaired.
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql, rows in statements:
            for row in rows:
                try:
                    conn.execute(sql, row)
                    continue
                except (UnicodeError, ValueError, OverflowError, sqlite3.Error) as e:
                    if isinstance(e, sqlite3.Error) and _fatal(e):
                        raise
                try:
                    conn.execute(sql, tuple(_safe(v) for v in row))
                    problems.repaired += 1
                except (UnicodeError, ValueError, OverflowError, sqlite3.Error) as e:
                    if isinstance(e, sqlite3.Error) and _fatal(e):
                        raise
                    problems.dropped += 1
                    problems.first_drop = problems.first_drop or f"{type(e).__name__}: {e}"
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise
    return False


def serve(db: str) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, signal.SIG_IGN)
    problems = _Problems()
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    try:
        conn = sqlite3.connect(db, timeout=float(os.environ.get("ARENATUI_DB_WAIT_S", "10")), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        pages = os.environ.get("ARENATUI_MAX_PAGE_COUNT")
        if pages:  # a full disk, simulated for tests: SQLite refuses to grow the file past this many pages
            conn.execute(f"PRAGMA max_page_count = {int(pages)}")
        while True:
            head = inp.read(4)
            if len(head) < 4:
                break
            size = int.from_bytes(head, "little")
            payload = inp.read(size)
            if len(payload) < size:
                break  # the sender died mid-frame: that frame was never whole
            clean = _commit(conn, marshal.loads(payload), problems)
            try:
                out.write(b"." if clean else b"!")
                out.flush()
            except BrokenPipeError:
                pass  # nobody is listening any more; keep committing what arrives
        conn.close()
    except sqlite3.Error as e:
        for line in problems.summary():
            print(line, file=sys.stderr)
        name = getattr(e, "sqlite_errorname", "") or type(e).__name__
        print(f"sink-error {name}: {e}", file=sys.stderr, flush=True)
        return FATAL
    for line in problems.summary():
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(serve(sys.argv[1]))

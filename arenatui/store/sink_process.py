"""The results writer's own process: commits frames of rows that the engine's process sends it.

Run as ``python path/to/sink_process.py DB``: by path, so starting it imports nothing of arenatui
(a third of the start-up time of ``-m``). Reads frames from stdin, each a 4-byte little-endian
length and a `marshal` payload: a list of (SQL, rows) pairs committed together in
one transaction, then answers one byte on stdout. It knows no schema: the SQL comes from
arenatui.store.db, the only module that writes it.

It ignores SIGINT (Ctrl-C in the terminal reaches the whole process group; the engine's process
decides what to do) and ends at end of input: when the engine's process exits or is killed,
every frame it finished sending is committed, and a frame cut off half-way is dropped whole.
"""

from __future__ import annotations

import marshal
import signal
import sqlite3
import sys


def serve(db: str) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = sqlite3.connect(db, timeout=60.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    while True:
        head = inp.read(4)
        if len(head) < 4:
            break
        size = int.from_bytes(head, "little")
        payload = inp.read(size)
        if len(payload) < size:
            break  # the sender died mid-frame: that frame was never whole
        statements = marshal.loads(payload)
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, rows in statements:
                conn.executemany(sql, rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            out.write(b".")
            out.flush()
        except BrokenPipeError:
            pass  # nobody is listening any more; keep committing what arrives
    conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(serve(sys.argv[1]))

"""Issue 9, store half: a bad row never costs the others, and a full, corrupt or locked file is one clear message."""

from __future__ import annotations

import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from arenatui.kernel.errors import DiskFullError, PlanError, StoreError
from arenatui.kernel.events import CallFinished, CallResult
from arenatui.store import ResultWriter, Store
from arenatui.store.db import LEASE_S
from arenatui.store.schema import MIGRATIONS

CONFIG = {"project": {"name": "p"}, "models": [{"key": "m1"}], "cases": [{"id": f"q{i}", "input": f"x{i}"}
                                                                         for i in range(50)]}


def _result(case_id: str, output: str | None = "ok", trial: int = 0) -> CallResult:
    return CallResult("m1", case_id, trial, "ok", output, 1.0, True, None, None, 1, 10.0, 10.0, None, 1, 1, 0.0,
                      "stop", False, 1.0, 2.0)


def _write(db: Path, run_id: str, results: list[CallResult]) -> ResultWriter:
    writer = ResultWriter(db, run_id)

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.run)
            await anyio.lowlevel.checkpoint()
            for r in results:
                writer.on_event(CallFinished(r, 0.0))
            writer.stop()

    anyio.run(go)
    writer.close()
    return writer


def test_a_lone_surrogate_row_is_stored_made_safe_and_every_other_row_too(db_path: Path) -> None:
    with Store(db_path) as store:
        run_id = store.create_run("p", None, CONFIG, {}, 10)
    rows = [_result(f"q{i}") for i in range(9)] + [_result("bad\ud800id", output="out\udfffput")]
    writer = _write(db_path, run_id, rows)
    with Store(db_path) as store:
        stored = {r[0]: r[1] for r in store.results(run_id, ("case_id", "output"))}
    assert len(stored) == 10
    assert stored["bad\\ud800id"] == "out\\udfffput"  # the text made safe, visibly, not silently dropped
    assert writer.unclean_batches >= 1
    assert any("1 row stored with text that could not be encoded made safe" in p for p in writer.problems)


def test_a_row_the_database_refuses_is_left_out_and_counted_the_rest_committed(db_path: Path) -> None:
    with Store(db_path) as store:
        run_id = store.create_run("p", None, CONFIG, {}, 10)
        store.conn.execute("CREATE TRIGGER no_q3 BEFORE INSERT ON results WHEN NEW.case_id = 'q3' "
                           "BEGIN SELECT RAISE(ABORT, 'q3 refused'); END")
    writer = _write(db_path, run_id, [_result(f"q{i}") for i in range(6)])
    with Store(db_path) as store:
        assert sorted(r[0] for r in store.results(run_id, ("case_id",))) == ["q0", "q1", "q2", "q4", "q5"]
        assert store.done_keys(run_id) == {"m1": {("q0", 0), ("q1", 0), ("q2", 0), ("q4", 0), ("q5", 0)}}
    assert any("1 row could not be stored" in p and "q3 refused" in p for p in writer.problems)


def test_case_sets_are_stored_once_per_content_and_runs_read_them_back(db_path: Path) -> None:
    with Store(db_path) as store:
        ids = [store.create_run("p", None, CONFIG, {}, 50) for _ in range(10)]
        other = store.create_run("p", None, {**CONFIG, "cases": CONFIG["cases"][:3]}, {}, 3)
        assert store.conn.execute("SELECT COUNT(*) FROM case_sets").fetchone()[0] == 2
        (inline,) = store.conn.execute("SELECT config_json FROM runs WHERE run_id = ?", (ids[0],)).fetchone()
        assert "cases" not in json.loads(inline)
        assert store.get_run(ids[3]).config == CONFIG
        assert store.get_run(other).config["cases"] == CONFIG["cases"][:3]
        assert all(r.config["cases"] for r in store.list_runs())


def test_a_database_from_before_case_sets_keeps_working(db_path: Path) -> None:
    conn = sqlite3.connect(db_path, isolation_level=None)
    for script in MIGRATIONS[:4]:
        for statement in (s for s in script.split(";") if s.strip()):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 4")
    conn.execute("INSERT INTO runs (run_id, project, config_json, filters_json, planned, started_at, status) "
                 "VALUES ('old', 'p', ?, '{}', 50, 1.0, 'finished')", (json.dumps(CONFIG),))
    conn.close()
    with Store(db_path) as store:
        assert store.get_run("old").config == CONFIG
        (run,) = store.list_runs()
        assert run.run_id == "old" and run.status == "finished"


def _started(cmd: list[str]) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(cmd)
    deadline = time.monotonic() + 30
    proc = Path(f"/proc/{p.pid}/cmdline")
    while proc.exists() and not proc.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)  # its command line appears once the new program has started
    return p


def test_resume_is_refused_while_the_runs_process_lives_here_and_allowed_once_it_is_gone(db_path: Path) -> None:
    with Store(db_path) as store:
        run_id = store.create_run("p", None, CONFIG, {}, 50)
        other = _started([sys.executable, "-c", "import time; time.sleep(60)  # stands in for arena"])
        try:
            store.conn.execute("UPDATE runs SET pid = ? WHERE run_id = ?", (other.pid, run_id))
            with pytest.raises(PlanError, match=rf"still being run by process {other.pid} on .*kill {other.pid}"):
                store.claim_run(run_id)
        finally:
            other.kill()
            other.wait()
        store.claim_run(run_id)  # its process is gone: this one takes the run over
        row = store.conn.execute("SELECT status, pid FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        assert row == ("running", os.getpid())


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc")
def test_a_pid_now_used_by_another_program_does_not_hold_the_run(db_path: Path) -> None:
    with Store(db_path) as store:
        run_id = store.create_run("p", None, CONFIG, {}, 50)
        other = _started([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            store.conn.execute("UPDATE runs SET pid = ? WHERE run_id = ?", (other.pid, run_id))
            assert store.get_run(run_id).status == "interrupted"
            store.claim_run(run_id)
        finally:
            other.kill()
            other.wait()


def test_a_run_held_on_another_host_is_refused_until_its_heartbeat_is_stale(db_path: Path) -> None:
    with Store(db_path) as store:
        run_id = store.create_run("p", None, CONFIG, {}, 50)
        store.conn.execute("UPDATE runs SET host = 'elsewhere', pid = 1, heartbeat_at = ? WHERE run_id = ?",
                           (time.time() - 2, run_id))
        with pytest.raises(PlanError, match="process 1 on elsewhere, last heartbeat 2 s ago"):
            store.claim_run(run_id)
        assert store.get_run(run_id).status == "running"
        store.conn.execute("UPDATE runs SET heartbeat_at = ? WHERE run_id = ?", (time.time() - LEASE_S - 1, run_id))
        assert store.get_run(run_id).status == "interrupted"
        store.claim_run(run_id)
        assert store.conn.execute("SELECT host FROM runs").fetchone()[0] == socket.gethostname()


def test_the_writer_renews_the_runs_heartbeat(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("arenatui.store.writer.HEARTBEAT_S", 0.0)
    with Store(db_path) as store:
        run_id = store.create_run("p", None, CONFIG, {}, 1)
        store.conn.execute("UPDATE runs SET heartbeat_at = 0 WHERE run_id = ?", (run_id,))
    _write(db_path, run_id, [_result("q0")])
    with Store(db_path) as store:
        (beat,) = store.conn.execute("SELECT heartbeat_at FROM runs").fetchone()
    assert beat > time.time() - 60


def _corrupt(db: Path) -> None:
    with Store(db) as store:
        run_id = store.create_run("p", None, CONFIG, {}, 50)
        store.write_results(run_id, [_result(f"q{i}", output="x" * 3000) for i in range(40)])
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    page = 4096
    rng = random.Random(7)  # the same corruption every run
    for p in range(3, len(data) // page - 1):
        data[p * page + 10:p * page + 400] = rng.randbytes(390)
    db.write_bytes(bytes(data))


def test_a_corrupt_page_is_found_on_open_and_said_plainly(db_path: Path) -> None:
    _corrupt(db_path)
    with pytest.raises(StoreError) as e:
        Store(db_path)
    assert "is corrupt" in str(e.value) and str(db_path) in str(e.value) and ".recover" in str(e.value)
    assert not isinstance(e.value, DiskFullError)


@pytest.mark.parametrize("read_only", [False, True])
def test_a_schema_corrupted_into_bytes_that_are_not_utf8_is_corrupt_not_a_traceback(db_path: Path,
                                                                                   read_only: bool) -> None:
    """SQLite's error for a schema it cannot parse quotes the bad bytes ('malformed database schema ...'), and Python's
    sqlite3 raises UnicodeDecodeError for them instead of its own error (2 of 60 random corruptions did)."""
    Store(db_path).close()
    data = bytearray(db_path.read_bytes())
    at = data.find(b"CREATE TABLE")
    data[at + 7:at + 12] = b"\x82" * 5
    db_path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"is corrupt \(it holds bytes that are not UTF-8 where text belongs") as e:
        Store(db_path, read_only=read_only)
    assert str(db_path) in str(e.value) and ".recover" in str(e.value)


def test_a_file_that_is_not_a_database_is_said_plainly(db_path: Path) -> None:
    db_path.write_bytes(b"hello, this is not SQLite" * 200)
    with pytest.raises(StoreError, match=r"is corrupt .*file is not a database"):
        Store(db_path)


def test_a_full_disk_at_start_is_disk_full_naming_the_file(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENATUI_MAX_PAGE_COUNT", "2")
    with pytest.raises(DiskFullError, match=r"^disk full: the results database .*results\.db") as e:
        Store(db_path)
    assert e.value.exit_code == 1


def test_a_locked_database_names_the_file_and_the_other_process(db_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    Store(db_path).close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    monkeypatch.setenv("ARENATUI_DB_WAIT_S", "0.2")
    try:
        with Store(db_path) as store, pytest.raises(StoreError, match=r"is locked by another process \(waited 0.2 s"):
            store.create_run("p", None, CONFIG, {}, 1)
    finally:
        holder.execute("ROLLBACK")
        holder.close()

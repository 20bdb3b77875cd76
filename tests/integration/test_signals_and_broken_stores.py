"""Issue 9 in real processes: signals to the process group, a full disk, a corrupt or locked file, two processes.

Each case asserts what the person sees (exit code, one paragraph, the resume command, no traceback) and
what the store keeps (every finished call, the run's end recorded, never left 'running').
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arenatui.store import Store

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and process groups")

HEAD = """
[project]
name = "sig"

[run]
concurrency = {concurrency}
trials = 1
seed = 3

[[models]]
key = "m1"
provider = "sim"
sim = {{ base_latency_s = {latency}, per_token_s = 0.0005, output_tokens = {tokens}, jitter = 0.1 }}

[[models]]
key = "m2"
provider = "sim"
sim = {{ base_latency_s = {latency}, per_token_s = 0.0005, output_tokens = {tokens}, jitter = 0.1 }}
"""


def _project(tmp_path: Path, n: int = 150, *, latency: float = 0.05, concurrency: int = 4, tokens: int = 10,
             name: str = "arena.toml") -> Path:
    cases = "".join(f'[[cases]]\nid = "q{i}"\ninput = "what is {i}+1?"\nexpected = "{i + 1}"\n\n' for i in range(n))
    p = tmp_path / name
    p.write_text(HEAD.format(concurrency=concurrency, latency=latency, tokens=tokens) + cases, encoding="utf-8")
    return p


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "ARENATUI_HOME": str(tmp_path / "home"), **extra}


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return int(c.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _hangup_default() -> None:
    """In the child: SIGHUP as a terminal's job has it. A suite started under nohup (or a runner that ignores
    SIGHUP) passes the ignore on, and arena rightly keeps running through a hangup it was told to ignore."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    # its own process group, as a shell job is: the signal reaches the writer child too
    return subprocess.Popen([sys.executable, "-m", "arenatui", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=cwd, start_new_session=True, preexec_fn=_hangup_default)


def _arena(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arenatui", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def _wait_rows(p: subprocess.Popen[str], db: Path, n: int) -> None:
    deadline = time.monotonic() + 60
    while _rows(db) < n:
        assert p.poll() is None, f"the sweep ended too early: {p.communicate()}"
        assert time.monotonic() < deadline, "no rows appeared"
        time.sleep(0.02)


def _clean(text: str) -> None:
    assert "Traceback" not in text and "ExceptionGroup" not in text and "Error:" not in text.replace("error:", "")


def _only_run(db: Path) -> tuple[str, str, int]:
    with sqlite3.connect(db) as c:
        (row,) = c.execute("SELECT run_id, status, (SELECT COUNT(*) FROM results WHERE "
                           "error_class IS NOT 'cancelled') FROM runs").fetchall()
    return row[0], row[1], row[2]


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_to_the_process_group_stop_like_ctrl_c(tmp_path: Path, signum: int, code: int) -> None:
    # 300 calls of 0.25 s at 4 at once: ~19 s of work, so the signal lands mid-run even when a busy machine
    # stalls this test for seconds after the 20th row
    proj, db = _project(tmp_path, latency=0.25), tmp_path / "r.db"
    env = _env(tmp_path)
    p = _start(["evaluate", "-p", str(proj), "--db", str(db)], env, tmp_path)
    _wait_rows(p, db, 20)
    os.killpg(p.pid, signum)
    out, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    _clean(err + out)
    run_id, status, stored = _only_run(db)
    assert status == "cancelled"
    assert f"Resume with:\n  arena evaluate --resume {run_id} --db {db}" in err
    assert f"Stored: {stored} of 300 calls" in out  # the writer outlived the signal: every finished call is in

    r = _arena(["evaluate", "--resume", run_id, "--db", str(db), "-q", "--no-report", "-c", "64"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert _only_run(db)[1:] == ("finished", 300)


def test_two_quick_ctrl_c_end_cleanly_with_the_resume_hint(tmp_path: Path) -> None:
    proj, db = _project(tmp_path, latency=0.25), tmp_path / "r.db"  # ~19 s of work: the signals land mid-run
    p = _start(["evaluate", "-p", str(proj), "--db", str(db)], _env(tmp_path), tmp_path)
    _wait_rows(p, db, 20)
    os.killpg(p.pid, signal.SIGINT)
    time.sleep(0.02)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    _clean(err + out)
    run_id, status, _ = _only_run(db)
    assert status == "cancelled"
    assert f"arena evaluate --resume {run_id}" in err


def test_a_disk_that_fills_mid_run_says_disk_full_and_where(tmp_path: Path) -> None:
    proj, db = _project(tmp_path, 300, latency=0.001, concurrency=8, tokens=400), tmp_path / "r.db"
    env = _env(tmp_path)
    first = _arena(["evaluate", "-p", str(proj), "--db", str(db), "-q", "--limit", "1"], env, tmp_path)
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(db) as c:
        pages = c.execute("PRAGMA page_count").fetchone()[0]
    # SQLite refuses to grow the file past a few more pages: what a full disk looks like to it
    full = _env(tmp_path, ARENATUI_MAX_PAGE_COUNT=str(pages + 6))
    r = _arena(["evaluate", "-p", str(proj), "--db", str(db), "-q"], full, tmp_path)
    assert r.returncode == 1, r.stderr
    _clean(r.stderr + r.stdout)
    assert "error: disk full: the results database" in r.stderr and str(db) in r.stderr.replace("\n", " ")
    assert "Resume with:" in r.stderr
    with sqlite3.connect(db) as c:
        status = c.execute("SELECT status FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
        kept = c.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert status == "failed" and kept > 2  # not 'running'; what was committed is kept


def test_a_full_disk_at_start_says_disk_full(tmp_path: Path) -> None:
    proj, db = _project(tmp_path, 5), tmp_path / "r.db"
    r = _arena(["evaluate", "-p", str(proj), "--db", str(db)], _env(tmp_path, ARENATUI_MAX_PAGE_COUNT="3"), tmp_path)
    assert r.returncode == 1
    _clean(r.stderr)
    assert r.stderr.startswith("error: disk full: the results database")


def test_a_corrupt_database_is_one_paragraph_for_runs_and_evaluate(tmp_path: Path) -> None:
    proj, db = _project(tmp_path, 60), tmp_path / "r.db"
    env = _env(tmp_path)
    assert _arena(["evaluate", "-p", str(proj), "--db", str(db), "-q"], env, tmp_path).returncode == 0
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    for page in range(2, len(data) // 4096):
        data[page * 4096 + 8:page * 4096 + 200] = b"\xa5" * 192
    db.write_bytes(bytes(data))
    for args in (["runs", "--db", str(db)], ["evaluate", "-p", str(proj), "--db", str(db)],
                 ["evaluate", "--resume", "last", "--db", str(db)]):
        r = _arena(args, env, tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        _clean(r.stderr)
        text = " ".join(r.stderr.split())
        assert "is corrupt" in text and str(db) in text and ".recover" in text, text


def test_a_locked_database_names_the_file_without_a_traceback(tmp_path: Path) -> None:
    proj, db = _project(tmp_path, 5), tmp_path / "r.db"
    Store(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing, holding the lock
    try:
        r = _arena(["evaluate", "-p", str(proj), "--db", str(db)], _env(tmp_path, ARENATUI_DB_WAIT_S="0.5"), tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert r.returncode == 2
    _clean(r.stderr)
    assert "is locked by another process (waited 0.5 s" in " ".join(r.stderr.split())


def test_resume_is_refused_while_the_first_process_runs(tmp_path: Path) -> None:
    proj, db = _project(tmp_path, latency=0.1, concurrency=2), tmp_path / "r.db"
    env = _env(tmp_path)
    p = _start(["evaluate", "-p", str(proj), "--db", str(db), "-q"], env, tmp_path)
    try:
        _wait_rows(p, db, 4)
        r = _arena(["evaluate", "--resume", "last", "--db", str(db), "-q"], env, tmp_path)
        assert r.returncode == 2
        _clean(r.stderr)
        assert f"still being run by process {p.pid}" in " ".join(r.stderr.split())
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.communicate(timeout=60)
    assert _only_run(db)[1] == "cancelled"


def test_two_resumes_after_a_kill_one_runs_the_other_is_refused(tmp_path: Path) -> None:
    proj, db = _project(tmp_path, 60, latency=0.1, concurrency=2), tmp_path / "r.db"
    env = _env(tmp_path)
    p = _start(["evaluate", "-p", str(proj), "--db", str(db), "-q"], env, tmp_path)
    _wait_rows(p, db, 4)
    os.killpg(p.pid, signal.SIGKILL)
    p.communicate(timeout=30)
    both = [_start(["evaluate", "--resume", "last", "--db", str(db), "-q", "--no-report"], env, tmp_path)
            for _ in range(2)]
    results = [(q.returncode, err) for q in both for _out, err in [q.communicate(timeout=120)]]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "still being run by process" in " ".join(refused.split())
    assert _only_run(db)[1:] == ("finished", 120)


def test_resume_refuses_project_and_seed_and_says_what_changed_in_the_file(tmp_path: Path) -> None:
    proj, db = _project(tmp_path, 10), tmp_path / "r.db"
    env = _env(tmp_path)
    assert _arena(["evaluate", "-p", str(proj), "--db", str(db), "-q", "--limit", "3"], env, tmp_path).returncode == 0
    for extra in (["--seed", "5"], ["--project", str(proj)]):
        r = _arena(["evaluate", "--resume", "last", "--db", str(db), *extra], env, tmp_path)
        assert r.returncode == 2 and "drop --project, --seed" in " ".join(r.stderr.split()), r.stderr
    text = proj.read_text(encoding="utf-8").replace('expected = "3"', 'expected = "three"')
    proj.write_text(text.replace('key = "m2"', 'key = "m3"'), encoding="utf-8")
    r = _arena(["evaluate", "--resume", "last", "--db", str(db), "-q"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    note = " ".join(r.stderr.split())
    assert f"note: the project file {proj} changed since this run started" in note
    assert "1 model added (m3)" in note and "1 model removed (m2)" in note and "1 case changed (q2)" in note
    assert "The run's stored configuration is used" in note


@pytest.mark.skipif(shutil.which("nohup") is None, reason="needs nohup")
def test_under_nohup_a_hangup_is_ignored_as_asked(tmp_path: Path) -> None:
    proj, db = _project(tmp_path, 60), tmp_path / "r.db"
    p = subprocess.Popen([shutil.which("nohup") or "nohup", sys.executable, "-m", "arenatui", "evaluate", "-p",
                          str(proj), "--db", str(db), "-q", "--no-report"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=_env(tmp_path), cwd=tmp_path, start_new_session=True)
    _wait_rows(p, db, 10)
    os.killpg(p.pid, signal.SIGHUP)
    _out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert _only_run(db)[1:] == ("finished", 120)

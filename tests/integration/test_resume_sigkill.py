"""Resume after a real SIGKILL: the stored rows plus the resumed ones are exactly the plan, once each."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arenatui.store import Store

PROJECT = """
[project]
name = "killme"

[run]
concurrency = 6
trials = 2
seed = 11

[[models]]
key = "m1"
provider = "sim"
sim = { base_latency_s = 0.02, per_token_s = 0.001, output_tokens = 16, jitter = 0.2 }

[[models]]
key = "m2"
provider = "sim"
sim = { base_latency_s = 0.025, per_token_s = 0.001, output_tokens = 12, jitter = 0.2, accuracy = 0.5 }

[[models]]
key = "m3"
provider = "sim"
sim = { base_latency_s = 0.03, per_token_s = 0.0005, output_tokens = 20, jitter = 0.2, transient_rate = 0.1 }
"""
N_CASES = 30
PLANNED = 3 * N_CASES * 2


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return int(c.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _arena(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arenatui", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_resume_after_sigkill_stores_each_planned_call_exactly_once(tmp_path: Path) -> None:
    cases = "".join(f'[[cases]]\nid = "q{i}"\ninput = "what is {i}+1?"\nexpected = "{i + 1}"\n\n'
                    for i in range(N_CASES))
    proj = tmp_path / "arena.toml"
    proj.write_text(PROJECT + cases, encoding="utf-8")
    db = tmp_path / "results.db"
    env = {**os.environ, "ARENATUI_HOME": str(tmp_path / "home")}

    p = subprocess.Popen([sys.executable, "-m", "arenatui", "evaluate", "--project", str(proj), "--db", str(db),
                          "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while _rows(db) < 15:
            assert p.poll() is None, f"the sweep ended before it could be killed: {p.stderr.read() if p.stderr else ''}"
            assert time.monotonic() < deadline, "no rows appeared"
            time.sleep(0.01)
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.wait(timeout=30)
        if p.stderr:
            p.stderr.close()
    assert p.returncode == -signal.SIGKILL
    before = _rows(db)
    assert 15 <= before < PLANNED, "the kill must land mid-run for this test to mean anything"
    with Store(db) as store:  # its process is gone: `arena runs` must not call it running
        (killed,) = store.list_runs()
        assert killed.status == "interrupted" and killed.stored >= before

    r = _arena(["evaluate", "--resume", "last", "--db", str(db), "--quiet"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"= {PLANNED} calls in " in r.stdout

    with sqlite3.connect(db) as c:
        (run_id,) = c.execute("SELECT run_id FROM runs").fetchone()  # one run: resume did not make another
        assert c.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
        assert c.execute("SELECT status FROM runs").fetchone()[0] == "finished"
        assert c.execute("SELECT COUNT(*) FROM results WHERE run_id = ?", (run_id,)).fetchone()[0] == PLANNED
        dups = c.execute("SELECT model_key, case_id, trial, COUNT(*) FROM results GROUP BY 1, 2, 3 "
                         "HAVING COUNT(*) > 1").fetchall()
        assert dups == []
        keys = set(c.execute("SELECT model_key, case_id, trial FROM results").fetchall())
        assert keys == {(m, f"q{i}", t) for m in ("m1", "m2", "m3") for i in range(N_CASES) for t in (0, 1)}
        assert c.execute("SELECT COUNT(*) FROM results WHERE error_class = 'cancelled'").fetchone()[0] == 0
        snapshot = c.execute("SELECT model_key, case_id, trial, finished_at, attempts FROM results "
                             "ORDER BY 1, 2, 3").fetchall()

    # resuming a finished run makes no calls: same rows, same finish times
    r2 = _arena(["evaluate", "--resume", "last", "--db", str(db), "--quiet", "--no-report"], env, tmp_path)
    assert r2.returncode == 0, r2.stderr
    with sqlite3.connect(db) as c:
        again = c.execute("SELECT model_key, case_id, trial, finished_at, attempts FROM results "
                          "ORDER BY 1, 2, 3").fetchall()
    assert again == snapshot

"""A headless `arena evaluate` in a process of its own, slow enough to be still running while a test watches and
steers it (`arena watch`, `arena control`), and the conditions tests wait on (never on wall-clock speed)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

PROJECT = """
[project]
name = "watched"

[run]
concurrency = 2
trials = 1
seed = 5
max_attempts = 3
backoff_base_s = 0.01

[[models]]
key = "m1"
provider = "sim"
sim = {{ base_latency_s = {latency}, per_token_s = 0.0, output_tokens = 4, jitter = 0.1 }}

[[models]]
key = "m2"
provider = "sim"
[models.sim]
base_latency_s = {latency}
per_token_s = 0.0
output_tokens = 4
jitter = 0.1
accuracy = 0.5
transient_rate = 0.2
"""


def write_project(tmp: Path, cases: int = 40, latency: float = 0.15) -> Path:
    text = PROJECT.format(latency=latency) + "".join(
        f'[[cases]]\nid = "q{i}"\ninput = "what is {i}+1?"\nexpected = "{i + 1}"\n\n' for i in range(cases))
    path = tmp / "arena.toml"
    path.write_text(text, encoding="utf-8")
    return path


def start(project: Path, db: Path, *extra: str) -> subprocess.Popen[bytes]:
    """`arena evaluate --quiet --no-report` on `db`, in its own process."""
    return subprocess.Popen([sys.executable, "-m", "arenatui", "evaluate", "--project", str(project), "--db", str(db),
                             "--quiet", "--no-report", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=dict(os.environ), cwd=project.parent)


def start_load(project: Path, db: Path, rate: float) -> subprocess.Popen[bytes]:
    """`arena load --quiet` of model m1 at `rate` for ten minutes (the test stops it), in its own process."""
    return subprocess.Popen([sys.executable, "-m", "arenatui", "load", "--project", str(project), "--model", "m1",
                             "--rate", f"{rate:g}", "--duration", "600s", "--db", str(db), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ),
                            cwd=project.parent)


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arenatui", *args], capture_output=True, text=True,
                          env=dict(os.environ), cwd=cwd, timeout=120)


def query(db: Path, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return c.execute(sql, tuple(args)).fetchall()
    except sqlite3.OperationalError:  # not created or migrated yet
        return []


def wait_for(what: str, cond: Callable[[], object], timeout: float = 90.0,
             proc: subprocess.Popen[bytes] | None = None) -> None:
    """Poll `cond` until true; fail naming `what` (and the runner's stderr if it ended) after a generous timeout."""
    deadline = time.monotonic() + timeout
    while not cond():
        if proc is not None and proc.poll() is not None and proc.returncode != 0:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise AssertionError(f"the runner exited {proc.returncode} while waiting for {what}: {err}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def live_row(db: Path) -> tuple[Any, ...] | None:
    rows = query(db, "SELECT state, pid, host, models_json, target, tuner FROM live_state")
    return rows[0] if rows else None


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)
    if proc.stderr:
        proc.stderr.close()


def standing_still(db: Path) -> bool:
    """The run is paused with no call in flight: its stored figures stand still (a call backing off stays parked
    under pause, its failed attempt already stored)."""
    import json

    row = live_row(db)
    return row is not None and row[0] == "paused" and all(v[0] == 0 for v in json.loads(row[3]).values())

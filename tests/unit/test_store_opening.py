"""Opening the results database: several processes creating one at once, and read-only databases (a read-only
mount, another user's file) that commands which only read must still read."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from arenatui.kernel.errors import StoreError
from arenatui.store import Store
from arenatui.store.schema import MIGRATIONS

PROCESSES = 6


def _open_at_once(path: str, barrier: multiprocessing.synchronize.Barrier, errors: multiprocessing.Queue[str]) -> None:
    barrier.wait()
    try:
        Store(path).close()
    except Exception as e:  # any failure is the finding; the parent asserts there is none
        errors.put(f"{type(e).__name__}: {e}")


def test_several_processes_creating_one_new_database_at_once_all_succeed(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    errors: multiprocessing.Queue[str] = ctx.Queue()
    for attempt in range(4):  # the race lost 2 tries in 6 before: four rounds of six processes
        path = str(tmp_path / f"new-{attempt}.db")
        barrier = ctx.Barrier(PROCESSES)
        procs = [ctx.Process(target=_open_at_once, args=(path, barrier, errors)) for _ in range(PROCESSES)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * PROCESSES
        with sqlite3.connect(path) as c:
            assert c.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
            assert c.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'runs'").fetchone()[0] == 1
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == []


def _db_with_a_run(path: Path) -> str:
    with Store(path) as store:
        return store.create_run("p", None, {"project": {"name": "p"}}, {}, 1)


def test_a_read_only_open_reads_and_a_write_through_it_says_read_only(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    run_id = _db_with_a_run(path)
    with Store(path, read_only=True) as store:
        assert store.read_only
        assert store.get_run("last").run_id == run_id
        with pytest.raises(StoreError, match=r"is read-only .*pass --db with a file you can write"):
            store.create_run("p", None, {}, {}, 1)


def test_a_read_only_open_of_an_older_schema_migrates_it_first(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as c:  # a database as the arenatui before the newest migration left it
        for script in MIGRATIONS[:-1]:
            c.executescript(script)
        c.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    with Store(path, read_only=True) as store:
        assert not store.read_only  # opened to write, to migrate
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_a_reader_never_creates_a_missing_database_and_a_writer_does(tmp_path: Path) -> None:
    from arenatui.kernel.errors import NoSuchDatabase

    for kw in ({"read_only": True}, {"create": False}):
        with pytest.raises(NoSuchDatabase, match=r"none\.db' does not exist"):
            Store(tmp_path / "none.db", **kw)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
    with Store(tmp_path / "none.db") as store:
        assert store.list_runs() == []
    with Store(tmp_path / "none.db", read_only=True) as store:  # once made, a reader opens it
        assert store.read_only


def _unshare_ro_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs none /mnt && mount -o remount,ro /mnt"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _unshare_ro_mount(), reason="needs root and mount namespaces (unshare -m) for a read-only "
                    "mount; the read-only open itself is tested above")
def test_read_commands_work_on_a_database_on_a_read_only_mount(tmp_path: Path) -> None:
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    db = src / "r.db"
    proj = tmp_path / "p.toml"
    proj.write_text('[[models]]\nkey = "m"\nprovider = "sim"\nsim = { base_latency_s = 0.0, per_token_s = 0.0 }\n'
                    '[[cases]]\nid = "c1"\ninput = "q"\nexpected = "a"\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    arena = [sys.executable, "-m", "arenatui"]
    subprocess.run([*arena, "evaluate", "--project", str(proj), "--db", str(db), "--quiet", "--no-report"],
                   check=True, env=env, capture_output=True)
    sweep_id = sqlite3.connect(db).execute("SELECT run_id FROM runs").fetchone()[0]
    subprocess.run([*arena, "load", "--project", str(proj), "--db", str(db), "--rate", "20", "--duration", "0.2",
                    "--quiet"], check=True, env=env, capture_output=True)
    ro = mnt / "r.db"
    cmds = [["runs"], ["report", sweep_id], ["export", sweep_id, "-f", "csv"], ["load", "--show", "last"],
            ["compare", sweep_id], ["evaluate", "--project", str(proj)]]
    script = f"mount --bind {src} {mnt} && mount -o remount,bind,ro {mnt} && " + " ; ".join(
        " ".join([*arena, *c, "--db", str(ro)]) + f" > {tmp_path}/out{i} 2>&1; echo $? >> {tmp_path}/out{i}"
        for i, c in enumerate(cmds))
    subprocess.run(["unshare", "-m", "sh", "-c", script], check=True, env=env)
    outs = [(tmp_path / f"out{i}").read_text(encoding="utf-8") for i in range(len(cmds))]
    for out in outs[:4]:
        assert out.rstrip().endswith("\n0") and "error:" not in out, out
    assert "finished" in outs[0] and "c1" in outs[2] and "lat p50" in outs[3]  # into a file: tab-separated
    assert "nothing to compare" in outs[4] and "Traceback" not in outs[4]  # one model: it read the run, no pair
    assert outs[5].rstrip().endswith("2") and "is read-only" in outs[5] and "Traceback" not in outs[5]

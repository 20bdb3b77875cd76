"""Issue 9 item 13 in a real terminal (tmux): SIGTERM or SIGHUP to the console restores it, records the end."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arenatui.store import Store

TMUX = shutil.which("tmux")


def _tmux(sock: str, *args: str) -> str:
    return subprocess.run([TMUX or "tmux", "-L", sock, *args], capture_output=True, text=True, check=False).stdout


def _terminal_modes(sock: str) -> dict[str, str]:
    names = ("alternate_on", "cursor_flag", "mouse_any_flag", "mouse_button_flag", "mouse_standard_flag",
             "mouse_sgr_flag")
    values = _tmux(sock, "display", "-p", "-t", "demo", " ".join(f"#{{{n}}}" for n in names)).split()
    return dict(zip(names, values, strict=True))


def _wait(pred: object, timeout: float = 90.0) -> None:  # a ceiling against a hang, not a speed requirement
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.skipif(TMUX is None or sys.platform == "win32", reason="needs tmux")
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_to_the_console_restores_the_terminal_and_records_the_end(arena_home: Path, tmp_path: Path,
                                                                           signum: int, code: int) -> None:
    sock = f"arena-sig-{os.getpid()}-{tmp_path.name}"
    pid_file, db = tmp_path / "pid", tmp_path / "demo.db"
    arena = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "arenatui", "demo", "--trials", "50", "--db",
                                                str(db)))
    inner = f"echo $$ > {shlex.quote(str(pid_file))}; exec {arena}"
    cmd = (f"cd {shlex.quote(str(tmp_path))} && unset COLUMNS LINES && ARENATUI_HOME={shlex.quote(str(arena_home))} "
           f"sh -c {shlex.quote(inner)}; echo EXIT=$?; sleep 30")
    _tmux(sock, "-f", "/dev/null", "new-session", "-d", "-s", "demo", "-x", "160", "-y", "48", cmd)
    try:
        _wait(lambda: re.search(r"[✓✗!◑▹][0-9]+/[0-9]+", _tmux(sock, "capture-pane", "-p", "-t", "demo")) is not None)
        modes = _terminal_modes(sock)
        assert modes["alternate_on"] == "1" and modes["cursor_flag"] == "0"  # the console owns the terminal now
        os.kill(int(pid_file.read_text().strip()), signum)
        _wait(lambda: "EXIT=" in _tmux(sock, "capture-pane", "-p", "-t", "demo"))
        screen = _tmux(sock, "capture-pane", "-p", "-t", "demo")
        modes = _terminal_modes(sock)
    finally:
        _tmux(sock, "kill-server")
    assert f"EXIT={code}" in screen, screen
    assert modes == {"alternate_on": "0", "cursor_flag": "1", "mouse_any_flag": "0", "mouse_button_flag": "0",
                     "mouse_standard_flag": "0", "mouse_sgr_flag": "0"}
    assert "Traceback" not in screen
    with Store(db) as store:
        (run,) = store.list_runs()
    assert run.status == "cancelled" and run.stored > 0
    assert f"arena run --resume {run.run_id} --db {db}" in screen.replace("\n", "")


@pytest.mark.slow
@pytest.mark.skipif(TMUX is None or sys.platform == "win32", reason="needs tmux")
def test_a_closed_terminal_ends_the_console_and_records_the_end(arena_home: Path, tmp_path: Path) -> None:
    """A real hangup (the terminal's server gone): writes fail, yet the process ends and the run is not 'running'."""
    sock = f"arena-hup-{os.getpid()}-{tmp_path.name}"
    pid_file, db = tmp_path / "pid", tmp_path / "demo.db"
    arena = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "arenatui", "demo", "--trials", "50", "--db",
                                                str(db)))
    inner = f"echo $$ > {shlex.quote(str(pid_file))}; exec {arena}"
    cmd = (f"cd {shlex.quote(str(tmp_path))} && unset COLUMNS LINES && ARENATUI_HOME={shlex.quote(str(arena_home))} "
           f"sh -c {shlex.quote(inner)}")
    _tmux(sock, "-f", "/dev/null", "new-session", "-d", "-s", "demo", "-x", "160", "-y", "48", cmd)
    try:
        _wait(lambda: re.search(r"[✓✗!◑▹][0-9]+/[0-9]+", _tmux(sock, "capture-pane", "-p", "-t", "demo")) is not None)
    finally:
        _tmux(sock, "kill-server")
    pid = int(pid_file.read_text().strip())

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    try:
        _wait(gone, timeout=60)
    finally:
        if not gone():
            os.kill(pid, signal.SIGKILL)
    with Store(db) as store:
        (run,) = store.list_runs()
    assert run.status == "cancelled" and run.stored > 0

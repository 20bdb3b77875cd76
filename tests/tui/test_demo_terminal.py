"""End to end: `arena demo` in a real terminal (tmux), watched, tuned with `+`, stopped with `q`, then the store."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arenatui.store import Store

TMUX = shutil.which("tmux")


def _tmux(sock: str, *args: str) -> str:
    return subprocess.run([TMUX or "tmux", "-L", sock, *args], capture_output=True, text=True, check=False).stdout


def _wait_for(sock: str, pred: object, timeout: float = 90.0) -> str:
    """The screen once `pred` holds. The timeout is a ceiling against a hang, not a speed requirement: a busy
    machine takes longer to get there, never a different way (how fast the console opens is measured by
    benchmarks/, not asserted here)."""
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux(sock, "capture-pane", "-p", "-t", "demo")
        if pred(screen):  # type: ignore[operator]
            return screen
        time.sleep(0.1)
    raise AssertionError(f"timed out; the screen was:\n{screen}")


def _footer(screen: str) -> str:
    """The bottom line: the key hints, which say where the keys go (a focused filter shows "esc Back")."""
    lines = screen.rstrip().splitlines()
    return lines[-1] if lines else ""


@pytest.mark.slow
@pytest.mark.skipif(TMUX is None, reason="needs tmux")
@pytest.mark.parametrize("size", [(160, 48), (80, 24)], ids=["160x48", "80x24"])
def test_arena_demo_in_a_terminal(arena_home: Path, tmp_path: Path, size: tuple[int, int]) -> None:
    cols, rows = str(size[0]), str(size[1])
    sock = f"arena-test-{os.getpid()}-{tmp_path.name}"
    arena = [sys.executable, "-m", "arenatui"]
    # pytest exports COLUMNS/LINES for its own output; Textual would believe them over the terminal
    cmd = (f"cd {shlex.quote(str(tmp_path))} && unset COLUMNS LINES && ARENATUI_HOME={shlex.quote(str(arena_home))} "
           f"{' '.join(shlex.quote(a) for a in arena)} demo; echo EXIT=$?; sleep 30")
    _tmux(sock, "-f", "/dev/null", "new-session", "-d", "-s", "demo", "-x", cols, "-y", rows, cmd)
    _tmux(sock, "resize-window", "-t", "demo", "-x", cols, "-y", rows)
    try:
        screen = _wait_for(sock, lambda s: "▶ running" in s and "target 3" in s)
        # the lesson banner names the model with a provider limit and what to press
        screen = _wait_for(sock, lambda s: "sim-limited" in s and "press +" in s)
        screen = _wait_for(sock, lambda s: re.search(r"[✓✗!][0-9]+/8", s) is not None)  # a finished cell
        _tmux(sock, "send-keys", "-t", "demo", "+")
        screen = _wait_for(sock, lambda s: "target 4" in s)
        # issue 12: at every size the concurrency line and the quit and help hints stay on screen
        assert re.search(r"^ concurrency target 4 +in flight", screen, re.M), screen
        assert "q Quit" in screen and "? Help" in screen, screen
        if size[0] >= 120:
            assert "concurrency 3 → 4 (user)" in _wait_for(sock, lambda s: "3 → 4" in s)
        else:  # the events pane is small: filter it to user changes (Escape leaves the filter), wrap with w
            _tmux(sock, "send-keys", "-t", "demo", "/")
            _wait_for(sock, lambda s: "esc Back" in _footer(s))  # the filter has the keys
            _tmux(sock, "send-keys", "-t", "demo", "-l", "user")
            _tmux(sock, "send-keys", "-t", "demo", "Escape")
            # ESC and w read together are alt+w (a busy machine reads late): w only once the ESC has been taken
            _wait_for(sock, lambda s: "q Quit" in _footer(s))
            _tmux(sock, "send-keys", "-t", "demo", "w")
            screen = _wait_for(sock, lambda s: "(user)" in s)  # shown in full, wrapped
            assert "3 → 4" in screen
        _tmux(sock, "send-keys", "-t", "demo", "q")
        screen = _wait_for(sock, lambda s: "Stop the sweep?" in s)
        assert "arena run --resume" in screen
        _tmux(sock, "send-keys", "-t", "demo", "y")
        screen = _wait_for(sock, lambda s: "EXIT=" in s)
        assert "EXIT=130" in screen or "EXIT=0" in screen
        assert "Run id:" in screen
    finally:
        _tmux(sock, "kill-session", "-t", "demo")
    with Store(arena_home / "data" / "arena.db") as store:
        (run,) = store.list_runs()
        changes = store.concurrency_changes(run.run_id)
        assert run.status in ("cancelled", "finished")
        assert run.stored > 0
    assert any(old == 3 and new == 4 and src == "user" for _at, old, new, _mk, src in changes)

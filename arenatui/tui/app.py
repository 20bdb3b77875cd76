"""The console application: themes, the command palette, and the run screen over one `Sweep`."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.theme import Theme

from arenatui.kernel.events import RunStatus
from arenatui.session.sweep import Sweep, stop_signals
from arenatui.tui.screens import RunScreen
from arenatui.tui.screens.dialogs import Confirm
from arenatui.tui.themes import (
    DEFAULT_THEME,
    STATE_VARIABLES,
    hide_builtin_themes,
    load_themes,
    remember_theme,
    remembered_theme,
)


def _terminal_gone() -> bool:
    """After a hangup the terminal refuses every ioctl: a SIGHUP sent by `kill` leaves it answering."""
    try:
        import termios

        termios.tcgetattr(1)
    except Exception:  # termios.error (ENOTTY, EIO); no termios at all
        return True
    return False


class ArenaApp(App[RunStatus | None]):
    """Watch and steer one sweep. `autostart=False` shows the screen without running the engine (tests)."""

    CSS_PATH = "app.tcss"
    TITLE = "arena"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [Binding("ctrl+c", "interrupt", "Stop", show=False, priority=True)]
    """Ctrl-C stops the sweep as the README says (as `q` then `y`, without asking; exit 130), instead of
    Textual's "press ctrl+q to quit"; a second Ctrl-C stops waiting for calls in flight."""

    def __init__(self, sweep: Sweep, *, theme: str | None = None, autostart: bool = True,
                 lesson: str | None = None) -> None:
        super().__init__()
        self.sweep = sweep
        self.lesson = lesson
        """The demo's model with a provider limit, for the lesson banner (None: no banner)."""
        self.autostart = autostart
        self._theme_arg = theme
        self.theme_problems: list[str] = []
        loaded = load_themes()
        for t in loaded.themes:
            self.register_theme(t)
        self.theme_problems = loaded.problems
        self.theme = self._initial_theme()
        hide_builtin_themes(self, loaded)

    def _initial_theme(self) -> str:
        wanted = [self._theme_arg, self.sweep.project.theme, remembered_theme(), DEFAULT_THEME]
        for name in wanted:
            if name and name in self.available_themes:
                return name
            if name and name == self._theme_arg:
                self.theme_problems.append(f"--theme {name}: no such theme; available: "
                                           f"{', '.join(sorted(self.available_themes))}")
            elif name and name == self.sweep.project.theme:
                self.theme_problems.append(f"{self.sweep.project.path}: [project] theme = {name!r} is not a known "
                                           f"theme; available: {', '.join(sorted(self.available_themes))}")
        return DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(STATE_VARIABLES)

    def on_mount(self) -> None:
        self._watch_stop_signals()
        for problem in self.theme_problems:
            self.notify(problem, title="Theme not loaded", severity="warning", timeout=12, markup=False)
        if self._theme_arg and self._theme_arg == self.theme:
            remember_theme(self.theme)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.push_screen(RunScreen(self.sweep, autostart=self.autostart, lesson=self.lesson))

    def _watch_stop_signals(self) -> None:
        """SIGTERM and SIGHUP stop the sweep like `q` then `y`: the run's end is recorded, the terminal restored."""
        loop = asyncio.get_running_loop()
        for sig in stop_signals():
            if sig == signal.SIGINT:
                continue  # Ctrl-C is a key in the console (raw mode), bound to its own action
            try:
                loop.add_signal_handler(sig, self._stop_signal, int(sig))
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (tests drive the app elsewhere) or not a Unix loop

    def _stop_signal(self, signum: int) -> None:
        if self.sweep.stopped_by is None:
            self.sweep.stopped_by = signum
        if signum == getattr(signal, "SIGHUP", None) and _terminal_gone():
            self._write_nowhere()
        try:
            rs = self.run_screen
        except LookupError:
            self.exit(self.sweep.status)
            return
        if rs.sweep_ended or rs._sweep_worker is None or self.sweep.control.cancelled:
            self.exit(self.sweep.status)  # nothing to wait for, or a second signal: stop waiting
        else:
            rs.stop_sweep()

    def action_interrupt(self) -> None:
        if self.sweep.stopped_by is None and not self.sweep.control.cancelled:
            self.notify("Stopping: calls in flight are cancelled; every finished call is stored.", timeout=5,
                        markup=False)
        self._stop_signal(int(signal.SIGINT))

    def _write_nowhere(self) -> None:
        """The terminal hung up: writes to it fail (EIO), which ends Textual's writer thread, and its
        bounded queue would then block the event loop before the sweep could record its end. Send
        output to /dev/null, keep the queue drained, and make sure the process ends."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        writer = getattr(self._driver, "_writer_thread", None)
        queue = getattr(writer, "_queue", None)
        if writer is not None and queue is not None and not writer.is_alive():
            def drain() -> None:
                while queue.get() is not None:
                    pass
            threading.Thread(target=drain, name="arena-drain", daemon=True).start()
        sweep = self.sweep

        def watchdog() -> None:
            # Nobody can see this process any more: once the run's end is recorded (or after a minute
            # in any case, the writer process keeps what was sent), leave without waiting on a terminal.
            deadline = time.monotonic() + 60.0
            while sweep.status is None and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(5.0)
            os._exit(128 + int(signal.SIGHUP))
        threading.Thread(target=watchdog, name="arena-hangup", daemon=True).start()

    def _theme_changed(self, theme: Theme) -> None:
        remember_theme(theme.name)

    @property
    def run_screen(self) -> RunScreen:
        for s in self.screen_stack:
            if isinstance(s, RunScreen):
                return s
        raise LookupError("no run screen")

    async def action_quit(self) -> None:
        """ctrl+q and the palette's Quit: the same confirmation as `q` while a sweep runs (one path to stop)."""
        try:
            rs = self.run_screen
        except LookupError:
            self.exit()
            return
        if any(isinstance(s, Confirm) for s in self.screen_stack):
            return  # already asking
        rs.action_stop()

    def action_save_screenshot(self) -> None:
        """Save an SVG of the screen in the current directory and say where, or why not."""
        try:
            path = self.save_screenshot(path=os.getcwd())
        except OSError as e:
            self.notify(f"Could not save a screenshot in {os.getcwd()}: {e.strerror or e}", title="Screenshot",
                        severity="error", markup=False)
            return
        self.notify(f"Saved {path}", title="Screenshot", markup=False)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        # Textual's own "Keys" duplicated ours, "Maximize" drew a pane over a hatch, and "Screenshot" failed
        # without a path or reason: keep the rest, add a screenshot that says where it went.
        for cmd in super().get_system_commands(screen):
            if cmd.title not in ("Keys", "Maximize", "Minimize", "Screenshot"):
                yield cmd
        yield SystemCommand("Screenshot", "Save an SVG of the screen in the current directory",
                            lambda: self.set_timer(0.1, self.action_save_screenshot))
        try:
            rs = self.run_screen
        except LookupError:
            return
        yield SystemCommand("Pause or resume the sweep", "p: calls in flight finish; no new ones start",
                            rs.action_pause)
        yield SystemCommand("Raise concurrency", "+: next step of 1, 2, 4, 8, 16…", lambda: rs.action_step(1))
        yield SystemCommand("Lower concurrency", "-: previous step of 1, 2, 4, 8, 16…", lambda: rs.action_step(-1))
        yield SystemCommand("Set concurrency", "c: type an exact global concurrency", rs.action_ask_concurrency)
        yield SystemCommand("Set the highlighted model's cap", "m: calls at once for one model",
                            rs.action_ask_model_cap)
        yield SystemCommand("Auto-tuner on/off", "a: find each model's concurrency level; a manual change suspends it",
                            rs.action_toggle_tuner)
        yield SystemCommand("Results", "r: the leaderboard of what is stored", rs.action_results)
        yield SystemCommand("Stop the sweep", "q: asks first; finished calls stay stored", rs.action_stop)
        yield SystemCommand("Help", "?: every key, the cell glyphs, what the figures mean", rs.action_help)

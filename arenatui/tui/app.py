"""The console application: themes, the command palette, and the run screen over one `Sweep`."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.theme import Theme

from arenatui.engine.events import RunStatus
from arenatui.sweep import Sweep
from arenatui.tui.screens import RunScreen
from arenatui.tui.themes import DEFAULT_THEME, STATE_VARIABLES, load_themes, remember_theme, remembered_theme


class ArenaApp(App[RunStatus | None]):
    """Watch and steer one sweep. `autostart=False` shows the screen without running the engine (tests)."""

    CSS_PATH = "app.tcss"
    TITLE = "arena"
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, sweep: Sweep, *, theme: str | None = None, autostart: bool = True) -> None:
        super().__init__()
        self.sweep = sweep
        self.autostart = autostart
        self._theme_arg = theme
        self.theme_problems: list[str] = []
        loaded = load_themes()
        for t in loaded.themes:
            self.register_theme(t)
        self.theme_problems = loaded.problems
        self.theme = self._initial_theme()

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
        for problem in self.theme_problems:
            self.notify(problem, title="Theme not loaded", severity="warning", timeout=12, markup=False)
        if self._theme_arg and self._theme_arg == self.theme:
            remember_theme(self.theme)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.push_screen(RunScreen(self.sweep, autostart=self.autostart))

    def _theme_changed(self, theme: Theme) -> None:
        remember_theme(theme.name)

    @property
    def run_screen(self) -> RunScreen:
        for s in self.screen_stack:
            if isinstance(s, RunScreen):
                return s
        raise LookupError("no run screen")

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
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
        yield SystemCommand("Keys", "?: every shortcut", rs.action_help)

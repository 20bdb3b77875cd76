"""The console application of `arena load`: themes as in the run console, and the load screen."""

from __future__ import annotations

from textual.app import App

from arenatui.tui.screens.load import LoadRunView, LoadScreen
from arenatui.tui.themes import DEFAULT_THEME, STATE_VARIABLES, hide_builtin_themes, load_themes, remembered_theme


class LoadApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "arena load"

    def __init__(self, run: LoadRunView, *, theme: str | None = None, autostart: bool = True) -> None:
        super().__init__()
        self.load = run
        self.autostart = autostart
        loaded = load_themes()
        for t in loaded.themes:
            self.register_theme(t)
        names = [n for n in (theme, remembered_theme(), DEFAULT_THEME) if n and n in self.available_themes]
        self.theme = names[0] if names else "textual-dark"
        hide_builtin_themes(self, loaded)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(STATE_VARIABLES)

    def on_mount(self) -> None:
        self.push_screen(LoadScreen(self.load, autostart=self.autostart))

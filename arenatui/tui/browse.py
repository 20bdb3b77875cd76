"""`arena browse`: the results view of stored runs on its own, without a sweep."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.binding import Binding

from arenatui.tui.results.screen import Results
from arenatui.tui.themes import STATE_VARIABLES, use_themes


class BrowseApp(App[None]):
    """Browse the stored runs of one database; opens `run_id` ('last' for the newest) when given."""

    CSS_PATH = "app.tcss"
    TITLE = "arena browse"
    BINDINGS = [Binding("q", "quit", "Quit"),
                Binding("ctrl+c", "quit", "Quit", show=False, priority=True)]  # nothing runs: Ctrl-C just leaves

    def __init__(self, db: Path | str, run_id: str | None = None, *, theme: str | None = None) -> None:
        super().__init__()
        self.db = Path(db)
        self.run_id = run_id
        use_themes(self, theme)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(STATE_VARIABLES)

    def on_mount(self) -> None:
        self.push_screen(Results(self.db, self.run_id, standalone=True))


def browse(db: str | None, run: str | None, theme: str | None = None) -> int:
    """`arena browse [RUN_ID|last] [--db PATH]`: an unknown run or database fails here, before the app starts."""
    from arenatui.store import Store
    from arenatui.store.queries import resolve_run

    with Store(db, read_only=True) as store:
        path = store.path
        run_id = resolve_run(store, run).run_id if run else None
    BrowseApp(path, run_id, theme=theme).run()
    return 0

"""What every tab of the results view shares: the pane it is, its workers' failures told, tables shown or hidden."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widget import Widget
from textual.widgets import DataTable, Static, TabPane
from textual.worker import Worker, WorkerState

from arenatui.kernel.text import printable


class ResultsTab(TabPane):
    """One tab of the results view: it composes its own widgets and formats what the screen hands it (a `RunView`
    gathered off the UI loop); the figures are computed in `data.py`, never here."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        tell_failure(self, event)

    def note_under(self, table_id: str, note_id: str, note: Text) -> None:
        """Show a table's note, led by the mark of its columns past the pane's edge when there are some (the CLI
        rule, issue 37 item 6: a column cut at the edge never passes for a whole one); marked again once the table
        has laid out (its columns' widths are known then) and on every resize."""
        notes: dict[str, tuple[str, Text]] = self.__dict__.setdefault("_notes", {})
        notes[note_id] = (table_id, note)
        self._mark_notes()
        self.call_after_refresh(self._mark_notes)

    def _mark_notes(self) -> None:
        for note_id, (table_id, note) in self.__dict__.get("_notes", {}).items():
            mark = scroll_mark(self.query_one(f"#{table_id}", DataTable))
            self.query_one(f"#{note_id}", Static).update(Text(mark, style="bold") + note if mark else note)

    def on_resize(self) -> None:
        self._mark_notes()


def tell_failure(node: Widget, event: Worker.StateChanged) -> None:
    """A worker of the results view failed (a corrupt store, a run deleted meanwhile): say so, keep the view."""
    if event.state == WorkerState.ERROR and event.worker.error is not None:
        node.notify(printable(str(event.worker.error)), title="Cannot show the results", severity="error",
                    timeout=10, markup=False)


def show(table: DataTable[Any], shown: bool) -> None:
    """Show or hide a table of auto height, touching `display` only when it changes.

    The first assignment, even of the value it has, asks for a layout at once; the table measures its new rows
    only later (on idle), and that second layout request then no longer moves the counter Textual keys its size
    cache on. A layout in between left the table 0 rows high for good: a blank leaderboard (and failure-mode
    table) in about one results-snapshot run in four on a busy machine.
    """
    if table.display != shown:
        table.display = shown


def past_the_edge(table: DataTable[Any]) -> list[str]:
    """The titles of a table's columns that end beyond its right edge (the table scrolls sideways to them)."""
    edge = table.scroll_x + table.scrollable_content_region.width
    x, out = 0, []
    for col in table.ordered_columns:
        x += col.get_render_width(table)
        if x > edge:
            out.append(str(col.label.plain).rstrip(" ▲▼"))
    return out


def scroll_mark(table: DataTable[Any]) -> str:
    """What a table too wide for its pane says under it, so a column cut at the edge never passes for a whole one:
    the columns past the edge, named, and how to reach them (the CLI rule: whole columns or a marked scroll)."""
    hidden = past_the_edge(table) if table.display and table.size.width else []
    if not hidden:
        return ""
    return f"→ {len(hidden)} more column{'s' if len(hidden) > 1 else ''} past the edge ({', '.join(hidden)}): " \
           "scroll with → / ← or shift+wheel. "

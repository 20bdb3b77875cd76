"""j/k/g/G in every list and table, as in less, k9s and lazygit: the screens bind them and hand them to the focused
widget's own cursor or scroll actions."""

from __future__ import annotations

from textual.binding import Binding
from textual.widget import Widget

LIST_KEYS = [
    Binding("j", "list_key('down')", "Down", show=False),
    Binding("k", "list_key('up')", "Up", show=False),
    Binding("g", "list_key('top')", "Top", show=False),
    Binding("G", "list_key('bottom')", "Bottom", show=False),
]
"""A screen's bindings for the keys; its `action_list_key` calls `list_key(self.focused, where)`."""

_ACTIONS = {"down": ("cursor_down", "scroll_down"), "up": ("cursor_up", "scroll_up"),
            "top": ("scroll_top", "scroll_home"), "bottom": ("scroll_bottom", "scroll_end")}
"""The focused widget's action for each key: a table's cursor action (a DataTable's scroll_top moves its cursor
too) when it has one, else its scroll action."""


def list_key(widget: Widget | None, where: str) -> None:
    """Move the focused list or table (`where`: down, up, top, bottom); a widget with neither does nothing."""
    if widget is None or where not in _ACTIONS:
        return
    for name in _ACTIONS[where]:
        action = getattr(widget, f"action_{name}", None)
        if action is not None:
            action()
            return

"""The key help of a screen (`?`): every key with what it does, then sections, reflowed to the terminal's width.
Shared by the run screen (`screens.dialogs.Help`) and the results view, which never imports the run screens' package."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static


class KeyHelp(ModalScreen[None]):
    """Every key of a screen with what it does, then sections (a title and paragraphs or tables), reflowed to the
    terminal's width (nothing hard-wrapped): `?` on the run screen (`Help`) and in the results view."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, keys: Sequence[tuple[str, str]],
                 sections: Sequence[tuple[str, Sequence[Text | Table]]] = ()) -> None:
        super().__init__()
        self.keys = tuple(keys)
        self.sections = tuple(sections)

    def compose(self) -> ComposeResult:
        keys = Table.grid(padding=(0, 2))
        keys.add_column(no_wrap=True, style="bold")
        keys.add_column(ratio=1)
        for key, what in self.keys:
            keys.add_row(key, what)
        with Vertical(classes="dialog wide", id="help"):
            yield Label(Text.assemble(("Keys", "bold"), ("   Escape, ? or q closes this", "italic")))
            with VerticalScroll(id="help-body"):
                yield Static(keys)
                for title, body in self.sections:
                    yield Label(Text(title, style="bold"), classes="hint")
                    for part in body:  # a paragraph stands apart from the one before; a table follows its title
                        yield Static(part, classes="para") if isinstance(part, Text) else Static(part)

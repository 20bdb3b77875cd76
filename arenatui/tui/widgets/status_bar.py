"""The run screen's status lines, and the elapsed time and progress bar written in them."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from arenatui.present.columns import hbar


class StatusBar(Widget):
    """A few lines of text set as a whole: unlike Static.update, setting it never triggers a layout pass."""

    DEFAULT_CSS = "StatusBar { height: 3; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = Text()

    def show(self, text: Text) -> None:
        self.text = text
        self.refresh()

    def render(self) -> Text:
        return self.text


def clock(s: float) -> str:
    """Seconds as m:ss, or h:mm:ss from an hour."""
    s = int(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def duration(s: float | None) -> str:
    return "-" if s is None else clock(s + 0.5)


def bar(fraction: float, width: int) -> str:
    """A progress bar of eighth blocks."""
    return hbar(fraction, width, "·")

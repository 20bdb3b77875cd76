"""The model table of the run screen: one row per model, columns fitted to the width, cached strips."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.segment import Segment
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from arenatui.kernel.text import printable
from arenatui.tui.widgets.sparkline import spark

ALTERNATIVES = "\t"
"""Between a value's wordings, longest first: the table shows the longest that fits its column ("0 answered,
4 errored" or "4 errored"), never a word cut short."""


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    width: int
    """The most characters it takes; it takes fewer when its title and values are shorter."""
    right: bool = False
    priority: int = 5
    """When the table is too wide, lower priorities are left out first; below 0, left out until `priority_if_any`
    applies (a column only some runs need)."""
    min_width: int = 0
    """Set on the sparkline column: it shrinks to this before it is left out, and grows into spare width."""
    priority_if_any: int | None = None
    """The priority once some row shows more than "0" or "-" (a reasoning model's figures): such a column joins the
    table once, when its first value comes, and never leaves it."""
    plan_width: int = 0
    """The width the column is planned with when choosing which columns fit (its title's when wider). Which
    columns are shown depends on the table's width alone, never on values, so the set does not change mid-run;
    a value wider than this takes spare width when there is some."""


class ModelTable(Widget, can_focus=True):
    """One row per model, columns fitted to the width, rows redrawn only when their values change (cached strips).

    A DataTable repaints every visible cell whenever any cell changes; at a few frames a second with
    every rate moving that cost the engine several percent (benchmarks/ui_overhead.py). Columns are
    left out lowest priority first when the terminal is narrow, and a column is as wide as what it
    shows, so no column pads blanks another needs. The last column may be a sparkline (`min_width`).
    When there are more models than rows, the rows follow the cursor.
    """

    DEFAULT_CSS = """
    ModelTable { height: auto; }
    ModelTable > .models--header { text-style: bold; color: $primary; }
    ModelTable > .models--row { color: $foreground; }
    ModelTable > .models--spark { color: $arena-chart; }
    ModelTable > .models--cursor { background: $boost; text-style: bold; }
    ModelTable:focus > .models--cursor { background: $accent 30%; }
    """
    COMPONENT_CLASSES = {"models--header", "models--row", "models--spark", "models--cursor"}
    BINDINGS = [
        Binding("up", "cursor(-1)", show=False),
        Binding("down", "cursor(1)", show=False),
        Binding("j", "cursor(1)", show=False),  # j/k/g/G as in less, k9s, lazygit
        Binding("k", "cursor(-1)", show=False),
        Binding("g", "cursor(-100000)", show=False),
        Binding("G", "cursor(100000)", show=False),
        Binding("enter", "select", "Call detail", show=False),
    ]

    class RowSelected(Message):
        """Enter (or a click) on a model's row."""

        def __init__(self, row: int) -> None:
            self.row = row
            super().__init__()

    def __init__(self, columns: Sequence[Column], keys: Sequence[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns = list(columns)
        self.keys = list(keys)
        self._values: list[tuple[str, ...]] = [("",) * (len(columns) - 1) for _ in keys]
        self._series: list[Sequence[float]] = [() for _ in keys]
        self._names = [printable(k, newlines=False) for k in keys]
        self._strips: dict[int, Strip] = {}
        self.cursor_row = 0
        self._top = 0
        """The first model row on screen."""
        self._shown: tuple[tuple[int, int], ...] = ()
        """(column index, width) of the columns on screen, and the gap between them in `_gap`."""
        self._gap = 2
        self._keep: list[int] = []
        """The columns that fit the width (which, not how wide)."""
        self._plan_key: tuple[int, ...] = ()
        self._waiting = frozenset(i for i, c in enumerate(columns) if i and c.priority_if_any is not None)
        """Columns shown only once some row has a value (`Column.priority_if_any`)."""
        self._busy: set[int] = set()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.keys) + 1

    @property
    def shown_titles(self) -> list[str]:
        """Titles of the columns on screen now (tests read it)."""
        return [self.columns[i].title for i, _w in self._shown]

    def _content_widths(self) -> tuple[int, ...]:
        widths = [max(len(self.columns[0].title), max((len(n) for n in self._names), default=0))]
        for j, col in enumerate(self.columns[1:]):
            longest = max((len(v[j].split(ALTERNATIVES)[0]) for v in self._values), default=0)
            widths.append(max(len(col.title), longest))
        return tuple(min(w, c.width) for w, c in zip(widths, self.columns, strict=True))

    def _plan_widths(self) -> tuple[int, ...]:
        names = min(self.columns[0].width, max(len(self.columns[0].title), max((len(n) for n in self._names),
                                                                                default=0)))
        return (names, *(c.min_width or max(len(c.title), c.plan_width) for c in self.columns[1:]))

    def _replan(self) -> None:
        """Which columns fit (on a resize, or when a column kept for some runs gets its first value), then how wide
        each is (whenever values change)."""
        avail = self.size.width
        plan = self._plan_widths()
        busy = self._busy
        if len(busy) < len(self._waiting):  # none waits in most runs: nothing to scan
            busy |= {i for i in self._waiting - busy if any(v[i - 1] not in ("0", "-", "") for v in self._values)}
        if self._plan_key != (avail, *plan, len(busy)):
            self._plan_key = (avail, *plan, len(busy))
            cols = list(range(len(self.columns)))

            def priority(i: int) -> int:
                c = self.columns[i]
                return c.priority_if_any if c.priority_if_any is not None and i in busy else c.priority

            def need(keep: list[int], gap: int) -> int:
                return sum(plan[i] for i in keep) + gap * len(keep)

            keep, gap = [i for i in cols if priority(i) >= 0], 2  # below 0: only once some row has a value
            while keep:
                if need(keep, 2) <= avail:
                    gap = 2
                    break
                if need(keep, 1) <= avail:
                    gap = 1
                    break
                keep = [i for i in keep if i != min((i for i in keep if i), key=priority)] if len(keep) > 1 else []
            self._keep, self._gap = keep, gap
        widths = self._content_widths()
        spare = avail - sum(plan[i] for i in self._keep) - self._gap * len(self._keep)
        shown = []
        for i in self._keep:  # values wider than planned take spare width first, in column order
            w = plan[i]
            if not self.columns[i].min_width and widths[i] > w and spare > 0:
                grow = min(widths[i] - w, spare)
                w, spare = w + grow, spare - grow
            shown.append([i, w])
        for item in shown:  # then the sparkline grows into what is left
            c = self.columns[item[0]]
            if c.min_width:
                item[1] = min(c.width, c.min_width + max(0, spare))
        new = tuple((i, w) for i, w in shown)
        if new != self._shown:
            self._shown = new
            self._strips.clear()
            self.refresh()

    def on_resize(self) -> None:
        self._replan()
        self._scroll_to_cursor()

    def set_row(self, index: int, values: tuple[str, ...], series: Sequence[float] = ()) -> None:
        self.set_rows([(index, values, series)])

    def set_rows(self, rows: Iterable[tuple[int, tuple[str, ...], Sequence[float]]]) -> None:
        """(model index, values, latency series) for rows that may have changed; the columns are fitted once."""
        changed = []
        for index, values, series in rows:
            if self._values[index] != values or (series and self._series[index] != series):
                self._values[index] = values
                self._series[index] = series
                self._strips.pop(index, None)
                changed.append(index)
        if changed:
            self._replan()
            for index in changed:
                self._refresh_model(index)

    def _refresh_model(self, index: int) -> None:
        y = index - self._top + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    def _fit(self, text: str, col: Column, width: int) -> str:
        ways = text.split(ALTERNATIVES)
        text = next((t for t in ways if len(t) <= width), ways[-1])
        if len(text) > width:
            text = text[: width - 1] + "…" if width > 1 else text[:width]
        return (text.rjust(width) if col.right else text.ljust(width)) + " " * self._gap

    def _cell(self, i: int, col_index: int, width: int) -> str:
        col = self.columns[col_index]
        if col_index == 0:
            return self._fit(self._names[i], col, width)
        if col.min_width:
            return self._fit(spark(self._series[i][-width:], width) if self._series[i] else
                             self._values[i][col_index - 1], col, width)
        return self._fit(self._values[i][col_index - 1], col, width)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if not self._shown:
            self._replan()
        if y == 0:
            # a shrunk sparkline column keeps the word before its comma ("latency"), not a cut one
            head = "".join(self._fit(self.columns[i].title if w >= len(self.columns[i].title) or
                                     not self.columns[i].min_width else self.columns[i].title.split(",")[0],
                                     self.columns[i], w) for i, w in self._shown)
            return Strip([Segment(head, self.get_component_rich_style("models--header", partial=True))]) \
                .apply_style(base).adjust_cell_length(width, base)
        i = self._top + y - 1
        if i >= len(self.keys):
            return Strip.blank(width, base)
        strip = self._strips.get(i)
        if strip is None:
            row = self.get_component_rich_style("models--row", partial=True)
            if i == self.cursor_row:
                row = row + self.get_component_rich_style("models--cursor", partial=True)
            spark_style = row + self.get_component_rich_style("models--spark", partial=True)
            segs = [Segment(self._cell(i, ci, w), spark_style if self.columns[ci].min_width else row)
                    for ci, w in self._shown]
            strip = Strip(segs).apply_style(base).adjust_cell_length(width, base)
            self._strips[i] = strip
        return strip

    def action_cursor(self, delta: int) -> None:
        self._move_to(self.cursor_row + delta)

    def _scroll_to_cursor(self) -> bool:
        rows = max(1, self.size.height - 1)
        top = min(max(self._top, self.cursor_row - rows + 1), self.cursor_row)
        top = max(0, min(top, max(0, len(self.keys) - rows)))
        if top != self._top:
            self._top = top
            self.refresh()
            return True
        return False

    def _move_to(self, row: int) -> None:
        old, self.cursor_row = self.cursor_row, max(0, min(row, len(self.keys) - 1))
        for r in (old, self.cursor_row):
            self._strips.pop(r, None)
        if not self._scroll_to_cursor():
            for r in (old, self.cursor_row):
                self._refresh_model(r)

    def on_click(self, event: events.Click) -> None:
        if 1 <= event.y <= len(self.keys) - self._top:
            self._move_to(self._top + event.y - 1)

    def action_select(self) -> None:
        self.post_message(self.RowSelected(self.cursor_row))


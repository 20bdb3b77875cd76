"""The columns of a table fitted to a width by priority, the block ramp and the leaderboard's columns, so a table
prints the same way in the console, the results view, the headless table and the report (the figures in its cells
are arenatui.kernel.units).

Textual-free and numpy-free: the headless path, the report and the store's readers import it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from arenatui.kernel.units import NOTHING, absent, interval, money, ms, pct, score

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.text import Text

    from arenatui.stats.bootstrap import Interval
    from arenatui.stats.compare import Comparison
    from arenatui.stats.leaderboard import ModelRow

BLOCKS = " ▁▂▃▄▅▆▇█"
"""The block ramp, empty to full in eighths: sparklines, histograms and bars all draw with it."""
EIGHTHS = "▏▎▍▌▋▊▉"
"""Left eighth blocks, for a horizontal bar's last partial cell."""

def p_better(c: Comparison) -> str:
    """P(A > B) of a paired comparison, or "–" when every shared case scored the same for both (no resample can
    order them: 0.000 would read as "B is surely better")."""
    return NOTHING if c.n and c.diff.low == c.diff.high == c.diff.estimate == 0 else score(c.p_a_better)


def ramp(fraction: float) -> str:
    """One cell of the block ramp for a fraction in [0, 1] (0 is blank, anything above 0 at least ▁)."""
    if absent(fraction) or fraction <= 0:
        return BLOCKS[0]
    return BLOCKS[min(8, max(1, round(fraction * 8)))]


def hbar(fraction: float, width: int, fill: str = " ") -> str:
    """A horizontal bar `width` cells wide in eighth blocks."""
    fraction = 0.0 if absent(fraction) else max(0.0, min(1.0, fraction))
    full, part = divmod(int(fraction * width * 8), 8)
    return ("█" * full + (EIGHTHS[part - 1] if part else "")).ljust(width, fill)[:width]


def fit_line(parts: Sequence[tuple[Text, int]], width: int) -> Text:
    """One line from (text, priority) parts in order: the lowest-priority parts are left out until it fits
    (later parts first among equals), so a narrow terminal loses the least useful figures, never a wrap."""
    from rich.text import Text

    keep = list(range(len(parts)))
    lens = [p[0].cell_len for p in parts]
    total = sum(lens)
    while keep and total > width:
        drop = min(reversed(keep), key=lambda i: parts[i][1])
        keep.remove(drop)
        total -= lens[drop]
    out = Text(no_wrap=True, overflow="ellipsis")
    for i in keep:
        out.append_text(parts[i][0])
    return out


# ---- columns fitted to a width by priority -------------------------------------------------------------------

Row = TypeVar("Row")

HEADLINE = 10
"""A column of this priority is never left out: the model's name and the headline figures."""


@dataclass(frozen=True, slots=True)
class Column(Generic[Row]):
    """One column of a table over rows of some type: what it is called, how a row's value is read and written,
    whether higher is better (for sorting), and how long it stays when the width is short."""

    title: str
    get: Callable[[Row], Any]
    """The row's value: what sorting compares and `fmt` writes."""
    fmt: Callable[[Any], str] = str
    higher_is_better: bool | None = None
    """True or False for a figure (a first sort puts the best first); None for text."""
    priority: int = 5
    """When the table is too wide, lower priorities are left out first; HEADLINE never is."""
    right: bool = True
    short: str = ""
    """A shorter title used when the column is wider for its title than for its values."""
    sort: Callable[[Row], Any] | None = None
    """What sorting compares when it is not `get`'s value (an interval sorts by its low end)."""

    def cell(self, row: Row) -> str:
        return self.fmt(self.get(row))

    def sort_key(self, row: Row) -> tuple[int, Any]:
        """Best first (unknown last) for a figure; as written for text."""
        v = (self.sort or self.get)(row)
        if self.higher_is_better is None:
            return (0, v)
        if absent(v):
            return (1, 0.0)
        return (0, -v if self.higher_is_better else v)

    @property
    def headline(self) -> bool:
        return self.priority >= HEADLINE


def fit(widths: Sequence[int], priorities: Sequence[int], available: int, *, per_column: int = 2,
        fixed: int = 0) -> list[int]:
    """The indexes of the columns to keep so that their widths, plus `per_column` each and `fixed` once, fit in
    `available`: the lowest priority (then the rightmost) goes first; a HEADLINE column never goes. When even the
    headline columns do not fit, they are returned anyway and the caller changes layout (one block per row)."""
    keep = list(range(len(widths)))

    def need(ks: list[int]) -> int:
        return sum(widths[i] + per_column for i in ks) + fixed

    while need(keep) > available:
        droppable = [i for i in keep if priorities[i] < HEADLINE]
        if not droppable:
            break
        keep.remove(min(droppable, key=lambda i: (priorities[i], -i)))
    return keep


def titles_fitted(columns: Sequence[Column[Row]], rows: Sequence[Row]) -> tuple[list[str], list[list[str]],
                                                                               list[int]]:
    """Titles (short where that makes the column narrower), the cells, and each column's width."""
    cells = [[c.cell(r) for c in columns] for r in rows]
    titles, widths = [], []
    for j, c in enumerate(columns):
        longest = max((len(line) for row in cells for line in row[j].splitlines() or [""]), default=0)
        title = c.short if c.short and len(c.title) > longest else c.title
        titles.append(title)
        widths.append(max(len(title), longest))
    return titles, cells, widths


# ---- the leaderboard's columns ------------------------------------------------------------------------------

ERROR_SHORT = {"rate_limited": "429", "timeout": "timeout", "transient": "transient", "terminal": "terminal",
               "cancelled": "cancelled", "incomplete_stream": "cut stream"}


def error_counts(errors: dict[str, int] | Any) -> str:
    """Errored calls by class, `429×3 timeout×1`; "0" when none errored."""
    return " ".join(f"{ERROR_SHORT.get(k, k)}×{v}" for k, v in sorted(errors.items())) or "0"


def _headline(r: ModelRow) -> Interval:
    """The headline (stats.ranking): quality over the cases every ranked model has scores for when the model is
    ranked, its own-coverage quality when it is listed apart."""
    return r.common if r.rank is not None else r.quality


def _quality(r: ModelRow) -> float | None:
    q = _headline(r)
    return q.estimate if q.n else None


def _quality_cell(r: ModelRow) -> str:
    """The headline score with the row's mark (* a paired verdict set its place, ! a coverage paradox), its shared
    rank when tied ('=1') and, for a model listed apart, 'unranked'."""
    q = _quality(r)
    return (score(q) + (f" {r.flag}" if r.flag else "") + (f" {r.rank_text}" if r.tied else "")
            + ("" if r.rank is not None else " unranked"))


def _fair(r: ModelRow) -> float | None:
    """The coverage-fair order as a sort key, higher first: ranked models by rank, then the unranked by their own
    score (stats.ranking decides; a sort by this column restores its order)."""
    if r.rank is not None:
        return 10.0 - r.rank / 1e6
    own = r.quality.estimate if r.quality.n else None
    return None if own is None or absent(own) else float(own)


def _own(r: ModelRow) -> str:
    return f"{score(r.quality.estimate)}/{r.quality.n}" if r.quality.n else NOTHING


def _top_pass(r: ModelRow) -> tuple[float | None, int]:
    k = max(r.pass_at, default=0)
    return (r.pass_at[k] if k else None, k)


def _fronts(r: ModelRow) -> str:
    return "+".join(x for x, on in (("cost", r.on_cost_front), ("latency", r.on_latency_front)) if on) or NOTHING


LEADERBOARD: tuple[Column[ModelRow], ...] = (
    Column("model", lambda r: r.model, priority=HEADLINE, right=False),
    Column("quality", _quality_cell, str, True, HEADLINE, sort=_fair),
    Column("95% CI", _headline, lambda q: interval(q.low, q.high, q.n), True, 8,
           sort=lambda r: _headline(r).low if _headline(r).n > 1 else None),
    Column("n", lambda r: _headline(r).n, str, True, 8),
    Column("own", _own, str, True, 7, sort=lambda r: r.quality.estimate if r.quality.n else None),
    Column("coverage", lambda r: r.coverage, pct, True, 9),
    Column("$/correct", lambda r: r.cost_per_correct, money, False, HEADLINE),
    Column("errors", lambda r: r.errors, error_counts, False, 7, right=False,
           sort=lambda r: r.error_rate),
    Column("pass@1", lambda r: r.pass_at.get(1), score, True, 3),
    Column("pass@k", _top_pass, lambda v: NOTHING if v[1] < 2 or absent(v[0]) else f"{score(v[0])} k={v[1]}", True, 2,
           sort=lambda r: _top_pass(r)[0]),
    Column("agree", lambda r: r.consistency, pct, True, 1),
    Column("$/answered", lambda r: r.cost_per_answered, money, False, 5, short="$/ans"),
    Column("spend", lambda r: r.spend, money, False, 4),
    Column("p50 ms", lambda r: r.latency_p50, ms, False, 6),
    Column("p95 ms", lambda r: r.latency_p95, ms, False, 7),
    Column("p99 ms", lambda r: r.latency_p99, ms, False, 2),
    Column("TTFT p50", lambda r: r.ttft_p50, ms, False, 3),
    Column("TTFT p95", lambda r: r.ttft_p95, ms, False, 1),
    Column("timeouts", lambda r: r.timeout_rate, pct, False, 1),
    Column("retries/call", lambda r: r.retry_rate, lambda v: NOTHING if absent(v) else f"{v:.2f}", False, 4,
           short="retry"),
    Column("front", _fronts, priority=1, right=False),

)
"""The leaderboard's columns in the order every view shows them: the console's results view, the headless table
and the report. The headline figures come first, so a results view 80 columns wide shows them without scrolling.
A new figure is one entry here (priority says how long it stays on a narrow terminal)."""


def table_for_width(columns: Sequence[Column[Row]], rows: Sequence[Row], width: int, *, title: str = "",
                    caption: str = "", block_below: int = 0, elsewhere: str = "") -> RenderableType:
    """A Rich renderable of `rows` that fits `width` columns: a table of the columns that fit, lowest priority left
    out first (a note names them), or, when even the headline columns do not fit in a table (or the width is below
    `block_below`), one block per row with every column as "title value". Cells are plain text, never markup.
    `elsewhere` ends the note on left-out columns (" (arena report has them)")."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from arenatui.kernel.text import printable

    titles, cells, widths = titles_fitted(columns, rows)
    # a cell's own lines (a list of names, one a line) stay; any other control character shows as an escape
    cells = [["\n".join(printable(line, newlines=False) for line in c.split("\n")) for c in row] for row in cells]
    keep = fit(widths, [c.priority for c in columns], width, per_column=3, fixed=1)
    fits = sum(widths[i] + 3 for i in keep) + 1 <= width and width >= block_below
    if not fits:
        out: list[Any] = [Text(title, style="bold")] if title else []
        for row in cells:
            out.append(Text(row[0], style="bold"))
            line, lines = "", []
            for j in range(1, len(columns)):
                part = f"{columns[j].title} {row[j].replace(chr(10), ', ')}"
                if line and len(line) + 2 + len(part) > width:
                    lines.append(line)
                    line = ""
                line = f"{line}  {part}" if line else f"  {part}"
            lines.append(line)
            out.append(Text("\n".join(lines)))
        if caption:
            out.append(Text(caption))
        return Group(*out)
    left = [titles[i] for i in range(len(columns)) if i not in keep]
    note = f"Left out at {width} columns: {', '.join(left)}{elsewhere}." if left else ""
    # the title and the notes are lines of their own, wrapped at the terminal's width, not the table's
    t = Table(header_style="bold")
    for i in keep:
        t.add_column(titles[i], justify="right" if columns[i].right else "left", no_wrap=columns[i].headline,
                     min_width=widths[i] if columns[i].headline else None)
    for row in cells:
        t.add_row(*(Text(row[i]) for i in keep))
    parts: list[Any] = [Text(title, style="bold")] if title else []
    return Group(*parts, t, *(Text(x) for x in (caption, note) if x))


class Fitted(Generic[Row]):
    """`table_for_width` measured when drawn: fitted to whatever width it is given then (a console, a pane)."""

    def __init__(self, columns: Sequence[Column[Row]], rows: Sequence[Row], **kw: Any) -> None:
        self.columns, self.rows, self.kw = columns, rows, kw

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield table_for_width(self.columns, self.rows, options.max_width, **self.kw)

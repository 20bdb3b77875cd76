"""Widgets of the run screen: the call matrix (line-rendered, cached strips), the rates chart, small text helpers.

None of them know the engine or the store: the screen hands them numbers from live-metric snapshots.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from arenatui.config.schema import JUDGE_LANE_PREFIX
from arenatui.figures import BLOCKS, hbar
from arenatui.live import BACKOFF, ERRORED, FAILED, IN_FLIGHT, PASSED, QUEUED, UNREACHABLE, UNSCORED
from arenatui.safe_text import printable

GLYPHS = ("·", "▸", "↻", "✓", "✗", "!", "○", "⊘")
"""One glyph per call state (queued, in flight, backing off, passed, failed, errored, unscored, unreachable): never
colour alone."""
STATE_CLASSES = ("queued", "in-flight", "backoff", "passed", "failed", "errored", "unscored", "unreachable")
MOSTLY = 8
"""A display state beside the eight call states: a finished cell where most, not all, answered trials passed."""
STARTED = 9
"""A display state: some trials finished, the rest still queued (nothing in flight this moment)."""
EMPTY = 10
"""A display state: nothing planned there (a judge lane's row on a case it does not judge), never "queued"."""
CELL_GLYPHS = (*GLYPHS, "◑", "▹", " ")
CELL_CLASSES = (*STATE_CLASSES, "mostly", "started", "empty")
CELL_NAMES = ("queued", "in flight", "backing off", "all passed", "under half passed", "errored",
              "answered, not scored (yet)", "not run: a parent case did not pass", "half or more passed", "started",
              "not judged")
JUDGE_MARK = "⚖ "
"""Before a judge lane's key in the model table and the matrix: its row is a judge's calls, not a candidate's."""
SPARK = BLOCKS

CellReader = Callable[[int, int, int], tuple[int, ...]]
"""(model index, first case, stop case) → trials per state summed over those cases."""


def spark(values: Sequence[float], width: int, top: float | None = None) -> str:
    """Values as a one-line bar chart `width` characters wide (averaged into buckets, newest on the right)."""
    if width <= 0:
        return ""
    vals = _fit(values, width)
    hi = top if top is not None else max(vals, default=0.0)
    if hi <= 0:
        return (" " * (width - len(vals))) + ("▁" * len(vals) if vals else "")
    out = []
    for v in vals:
        out.append(SPARK[min(8, max(1 if v > 0 else 0, round(v / hi * 8)))])
    return " " * (width - len(out)) + "".join(out)


def cell_state(counts: Sequence[int]) -> int:
    """The one state a cell (or bucket of cells) shows: work in progress first, then the pass rate.

    One failed trial of thirty must not paint a cell red: a finished cell is ✓ when every answered trial
    passed, ◑ when half or more did, ✗ below half, and ! when errors outnumber answers. A cell with some
    trials done and the rest queued is ▹ (started), never a premature verdict. Unscored trials (answered,
    no judge's verdict yet or ever) are in no verdict: ○ only when nothing in the cell is scored. A cell
    with nothing planned (a judge lane on a case it does not judge) is blank.
    """
    if counts[IN_FLIGHT]:
        return IN_FLIGHT
    if counts[BACKOFF]:
        return BACKOFF
    answered = counts[PASSED] + counts[FAILED]
    unanswered = counts[ERRORED] + counts[UNREACHABLE]  # a chained call not run is no answer either
    done = answered + unanswered
    if not done:
        if counts[UNSCORED]:
            return STARTED if counts[QUEUED] else UNSCORED
        return QUEUED if counts[QUEUED] else EMPTY
    if counts[QUEUED]:
        return STARTED
    if unanswered > answered:
        return UNREACHABLE if counts[UNREACHABLE] > counts[ERRORED] else ERRORED
    if counts[PASSED] == answered:
        return PASSED
    return MOSTLY if 2 * counts[PASSED] >= answered else FAILED


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def middle_cut(name: str, width: int, tail: int | None = None) -> str:
    """`name` in `width` characters, cut in the middle so its start and its end both stay ("capital-france" →
    "capi…nce"): a case's name usually differs from its neighbours' at one end or the other. `tail` characters of
    the end are kept when given (the part that tells it from a neighbour)."""
    if len(name) <= width:
        return name
    if width < 3:
        return name[:width]
    keep = width - 1
    back = min(keep - 1, max(1, tail if tail is not None else keep // 2))
    return name[: keep - back] + "…" + name[len(name) - back:]


def short_labels(ids: Sequence[str], width: int) -> list[str]:
    """Each id in `width` characters, cut in the middle (start and end kept) so that a cut one never reads as
    another name; where it differs from a neighbour near its end, as much of the end as tells them apart is kept
    ("capital-fr", "capital-au" → "c…fr", "c…au"; "capital-france-north" → "cap…north")."""
    if width <= 0:
        return ["" for _ in ids]
    out = []
    for k, full in enumerate(ids):
        near = [ids[j] for j in (k - 1, k + 1) if 0 <= j < len(ids) and ids[j] != full]
        differs = len(full) - max((_common_prefix(full, t) for t in near), default=len(full))
        keep = width - 1
        out.append(middle_cut(full, width, max(keep // 2, differs) if differs < keep else None))
    for k, full in enumerate(ids):  # still the same as a neighbour's: another split of start and end may differ
        seen = {out[j] for j in (k - 1, k + 1) if 0 <= j < len(ids) and ids[j] != full}
        if out[k] in seen:
            out[k] = next((c for t in range(1, width - 1) if (c := middle_cut(full, width, t)) not in seen), out[k])
    return out


def _longest_fitting(width: int, texts: Sequence[str]) -> str:
    """The first of `texts` (longest first) that fits `width`, so a ruler's note says less rather than stop mid-word;
    the last one whatever its length."""
    return next((t for t in texts if len(t) <= width), texts[-1])


@dataclass(frozen=True, slots=True)
class _Layout:
    label_w: int
    cell_w: int
    """Characters per column (glyph, fraction, gap)."""
    per_col: int
    """Cases per column: 1, or more when the matrix is condensed into buckets."""
    n_cols: int


class CallMatrix(Widget, can_focus=True):
    """Models × cases, one glyph (and trial fraction) per cell; condenses cases into buckets when they do not fit.

    Rendered line by line from cached strips: the cost of a frame is the number of cells that changed,
    never the number of calls.
    """

    DEFAULT_CSS = """
    CallMatrix { height: auto; min-height: 3; }
    CallMatrix > .matrix--queued { color: $arena-queued; }
    CallMatrix > .matrix--in-flight { color: $arena-in-flight; text-style: bold; }
    CallMatrix > .matrix--backoff { color: $arena-retrying; text-style: bold; }
    CallMatrix > .matrix--passed { color: $arena-passed; }
    CallMatrix > .matrix--failed { color: $arena-failed; }
    CallMatrix > .matrix--errored { color: $arena-errored; text-style: bold; }
    CallMatrix > .matrix--unscored { color: $arena-muted; text-style: bold; }
    CallMatrix > .matrix--unreachable { color: $arena-muted; }
    CallMatrix > .matrix--empty { color: $arena-muted; }
    CallMatrix > .matrix--mostly { color: $warning; }
    CallMatrix > .matrix--started { color: $arena-in-flight; }
    CallMatrix > .matrix--label { color: $foreground; }
    CallMatrix > .matrix--header { color: $arena-muted; }
    CallMatrix > .matrix--cursor { text-style: reverse; }
    CallMatrix:focus > .matrix--cursor { background: $accent; color: $background; text-style: bold; }
    """
    COMPONENT_CLASSES = {
        *(f"matrix--{c}" for c in CELL_CLASSES), "matrix--label", "matrix--header", "matrix--cursor",
    }
    BINDINGS = [
        Binding("left", "move(0, -1)", "left", show=False),
        Binding("right", "move(0, 1)", "right", show=False),
        Binding("up", "move(-1, 0)", "up", show=False),
        Binding("down", "move(1, 0)", "down", show=False),
        Binding("home", "move(0, -100000)", show=False),
        Binding("end", "move(0, 100000)", show=False),
        Binding("enter", "select", "Call detail", show=False),
    ]

    class CursorMoved(Message):
        """The cursor is on another cell (or its column holds other cases): `cursor_words()` names it."""

    class CellSelected(Message):
        """The user chose a cell: show that (model, case)."""

        def __init__(self, model_index: int, case_index: int) -> None:
            self.model_index = model_index
            self.case_index = case_index
            super().__init__()

    def __init__(self, model_keys: Sequence[str], case_ids: Sequence[str], trials: int, reader: CellReader, *,
                 cell_max: int | None = None, judged: bool = False, chained: bool = False,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.model_keys = [printable(k, newlines=False) for k in model_keys]
        """Row labels: the models', then the judge lanes' (marked)."""
        self.case_ids = [printable(c, newlines=False) for c in case_ids]
        self.trials = trials
        self.cell_max = max(trials, cell_max or 0)
        """The most calls one cell holds: a candidate's trials, or a judge lane's candidates × trials."""
        self.judged = judged
        """Some rows can be unscored (an llm_judge scorer): the legend says what ○ is."""
        self.chained = chained
        """Some cases depend on others: the legend says what ⊘ (not run) is."""
        self._reader = reader
        self._layout: _Layout | None = None
        self._cols: list[list[tuple[int, int, int]]] = []
        """Per model, per column: (state, passed trials, planned trials)."""
        self._strips: dict[int, Strip] = {}
        self.cursor = (0, 0)
        """(model index, column)."""
        self._styles: dict[str, Style] | None = None
        self._top = 0
        """The first model row on screen: rows follow the cursor when models outnumber the rows."""
        self.show_legend = True
        """The glyph legend under the rows; the screen turns it off when height is short (help has it)."""

    # ---- sizing and layout ---------------------------------------------------------------------

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.model_keys) + 1 + self.show_legend

    @property
    def _rows(self) -> int:
        """Model rows on screen."""
        return max(1, self.size.height - 1 - self.show_legend)

    def _compute_layout(self, width: int) -> _Layout:
        label_w = min(max((len(k) for k in self.model_keys), default=5), 22) + 1
        avail = max(1, width - label_w)
        n = max(1, len(self.case_ids))
        most = self.cell_max
        full_w = 2 + len(f"{most}/{most}") if most > 1 else 2
        for cw in (full_w, 2):
            if n * cw <= avail:
                if cw == full_w:
                    # use the width: wider cells show more of each case's name (up to all of it)
                    longest = max((len(c) for c in self.case_ids), default=1) + 1
                    cw = max(cw, min(longest, avail // n, 24))
                return _Layout(label_w, cw, 1, n)
        per_col = -(-n // avail)
        return _Layout(label_w, 1, per_col, -(-n // per_col))

    def on_resize(self) -> None:
        self._relayout()

    def _relayout(self) -> None:
        lay = self._compute_layout(self.size.width)
        if lay != self._layout:
            self._layout = lay
            self._recompute_all()
            self.post_message(self.CursorMoved())  # a column may now hold other cases

    def _recompute_all(self) -> None:
        lay = self._layout
        if lay is None:
            return
        self._cols = [[self._column(m, c) for c in range(lay.n_cols)] for m in range(len(self.model_keys))]
        self._strips.clear()
        self.refresh()

    def _column(self, m: int, col: int) -> tuple[int, int, int]:
        lay = self._layout
        assert lay is not None
        start = col * lay.per_col
        stop = min(start + lay.per_col, len(self.case_ids))
        counts = self._reader(m, start, stop)
        # every call of a cell is in exactly one state, so the states add up to what the cell plans
        return cell_state(counts), counts[PASSED], sum(counts)

    def cells_changed(self, indexes: Iterable[int]) -> None:
        """Cell indexes (model * n_cases + case) changed since the last frame: recompute only their columns."""
        lay = self._layout
        if lay is None or not self._cols:
            return
        n_cases = max(1, len(self.case_ids))
        touched: set[tuple[int, int]] = {(i // n_cases, (i % n_cases) // lay.per_col) for i in indexes}
        rows: set[int] = set()
        for m, col in touched:
            new = self._column(m, col)
            if self._cols[m][col] != new:
                self._cols[m][col] = new
                rows.add(m)
        for m in rows:
            self._strips.pop(m, None)
            self._refresh_row(m)

    def _refresh_row(self, m: int) -> None:
        y = m - self._top + 1
        if 1 <= y <= self._rows:
            self.refresh(Region(0, y, self.size.width, 1))

    # ---- rendering -----------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._strips.clear()

    def _style(self, name: str) -> Style:
        if self._styles is None:
            self._styles = {c: self.get_component_rich_style(c, partial=True) for c in self.COMPONENT_CLASSES}
        return self._styles[name]

    def _cell_text(self, state: int, passed: int, planned: int) -> str:
        lay = self._layout
        assert lay is not None
        if lay.cell_w <= 2:
            return CELL_GLYPHS[state] + (" " if lay.cell_w == 2 else "")
        if state in (QUEUED, EMPTY):
            return CELL_GLYPHS[state].ljust(lay.cell_w)
        return f"{CELL_GLYPHS[state]}{passed}/{planned}".ljust(lay.cell_w)[: lay.cell_w]

    def render_line(self, y: int) -> Strip:
        if self._layout is None:
            self._relayout()
        lay = self._layout
        width = self.size.width
        base = self.rich_style
        if lay is None:
            return Strip.blank(width, base)
        n_models = len(self.model_keys)
        if y == 0:
            return self._header(lay, width, base)
        rows = self._rows
        if self.show_legend and y == min(rows, n_models) + 1:
            return self._legend(width, base)
        m = self._top + y - 1
        if y > rows or m >= n_models:
            return Strip.blank(width, base)
        cursor_here = self.cursor[0] == m
        strip = None if cursor_here else self._strips.get(m)
        if strip is None:
            segs = [Segment(self.model_keys[m][: lay.label_w - 1].ljust(lay.label_w), self._style("matrix--label"))]
            # runs of same-state cells become one segment: fewer segments, cheaper compositing
            run: list[str] = []
            run_style: Style | None = None
            for col, (state, passed, planned) in enumerate(self._cols[m]):
                style = self._style(f"matrix--{CELL_CLASSES[state]}")
                if cursor_here and col == self.cursor[1]:
                    style = style + self._style("matrix--cursor")
                if style is not run_style and run:
                    segs.append(Segment("".join(run), run_style))
                    run = []
                run_style = style
                run.append(self._cell_text(state, passed, planned))
            if run:
                segs.append(Segment("".join(run), run_style))
            strip = Strip(segs).apply_style(base).adjust_cell_length(width, base)
            if not cursor_here:
                self._strips[m] = strip
        return strip

    def _header(self, lay: _Layout, width: int, base: Style) -> Strip:
        hs = self._style("matrix--header")
        n = len(self.case_ids)
        hidden = len(self.model_keys) - self._rows
        # models hidden above or below: say which are shown, as far as the label column allows
        more = f"↕{self._top + 1}-{self._top + self._rows}/{len(self.model_keys)}"
        corner = (more if hidden > 0 else "")[: lay.label_w - 1].ljust(lay.label_w)
        if lay.per_col == 1 and lay.cell_w > 2:
            # a name cut at its end reads as another name ("elemen"): cut in the middle, start and end kept; the
            # cursor's case is named in full under the matrix (and a hovered cell's in its tooltip)
            labels = short_labels(self.case_ids, lay.cell_w - 1)
            text = "".join(c.ljust(lay.cell_w) for c in labels)
        elif lay.per_col == 1:
            # one glyph per case: mark every fifth column and say where the first and last case are
            ticks = "".join("|" if k % 5 == 0 else " " for k in range(n)) if lay.cell_w == 1 else \
                "".join(("|" if k % 5 == 0 else " ").ljust(lay.cell_w) for k in range(n))
            text = ticks + _longest_fitting(width - lay.label_w - len(ticks), (
                f"  {n} cases (a tick at every 5th), the first {self.case_ids[0] if n else ''}",
                f"  {n} cases, a tick at every 5th", f"  {n} cases", ""))
        else:
            text = _longest_fitting(width - lay.label_w, (
                f"{n} cases, {lay.per_col} per column (first: {self.case_ids[0]}; work and pass rate shown)",
                f"{n} cases, {lay.per_col} per column (work and pass rate shown)", f"{n} cases, {lay.per_col} a column",
                f"{n} cases"))
        strip = Strip([Segment(corner, hs), Segment(text, hs)])
        return strip.apply_style(base).adjust_cell_length(width, base)

    def _legend(self, width: int, base: Style) -> Strip:
        order = (PASSED, MOSTLY, FAILED, ERRORED, *((UNSCORED,) if self.judged else ()),
                 *((UNREACHABLE,) if self.chained else ()), IN_FLIGHT, STARTED, BACKOFF, QUEUED)
        long = sum(len(CELL_NAMES[i]) + 5 for i in order) + 24 <= width
        short = {PASSED: "all pass", MOSTLY: "≥½ pass", FAILED: "<½ pass", ERRORED: "errors", IN_FLIGHT: "running",
                 STARTED: "started", BACKOFF: "retrying", QUEUED: "queued", UNSCORED: "unscored",
                 UNREACHABLE: "not run"}
        segs = []
        for i in order:
            segs.append(Segment(CELL_GLYPHS[i], self._style(f"matrix--{CELL_CLASSES[i]}")))
            segs.append(Segment(f" {CELL_NAMES[i] if long else short[i]}  ", self._style("matrix--header")))
        if long:
            segs.append(Segment("n/k = trials passed", self._style("matrix--header")))
        return Strip(segs).apply_style(base).adjust_cell_length(width, base)

    # ---- cursor --------------------------------------------------------------------------------

    def case_index_at(self, col: int) -> int:
        lay = self._layout
        per = lay.per_col if lay is not None else 1
        return min(col * per, len(self.case_ids) - 1)

    def _set_cursor(self, m: int, col: int) -> None:
        lay = self._layout
        n_cols = lay.n_cols if lay is not None else 1
        m = max(0, min(m, len(self.model_keys) - 1))
        col = max(0, min(col, n_cols - 1))
        old = self.cursor
        self.cursor = (m, col)
        if self.cursor != old:
            self.post_message(self.CursorMoved())
        for row in {old[0], m}:
            self._strips.pop(row, None)
        rows = self._rows
        top = max(0, min(max(self._top, m - rows + 1), m, max(0, len(self.model_keys) - rows)))
        if top != self._top:
            self._top = top
            self.refresh()
            return
        for row in {old[0], m}:
            self._refresh_row(row)

    def cursor_words(self) -> str:
        """The cursor's cell in full: its case's whole name (the cases of its column, when a column holds several),
        its model, and where the case is in the project's order."""
        return self.cell_words(*self.cursor)

    def cell_words(self, m: int, col: int) -> str:
        lay = self._layout
        n = len(self.case_ids)
        if not n or not self.model_keys:
            return ""
        per = lay.per_col if lay is not None else 1
        first = min(col * per, n - 1)
        last = min(first + per, n) - 1
        model = self.model_keys[min(m, len(self.model_keys) - 1)]
        if first == last:
            return f"case {first + 1}/{n} {self.case_ids[first]} · {model}"
        return f"cases {first + 1}-{last + 1}/{n} {self.case_ids[first]} … {self.case_ids[last]} · {model}"

    def _cell_at(self, x: int, y: int) -> tuple[int, int] | None:
        lay = self._layout
        if lay is None or y < 1 or y > min(self._rows, len(self.model_keys) - self._top) or x < lay.label_w:
            return None
        col = (x - lay.label_w) // lay.cell_w
        return None if col >= lay.n_cols else (self._top + y - 1, col)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """Hovering a cell names its case in full (the ruler's names are cut to the cells' width)."""
        cell = self._cell_at(event.x, event.y)
        tip = None if cell is None else self.cell_words(*cell)
        if tip != self.tooltip:
            self.tooltip = tip

    def action_move(self, dm: int, dc: int) -> None:
        self._set_cursor(self.cursor[0] + dm, self.cursor[1] + dc)

    def move_cursor_to_row(self, m: int) -> None:
        """The cursor on model row `m`, in the column it was in (the model table's Enter follows it here)."""
        self._set_cursor(m, self.cursor[1])

    def action_select(self) -> None:
        self.post_message(self.CellSelected(self.cursor[0], self.case_index_at(self.cursor[1])))

    def on_click(self, event: events.Click) -> None:
        cell = self._cell_at(event.x, event.y)
        if cell is None:
            return
        self._set_cursor(*cell)
        self.action_select()


class RatesChart(Widget):
    """Throughput and retries per second over the whole run, across the full width, with every concurrency
    change (global ▲/▼, a model's cap ◆) marked below at its moment."""

    DEFAULT_CSS = """
    RatesChart { height: 1fr; min-height: 3; }
    RatesChart > .rates--throughput { color: $arena-chart; }
    RatesChart > .rates--retry { color: $arena-chart-retry; }
    RatesChart > .rates--marker { color: $arena-marker; text-style: bold; }
    RatesChart > .rates--label { color: $arena-muted; }
    """
    COMPONENT_CLASSES = {"rates--throughput", "rates--retry", "rates--marker", "rates--label"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._data: tuple[tuple[float, ...], tuple[float, ...], float, tuple[tuple[float, int, int, str | None, str],
                                                                             ...]] = ((), (), 1.0, ())
        self._per_model: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def update_series(self, throughput: tuple[float, ...], retries: tuple[float, ...], step_s: float,
                      markers: tuple[tuple[float, int, int, str | None, str], ...],
                      per_model: tuple[tuple[str, tuple[float, ...]], ...] = ()) -> None:
        """The run's series; `per_model` (model key, calls per second over the last seconds) is drawn as one
        row per model under the run's chart when the pane is tall enough for it."""
        data = (throughput, retries, step_s, markers)
        per_model = tuple((printable(k, newlines=False), v) for k, v in per_model)
        if data != self._data or per_model != self._per_model:
            self._data = data
            self._per_model = per_model
            self.refresh()

    def render(self) -> Text:
        thr, ret, step, markers = self._data
        narrow = self.size.width < 60
        label_w = 8 if narrow else 12
        w = max(10, self.size.width - label_w)
        rows = max(3, self.size.height)
        # rows: calls/s chart, retry/s chart, the concurrency marks, and the time axis when there is room;
        # a tall pane also gets one row per model (its calls/s over the last minute) below those
        n_models = len(self._per_model)
        per_model = self._per_model if n_models and rows >= 10 + n_models else ()
        per_h = max(1, min(4, (rows - 15) // n_models)) if per_model else 0
        if per_model:
            rows -= n_models * per_h + 1
        axis = rows >= 6
        avail = rows - 1 - axis
        thr_h = max(1, min(12, (avail * 2 + 2) // 3))
        ret_h = max(1, min(6, avail - thr_h)) if avail > thr_h else 0
        # the series fills the width: fewer points than columns are stretched, not padded on the left
        n = max(1, len(thr))
        reps = max(1, w // n) if len(thr) <= w else 1
        thr_s = [v for v in thr for _ in range(reps)]
        ret_s = [v for v in ret for _ in range(reps)]
        lab = self.get_component_rich_style("rates--label", partial=True)
        peak = max(thr, default=0.0)
        rpeak = max(ret, default=0.0)
        out = Text(no_wrap=True, overflow="crop")
        for i, line in enumerate(tall_spark(thr_s, w, thr_h)):
            name = ("calls/s" if i == 0 else "") if not narrow else ("calls/s" if i == 0 else f"{peak:.0f}" if i == 1
                                                                  else "")
            top = f"{peak:>4.0f} " if i == 0 and not narrow else ""
            out.append(f"{name:<{label_w - len(top)}}{top}"[:label_w], lab)
            out.append(line, self.get_component_rich_style("rates--throughput", partial=True))
            out.append("\n")
        for i, line in enumerate(tall_spark(ret_s, w, ret_h, top=max(rpeak, 1.0)) if ret_h else []):
            out.append((f"{'retry/s':<{label_w - 5}}{rpeak:>4.0f} " if i == 0 and not narrow else
                        "retry/s " if i == 0 else " " * label_w)[:label_w].ljust(label_w), lab)
            out.append(line, self.get_component_rich_style("rates--retry", partial=True))
            out.append("\n")
        # every knob change at its moment: ▲/▼ global (labelled with the new target), ◆ a model's cap
        used = len(thr) * reps if len(thr) <= w else w
        offset = w - used
        scale = reps if len(thr) <= w else w / n
        marks = [" "] * w
        # one glyph per column (the latest change there), then each global change's new target after its glyph
        # only where that many cells are free: a burst of changes never runs its numbers into each other
        glyphs: dict[int, tuple[str, str]] = {}
        for t, old, new, model_key, _source in markers:
            x = min(w - 1, offset + int(t / max(step, 1e-9) * scale))
            glyphs[x] = ("◆", "") if model_key is not None else ("▲" if new >= old else "▼", str(new))
        for x, (glyph, _) in glyphs.items():
            marks[x] = glyph
        for x, (_, label) in sorted(glyphs.items()):
            cells = range(x + 1, x + 1 + len(label))
            if label and cells.stop <= w and all(marks[c] == " " for c in range(x + 1, min(w, cells.stop + 1))):
                marks[cells.start: cells.stop] = list(label)
        out.append(f"{'conc.' if narrow else 'concurrency':<{label_w}}", lab)
        out.append("".join(marks), self.get_component_rich_style("rates--marker", partial=True))
        if axis:
            span = len(thr) * step
            out.append("\n")
            out.append(f"{'':<{label_w}}{'-' + _dur(span):<{max(1, w - 3)}}now", lab)
        if per_model:
            n_pts = max(len(v) for _k, v in per_model)
            out.append("\n")
            out.append(f"{'per model: calls/s':<{label_w}} over the last {n_pts} s (one scale)", lab)
            scale_top = max((max(v, default=0.0) for _k, v in per_model), default=0.0)
            style = self.get_component_rich_style("rates--throughput", partial=True)
            for key, series in per_model:
                for r, line in enumerate(tall_spark(series, w, per_h, top=scale_top)):
                    out.append("\n")
                    # a judge lane by its judge's name: "judge:gr" would say less than "⚖ grader"
                    judge = key.startswith(JUDGE_LANE_PREFIX)
                    name = JUDGE_MARK + key.removeprefix(JUDGE_LANE_PREFIX) if judge else key
                    out.append(f"{name[: label_w - 1] if r == 0 else '':<{label_w}}", lab)
                    out.append(line, style)
        return out


def tall_spark(values: Sequence[float], width: int, height: int, top: float | None = None) -> list[str]:
    """Values as a bar chart `height` lines tall (eighth blocks), newest on the right; lines top to bottom."""
    vals = _fit(values, width)
    hi = top if top is not None else max(vals, default=0.0)
    units = [0 if hi <= 0 else min(height * 8, max(1 if v > 0 else 0, round(v / hi * height * 8))) for v in vals]
    pad = " " * (width - len(vals))
    lines = []
    for r in range(height):
        floor = (height - 1 - r) * 8
        lines.append(pad + "".join(SPARK[max(0, min(8, u - floor))] for u in units))
    return lines


def _fit(values: Sequence[float], width: int) -> list[float]:
    vals = list(values)
    if len(vals) > width:
        step = len(vals) / width
        vals = [sum(vals[int(i * step): max(int(i * step) + 1, int((i + 1) * step))]) /
                max(1, int((i + 1) * step) - int(i * step)) for i in range(width)]
    return vals


@dataclass(frozen=True, slots=True)
class Column:
    title: str
    width: int
    """The most characters it takes; it takes fewer when its title and values are shorter."""
    right: bool = False
    priority: int = 5
    """When the table is too wide, lower priorities are left out first."""
    min_width: int = 0
    """Set on the sparkline column: it shrinks to this before it is left out, and grows into spare width."""
    priority_if_any: int | None = None
    """The priority while some row shows more than "0" or "-" (errors matter once there are some)."""


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
        self._plan_key: tuple[int, ...] = ()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.keys) + 1

    @property
    def shown_titles(self) -> list[str]:
        """Titles of the columns on screen now (tests read it)."""
        return [self.columns[i].title for i, _w in self._shown]

    def _content_widths(self) -> tuple[int, ...]:
        widths = [max(len(self.columns[0].title), max((len(n) for n in self._names), default=0))]
        for j, col in enumerate(self.columns[1:]):
            longest = max((len(v[j]) for v in self._values), default=0)
            widths.append(max(len(col.title), longest))
        return tuple(min(w, c.width) for w, c in zip(widths, self.columns, strict=True))

    def _replan(self) -> None:
        widths = self._content_widths()
        avail = self.size.width
        key = (avail, *widths, *(c.priority_if_any is not None and any(v[j - 1] not in ("0", "-", "")
                                                                        for v in self._values)
                                  for j, c in enumerate(self.columns) if j))
        if key == self._plan_key:
            return
        self._plan_key = key
        cols = list(range(len(self.columns)))
        flex = {i for i in cols if self.columns[i].min_width}
        busy = {i for i in cols[1:] if any(v[i - 1] not in ("0", "-", "") for v in self._values)}

        def priority(i: int) -> int:
            c = self.columns[i]
            return c.priority_if_any if c.priority_if_any is not None and i in busy else c.priority

        def need(keep: list[int], gap: int) -> int:
            return sum(self.columns[i].min_width if i in flex else widths[i] for i in keep) + gap * len(keep)

        keep, gap = cols, 2
        while keep:
            if need(keep, 2) <= avail:
                gap = 2
                break
            if need(keep, 1) <= avail:
                gap = 1
                break
            keep = [i for i in keep if i != min((i for i in keep if i), key=priority)] if len(keep) > 1 else []
        spare = avail - need(keep, gap)
        shown = []
        for i in keep:
            w = widths[i]
            if i in flex:
                w = min(self.columns[i].width, self.columns[i].min_width + spare)
            shown.append((i, w))
        self._shown, self._gap = tuple(shown), gap
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
        text = text[:width]
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


def _dur(s: float) -> str:
    s = int(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def duration(s: float | None) -> str:
    return "-" if s is None else _dur(s + 0.5)


def bar(fraction: float, width: int) -> str:
    """A progress bar of eighth blocks."""
    return hbar(fraction, width, "·")

"""The call matrix of the run screen: models × cases, one glyph per cell, line-rendered from cached strips.

It knows neither the engine nor the store: the screen hands it numbers from live-metric snapshots.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from arenatui.kernel.text import printable
from arenatui.kernel.units import plural
from arenatui.session.live import BACKOFF, ERRORED, FAILED, IN_FLIGHT, NO_TEXT, PASSED, QUEUED, UNREACHABLE, UNSCORED

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
NO_ANSWER = 11
"""A display state: under half passed, and most of the misses were answers with no text (failure mode `empty` or
`cut_while_reasoning`): a server that finished without saying anything, not a model that answered wrong."""
CELL_GLYPHS = (*GLYPHS, "◑", "▹", " ", "∅")
CELL_CLASSES = (*STATE_CLASSES, "mostly", "started", "empty", "no-text")
CELL_NAMES = ("queued", "in flight", "backing off", "all answered passed", "under half passed", "errors",
              "answered, not scored (yet)", "not run: a parent case did not pass", "half or more passed",
              "part done, rest queued",
              "not judged", "under half passed, mostly empty answers")
JUDGE_MARK = "⚖ "
"""Before a judge lane's key in the model table and the matrix: its row is a judge's calls, not a candidate's."""

CellReader = Callable[[int, int, int], tuple[int, ...]]
"""(model index, first case, stop case) → trials per state summed over those cases."""


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
    if 2 * counts[PASSED] >= answered:
        return MOSTLY
    # misses with no text at all (a server that finished without saying anything) are not wrong answers
    return NO_ANSWER if len(counts) > NO_TEXT and 2 * counts[NO_TEXT] > counts[FAILED] else FAILED


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


def short_labels(ids: Sequence[str], width: int | Sequence[int]) -> list[str]:
    """Each id in `width` characters (one width for all, or each id its own), cut in the middle (start and end kept)
    so that a cut one never reads as another name; where it differs from a neighbour near its end, as much of the
    end as tells them apart is kept ("capital-fr", "capital-au" → "c…fr", "c…au"; "capital-france-north" →
    "cap…north")."""
    widths = [width] * len(ids) if isinstance(width, int) else list(width)
    out = []
    for k, full in enumerate(ids):
        w = widths[k]
        if w <= 0:
            out.append("")
            continue
        near = [ids[j] for j in (k - 1, k + 1) if 0 <= j < len(ids) and ids[j] != full]
        differs = len(full) - max((_common_prefix(full, t) for t in near), default=len(full))
        keep = w - 1
        out.append(middle_cut(full, w, max(keep // 2, differs) if differs < keep else None))
    for k, full in enumerate(ids):  # still the same as a neighbour's: another split of start and end may differ
        seen = {out[j] for j in (k - 1, k + 1) if 0 <= j < len(ids) and ids[j] != full}
        if out[k] in seen and widths[k] > 0:
            out[k] = next((c for t in range(1, widths[k] - 1) if (c := middle_cut(full, widths[k], t)) not in seen),
                          out[k])
    return out


def _longest_fitting(width: int, texts: Sequence[str]) -> str:
    """The first of `texts` (longest first) that fits `width`, so a ruler's note says less rather than stop mid-word;
    the last one whatever its length."""
    return next((t for t in texts if len(t) <= width), texts[-1])


@dataclass(frozen=True, slots=True)
class _Layout:
    label_w: int
    cell_w: int
    """Characters per column (glyph, fraction, gap): the narrowest column's, where they differ."""
    per_col: int
    """Cases per column: 1, or more when the matrix is condensed into buckets."""
    n_cols: int
    widths: tuple[int, ...] = ()
    """Each column's width where they differ (a case's whole name where the row has room for it), else empty."""

    def width(self, col: int) -> int:
        return self.widths[col] if self.widths else self.cell_w

    def col_at(self, offset: int) -> int:
        """The column `offset` characters right of the labels falls in (n_cols past the last)."""
        if not self.widths:
            return offset // self.cell_w
        start = 0
        for col, w in enumerate(self.widths):
            start += w
            if offset < start:
                return col
        return self.n_cols


def column_widths(labels: Sequence[str], least: int, room: int, most: int = 24) -> tuple[int, ...]:
    """Each column's width in `room` characters: at least `least` (a cell's figures), up to its label's length and a
    gap (at most `most`); where the row cannot give every label its whole length, the room left over goes to the
    shortest needs first, so that as many names as can be are shown whole and the rest share what remains."""
    want = [max(least, min(len(label) + 1, most)) for label in labels]
    if sum(want) <= room:
        return tuple(want)
    widths = [least] * len(labels)
    spare = room - least * len(labels)
    for i in sorted(range(len(labels)), key=lambda i: want[i]):
        extra = min(want[i] - least, spare)
        widths[i] += extra
        spare -= extra
    return tuple(widths)


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
    CallMatrix > .matrix--no-text { color: $arena-failed; text-style: bold; }
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
        Binding("j", "move(1, 0)", show=False),  # j/k/g/G as in less, k9s, lazygit: rows (models)
        Binding("k", "move(-1, 0)", show=False),
        Binding("g", "move(-100000, 0)", show=False),
        Binding("G", "move(100000, 0)", show=False),
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
        self._cols: list[list[tuple[int, int, int, int]]] = []
        """Per model, per column: (state, passed trials, answered trials, errored trials)."""
        self._strips: dict[int, Strip] = {}
        self.cursor = (0, 0)
        """(model index, column)."""
        self._styles: dict[str, Style] | None = None
        self._top = 0
        """The first model row on screen: rows follow the cursor when models outnumber the rows."""
        self.no_text = False
        """Some cell shows ∅ (misses with no text): the legend says what it is."""
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
                    # use the width: each column as wide as its case's name needs (up to 24), as far as the row
                    # has room, so a short name leaves its room to a long one; never narrower than an even share
                    # up to the room for a count of errors (`!e`), which a cell shows beside its n/k
                    widths = column_widths(self.case_ids, max(cw, min(avail // n, cw + 2)), avail)
                    if len(set(widths)) > 1:
                        return _Layout(label_w, min(widths), 1, n, widths)
                    cw = widths[0] if widths else cw
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

    def _column(self, m: int, col: int) -> tuple[int, int, int, int]:
        lay = self._layout
        assert lay is not None
        start = col * lay.per_col
        stop = min(start + lay.per_col, len(self.case_ids))
        counts = self._reader(m, start, stop)
        state = cell_state(counts)
        if state == NO_ANSWER and not self.no_text:
            self.no_text = True
            self.refresh()  # the legend now says what ∅ is
        # n/k is passed of answered (scored) trials; errors are counted apart, never hidden behind a verdict
        return state, counts[PASSED], counts[PASSED] + counts[FAILED], counts[ERRORED]

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

    def _cell_segments(self, state: int, passed: int, answered: int, errored: int,
                       cw: int | None = None) -> list[tuple[str, str]]:
        """A cell `cw` characters wide (default: the layout's) as (text, component class) pieces: its glyph and n/k
        (passed of answered) in its state's colour, then `!e` (trials errored) in the errors' colour. Where `!e` has
        no room, a verdict glyph gives way to `!`: a cell with errors never shows a bare ✓ (issue 37)."""
        lay = self._layout
        assert lay is not None
        if cw is None:
            cw = lay.cell_w
        cls = f"matrix--{CELL_CLASSES[state]}"
        hides_errors = errored and state in (PASSED, MOSTLY, FAILED, UNSCORED)
        if cw <= 2:
            glyph = GLYPHS[ERRORED] if hides_errors else CELL_GLYPHS[state]
            return [(glyph + (" " if cw == 2 else ""), "matrix--errored" if hides_errors else cls)]
        if state in (QUEUED, EMPTY):
            return [(CELL_GLYPHS[state].ljust(cw), cls)]
        text = f"{CELL_GLYPHS[state]}{passed}/{answered}"
        errors = f"!{errored}" if errored and state != ERRORED else ""
        if errors and len(text) + len(errors) < cw:
            return [(text, cls), (errors.ljust(cw - len(text)), "matrix--errored")]
        if hides_errors:
            return [(f"{GLYPHS[ERRORED]}{passed}/{answered}".ljust(cw)[:cw], "matrix--errored")]
        return [(text.ljust(cw)[:cw], cls)]

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
            # runs of same-style pieces become one segment: fewer segments, cheaper compositing
            run: list[str] = []
            run_style: Style | None = None
            width_of = lay.width
            for col, cell in enumerate(self._cols[m]):
                for text, cls in self._cell_segments(*cell, width_of(col)):
                    style = self._style(cls)
                    if cursor_here and col == self.cursor[1]:
                        style = style + self._style("matrix--cursor")
                    if style is not run_style and run:
                        segs.append(Segment("".join(run), run_style))
                        run = []
                    run_style = style
                    run.append(text)
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
            widths = [lay.width(col) for col in range(n)]
            labels = short_labels(self.case_ids, [w - 1 for w in widths])
            text = "".join(c.ljust(w) for c, w in zip(labels, widths, strict=True))
        elif lay.per_col == 1:
            # one glyph per case: mark every fifth column and say where the first and last case are
            ticks = "".join("|" if k % 5 == 0 else " " for k in range(n)) if lay.cell_w == 1 else \
                "".join(("|" if k % 5 == 0 else " ").ljust(lay.cell_w) for k in range(n))
            text = ticks + _longest_fitting(width - lay.label_w - len(ticks), (
                f"  {plural(n, 'case')} (a tick at every 5th), the first {self.case_ids[0] if n else ''}",
                f"  {plural(n, 'case')}, a tick at every 5th", f"  {plural(n, 'case')}", ""))
        else:
            text = _longest_fitting(width - lay.label_w, (
                f"{n} cases, {lay.per_col} per column (first: {self.case_ids[0]}; work and pass rate shown)",
                f"{n} cases, {lay.per_col} per column (work and pass rate shown)", f"{n} cases, {lay.per_col} a column",
                f"{n} cases"))
        strip = Strip([Segment(corner, hs), Segment(text, hs)])
        return strip.apply_style(base).adjust_cell_length(width, base)

    def _legend(self, width: int, base: Style) -> Strip:
        order = (PASSED, MOSTLY, FAILED, *((NO_ANSWER,) if self.no_text else ()), ERRORED,
                 *((UNSCORED,) if self.judged else ()),
                 *((UNREACHABLE,) if self.chained else ()), IN_FLIGHT, STARTED, BACKOFF, QUEUED)
        long = sum(len(CELL_NAMES[i]) + 5 for i in order) + 24 <= width
        short = {PASSED: "all pass", MOSTLY: "≥½ pass", FAILED: "<½ pass", ERRORED: "errors", IN_FLIGHT: "in flight",
                 STARTED: "part done", BACKOFF: "retrying", QUEUED: "queued", UNSCORED: "unscored",
                 UNREACHABLE: "not run", NO_ANSWER: "empty answers"}
        segs = []
        for i in order:
            segs.append(Segment(CELL_GLYPHS[i], self._style(f"matrix--{CELL_CLASSES[i]}")))
            segs.append(Segment(f" {CELL_NAMES[i] if long else short[i]}  ", self._style("matrix--header")))
        if long:
            segs.append(Segment("n/k = passed of answered, !e = errored", self._style("matrix--header")))
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
        col = lay.col_at(x - lay.label_w)
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


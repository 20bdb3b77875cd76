"""The per-model tuning readout in the run screen: each model's whole verdict, then its measured levels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from arenatui.kernel.units import plural
from arenatui.present.charts import goodput_by_level
from arenatui.present.level_figures import fmt_rate, fmt_share
from arenatui.present.safe_text import literal
from arenatui.tui.widgets import SPARK
from arenatui.tuning.budgets import MIN_ANSWERS, cut_direction
from arenatui.tuning.controller import Tuner
from arenatui.tuning.evidence import LevelEvidence
from arenatui.tuning.levels import ModelReadout

if TYPE_CHECKING:
    from arenatui.session.live import LiveSnapshot

class Truncation(NamedTuple):
    """A model whose answers hit the token limit this session, with what says which way the limit should move."""

    key: str
    cut: int
    limit: int | None
    answered: int = 0
    passing: int = 0
    cut_failed: int = 0
    longest_passing: int = 0

    def advice(self, run_id: str) -> str:
        """What to do about it, by the rule `arena tune --show` recommends by (budgets.cut_direction)."""
        if self.limit is None:
            return f"arena tune --show {run_id} says whether to change it"
        way = cut_direction(self.limit, self.answered, self.passing, self.cut_failed, self.longest_passing)
        if way == "raise":
            return (f"{self.cut_failed} of them failed at the limit: raise max_tokens (arena tune --show {run_id} "
                    "says how far)")
        if way == "lower":
            return (f"they ramble: every passing answer stayed under {self.longest_passing + 1} tokens, so a lower "
                    f"limit would cut none that passes (arena tune --show {run_id} says how low)")
        if way == "keep":
            return f"too few failed to move it; max_tokens {self.limit} can stay (arena tune --show {run_id})"
        return (f"not enough evidence yet to say whether to change it: {self.passing} passing answers, "
                f"{MIN_ANSWERS} needed")

KEY_WIDTH = 14
COMPACT_WIDTH = 60
CHART_WIDTH = 50
"""Narrower than this, the pane lists the measured levels on one line instead of charting them."""
_WRAP = Console(width=80, color_system=None, legacy_windows=False)
"""Only for `Text.wrap` (which needs a console for cell widths); never printed to."""


STRIP_LEGEND = "▁▅█ before a verdict: goodput at each level held, lowest first (· not measured)"
"""What the strip before each verdict means (goodput_chart), in a row the pane has to spare."""


def goodput_chart(rows: Sequence[LevelEvidence]) -> str:
    """Goodput against level, one bar per level held, in level order (· where the level is not measured)."""
    top = max((r.goodput or 0.0 for r in rows if r.measured), default=0.0)
    if top <= 0:
        return "·" * len(rows)
    return "".join(SPARK[max(1, round((r.goodput or 0.0) / top * 8))] if r.measured else "·" for r in rows)


def verdict_lines(ro: ModelReadout, state: str, width: int) -> list[Text]:
    """The model's key, its tuner state, and its whole verdict, wrapped at word boundaries: never cut."""
    compact = width < COMPACT_WIDTH
    head = Text()
    head.append_text(literal(ro.model_key[: 11 if compact else KEY_WIDTH], "bold", newlines=False))
    if compact:
        tag = "" if state == "manual" else "S" if state == "suspended" else "T" + state.split()[-1]
        if tag:
            head.append(f" {tag}", Style(dim=True))
    else:
        head.append(f" {state}", Style(dim=True))
        head.append(f" {goodput_chart(ro.levels)}")
    head.append(" → ")
    head.append(ro.verdict.line(ro.model_key), Style(italic=True))
    return list(head.wrap(_WRAP, max(10, width), overflow="fold"))


def level_line(ro: ModelReadout, width: int) -> Text:
    """The measured levels, the verdict's in bold: 'level goodput/s 429 share n'; cut to the width (the rest of the
    evidence is in `arena tune --show` and the results detail)."""
    line = Text("  ", no_wrap=True, overflow="ellipsis")
    shown = [r for r in ro.levels if r.measured or r.level == ro.best] or list(ro.levels)
    for i, r in enumerate(shown):
        if i:
            line.append("  ")
        text = f"{r.level}: {fmt_rate(r.goodput)}/s 429s {fmt_share(r.limited_share)} n={r.answered}"
        if not r.measured:
            text += "?"
        line.append(text, Style(bold=True) if r.level == ro.best else Style(dim=not r.measured))
    line.truncate(max(1, width), overflow="ellipsis")
    return line


def truncation_lines(cut: Sequence[Truncation], width: int, run_id: str = "RUN") -> list[Text]:
    """One warning a model whose answers hit max_tokens (a cut answer may fail for want of room, not of
    knowledge), wrapped at word boundaries: never cut."""
    out: list[Text] = []
    for t in cut:
        line = Text("⚠ ", "bold")
        line.append_text(literal(t.key, "bold", newlines=False))
        line.append(f": {plural(t.cut, 'answer')} stopped at max_tokens"
                    + (f" {t.limit}" if t.limit is not None else "") + f" (cut short); {t.advice(run_id)}")
        out.extend(line.wrap(_WRAP, max(10, width), overflow="fold"))
    return out


def readout_text(readouts: Sequence[ModelReadout], states: Sequence[str], width: int, height: int,
                 cut: Sequence[Truncation] = (), run_id: str = "RUN") -> Text:
    """Truncation warnings first, then every model's whole verdict; the measured levels under each where the `height`
    rows allow (a chart each, or a line each); a legend of the level strip in a row to spare. Every verdict is in it,
    whatever the height: the pane scrolls and says what lies below (`TuningReadout.below`)."""
    lines = truncation_lines(cut, width, run_id)
    blocks = [verdict_lines(ro, st, width) for ro, st in zip(readouts, states, strict=True)]
    spare = height - sum(len(b) for b in blocks) - len(lines)
    # where the pane has the rows (and the width) for every model's chart, goodput by level as a picture; else one
    # line of measured levels per model while rows last
    charts = [goodput_by_level(ro.levels, width - 2, knee=ro.best) for ro in readouts] \
        if width >= CHART_WIDTH else []
    pictured = bool(charts) and sum(len(c) for c in charts) <= spare
    for i, (ro, block) in enumerate(zip(readouts, blocks, strict=True)):
        lines.extend(block)
        if pictured:
            lines.extend(Text("  " + row) for row in charts[i])
        elif spare > 0 and ro.levels:
            spare -= 1
            lines.append(level_line(ro, width))
    if not readouts:
        lines.append(Text("no level held yet: levels appear as calls finish", Style(dim=True)))
    elif width >= max(COMPACT_WIDTH, len(STRIP_LEGEND)) and len(lines) < height and any(ro.levels for ro in readouts):
        lines.append(Text(STRIP_LEGEND, Style(dim=True)))
    out = Text(no_wrap=True, overflow="ellipsis")
    for i, line in enumerate(lines):
        if i:
            out.append("\n")
        out.append_text(line)
    return out


class TuningReadout(VerticalScroll):
    """What each model's levels gave, refreshed by the run screen with `show()` (no timer of its own). It scrolls
    (wheel, or click it and ↑↓) where its verdicts need more rows than it has, and its bottom edge says how many
    lines lie below."""

    DEFAULT_CSS = """
    TuningReadout { width: 1fr; height: 100%; padding: 0 1; border: round $primary 40%;
                    border-title-color: $primary; border-subtitle-color: $text-muted; scrollbar-size-vertical: 1; }
    TuningReadout > Static { width: 1fr; }
    """

    def __init__(self, tuner: Tuner, *, max_tokens: Mapping[str, int] | None = None, run_id: str = "RUN",
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.tuner = tuner
        self.run_id = run_id
        self.max_tokens = dict(max_tokens or {})
        """Each model's token limit, for the truncation warning."""
        self._readouts: list[ModelReadout] = []
        self._states: list[str] = []
        self._cut: tuple[Truncation, ...] = ()
        self._cache: tuple[object, Text] | None = None
        self._shown: object = None
        self._drawn: object = None
        self.border_title = self._title()

    def compose(self) -> ComposeResult:
        yield Static(Text(""), id="tuning-text")

    def _title(self) -> str:
        on = "on" if self.tuner.enabled else "off"
        return f"Tuning · auto-tuner {on} (a) · t rates · ? not measured"

    def state_of(self, key: str) -> str:
        t = self.tuner
        if not t.enabled:
            return "manual"
        if key in t.suspended:
            return "suspended"
        return f"tuner {t.level(key)}"

    def show(self, snap: LiveSnapshot | None = None) -> None:
        """Redraw from the tuner's readouts and, given the live snapshot, its truncated answers per model."""
        readouts = self.tuner.readouts()
        states = [self.state_of(ro.model_key) for ro in readouts]
        cut = self._cut if snap is None else tuple(
            Truncation(m.key, m.truncated, self.max_tokens.get(m.key), m.passed + m.failed, m.passed, m.cut_failed,
                       m.longest_passing) for m in snap.models if m.truncated and not m.judge)
        key = (tuple(readouts), tuple(states), self.tuner.enabled, self.size.width, cut)
        if key == self._shown:
            return
        self._shown = key
        self._readouts, self._states, self._cut = readouts, states, cut
        self.border_title = self._title()
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    @property
    def text(self) -> Text:
        """The readout at the pane's size now: every verdict, the levels where the rows allow."""
        key = (self._shown, self.content_size.width, self.content_size.height)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, readout_text(self._readouts, self._states, self.content_size.width,
                                             self.content_size.height, self._cut, self.run_id))
        return self._cache[1]

    @property
    def below(self) -> int:
        """Lines of the readout under the pane's bottom edge, scrolled to where it is."""
        lines = len(self.text.plain.splitlines())
        return max(0, lines - self.content_size.height - round(self.scroll_y))

    def _draw(self) -> None:
        key = (self._shown, self.content_size.width, self.content_size.height)
        if key != self._drawn:
            self._drawn = key
            self.query_one("#tuning-text", Static).update(self.text)
        self._say_below()

    def _say_below(self) -> None:
        n = self.below
        self.border_subtitle = f"▼ {plural(n, 'more line')}: scroll (wheel, or click and ↓)" if n else ""

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._say_below()

    def lines_needed(self) -> int:
        """Rows every model's whole verdict takes at the pane's width now (the levels not counted)."""
        width = self.content_size.width
        return len(truncation_lines(self._cut, width, self.run_id)) + sum(
            len(verdict_lines(ro, st, width)) for ro, st in zip(self._readouts, self._states, strict=True))

"""The per-model tuning readout in the run screen: levels held, goodput at each, best marked, the verdict."""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from arenatui.safe_text import literal
from arenatui.tui.widgets import SPARK
from arenatui.tuning.controller import Tuner
from arenatui.tuning.levels import LevelReadout, ModelReadout

KEY_WIDTH = 14
COMPACT_WIDTH = 60
LEVELS_SHOWN = 6
"""Levels listed per model: the best and those nearest it (the chart shows all)."""


def goodput_chart(rows: Sequence[LevelReadout]) -> str:
    """Goodput against level, one bar per level held, in level order (▁ where evidence is short)."""
    top = max((r.goodput for r in rows), default=0.0)
    if top <= 0:
        return "▁" * len(rows)
    return "".join(SPARK[max(1, round(r.goodput / top * 8))] if r.enough else "·" for r in rows)


def _near_best(rows: Sequence[LevelReadout], best: int | None) -> list[LevelReadout]:
    if len(rows) <= LEVELS_SHOWN:
        return list(rows)
    i = next((k for k, r in enumerate(rows) if r.level == best), len(rows) - 1)
    lo = max(0, min(i - LEVELS_SHOWN // 2, len(rows) - LEVELS_SHOWN))
    return list(rows[lo: lo + LEVELS_SHOWN])


def readout_line(ro: ModelReadout, state: str, width: int) -> Text:
    """One model: key, tuner state, goodput-vs-level chart, the verdict, then the levels (best in bold).

    Below COMPACT_WIDTH columns (the pane beside the events at 80-120 columns) the key and chart shrink and
    the state is a tag (`T9` the tuner's level, `S` suspended), so the verdict still fits."""
    compact = width < COMPACT_WIDTH
    key_w = 11 if compact else KEY_WIDTH
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(literal(ro.model_key[:key_w], newlines=False))
    line.append(" " * max(1, key_w + 1 - min(len(ro.model_key), key_w)))
    if compact:
        tag = "" if state == "manual" else "S" if state == "suspended" else "T" + state.split()[-1]
        line.append(f"{tag:<4}", Style(dim=True))
        line.append(f"{goodput_chart(ro.levels)[-5:]:<5} ")
    else:
        line.append(f"{state:<9}", Style(dim=True))
        line.append(f"{goodput_chart(ro.levels):<8} ")
    # the verdict before the levels: a narrow pane cuts the levels, never the conclusion
    line.append("→ " + ro.verdict, Style(italic=True))
    for r in _near_best(ro.levels, ro.best):
        line.append("  ")
        text = f"{r.level}:{r.goodput:.1f}/s"
        if r.limited_share > 0.005:
            text += f" 429 {r.limited_share:.0%}"
        if r.p95_ms is not None:
            text += f" p95 {r.p95_ms:.0f}"
        if not r.enough:
            text += "?"
        line.append(text, Style(bold=True, underline=True) if r.best else Style(dim=not r.enough))
    return line


class TuningReadout(Widget):
    """What each model's levels gave, refreshed by the run screen with `show()` (no timer of its own)."""

    DEFAULT_CSS = """
    TuningReadout { width: 1fr; height: 100%; padding: 0 1; border: round $primary 40%;
                    border-title-color: $primary; overflow: hidden hidden; text-wrap: nowrap;
                    text-overflow: ellipsis; }
    """

    def __init__(self, tuner: Tuner, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tuner = tuner
        self._readouts: list[ModelReadout] = []
        self._states: list[str] = []
        self._cache: tuple[object, Text] | None = None
        self._shown: object = None
        self.border_title = self._title()

    def _title(self) -> str:
        on = "on" if self.tuner.enabled else "off"
        return f"Tuning · auto-tuner {on} (a) · ? = evidence still short · t rates"

    def state_of(self, key: str) -> str:
        t = self.tuner
        if not t.enabled:
            return "manual"
        if key in t.suspended:
            return "suspended"
        return f"tuner {t.level(key)}"

    def show(self) -> None:
        readouts = self.tuner.tracker.readouts()
        states = [self.state_of(ro.model_key) for ro in readouts]
        key = (tuple(readouts), tuple(states), self.tuner.enabled, self.size.width)
        if key == self._shown:
            return
        self._shown = key
        self._readouts, self._states = readouts, states
        self.border_title = self._title()
        self.refresh(layout=True)

    @property
    def text(self) -> Text:
        """The readout at the pane's width now: built when drawn, so a resize (or the first layout, when the
        width was still 0) never leaves the compact or the full form behind."""
        key = (self._shown, self.size.width)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._render_text(self._readouts, self._states))
        return self._cache[1]

    def _render_text(self, readouts: Sequence[ModelReadout], states: Sequence[str]) -> Text:
        # one line per model, cut rather than wrapped: the pane is as high as the models are many
        out = Text(no_wrap=True, overflow="ellipsis")
        for i, (ro, st) in enumerate(zip(readouts, states, strict=True)):
            if i:
                out.append("\n")
            out.append_text(readout_line(ro, st, self.size.width))
        if not readouts:
            out.append("no level held long enough yet: levels appear as calls finish", Style(dim=True))
        return out

    def render(self) -> Text:
        return self.text

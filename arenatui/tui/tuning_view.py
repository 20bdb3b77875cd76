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
    """One model: key, tuner state, goodput-vs-level chart, levels (best in bold), then the verdict."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(literal(ro.model_key[:KEY_WIDTH], newlines=False))
    line.append(" " * max(1, KEY_WIDTH + 1 - min(len(ro.model_key), KEY_WIDTH)))
    line.append(f"{state:<9}", Style(dim=True))
    line.append(f"{goodput_chart(ro.levels):<8} ")
    for r in _near_best(ro.levels, ro.best):
        text = f"{r.level}:{r.goodput:.1f}/s"
        if r.limited_share > 0.005:
            text += f" 429 {r.limited_share:.0%}"
        if r.p95_ms is not None:
            text += f" p95 {r.p95_ms:.0f}"
        if not r.enough:
            text += "?"
        line.append(text, Style(bold=True, underline=True) if r.best else Style(dim=not r.enough))
        line.append("  ")
    line.append("→ " + ro.verdict, Style(italic=True))
    return line


class TuningReadout(Widget):
    """What each model's levels gave, refreshed by the run screen with `show()` (no timer of its own)."""

    DEFAULT_CSS = """
    TuningReadout { height: auto; max-height: 8; padding: 0 1; border: round $primary 40%;
                    border-title-color: $primary; }
    """

    def __init__(self, tuner: Tuner, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tuner = tuner
        self.text = Text("no level held long enough yet: levels appear as calls finish", style="dim")
        self._shown: object = None
        self.border_title = "Tuning (a auto-tuner · ? marks levels without enough evidence yet)"

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
        out = Text()
        head = Text("auto-tuner ", Style(bold=True))
        head.append("on" if self.tuner.enabled else "off (press a)", Style(bold=True, reverse=self.tuner.enabled))
        out.append_text(head)
        for ro, st in zip(readouts, states, strict=True):
            out.append("\n")
            out.append_text(readout_line(ro, st, self.size.width))
        self.text = out
        self.refresh(layout=True)

    def render(self) -> Text:
        return self.text

"""The demo's lesson banner: one line naming the model with a provider limit and what to press next."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from arenatui.present.safe_text import literal
from arenatui.tuning.evidence import MIN_ANSWERED
from arenatui.tuning.levels import ModelReadout

HIDE = " · x hide"


def lesson_text(key: str, readout: ModelReadout, level: int, tuner_on: bool) -> str:
    """What the demo teaches now, from the model's own readout (the same verdict the tuning pane shows): where it is
    measured, what to press, and once the pane names its optimum, that the loop is done. `level`: the level the
    model runs at now (the global target while it has no cap of its own, its tuner level when tuned). Short enough
    for 80 columns."""
    v = readout.verdict
    if v.kind == "optimum":
        return f"{key}: {v.text}. a: the auto-tuner finds it" + HIDE
    if tuner_on:
        return f"Auto-tuner on: {key} climbs to its 429s, settles below (t)" + HIDE
    refused = [r.level for r in readout.levels if r.rate_limited and r.level > 1]
    here = next((r for r in readout.levels if r.level == level), None)
    if refused and (here is None or not here.measured or level >= min(refused)):
        return f"{key}: 429s at {min(refused)}, {min(refused) - 1} not measured: press -, wait, then +" + HIDE
    if here is not None and here.measured:
        return f"{key} measured clean at {level}: press + and watch its 429s (t: tuning)" + HIDE
    got = here.answered if here is not None else 0
    return f"{key} has a provider limit: measuring {level} ({got}/{MIN_ANSWERED}), then press +" + HIDE


class LessonBanner(Widget):
    """One line over the console while the demo runs; `x` hides it (RunScreen)."""

    DEFAULT_CSS = """
    LessonBanner {
        height: 1;
        background: $accent 30%;
        color: $foreground;
        text-style: bold;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""

    def show(self, text: str) -> None:
        if text != self.text:
            self.text = text
            self.refresh()

    def render(self) -> Text:
        line = literal(" " + self.text, newlines=False)
        line.no_wrap = True
        line.overflow = "ellipsis"
        return line

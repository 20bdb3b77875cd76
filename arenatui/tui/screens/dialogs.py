"""Small modal screens of the console: ask for a number, confirm a stop, the key help."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from arenatui.live import STATE_NAMES
from arenatui.tui.widgets import GLYPHS


class ValueInput(ModalScreen[int | None]):
    """Ask for a whole number (concurrency, a model cap); Escape keeps what was there."""

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, prompt: Text, current: str, *, allow_empty: bool = False) -> None:
        super().__init__()
        self._prompt = prompt
        self._current = current
        self._allow_empty = allow_empty

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self._prompt)
            yield Input(value=self._current, type="integer", id="value")
            yield Label(Text("Enter to apply, Escape to keep" + (", empty for no cap" if self._allow_empty else "")),
                        classes="hint")

    def on_mount(self) -> None:
        inp = self.query_one("#value", Input)
        inp.focus()
        self.call_after_refresh(inp.action_select_all)  # typing replaces the current value

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        v = event.value.strip()
        if not v and self._allow_empty:
            self.dismiss(0)
            return
        try:
            n = int(v)
        except ValueError:
            self.notify("a whole number, please", severity="warning")
            return
        if n < 1:
            self.notify("at least 1", severity="warning")
            return
        self.dismiss(n)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: Text) -> None:
        super().__init__()
        self._question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self._question)
            with Horizontal(classes="buttons"):
                yield Button("Yes, stop (y)", id="yes", variant="error")
                yield Button("No, keep running (n)", id="no", variant="primary")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


HELP = """\
p          pause / resume (calls in flight finish; no new ones start)
+ / -      global concurrency up / down the ladder 1, 2, 4, 8, 16, 32, 64…
> / <      global concurrency +1 / -1 (shift)
c          type an exact global concurrency
[ / ]      cap of the model highlighted in the model table down / up by one
m          type an exact cap for that model (empty = no cap)
a          auto-tuner on/off: finds each model's level (a manual change suspends it for that model)
arrows     move in the call matrix; Enter or click shows that call
/          filter the event log (matches kind, model and text)
tab        move between matrix, model table and log filter
r          results (leaderboard) once calls have finished
q          stop the sweep (asks first); finished calls stay stored
ctrl+p     command palette: every action above, and the theme
?          this help

client CPU in the header is this process's load, in shares of one core: the event loop that
sends every request and times every answer. Above 80% for a while, arenatui itself is part of
the latencies shown. (Results are written by a child process, whose CPU is not counted: it
does not delay the timing.) Latency and TTFT run from the moment a request is on the wire;
connecting and TLS are shown apart, as "on the wire after", in a call's detail."""


class Help(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(Text("Keys", style="bold"))
            yield Static(Text(HELP))
            yield Label(Text("Cell glyphs: " + "  ".join(f"{g} {n}" for g, n in zip(GLYPHS, STATE_NAMES,
                                                                                     strict=True))),
                        classes="hint")



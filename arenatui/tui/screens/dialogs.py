"""Small modal screens of the console: ask for a number or a folder, confirm a stop, the key help."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.session.live import BACKOFF, ERRORED, FAILED, IN_FLIGHT, PASSED, QUEUED, UNREACHABLE, UNSCORED
from arenatui.tui.key_help import KeyHelp
from arenatui.tui.widgets import CELL_GLYPHS, CELL_NAMES, JUDGE_MARK, MOSTLY, NO_ANSWER, STARTED


class ValueInput(ModalScreen[int | None]):
    """Ask for a whole number (concurrency, a model cap) up to `maximum`; Escape keeps what was there."""

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, prompt: Text, current: str, *, allow_empty: bool = False,
                 maximum: int = MAX_CONCURRENCY) -> None:
        super().__init__()
        self._prompt = prompt
        self._current = current
        self._allow_empty = allow_empty
        self._maximum = maximum

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self._prompt)
            yield Input(value=self._current, type="integer", id="value")
            yield Label(Text("Enter to apply, Escape to keep" + (", empty for no cap" if self._allow_empty else "")),
                        classes="hint")

    def on_mount(self) -> None:
        # focus selects the whole value (Input.select_on_focus), so typing replaces it; selecting again after a
        # refresh, as this did, could land between keys typed ahead and select (then replace) what was typed
        self.query_one("#value", Input).focus()

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
        if n > self._maximum:
            # a million workers is no faster than a few thousand and took gigabytes: refuse, and say the bound
            self.notify(f"at most {self._maximum:,} (the bound on concurrency)", severity="warning")
            return
        self.dismiss(n)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class FolderInput(ModalScreen[str | None]):
    """Ask for a folder (saving files somewhere the user chose, never silently into the current one); Escape
    saves nothing."""

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, prompt: Text, default: str) -> None:
        super().__init__()
        self._prompt = prompt
        self._default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(self._prompt)
            yield Input(value=self._default, id="folder")
            yield Label(Text("Enter to save there (the folder is created), Escape to save nothing"), classes="hint")

    def on_mount(self) -> None:
        self.query_one("#folder", Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        v = event.value.strip()
        if not v:
            self.notify("a folder, please", severity="warning")
            return
        self.dismiss(v)

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


KEYS = (
    ("p", "pause / resume (calls in flight finish; no new ones start)"),
    ("+ / -", "global concurrency up / down the ladder 1, 2, 4, 8, 16, 32, 64…"),
    ("> / <", "global concurrency +1 / -1"),
    ("c", "type an exact global concurrency"),
    ("[ / ]", "cap of the model (or judge lane) highlighted in the model table down / up by one (from no cap: "
              "from what it runs at now)"),
    ("m", "type an exact cap for that model (empty = no cap)"),
    ("a", "auto-tuner on/off: finds each model's level (a manual change suspends it for that model)"),
    ("t", "rates chart or tuning pane, below the model table on a narrow terminal (each model's verdict and its "
          "measured levels: goodput, 429 share, answered calls)"),
    ("arrows", "move in the call matrix; Enter or click shows that call (there, s saves its whole outputs to files)"),
    ("j k g G", "down, up, first, last row of the matrix or model table (the events log scrolls)"),
    ("/", "filter the events (matches kind, model and text); Escape or Enter returns to the panes"),
    ("w", "wrap long events onto more lines, or back to one line each"),
    ("tab", "move between matrix, model table and event filter (the pane with the keys has a heavy border); Enter "
            "on a model's row shows its call at the matrix's case and its most common error"),
    ("r", "results (leaderboard) once calls have finished"),
    ("q", "stop the sweep (asks first, as ctrl+q and the palette's Quit do); finished calls stay stored"),
    ("ctrl+c", "stop the sweep at once, without asking (a second one stops waiting for calls in flight)"),
    ("ctrl+p", "command palette: every action above, the theme, a screenshot"),
    ("?", "this help"),
)
"""Every key of the run screen with what it does: one line each, wrapped to the terminal by the dialog."""

FIGURES = (
    "Rates in the model table (calls/s, tok/s, 429 %) are over a rolling window named in the table's title; "
    "once the sweep ends they are the run's totals. 429 % is the share of attempts a provider answered "
    "\"too many requests\". ETA is when the slowest model finishes at its own rate.",
    "client CPU in the header is this process's load, in shares of one core: the event loop that sends every "
    "request and times every answer. Above 80% for a while, arenatui itself is part of the latencies shown. "
    "(Results are written by a child process, whose CPU is not counted: it does not delay the timing.)",
    "Latency and TTFT run from the moment a request is on the wire; connecting and TLS are shown apart, as "
    "\"on the wire after\", in a call's detail.",
    "With an llm_judge scorer, each judge model has a lane of its own (⚖ judge:<model>), a row after the models: "
    "its calls, retries, 429s, latency and spend, its cells the verdicts. Judge calls count in the header's done "
    "and spend (\"judged n/m\" and \"judges $\" say their part). A model's answer is done when it arrives and "
    "scored when its judge answers; \"○n\" after a model's done count is its answers with no score yet (awaiting "
    "the judge) or ever (outside the scorer's sample): they are in no pass rate.",
)


class Help(KeyHelp):
    """The run screen's keys, the call matrix's cell glyphs and what the figures mean."""

    def __init__(self) -> None:
        glyphs = Table.grid(padding=(0, 2))
        glyphs.add_column(no_wrap=True)
        glyphs.add_column(ratio=1)
        order = (PASSED, MOSTLY, FAILED, NO_ANSWER, ERRORED, UNSCORED, UNREACHABLE, IN_FLIGHT, STARTED, BACKOFF, QUEUED)
        notes = {MOSTLY: " (of the answered trials)", FAILED: " (of the answered trials)",
                 NO_ANSWER: ": most misses were answers with no text (failure mode empty or cut_while_reasoning): "
                            "the server finished without saying anything; a stream it broke off is an error (!)",
                 ERRORED: ": more trials errored than answered (or some errored, in a cell too narrow for !e)",
                 UNSCORED: ": the answer awaits its judge, or its case is outside an llm_judge scorer's sample",
                 UNREACHABLE: " in that trial (chained cases, depends_on)"}
        for i in order:
            glyphs.add_row(CELL_GLYPHS[i], CELL_NAMES[i] + notes.get(i, ""))
        glyphs.add_row("n/k", "trials passed of trials answered (scored), in a cell wide enough to show it; errored "
                              "trials are no answer and never in n/k")
        glyphs.add_row("!e", "after n/k: e trials errored (a cell too narrow for it shows ! instead of its verdict, "
                             "so errors never hide behind a ✓)")
        glyphs.add_row(JUDGE_MARK.strip(), "a judge lane (llm_judge): one judge call per judged answer of every model "
                                           "and trial, its cell ✓/✗ the verdicts; blank where a case is not judged")
        super().__init__(KEYS, (("Cell glyphs in the call matrix", (glyphs,)),
                                ("The figures", tuple(Text(para) for para in FIGURES))))

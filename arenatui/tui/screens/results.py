"""The results screen: the leaderboard of what is stored so far."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from arenatui.safe_text import literal
from arenatui.sweep import Sweep
from arenatui.tui.screens.common import fmt_errors, fmt_num
from arenatui.wording import LEADERBOARD_NOTE


class Results(Screen[None]):
    """The leaderboard of what is stored so far, read in a thread (the full results screens come later)."""

    BINDINGS = [Binding("escape,r", "app.pop_screen", "Back to the run")]

    def __init__(self, sweep: Sweep) -> None:
        super().__init__()
        self.sweep = sweep

    def compose(self) -> ComposeResult:
        head = Text("Leaderboard ", style="bold")
        head.append(f"run {self.sweep.run_id} · ")
        head.append(literal(self.sweep.project.name, newlines=False))
        yield Static(head, id="results-title")
        yield DataTable(id="leaderboard", cursor_type="row", zebra_stripes=True)
        yield Static(Text(LEADERBOARD_NOTE), id="results-note")
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one(DataTable)
        for col in ("#", "model", "score", "95% CI", "mean ms", "p95 ms", "calls", "retries", "errors", "spend",
                    "$/completed"):
            # numbers right-aligned, as the headless leaderboard has them
            t.add_column(col if col in ("model", "errors") else Text(col, justify="right"), key=col)
        self._load()

    @work(thread=True, group="results", exit_on_error=False)
    def _load(self) -> None:
        from arenatui.report import run_summaries
        from arenatui.store import Store

        with Store(self.sweep.db_path) as store:
            sums = run_summaries(store, self.sweep.run_id)
        self.app.call_from_thread(self._show, sums)

    def _show(self, sums: list[Any]) -> None:
        t = self.query_one(DataTable)
        for i, s in enumerate(sums, 1):
            sc = s.score
            cells = (str(i), f"{sc.estimate:.3f}", f"{sc.low:.3f}–{sc.high:.3f}" if sc.n > 1 else "-",
                     fmt_num(s.mean_latency_ms), fmt_num(s.p95_latency_ms), str(s.calls), str(s.retries),
                     f"${s.spend:.4f}", "-" if s.cost_per_completed is None else f"${s.cost_per_completed:.5f}")
            num = [Text(c, justify="right") for c in cells]
            t.add_row(num[0], literal(s.model_key, newlines=False), *num[1:7], Text(fmt_errors(s.errors)), *num[7:])
        if not sums:
            self.notify("no finished calls stored yet")



"""The results view's pairs tab: every pair of models, row − column, ordered or not after Holm's adjustment."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable, Static

from arenatui.present.safe_text import literal
from arenatui.tui.results.data import RunView
from arenatui.tui.results.tab import ResultsTab


class PairsTab(ResultsTab):
    """The all-pairs table; Enter on a cell compares its two models on the compare tab."""

    @dataclass
    class PairChosen(Message):
        """Enter on a cell: compare the row's model (a) with the column's (b)."""

        a: str
        b: str

    def __init__(self) -> None:
        super().__init__("4 Pairs", id="pairs")
        self.view: RunView | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text(""), id="pairs-note", classes="note")
        yield DataTable(id="pairs-table", cursor_type="cell", zebra_stripes=True)

    def show_run(self, view: RunView) -> None:
        self.view = view
        ranked = view.ranked
        t = self.query_one("#pairs-table", DataTable)
        t.clear(columns=True)
        t.add_column("row − column", key="row")
        for m in ranked:
            t.add_column(literal(m, newlines=False), key=m)
        for a in ranked:
            cells: list[str | Text] = [literal(a, newlines=False)]
            for b in ranked:
                if a == b:
                    cells.append("·")
                    continue
                p = view.decision(a, b)
                if p is None or not p.comparison.n:
                    cells.append("-")
                    continue
                c = p.comparison
                d = c.diff.estimate if c.a == a else -c.diff.estimate
                cells.append(f"{d:+.3f} {'✓' if p.decided else '?'}")
            t.add_row(*cells, key=a)
        n = len(view.pairs)
        self.note_under("pairs-table", "pairs-note", Text(
            f"Mean score difference, row − column, over the cases both have scores for. ✓ ordered after Holm's "
            f"adjustment over all {n} pairs (family-wise 5%), ? not ordered on this evidence. Enter compares the "
            "pair."))

    @on(DataTable.CellSelected, "#pairs-table")
    def _pair_selected(self, event: DataTable.CellSelected) -> None:
        if self.view is None:
            return
        ranked = self.view.ranked
        row, col = event.coordinate.row, event.coordinate.column - 1
        if 0 <= col < len(ranked) and row != col:
            self.post_message(self.PairChosen(ranked[row], ranked[col]))

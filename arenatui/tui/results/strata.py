"""The results view's strata tab: each model's score per stratum and tag, and the subgroup reversals found."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from arenatui.kernel.units import plural, score
from arenatui.present.safe_text import literal
from arenatui.tui.results.data import RunView
from arenatui.tui.results.tab import ResultsTab


class StrataTab(ResultsTab):
    def __init__(self) -> None:
        super().__init__("5 Strata", id="strata")

    def compose(self) -> ComposeResult:
        yield DataTable(id="strata-table", cursor_type="row", zebra_stripes=True)
        yield Static(Text(""), id="strata-note", classes="note")

    def show_run(self, view: RunView) -> None:
        t = self.query_one("#strata-table", DataTable)
        t.clear(columns=True)
        t.add_column("stratum / tag", key="group")
        t.add_column("n", key="n")
        ranked = view.ranked
        for m in ranked:
            t.add_column(literal(m, newlines=False), key=m)
        notes = Text()
        for g in view.groups:
            label = f"{g.kind} {g.group}"
            flagged = {r.model for r in view.reversals if r.group == g.group and r.kind == g.kind}
            cells: list[str | Text] = [literal(label, newlines=False), str(g.cases)]
            for m in ranked:
                i = g.scores[m]
                cell = f"{score(i.estimate)} ±{(i.high - i.low) / 2:.2f}" if i.n > 1 else score(i.estimate)
                cell += f" n{i.n}" if i.n != g.cases else ""  # the n the interval is over, where not the group's
                cells.append(cell + (" ▼" if m in flagged else ""))
            t.add_row(*cells, key=label)
        for r in view.reversals:
            notes.append("▼ ")
            notes.append(literal(f"{r.kind} {r.group}", newlines=False))
            notes.append(": ")
            notes.append(literal(r.model, newlines=False))
            notes.append(" scores below ")
            notes.append(literal(r.beaten, newlines=False))
            notes.append(f" here ({r.group_diff:+.3f}, 95% CI {r.interval.low:+.3f} to {r.interval.high:+.3f} over "
                         f"{plural(r.interval.n, 'case')}, Holm-adjusted p {r.p_holm:.4f}), though it beats it "
                         f"overall by {r.overall_diff:.3f} (subgroup reversal)\n")
        if not notes:
            notes.append("No subgroup reversal: in no stratum or tag does a model's paired interval exclude zero "
                         "against a model it beats overall (Holm-adjusted over the groups tested).")
        # what a cell's marks mean (issue 37: "±0.09" stood unexplained)
        notes.append("\nA cell: the model's score over the group's cases, ±half the width of its 95% bootstrap "
                     "interval; nN where the interval is over fewer cases than the group's; ▼ a subgroup reversal.")
        self.note_under("strata-table", "strata-note", notes)

"""The results view's runs tab: the stored runs, newest first; two runs of one project marked (`m`) are compared
model by model; a load run picked (`l`) is read on its project's frontier for its model."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable, Static

from arenatui.kernel.units import plural
from arenatui.present.safe_text import literal
from arenatui.store.queries import RunListing
from arenatui.tui.results.data import interval_text, run_changes
from arenatui.tui.results.tab import ResultsTab

MARK = "●"
"""Beside a run marked with `m` (two of one project are compared)."""
PICK = "◆"
"""Beside a load run picked with `l`: a sweep of its project reads it on the frontier, for its model."""


def _started(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


RUNS_NOTE = ("Enter opens a run; m marks two runs of one project to compare them, model by model; l picks a load "
             "run for its project's frontier.")

class RunsTab(ResultsTab):
    """The runs table; Enter opens a run (the screen does), `m` marks runs to compare, `l` picks a load run."""

    @dataclass
    class LoadRunPicked(Message):
        """The load runs picked for `project` changed: a sweep of it open on the other tabs is read again."""

        project: str

    def __init__(self, db: Path) -> None:
        super().__init__("1 Runs", id="runs")
        self.db = db
        self.runs: list[RunListing] = []
        self.marked: list[str] = []
        self.load_runs: set[str] = set()
        self.picked: dict[tuple[str, str], str] = {}
        """Load runs picked with `l`, by (project, model): a sweep's frontier reads them."""

    def compose(self) -> ComposeResult:
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        yield Static(Text(RUNS_NOTE), id="runs-compare", classes="note")

    def on_mount(self) -> None:
        t = self.query_one("#runs-table", DataTable)
        # what tells runs apart first (status and calls are never pushed off the right edge at 80 columns)
        t.add_column("", key="mark", width=1)
        for col in ("run id", "status", "calls", "models", "started", "project", "series"):
            t.add_column(col, key=col)

    def show_runs(self, runs: list[RunListing], loads: dict[str, int] | None = None,
                  series: dict[str, str] | None = None) -> None:
        """The runs; a load run (`loads`: its stored requests) by its requests, which no plan bounds, and the series
        it is in (`series`: arena load --repeat/--series), what `arena compare` takes to compare them all."""
        self.runs = runs
        loads = loads or {}
        series = series or {}
        self.load_runs = set(loads)
        t = self.query_one("#runs-table", DataTable)
        t.clear()
        for r in runs:
            calls = plural(loads[r.run_id], "request") if r.run_id in loads else f"{r.calls}/{r.planned}"
            t.add_row(self._mark(r.run_id), r.run_id,
                      r.status + (" (load)" if r.run_id in loads else ""), calls,
                      literal(", ".join(r.models), newlines=False), _started(r.started_at),
                      literal(r.project, newlines=False), literal(series.get(r.run_id, ""), newlines=False),
                      key=r.run_id)
        if not runs:
            self.query_one("#runs-compare", Static).update(Text(f"No runs stored in {self.db} yet. Try: arena demo"))
        else:
            self.note_under("runs-table", "runs-compare", Text(RUNS_NOTE))

    def mark_run(self) -> None:
        """Mark (or unmark) the run under the cursor; two marked runs of one project are compared."""
        if not self.runs:
            return
        t = self.query_one("#runs-table", DataTable)
        run = self.runs[max(0, min(t.cursor_row, len(self.runs) - 1))]
        if run.run_id in self.marked:
            self.marked.remove(run.run_id)
        else:
            self.marked = [*self.marked[-1:], run.run_id]
        by_id = {r.run_id: r for r in self.runs}
        refused = Text()
        if len(self.marked) == 2 and by_id[self.marked[0]].project != by_id[self.marked[1]].project:
            # refused: the run just marked stays marked alone, so the screen shows which one it is
            first, latest = (by_id[m] for m in self.marked)
            refused = Text("Runs of different projects cannot be compared (")
            refused.append(literal(first.project, newlines=False)).append(" and ")
            refused.append(literal(latest.project, newlines=False)).append("). ")
            self.marked = [latest.run_id]
        for r in self.runs:
            t.update_cell(r.run_id, "mark", self._mark(r.run_id))
        if len(self.marked) < 2:
            if self.marked:
                only = by_id[self.marked[0]]
                refused.append(f"Marked {MARK} run {only.run_id} (")
                refused.append(literal(only.project, newlines=False))
                refused.append("); mark another run of that project to compare them.")
            else:
                refused.append("Enter opens a run; m marks two runs of one project to compare them.")
            self.note_under("runs-table", "runs-compare", refused)
            return
        old, new = sorted((by_id[m] for m in self.marked), key=lambda r: r.started_at)
        self.note_under("runs-table", "runs-compare", Text("comparing…"))
        self._compare_runs(old.run_id, new.run_id)

    def _mark(self, run_id: str) -> str:
        """The runs table's mark: marked to compare (m), else picked for the frontier (l)."""
        return MARK if run_id in self.marked else PICK if run_id in self.picked.values() else ""

    def pick_load(self) -> None:
        """Pick the load run under the cursor for its project's frontier (its model's p95 at the target load), in
        place of one picked before for that model; `l` again unpicks it."""
        if not self.runs:
            return
        t = self.query_one("#runs-table", DataTable)
        run = self.runs[max(0, min(t.cursor_row, len(self.runs) - 1))]
        note = Text()
        if run.run_id not in self.load_runs or len(run.models) != 1:
            note.append(f"l picks a load run for the frontier; run {run.run_id} is a sweep (its frontier reads the "
                        "load runs picked for its project, else each model's newest).")
            self.note_under("runs-table", "runs-compare", note)
            return
        key = (run.project, run.models[0])
        model = literal(run.models[0], newlines=False)
        before = self.picked.get(key)
        if before == run.run_id:
            del self.picked[key]
            note.append(f"Unpicked load run {run.run_id}: the frontier reads ").append(model)
            note.append("'s newest finished load run again.")
        else:
            self.picked[key] = run.run_id
            note.append(f"Picked {PICK} load run {run.run_id} for ").append(model)
            note.append(" (project ").append(literal(run.project, newlines=False))
            note.append(f"{f', in place of {before}' if before else ''}): a sweep of the project shows it on the "
                        "frontier; l again unpicks it.")
        for r in self.runs:
            t.update_cell(r.run_id, "mark", self._mark(r.run_id))
        self.note_under("runs-table", "runs-compare", note)
        self.post_message(self.LoadRunPicked(run.project))

    @work(thread=True, group="results-runs", exclusive=True, exit_on_error=False)
    def _compare_runs(self, old_id: str, new_id: str) -> None:
        changes = run_changes(self.db, old_id, new_id)
        out = Text(f"{new_id} − {old_id}, model by model over the working cases both runs answered\n", "bold")
        for ch in changes:
            c = ch.comparison
            name = literal(ch.model, newlines=False)
            if ch.regression:
                name.stylize("bold")
            out.append(name)
            if c.n:
                out.append(f"  {c.diff.estimate:+.3f} (95% CI {interval_text(c.diff)}, n {c.n})")
            out.append("  REGRESSION: " if ch.regression else "  ")
            out.append(literal(c.verdict, newlines=False))
            out.append("\n")
            for st in ch.strata:
                if st.regression:  # a stratum's regression counts even when the aggregate improved
                    out.append("    REGRESSION in stratum ", "bold")
                    out.append(literal(st.stratum, newlines=False))
                    out.append(": ")
                    out.append(literal(f"{st.comparison.verdict} (Holm over strata, p {st.p_holm:.4f})",
                                       newlines=False))
                    out.append("\n")
        self.app.call_from_thread(self.note_under, "runs-table", "runs-compare", out)

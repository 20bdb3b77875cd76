"""The results view's cases tab: every case with each model's outcome, filtered by model, group, outcome and text."""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Input, Select

from arenatui.kernel.text import printable
from arenatui.present.safe_text import literal
from arenatui.store.queries import OUTCOMES
from arenatui.tui.results.data import CaseRow, RunView
from arenatui.tui.results.tab import ResultsTab

MAX_CASE_ROWS = 500
"""The case table shows at most this many matches (a DataTable's cost grows with its rows)."""
CASE_CHUNK, CASE_CHUNK_S = 100, 0.02
"""Case rows are added this many at a time, this far apart, so keys keep being answered meanwhile."""


def outcome_cell(passed: int, failed: int, errored: int, unscored: int) -> str:
    """passed/scored trials, then errored and unscored ones: `2/3 1err`, `unscored` when none was scored."""
    if unscored and not passed + failed + errored:
        return "unscored"
    cell = f"{passed}/{passed + failed}" if passed + failed else "-"
    return cell + (f" {errored}err" if errored else "") + (f" {unscored}unsc" if unscored else "")


class CasesTab(ResultsTab):
    """The case table, refiltered in a worker whenever a filter changes, filled a chunk per frame."""

    def __init__(self) -> None:
        super().__init__("6 Cases", id="cases")
        self.view: RunView | None = None
        self._case_fill = 0
        self.cases_filled = False
        """The case table holds every row of the current filters (it fills a chunk per frame)."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="case-filters"):
            yield Select[str]([], prompt="any model", id="case-model", allow_blank=True)
            yield Select[str]([], prompt="any group", id="case-group", allow_blank=True)
            yield Select[str]([(o, o) for o in OUTCOMES], prompt="any outcome", id="case-outcome",
                              allow_blank=True)
            yield Input(placeholder="search (/)", id="case-search")
        yield DataTable(id="cases-table", cursor_type="row", zebra_stripes=True)

    def show_run(self, view: RunView) -> None:
        """The run's models and groups as filters, then its cases under the filters set."""
        self.view = view
        options = [(printable(m, newlines=False), m) for m in view.ranked]
        groups = [(printable(label, newlines=False), label) for label in view.group_labels()]
        with self.prevent(Select.Changed):
            self.query_one("#case-model", Select).set_options(options)
            self.query_one("#case-group", Select).set_options(groups)
        self.refilter()

    def refilter(self) -> None:
        view = self.view
        if view is None:
            return

        def val(sel_id: str) -> str | None:
            v = self.query_one(sel_id, Select).value
            return v if isinstance(v, str) else None

        self._filter_cases(view, val("#case-model"), val("#case-group"), val("#case-outcome"),
                           self.query_one("#case-search", Input).value.strip())

    @work(thread=True, group="results-cases", exclusive=True, exit_on_error=False, description="filter the cases")
    def _filter_cases(self, view: RunView, model: str | None, group: str | None, outcome: str | None,
                      text: str) -> None:
        ids = view.group_case_ids(group) if group else None
        rows = [r for r in view.rows if (ids is None or r.case.id in ids) and r.has(model, outcome)
                and (not text or r.matches(text))]
        self.app.call_from_thread(self._show_cases, view, rows)

    def _show_cases(self, view: RunView, rows: list[CaseRow]) -> None:
        if view is not self.view:
            return
        t = self.query_one("#cases-table", DataTable)
        t.clear(columns=True)
        t.add_column("case", key="case")
        t.add_column("stratum", key="stratum")
        if view.plan.judged:
            t.add_column("judge", key="judged")
        models = view.results.models
        for m in models:
            t.add_column(literal(m, newlines=False), key=m)
        t.add_column("tags", key="tags")
        self._case_fill += 1
        self.cases_filled = False
        self._fill_cases(self._case_fill, models, rows[:MAX_CASE_ROWS], 0, bool(view.plan.judged))
        if len(rows) > MAX_CASE_ROWS:
            self.notify(f"showing the first {MAX_CASE_ROWS} of {len(rows)} matching cases: narrow the filters")

    def _fill_cases(self, fill: int, models: tuple[str, ...], rows: list[CaseRow], start: int,
                    judged: bool = False) -> None:
        """Add the case rows a chunk per frame: a DataTable's cost grows with rows added at once, and one
        frame of 500 rows held the UI loop for a quarter of a second (benchmarks/results_view.py)."""
        if fill != self._case_fill:
            return  # the filters changed meanwhile: a newer fill owns the table
        t = self.query_one("#cases-table", DataTable)
        for r in rows[start:start + CASE_CHUNK]:
            cells: list[str | Text] = [literal(r.case.id, newlines=False),
                                       literal(r.case.stratum or "-", newlines=False)]
            if judged:
                cells.append("" if r.judged is None else "judged" if r.judged else "unjudged")
            for m in models:
                cells.append(outcome_cell(*r.outcomes[m]))
            cells.append(literal(", ".join(r.case.tags), newlines=False))
            t.add_row(*cells, key=r.case.id)
        if start + CASE_CHUNK < len(rows):
            self.set_timer(CASE_CHUNK_S, partial(self._fill_cases, fill, models, rows, start + CASE_CHUNK, judged))
        else:
            self.cases_filled = True

    @on(Select.Changed, "#case-model, #case-group, #case-outcome")
    @on(Input.Changed, "#case-search")
    def _filters_changed(self) -> None:
        self.refilter()

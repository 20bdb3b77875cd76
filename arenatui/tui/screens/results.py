"""The results view: runs, leaderboard, compare, all pairs, strata, cases and frontier of a stored run, in tabs.

Every figure is computed in a thread worker (`results_data`); the screen only formats what comes back,
so no keypress waits on SQL or numpy.
"""

from __future__ import annotations

import dataclasses
import math
import time
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Select, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from arenatui.charts import Point, histogram, scatter
from arenatui.figures import LEADERBOARD, NOTHING, Column, fit_line, money, p_better, score, signed
from arenatui.figures import ms as fmt_num
from arenatui.safe_text import literal, printable
from arenatui.scoring.failure_modes import FAILURE_MODES
from arenatui.stats import Comparison, Disagreement, ModelRow
from arenatui.store import Store
from arenatui.store.load_queries import run_kinds
from arenatui.store.queries import OUTCOMES, UNSCORED_MODES, RunListing, list_runs
from arenatui.tui.results_data import (
    CaseRow,
    RunView,
    StratumDiff,
    complete_view,
    interval_text,
    load_board,
    run_changes,
)
from arenatui.tui.screens.common import FAILURE_SHORT
from arenatui.tui.screens.results_detail import CaseDetail, ModelDetail
from arenatui.variant_tables import VARIANT_NOTE
from arenatui.wording import LEADERBOARD_NOTE

TABS = ("runs", "leaderboard", "compare", "pairs", "strata", "cases", "frontier")
MAX_CASE_ROWS = 500
"""The case table shows at most this many matches (a DataTable's cost grows with its rows)."""
TAB_FOCUS = {"runs": "#runs-table", "leaderboard": "#leaderboard-table", "compare": "#compare-body",
             "pairs": "#pairs-table", "strata": "#strata-table", "cases": "#cases-table", "frontier": "#frontier-body"}
"""What takes the keys on each tab (the compare and frontier bodies scroll with the arrows)."""
CASE_CHUNK, CASE_CHUNK_S = 100, 0.02
"""Case rows are added this many at a time, this far apart, so keys keep being answered meanwhile."""


MARK = "●"
"""Beside a run marked with `m` (two of one project are compared)."""

UNSCORED_SHORT = {"unjudged": "unjudged", "awaiting_judge": "awaiting", "judge_error": "judge err"}
"""The failure table's columns for calls without a score, shown in parentheses: they are not wrong answers."""


F1_COLUMN = 2
"""Where the macro-F1 column goes when a run has f1-scored answers: beside the quality, visible at 80 columns."""


def leaderboard_columns(view: RunView) -> tuple[Column[ModelRow], ...]:
    """The leaderboard's columns (figures.LEADERBOARD, as in the headless table and the report) for this run:
    macro-F1 only when it has f1-scored answers."""
    columns = LEADERBOARD
    if view.plan.record.status == "running":
        # calls not made yet are not failures: until the run ends, coverage is what is answered so far
        columns = tuple(dataclasses.replace(c, title="answered so far") if c.title == "coverage" else c
                        for c in columns)
    if not view.classification:
        return columns
    f1: Column[ModelRow] = Column("macro-F1", lambda s: view.macro_f1(s.model), score, True, 9)
    return (*columns[:F1_COLUMN], f1, *columns[F1_COLUMN:])


def leaderboard_cells(s: ModelRow, view: RunView) -> list[str | Text]:
    """One model's cells, every text literal (a model's name is the user's)."""
    return [literal(c.cell(s), newlines=False) for c in leaderboard_columns(view)]


def fair_text(board: list[ModelRow]) -> Text:
    """What the ranking rests on: its common cases, who is listed apart and why, and any verdict or paradox note."""
    ranked = [r for r in board if r.rank is not None]
    out = Text()
    if ranked:
        out.append(f" Ranked by score over the {ranked[0].common.n} cases every ranked model has scores for; own: "
                   "each model's score over its own scored cases/their n.")
    for r in board:
        for mark, why in (("", r.unranked and f"unranked, {r.unranked}"), ("* ", r.order_note), ("! ", r.paradox)):
            if why:
                out.append(f" {mark}")
                out.append(literal(r.model, newlines=False))
                out.append(": ")
                out.append(literal(why, newlines=False))
                out.append(".")
    return out


def spend_text(view: RunView) -> Text:
    """The run's spend: the models', each judge's apart (calls, judge errors, tokens), and their total."""
    sp = view.spend
    out = Text(f"{'spend' if sp.judges else 'Spend'} {money(sp.total)}")
    if sp.judges:
        out.append(f" = models {money(sp.candidates)} + judges {money(sp.judge_total)} (")
        for i, j in enumerate(sp.judges):
            out.append("; " if i else "")
            out.append(literal(j.judge, newlines=False))
            out.append(f" {j.calls} calls, {j.errors} judge errors, {j.tokens} tokens, {money(j.cost)}")
        out.append("); $/correct and $/answered are each model's own spend")
    return out


def judged_text(view: RunView) -> Text:
    """Per llm_judge scorer: judged N of M cases (its sample) and the judge calls stored; empty without one."""
    out = Text()
    per_case = len(view.plan.models) * view.plan.trials
    for j in view.plan.judged:
        stored = sum(view.judgments.get(c, 0) for c in j.judged)
        out.append("\njudged: ")
        out.append(literal(j.scorer, newlines=False))
        out.append(" (judge ")
        out.append(literal(j.judge, newlines=False))
        out.append(f") {len(j.judged)} of {len(j.case_ids)} cases ({j.sample_text}), {stored} of "
                   f"{len(j.judged) * per_case} judge calls stored; the cases tab marks them")
    return out


def show(table: DataTable[Any], shown: bool) -> None:
    """Show or hide a table of auto height, touching `display` only when it changes.

    The first assignment, even of the value it has, asks for a layout at once; the table measures its new rows
    only later (on idle), and that second layout request then no longer moves the counter Textual keys its size
    cache on. A layout in between left the table 0 rows high for good: a blank leaderboard (and failure-mode
    table) in about one results-snapshot run in four on a busy machine.
    """
    if table.display != shown:
        table.display = shown


def outcome_cell(passed: int, failed: int, errored: int, unscored: int) -> str:
    """passed/scored trials, then errored and unscored ones: `2/3 1err`, `unscored` when none was scored."""
    if unscored and not passed + failed + errored:
        return "unscored"
    cell = f"{passed}/{passed + failed}" if passed + failed else "-"
    return cell + (f" {errored}err" if errored else "") + (f" {unscored}unsc" if unscored else "")


def _started(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


class Results(Screen[None]):
    """The results of one stored run (or, without a run, the list of runs to pick from)."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("f5", "reload", "Reload", show=False),
        Binding("1", "tab('runs')", "Tabs", key_display="1-7"),
        Binding("2", "tab('leaderboard')", "Board", show=False),
        Binding("3", "tab('compare')", "Compare", show=False),
        Binding("4", "tab('pairs')", "Pairs", show=False),
        Binding("5", "tab('strata')", "Strata", show=False),
        Binding("6", "tab('cases')", "Cases", show=False),
        Binding("7", "tab('frontier')", "Frontier", show=False),
        Binding("s", "sort(1)", "Sort"),
        Binding("S", "sort(-1)", "Sort back", show=False),
        Binding("m", "mark_run", "Mark run"),
        Binding("slash", "search", "Search"),
    ]

    def __init__(self, db: Path | str, run_id: str | None, *, standalone: bool = False) -> None:
        super().__init__()
        self.db = Path(db)
        self.run_id = run_id
        self.standalone = standalone
        """Opened by `arena browse` (Escape quits) rather than from the run screen (Escape goes back)."""
        self.view: RunView | None = None
        self.pair: Comparison | None = None
        self.runs: list[RunListing] = []
        self.marked: list[str] = []
        self.sort_column = 1
        """Index into the run's leaderboard columns (`leaderboard_columns`): score, best first, to begin with."""
        self.sort_reverse = False
        self._case_fill = 0
        self.cases_filled = False
        """The case table holds every row of the current filters (it fills a chunk per frame)."""

    # ---- layout ------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(Text("loading…"), id="results-title")
        with TabbedContent(initial="leaderboard" if self.run_id else "runs", id="results-tabs"):
            with TabPane("1 Runs", id="runs"):
                yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
                yield Static(Text("Enter opens a run; m marks two runs of one project to compare them, model by "
                                  "model."), id="runs-compare", classes="note")
            with TabPane("2 Leaderboard", id="leaderboard"):
                yield DataTable(id="leaderboard-table", cursor_type="row", zebra_stripes=True)
                yield Static(Text(""), id="leaderboard-note", classes="note")
                yield DataTable(id="failures-table", cursor_type="row", zebra_stripes=True, show_cursor=False)
                variants = Static(Text(""), id="variant-tables", classes="note")
                variants.display = False  # only a run with prompt variants or repairs has these tables
                yield variants
            with TabPane("3 Compare", id="compare"):
                with Horizontal(id="compare-picks"):
                    yield Select[str]([], prompt="model A", id="pick-a", allow_blank=True)
                    yield Select[str]([], prompt="model B", id="pick-b", allow_blank=True)
                with VerticalScroll(id="compare-body"):
                    yield Static(Text(""), id="verdict")
                    yield Static(Text(""), id="histogram")
                    yield DataTable(id="pair-strata", cursor_type="row", zebra_stripes=True)
                    yield DataTable(id="disagree", cursor_type="row", zebra_stripes=True)
            with TabPane("4 Pairs", id="pairs"):
                yield Static(Text(""), id="pairs-note", classes="note")
                yield DataTable(id="pairs-table", cursor_type="cell", zebra_stripes=True)
            with TabPane("5 Strata", id="strata"):
                yield DataTable(id="strata-table", cursor_type="row", zebra_stripes=True)
                yield Static(Text(""), id="strata-note", classes="note")
            with TabPane("6 Cases", id="cases"):
                with Horizontal(id="case-filters"):
                    yield Select[str]([], prompt="any model", id="case-model", allow_blank=True)
                    yield Select[str]([], prompt="any group", id="case-group", allow_blank=True)
                    yield Select[str]([(o, o) for o in OUTCOMES], prompt="any outcome", id="case-outcome",
                                      allow_blank=True)
                    yield Input(placeholder="search (/)", id="case-search")
                yield DataTable(id="cases-table", cursor_type="row", zebra_stripes=True)
            with TabPane("7 Frontier", id="frontier"), VerticalScroll(id="frontier-body"):
                yield Static(Text(""), id="frontier-cost")
                yield Static(Text(""), id="frontier-latency", classes="spaced")
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one("#runs-table", DataTable)
        # what tells runs apart first (status and calls are never pushed off the right edge at 80 columns)
        t.add_column("", key="mark", width=1)
        for col in ("run id", "status", "calls", "models", "started", "project"):
            t.add_column(col, key=col)
        self._load_runs()
        if self.run_id:
            self.open_run(self.run_id)

    # ---- loading (workers) -------------------------------------------------------------------------------

    @work(thread=True, group="results-runs", exit_on_error=False)
    def _load_runs(self) -> None:
        with Store(self.db, read_only=True) as store:
            runs = list_runs(store, 200)
            loads = {rid: n for rid, (kind, n) in run_kinds(store, [r.run_id for r in runs]).items() if kind == "load"}
        self.app.call_from_thread(self._show_runs, runs, loads)

    def open_run(self, run_id: str) -> None:
        self.query_one("#results-title", Static).update(Text(f"loading run {printable(run_id, newlines=False)}…"))
        self._load_view(run_id)

    @work(thread=True, group="results-view", exclusive=True, exit_on_error=False)
    def _load_view(self, run_id: str) -> None:
        # the leaderboard first (a fraction of a second at 1M calls), then all pairs, strata and cases
        board = load_board(self.db, run_id)
        self.app.call_from_thread(self._show_board, board)
        self.app.call_from_thread(self._show_rest, complete_view(board))

    # A description of its own: by default Textual describes a worker by the repr of its arguments, and the
    # repr of a 1M-call RunView took half a second on the UI loop.
    @work(thread=True, group="results-pair", exclusive=True, exit_on_error=False, description="compare two models")
    def _load_pair(self, view: RunView, a: str, b: str) -> None:
        pair = view.compare(a, b)
        strata = view.stratum_diffs(a, b)
        disagree = view.disagreements(a, b)
        self.app.call_from_thread(self._show_pair, view, pair, strata, disagree)

    @work(thread=True, group="results-cases", exclusive=True, exit_on_error=False, description="filter the cases")
    def _filter_cases(self, view: RunView, model: str | None, group: str | None, outcome: str | None,
                      text: str) -> None:
        ids = view.group_case_ids(group) if group else None
        rows = [r for r in view.rows if (ids is None or r.case.id in ids) and r.has(model, outcome)
                and (not text or r.matches(text))]
        self.app.call_from_thread(self._show_cases, view, rows)

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
        self.app.call_from_thread(self.query_one("#runs-compare", Static).update, out)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(printable(str(event.worker.error)), title="Cannot show the results", severity="error",
                        timeout=10, markup=False)

    # ---- showing --------------------------------------------------------------------------------------

    def _show_runs(self, runs: list[RunListing], loads: dict[str, int] | None = None) -> None:
        """The runs; a load run (`loads`: its stored requests) by its requests, which no plan bounds."""
        self.runs = runs
        loads = loads or {}
        t = self.query_one("#runs-table", DataTable)
        t.clear()
        for r in runs:
            calls = f"{loads[r.run_id]} requests" if r.run_id in loads else f"{r.calls}/{r.planned}"
            t.add_row(MARK if r.run_id in self.marked else "", r.run_id,
                      r.status + (" (load)" if r.run_id in loads else ""), calls,
                      literal(", ".join(r.models), newlines=False), _started(r.started_at),
                      literal(r.project, newlines=False), key=r.run_id)
        if not runs:
            self.query_one("#runs-compare", Static).update(Text(f"No runs stored in {self.db} yet. Try: arena demo"))

    def _show_board(self, view: RunView) -> None:
        self.view = view
        self.run_id = view.run_id
        self._show_title()
        self._show_leaderboard()
        self._show_frontier()

    def _show_load(self, view: RunView) -> None:
        """A load run in the leaderboard's place: its segment and percentile tables (as `arena load --show`)."""
        from rich.console import Group

        from arenatui.load.tables import percentile_table, segment_table

        assert view.load is not None
        self.query_one("#leaderboard-table", DataTable).display = False
        self.query_one("#failures-table", DataTable).display = False
        warnings = Text("\n".join(f"warning: {w}" for w in view.load.warnings), style="bold")
        self.query_one("#leaderboard-note", Static).update(Group(
            Text("A load run: requests on a schedule, latencies from schedule and from send (the other tabs are "
                 "for sweeps).", style="italic"),
            segment_table(view.load), percentile_table(view.load), warnings))

    def on_resize(self) -> None:
        self._show_title()

    def _show_title(self) -> None:
        view = self.view
        if view is None:
            return
        r = view.plan.record
        # parts by priority: a narrow terminal loses the least useful, never ends on a dangling "·"
        parts: list[tuple[Text, int]] = [(Text("Results ", style="bold"), 10), (Text(f"run {r.run_id}"), 10),
                                         (Text(" · ").append(literal(r.project, newlines=False)), 5)]
        if view.load is not None:
            parts.append((Text(f" · load run, {view.load.run.requests} requests"), 8))
        else:
            parts.append((Text(f" · {len(view.plan.models)} models × {len(view.plan.cases)} cases × "
                               f"{view.plan.trials} trials"), 7))
            if view.plan.judges:
                parts.append((Text(" · judged by ").append(literal(", ".join(view.plan.judges), newlines=False)), 4))
        parts.append((Text(f" · {r.status}"), 9))
        if not view.complete:
            parts.append((Text(" · comparing every pair…", "italic"), 6))
        title = fit_line(parts, max(20, self.size.width - 2))
        self.query_one("#results-title", Static).update(title)

    def _show_rest(self, view: RunView) -> None:
        if self.view is None or view.run_id != self.view.run_id:
            return  # another run was opened meanwhile
        self.view = view
        self._show_title()
        ranked = view.ranked
        options = [(printable(m, newlines=False), m) for m in ranked]
        a, b = self.query_one("#pick-a", Select), self.query_one("#pick-b", Select)
        # a reload keeps the pair the user picked; a new run starts with its top two
        picked = (a.value, b.value)
        if not all(isinstance(v, str) and v in ranked for v in picked) or picked[0] == picked[1]:
            picked = (ranked[0], ranked[1]) if len(ranked) >= 2 else (Select.BLANK, Select.BLANK)
        with self.prevent(Select.Changed):
            a.set_options(options)
            b.set_options(options)
            if len(ranked) >= 2:
                a.value, b.value = picked
        if len(ranked) >= 2:
            self._load_pair(view, str(picked[0]), str(picked[1]))
        else:
            self.query_one("#verdict", Static).update(Text("one model: nothing to compare"))
        self._show_pairs()
        self._show_strata()
        self._show_variants(view)
        groups = [(printable(label, newlines=False), label) for label in view.group_labels()]
        with self.prevent(Select.Changed):
            self.query_one("#case-model", Select).set_options(options)
            self.query_one("#case-group", Select).set_options(groups)
        self.refilter()

    def _show_leaderboard(self) -> None:
        view = self.view
        if view is None:
            return
        if view.load is not None:
            self._show_load(view)
            return
        t = self.query_one("#leaderboard-table", DataTable)
        show(t, True)
        t.clear(columns=True)
        t.add_column("#", key="#")
        columns = leaderboard_columns(view)
        self.sort_column = min(self.sort_column, len(columns) - 1)  # another run may have had the macro-F1 column
        for i, col in enumerate(columns):
            label = Text(col.title)
            if i == self.sort_column:
                label.append(" ▲" if self.sort_reverse else " ▼")
            t.add_column(label, key=col.title)
        by = columns[self.sort_column]
        order = sorted(view.board, key=by.sort_key, reverse=self.sort_reverse)
        for i, s in enumerate(order, 1):
            t.add_row(str(i), *leaderboard_cells(s, view), key=s.model)
        note = Text(f"sorted by {by.title}; s next column, S back; Enter opens a model. {LEADERBOARD_NOTE}")
        note.append(fair_text(view.board))
        if view.plan.judged:
            note.append(" Unscored calls (outside a judge's sample) are answered: coverage, not quality.")
        if view.classification:
            note.append(" macro-F1: each label's F1 averaged, over the f1-scored cases (per label: Enter).")
        if view.results.sealed.any():
            note.append(" Sealed cases are scored apart (Enter on a model).")
        if view.variant_results is not None:
            note.append(f" {VARIANT_NOTE}")
        # a line of its own only when judges spent too: 80×24 has no row to spare
        note.append("\n" if view.spend.judges else " ")
        note.append(spend_text(view))
        note.append(judged_text(view))
        optima = [(m, view.tuning[m].verdict.text) for m in view.ranked if m in view.tuning and view.tuning[m].levels]
        if optima:  # what each level gave is in the model's detail (Enter)
            note.append("\nconcurrency: ")
            note.append(literal("; ".join(f"{m} {v}" for m, v in optima), newlines=False))
        self.query_one("#leaderboard-note", Static).update(note)
        self._show_failures(view)

    def _show_variants(self, view: RunView) -> None:
        """Under the leaderboard: per model × prompt variant scores with spreads and each pair's verdict across
        variants, and completion before and after repairs (formatted by variant_tables, computed by stats)."""
        from rich.console import Group

        from arenatui.variant_tables import rich_tables

        tables = rich_tables(view.robustness, view.follow_ups)
        box = self.query_one("#variant-tables", Static)
        box.display = bool(tables)
        box.update(Group(*tables) if tables else Text(""))

    def _show_failures(self, view: RunView) -> None:
        """What each model's wrong answers looked like: failed calls by failure mode, count and share; then, in
        parentheses because they are not failures, calls with no score: unjudged, awaiting judge, judge errors."""
        t = self.query_one("#failures-table", DataTable)
        t.clear(columns=True)
        modes = [m for m in FAILURE_MODES if any(m in d for d in view.failures.values())]
        apart: dict[str, dict[str, int]] = {
            r.model: {**view.unscored.get(r.model, {}), "judge_error": r.errors.get("judge_error", 0)}
            for r in view.board}
        extra = [m for m in (*UNSCORED_MODES, "judge_error") if any(d.get(m) for d in apart.values())]
        show(t, bool(modes or extra))
        if not modes and not extra:
            return
        t.add_column("failed as", key="model")
        t.add_column(Text("failed", justify="right"), key="failed")
        for m in modes:
            t.add_column(Text(FAILURE_SHORT.get(m, m), justify="right"), key=m)
        for m in extra:
            t.add_column(Text(f"({UNSCORED_SHORT.get(m, m)})", justify="right"), key=f"apart-{m}")
        for model in view.ranked:
            counts = view.failures.get(model, {})
            failed = sum(counts.values())
            t.add_row(literal(model, newlines=False), Text(str(failed), justify="right"),
                      *(Text(f"{counts[m]} {counts[m] / failed:.0%}" if counts.get(m) else "-", justify="right")
                        for m in modes),
                      *(Text(str(apart[model].get(m) or "-"), justify="right") for m in extra), key=model)

    def _show_pair(self, view: RunView, pair: Comparison, strata: list[StratumDiff],
                   disagree: list[Disagreement]) -> None:
        if view is not self.view:
            return
        self.pair = pair
        out = Text()
        verdict = literal(pair.verdict)
        verdict.stylize("bold")
        out.append(verdict)
        out.append("\n")
        if pair.n:
            out.append("A = ")
            out.append(literal(pair.a, newlines=False))
            out.append(", B = ")
            out.append(literal(pair.b, newlines=False))
            out.append(f"; mean A − B {signed(pair.diff.estimate)} (95% CI {interval_text(pair.diff)}), n = {pair.n} "
                       f"cases, P(A > B) {p_better(pair)} over {len(pair.differences)} paired resamples")
            held = view.decision(pair.a, pair.b)
            if held is not None and len(view.pairs) > 1:
                out.append(f"; across all {len(view.pairs)} pairs (Holm, adjusted p {held.p_holm:.3f}) "
                           f"{'still ordered' if held.decided else 'not ordered'}")
            out.append("\n")
        note = pair.coverage_note
        if note:
            out.append(literal(note))
            out.append("\n")
        self.query_one("#verdict", Static).update(out)
        width = max(20, self.app.size.width - 6)  # the tab may be hidden (size 0) when this arrives
        hist = Text("resampled mean differences A − B (│ marks zero, [ ] the 95% interval)\n", "italic")
        hist.append(histogram(pair.differences, width, 6, interval=(pair.diff.low, pair.diff.high)))
        self.query_one("#histogram", Static).update(hist)
        st = self.query_one("#pair-strata", DataTable)
        st.clear(columns=True)
        for col in ("stratum / tag", "n", "A − B", "95% CI", ""):
            st.add_column(col, key=col or "flag")
        for sd in strata:
            d = sd.comparison.diff
            if not d.n:
                continue
            flip = pair.decided and d.estimate != 0 and (d.estimate > 0) != (pair.diff.estimate > 0)
            st.add_row(literal(sd.label, newlines=False), str(d.n), f"{d.estimate:+.3f}", interval_text(d),
                       "▼ reversed" if flip else "")
        dis = self.query_one("#disagree", DataTable)
        dis.clear(columns=True)
        for col in ("case where they disagree", "stratum", "A", "B"):
            dis.add_column(col, key=col)
        cases = {c.id: c for c in view.plan.cases}
        for g in disagree[:MAX_CASE_ROWS]:
            dis.add_row(literal(g.case_id, newlines=False), literal(cases[g.case_id].stratum or NOTHING,
                                                                    newlines=False),
                        f"{g.score_a:.2f}", f"{g.score_b:.2f}", key=g.case_id)

    def _show_pairs(self) -> None:
        view = self.view
        if view is None:
            return
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
        self.query_one("#pairs-note", Static).update(Text(
            f"Mean score difference, row − column, over the cases both have scores for. ✓ ordered after Holm's "
            f"adjustment over all {n} pairs (family-wise 5%), ? not ordered on this evidence. Enter compares the "
            "pair."))

    def _show_strata(self) -> None:
        view = self.view
        if view is None:
            return
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
                         f"{r.interval.n} cases, Holm-adjusted p {r.p_holm:.4f}), though it beats it overall by "
                         f"{r.overall_diff:.3f} (subgroup reversal)\n")
        if not notes:
            notes.append("No subgroup reversal: in no stratum or tag does a model's paired interval exclude zero "
                         "against a model it beats overall (Holm-adjusted over the groups tested).")
        self.query_one("#strata-note", Static).update(notes)

    def refilter(self) -> None:
        view = self.view
        if view is None:
            return

        def val(sel_id: str) -> str | None:
            v = self.query_one(sel_id, Select).value
            return v if isinstance(v, str) else None

        self._filter_cases(view, val("#case-model"), val("#case-group"), val("#case-outcome"),
                           self.query_one("#case-search", Input).value.strip())

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

    def _show_frontier(self) -> None:
        view = self.view
        if view is None:
            return
        rows = [r for r in view.board if r.quality.n]
        width = max(40, min(100, self.app.size.width - 6))
        cost = [Point(r.model, r.cost_per_correct if r.cost_per_correct is not None else math.nan,
                      r.quality.estimate, r.on_cost_front) for r in rows]
        lat = [Point(r.model, r.latency_p95 if r.latency_p95 is not None else math.nan, r.quality.estimate,
                     r.on_latency_front) for r in rows]
        self.query_one("#frontier-cost", Static).update(
            scatter(cost, width, 8, x_name="$ per correct answer", y_name="quality", log_x=True, x_fmt=money))
        self.query_one("#frontier-latency", Static).update(
            scatter(lat, width, 8, x_name="p95 latency", y_name="quality", x_unit=" ms", x_fmt=fmt_num))

    # ---- events and keys ----------------------------------------------------------------------------

    @on(Select.Changed, "#pick-a, #pick-b")
    def _pick_changed(self) -> None:
        a, b = self.query_one("#pick-a", Select).value, self.query_one("#pick-b", Select).value
        if self.view is None:
            return
        if not isinstance(a, str) or not isinstance(b, str) or a == b:
            # the pair on screen is no longer the one picked: clear it rather than leave it standing
            self.pair = None
            self.query_one("#verdict", Static).update(Text("pick two different models" if a == b else
                                                           "pick two models: A and B"))
            self.query_one("#histogram", Static).update(Text(""))
            for table in ("#pair-strata", "#disagree"):
                self.query_one(table, DataTable).clear(columns=True)
            return
        self._load_pair(self.view, a, b)

    def compare(self, a: str, b: str) -> None:
        """Show the paired comparison of a and b on the compare tab."""
        with self.prevent(Select.Changed):
            self.query_one("#pick-a", Select).value = a
            self.query_one("#pick-b", Select).value = b
        if self.view is not None:
            self._load_pair(self.view, a, b)
        self.action_tab("compare")

    @on(Select.Changed, "#case-model, #case-group, #case-outcome")
    @on(Input.Changed, "#case-search")
    def _filters_changed(self) -> None:
        self.refilter()

    @on(DataTable.RowSelected, "#runs-table")
    def _run_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.open_run(event.row_key.value)
            self.action_tab("leaderboard")

    @on(DataTable.RowSelected, "#leaderboard-table")
    def _model_selected(self, event: DataTable.RowSelected) -> None:
        if self.view is not None and event.row_key.value in self.view.by_model:
            self.app.push_screen(ModelDetail(self.view, event.row_key.value))

    @on(DataTable.HeaderSelected, "#leaderboard-table")
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        i = event.column_index - 1
        if self.view is not None and 0 <= i < len(leaderboard_columns(self.view)):
            self.sort_reverse = not self.sort_reverse if i == self.sort_column else False
            self.sort_column = i
            self._show_leaderboard()

    @on(DataTable.RowSelected, "#disagree")
    @on(DataTable.RowSelected, "#cases-table")
    def _case_selected(self, event: DataTable.RowSelected) -> None:
        view = self.view
        if view is None or event.row_key.value is None:
            return
        case = view.case(event.row_key.value)
        if case is not None:
            self.app.push_screen(CaseDetail(self.db, view.run_id, case, view.results.models,
                                            view.plan.judge_scorer(case.id)))

    @on(DataTable.CellSelected, "#pairs-table")
    def _pair_selected(self, event: DataTable.CellSelected) -> None:
        view = self.view
        if view is None:
            return
        ranked = view.ranked
        row, col = event.coordinate.row, event.coordinate.column - 1
        if 0 <= col < len(ranked) and row != col:
            self.compare(ranked[row], ranked[col])

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # a tab chosen with the mouse: keys go to its main widget at once (arrows, Enter)
        focused = self.focused
        if event.pane.id in TAB_FOCUS and (focused is None or event.pane not in focused.ancestors):
            self._focus_tab(event.pane.id)
        self.refresh_bindings()

    def _focus_tab(self, tab: str) -> None:
        """Give the keys to the tab's main widget now, before the old tab hides.

        Not `Widget.focus()`, which waits for the next frame: meanwhile the old tab's focused table gets hidden
        and Textual blurs it onto a sibling in that same hidden tab, TabbedContent then switches back to the
        tab holding the focus, and each tab's activation took the focus from the other: the view swapped
        between two tabs until the next key (it showed the leaderboard after "3" or "7", and after "1" when
        the machine was busy).
        """
        target = self.query_one(TAB_FOCUS[tab])
        self.set_focus(target if target.display else None)  # a load run hides the leaderboard table

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that only mean something on one tab are shown only there."""
        tab = self.query_one("#results-tabs", TabbedContent).active if self.is_mounted else ""
        if action == "sort":
            return tab == "leaderboard"
        if action == "mark_run":
            return tab == "runs"
        return True

    def action_tab(self, tab: str) -> None:
        self._focus_tab(tab)
        self.query_one("#results-tabs", TabbedContent).active = tab

    def action_sort(self, step: int) -> None:
        if self.query_one("#results-tabs", TabbedContent).active != "leaderboard":
            return
        if self.view is None:
            return
        self.sort_column = (self.sort_column + step) % len(leaderboard_columns(self.view))
        self.sort_reverse = False
        self._show_leaderboard()

    def action_search(self) -> None:
        self.action_tab("cases")
        self.set_focus(self.query_one("#case-search", Input))

    def action_mark_run(self) -> None:
        if self.query_one("#results-tabs", TabbedContent).active != "runs" or not self.runs:
            return
        t = self.query_one("#runs-table", DataTable)
        run = self.runs[max(0, min(t.cursor_row, len(self.runs) - 1))]
        if run.run_id in self.marked:
            self.marked.remove(run.run_id)
        else:
            self.marked = [*self.marked[-1:], run.run_id]
        by_id = {r.run_id: r for r in self.runs}
        note = self.query_one("#runs-compare", Static)
        refused = Text()
        if len(self.marked) == 2 and by_id[self.marked[0]].project != by_id[self.marked[1]].project:
            # refused: the run just marked stays marked alone, so the screen shows which one it is
            first, latest = (by_id[m] for m in self.marked)
            refused = Text("Runs of different projects cannot be compared (")
            refused.append(literal(first.project, newlines=False)).append(" and ")
            refused.append(literal(latest.project, newlines=False)).append("). ")
            self.marked = [latest.run_id]
        for r in self.runs:
            t.update_cell(r.run_id, "mark", MARK if r.run_id in self.marked else "")
        if len(self.marked) < 2:
            if self.marked:
                only = by_id[self.marked[0]]
                refused.append(f"Marked {MARK} run {only.run_id} (")
                refused.append(literal(only.project, newlines=False))
                refused.append("); mark another run of that project to compare them.")
            else:
                refused.append("Enter opens a run; m marks two runs of one project to compare them.")
            note.update(refused)
            return
        old, new = sorted((by_id[m] for m in self.marked), key=lambda r: r.started_at)
        note.update(Text("comparing…"))
        self._compare_runs(old.run_id, new.run_id)

    def action_reload(self) -> None:
        """Read the store again: a sweep still running has stored more since the view opened."""
        self._load_runs()
        if self.run_id:
            self.open_run(self.run_id)

    def action_back(self) -> None:
        """Back one step: on its own (`arena browse`), from a run's tabs to the list of runs first, and only from
        the list out of the app (an Escape too many must not close the view at once)."""
        if not self.standalone:
            self.app.pop_screen()
        elif self.query_one("#results-tabs", TabbedContent).active != "runs":
            self.action_tab("runs")
            self.notify("The list of runs; Escape again (or q) leaves.", timeout=3, markup=False)
        else:
            self.app.exit()

"""The results view: runs, leaderboard, compare, all pairs, strata, cases and frontier of a stored run, in tabs,
one widget per tab (`runs.py`, `leaderboard.py`, `compare.py`, `pairs.py`, `strata.py`, `cases.py`, `frontier.py`).

Every figure is computed in a thread worker (`data.py`); the screen gathers the run and hands it to the tabs, which
only format what comes back, so no keypress waits on SQL or numpy.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static, TabbedContent
from textual.worker import Worker

from arenatui.kernel.text import printable
from arenatui.kernel.units import plural
from arenatui.present.columns import fit_line
from arenatui.present.safe_text import literal
from arenatui.present.wording import LEADERBOARD_NOTE
from arenatui.store import Store
from arenatui.store.bakeoff_queries import series_of_runs
from arenatui.store.load_queries import run_kinds
from arenatui.store.queries import RunListing, list_runs
from arenatui.tui.key_help import KeyHelp
from arenatui.tui.list_keys import LIST_KEYS, list_key
from arenatui.tui.results.cases import CasesTab
from arenatui.tui.results.compare import CompareTab
from arenatui.tui.results.data import RunView, complete_view, read_board
from arenatui.tui.results.detail import CaseDetail, ModelDetail
from arenatui.tui.results.frontier import FrontierTab
from arenatui.tui.results.leaderboard import LeaderboardTab
from arenatui.tui.results.pairs import PairsTab
from arenatui.tui.results.runs import RunsTab
from arenatui.tui.results.strata import StrataTab
from arenatui.tui.results.tab import tell_failure

TABS = ("runs", "leaderboard", "compare", "pairs", "strata", "cases", "frontier")
TAB_FOCUS = {"runs": "#runs-table", "leaderboard": "#leaderboard-table", "compare": "#compare-body",
             "pairs": "#pairs-table", "strata": "#strata-table", "cases": "#cases-table", "frontier": "#frontier-body"}
"""What takes the keys on each tab (the compare and frontier bodies scroll with the arrows)."""


KEYS = (
    ("1-7", "tabs: runs, leaderboard, compare, pairs, strata, cases, frontier"),
    ("arrows", "move in a table; the compare and frontier tabs scroll"),
    ("enter", "runs: open the run; leaderboard: the model (sealed score apart, by stratum); pairs: compare that pair; "
              "cases and compare's disagreements: the case, a grid of its trials by model, the call under the "
              "cursor whole beneath (there, Enter opens that call alone and s saves the whole outputs to files)"),
    ("s / S", "leaderboard: sort by the next / previous column (or click a header; again reverses)"),
    ("m", "runs: mark two runs of one project to compare them model by model"),
    ("l", "runs: pick a load run (◆) for its project's frontier (again: unpick)"),
    ("/", "the cases tab, in its text search (the table filters as you type; tab moves on)"),
    ("tab", "move between the widgets of a tab (the compare tab's model pickers, the cases tab's filters)"),
    ("F5", "read the store again: a sweep still running has stored more"),
    ("escape", "back: from a run's tabs to the list of runs, then out (arena browse) or to the live console"),
    ("q", "leave: out of arena browse, or back to the live console"),
    ("j k g G", "down, up, first, last in a table (the compare and frontier tabs scroll)"),
    ("ctrl+p", "command palette"),
    ("?", "this help"),
)
"""Every key of the results view with what it does (the `?` help; the README's "Results view" says the same)."""


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
        Binding("m", "mark_run", "Mark"),
        Binding("l", "pick_load", "Pick load"),
        Binding("slash", "search", "Search"),
        Binding("question_mark", "help", "Help", key_display="?"),  # short labels above: q Quit still fits 80
        # q as arena browse's q Quit; from the console, back to it (check_action shows the one that applies)
        Binding("q", "leave", "Quit"),
        Binding("q", "leave_to_console", "Back"),
        *LIST_KEYS,
    ]

    def __init__(self, db: Path | str, run_id: str | None, *, standalone: bool = False) -> None:
        super().__init__()
        self.db = Path(db)
        self.run_id = run_id
        self.standalone = standalone
        """Opened by `arena browse` (Escape quits) rather than from the run screen (Escape goes back)."""
        self.view: RunView | None = None

    # ---- layout ------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(Text("loading…"), id="results-title")
        with TabbedContent(initial="leaderboard" if self.run_id else "runs", id="results-tabs"):
            yield RunsTab(self.db)
            yield LeaderboardTab()
            yield CompareTab()
            yield PairsTab()
            yield StrataTab()
            yield CasesTab()
            yield FrontierTab()
        yield Footer()

    def on_mount(self) -> None:
        self._read_runs()
        if self.run_id:
            self.open_run(self.run_id)

    @property
    def runs(self) -> list[RunListing]:
        """The stored runs listed on the runs tab."""
        return self.query_one(RunsTab).runs

    # ---- loading (workers) -------------------------------------------------------------------------------

    @work(thread=True, group="results-runs", exit_on_error=False)
    def _read_runs(self) -> None:
        with Store(self.db, read_only=True) as store:
            runs = list_runs(store, 200)
            loads = {rid: n for rid, (kind, n) in run_kinds(store, [r.run_id for r in runs]).items() if kind == "load"}
            series = series_of_runs(store, [r.run_id for r in runs])
        self.app.call_from_thread(self._show_runs, runs, loads, series)

    def open_run(self, run_id: str) -> None:
        self.query_one("#results-title", Static).update(Text(f"loading run {printable(run_id, newlines=False)}…"))
        self._read_view(run_id, dict(self.query_one(RunsTab).picked))

    @work(thread=True, group="results-view", exclusive=True, exit_on_error=False)
    def _read_view(self, run_id: str, picked: dict[tuple[str, str], str]) -> None:
        # the leaderboard first (a fraction of a second at 1M calls), then all pairs, strata and cases
        board = read_board(self.db, run_id, picked)
        self.app.call_from_thread(self._show_board, board)
        self.app.call_from_thread(self._show_rest, complete_view(board))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        tell_failure(self, event)

    # ---- showing --------------------------------------------------------------------------------------

    def _show_runs(self, runs: list[RunListing], loads: dict[str, int] | None = None,
                   series: dict[str, str] | None = None) -> None:
        self.query_one(RunsTab).show_runs(runs, loads, series)

    def _show_board(self, view: RunView) -> None:
        self.view = view
        self.run_id = view.run_id
        self._show_title()
        self.query_one(LeaderboardTab).show_run(view)
        self.query_one(FrontierTab).show_run(view)
        self.query_one(CompareTab).view = view  # a pair asked for before every pair is compared uses it

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
            parts.append((Text(f" · load run, {plural(view.load.run.requests, 'request')}"), 8))
        else:
            parts.append((Text(f" · {plural(len(view.plan.models), 'model')} × {plural(len(view.plan.cases), 'case')} "
                               f"× {plural(view.plan.trials, 'trial')}"), 7))
            if view.plan.judges:
                parts.append((Text(" · judged by ").append(literal(", ".join(view.plan.judges), newlines=False)), 4))
        parts.append((Text(f" · {r.status}"), 9))
        if r.sandbox_strong is not None:  # the code_exec sandbox its answers ran in (details in the report)
            parts.append((Text(" · code_exec sandbox: strong") if r.sandbox_strong
                          else Text(" · code_exec sandbox: WEAK", style="bold"), 8))
        if not view.complete:
            parts.append((Text(" · comparing every pair…", "italic"), 6))
        title = fit_line(parts, max(20, self.size.width - 2))
        self.query_one("#results-title", Static).update(title)

    def _show_rest(self, view: RunView) -> None:
        if self.view is None or view.run_id != self.view.run_id:
            return  # another run was opened meanwhile
        self.view = view
        self._show_title()
        self.query_one(LeaderboardTab).view = view  # a sort from now on orders the completed view
        self.query_one(LeaderboardTab).show_variants(view)
        self.query_one(CompareTab).show_models(view)
        self.query_one(PairsTab).show_run(view)
        self.query_one(StrataTab).show_run(view)
        self.query_one(CasesTab).show_run(view)

    # ---- events and keys ----------------------------------------------------------------------------

    def compare(self, a: str, b: str) -> None:
        """Show the paired comparison of a and b on the compare tab."""
        self.query_one(CompareTab).compare(a, b)
        self.action_tab("compare")

    @on(DataTable.RowSelected, "#runs-table")
    def _run_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.open_run(event.row_key.value)
            self.action_tab("leaderboard")

    @on(DataTable.RowSelected, "#leaderboard-table")
    def _model_selected(self, event: DataTable.RowSelected) -> None:
        if self.view is not None and event.row_key.value in self.view.by_model:
            self.app.push_screen(ModelDetail(self.view, event.row_key.value, self.db))

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

    @on(PairsTab.PairChosen)
    def _pair_chosen(self, event: PairsTab.PairChosen) -> None:
        self.compare(event.a, event.b)

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
        if action in ("mark_run", "pick_load"):
            return tab == "runs"
        if action in ("leave", "leave_to_console"):
            return (action == "leave") == self.standalone
        return True

    def action_tab(self, tab: str) -> None:
        self._focus_tab(tab)
        self.query_one("#results-tabs", TabbedContent).active = tab

    def action_sort(self, step: int) -> None:
        if self.query_one("#results-tabs", TabbedContent).active == "leaderboard":
            self.query_one(LeaderboardTab).sort(step)

    def action_search(self) -> None:
        self.action_tab("cases")
        self.set_focus(self.query_one("#case-search", Input))

    def action_mark_run(self) -> None:
        if self.query_one("#results-tabs", TabbedContent).active == "runs":
            self.query_one(RunsTab).mark_run()

    def action_pick_load(self) -> None:
        if self.query_one("#results-tabs", TabbedContent).active == "runs":
            self.query_one(RunsTab).pick_load()

    @on(RunsTab.LoadRunPicked)
    def _load_run_picked(self, event: RunsTab.LoadRunPicked) -> None:
        """An open sweep of the project is read again with the load runs now picked."""
        if self.view is not None and self.view.load is None and self.view.plan.record.project == event.project:
            self.open_run(self.view.run_id)

    def action_help(self) -> None:
        self.app.push_screen(KeyHelp(KEYS, (("The figures", (Text(LEADERBOARD_NOTE),)),)))

    def action_reload(self) -> None:
        """Read the store again: a sweep still running has stored more since the view opened."""
        self._read_runs()
        if self.run_id:
            self.open_run(self.run_id)

    def action_leave(self) -> None:
        """q in arena browse: out of the app."""
        self.app.exit()

    def action_leave_to_console(self) -> None:
        """q from the live console: back to it."""
        self.app.pop_screen()

    def action_list_key(self, where: str) -> None:
        list_key(self.focused, where)

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

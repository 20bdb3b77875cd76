"""The results view's leaderboard tab: the models ranked (figures.LEADERBOARD's columns), what the ranking rests
on, the spend, and each model's failure modes; a load run's segment and percentile tables in its place."""

from __future__ import annotations

import dataclasses

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from arenatui.kernel.units import NOTHING, money, plural, score
from arenatui.present.columns import LEADERBOARD, Column
from arenatui.present.safe_text import literal
from arenatui.present.variant_tables import VARIANT_NOTE
from arenatui.present.wording import FAILURE_SHORT, LEADERBOARD_NOTE, clusters_note
from arenatui.scoring.failure_modes import FAILURE_MODES
from arenatui.stats import ModelRow
from arenatui.store.queries import UNSCORED_MODES
from arenatui.tui.results.data import RunView
from arenatui.tui.results.tab import ResultsTab, scroll_mark, show

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
    if view.reasoning:  # beside the cost columns: tokens per call that reasoned · their share of output spend
        def thinking(s: ModelRow) -> tuple[float, float] | None:
            u = view.reasoning.get(s.model)
            return None if u is None else (u.per_call, u.share)

        columns = (*columns, Column("reasoning", thinking,
                                    lambda v: NOTHING if v is None else f"{v[0]:.0f} · {v[1]:.0%}", False, 3,
                                    sort=lambda s: None if (u := view.reasoning.get(s.model)) is None else u.share))
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
        out.append(f" Ranked by score over the {plural(ranked[0].common.n, 'case')} every ranked model has scores "
                   "for; own: each model's score over its own scored cases/their n.")
    clustered = clusters_note(next((r.quality.clusters for r in board if r.quality.clusters is not None), None))
    if clustered:
        out.append(f" {clustered}")
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
            out.append(f" {plural(j.calls, 'call')}, {plural(j.errors, 'judge error')}, {plural(j.tokens, 'token')}, "
                       f"{money(j.cost)}")
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
        out.append(f") {len(j.judged)} of {plural(len(j.case_ids), 'case')} ({j.sample_text}), {stored} of "
                   f"{len(j.judged) * per_case} judge calls stored; the cases tab marks them")
    return out


class LeaderboardTab(ResultsTab):
    """The ranked models, sorted by any column (`s`/`S`, or a click on its header)."""

    def __init__(self) -> None:
        super().__init__("2 Leaderboard", id="leaderboard")
        self.view: RunView | None = None
        self._note = Text("")
        """The note under the leaderboard as last shown (the scroll mark goes before it)."""
        self.sort_column = 1
        """Index into the run's leaderboard columns (`leaderboard_columns`): score, best first, to begin with."""
        self.sort_reverse = False

    def compose(self) -> ComposeResult:
        yield DataTable(id="leaderboard-table", cursor_type="row", zebra_stripes=True)
        yield Static(Text(""), id="leaderboard-note", classes="note")
        yield DataTable(id="failures-table", cursor_type="row", zebra_stripes=True, show_cursor=False)
        variants = Static(Text(""), id="variant-tables", classes="note")
        variants.display = False  # only a run with prompt variants or repairs has these tables
        yield variants

    def show_run(self, view: RunView) -> None:
        self.view = view
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
        # each verdict with the setting it belongs in, as every other view says it
        optima = [(m, ro.verdict.line(ro.model_key)) for m in view.ranked
                  if (ro := view.tuning.get(m)) is not None and ro.levels]
        if optima:  # what each level gave is in the model's detail (Enter)
            note.append("\nconcurrency: ")
            note.append(literal("; ".join(f"{m} {v}" for m, v in optima), newlines=False))
        self._note = note
        self._show_note()
        self._show_failures(view)
        self.call_after_refresh(self._show_note)  # the columns' widths are known once the table has laid out

    def _show_note(self) -> None:
        """The note under the leaderboard, led by the mark of columns past the pane's edge when there are some."""
        t = self.query_one("#leaderboard-table", DataTable)
        mark = scroll_mark(t)
        self.query_one("#leaderboard-note", Static).update(Text(mark, style="bold") + self._note if mark else
                                                           self._note)

    def on_resize(self) -> None:
        if self.view is not None and self.view.load is None:
            self._show_note()

    def show_variants(self, view: RunView) -> None:
        """Under the leaderboard, once the pairs are computed: per model × prompt variant scores with spreads and
        each pair's verdict across variants, and completion before and after repairs (variant_tables formats,
        stats computes)."""
        from rich.console import Group

        from arenatui.present.variant_tables import rich_tables

        tables = rich_tables(view.robustness, view.follow_ups)
        box = self.query_one("#variant-tables", Static)
        box.display = bool(tables)
        box.update(Group(*tables) if tables else Text(""))

    def _show_load(self, view: RunView) -> None:
        """A load run in the leaderboard's place: its segment and percentile tables (as `arena load --show`)."""
        from rich.console import Group

        from arenatui.present.load_tables import percentile_table, segment_table

        assert view.load is not None
        self.query_one("#leaderboard-table", DataTable).display = False
        self.query_one("#failures-table", DataTable).display = False
        warnings = Text("\n".join(f"warning: {w}" for w in view.load.warnings), style="bold")
        self.query_one("#leaderboard-note", Static).update(Group(
            Text("A load run: requests on a schedule, latencies from schedule and from send (the other tabs are "
                 "for sweeps).", style="italic"),
            segment_table(view.load), percentile_table(view.load), warnings))

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

    def sort(self, step: int) -> None:
        """Sort by the next column (`step` 1) or the one before (-1), best first."""
        if self.view is None:
            return
        self.sort_column = (self.sort_column + step) % len(leaderboard_columns(self.view))
        self.sort_reverse = False
        self.show_run(self.view)

    @on(DataTable.HeaderSelected, "#leaderboard-table")
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        i = event.column_index - 1
        if self.view is not None and 0 <= i < len(leaderboard_columns(self.view)):
            self.sort_reverse = not self.sort_reverse if i == self.sort_column else False
            self.sort_column = i
            self.show_run(self.view)

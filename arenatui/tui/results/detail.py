"""Details opened from the results screens: one case's calls as a grid of trials by model, and one model's figures."""

from __future__ import annotations

import math
from pathlib import Path

from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from arenatui.kernel.events import split_lane
from arenatui.kernel.units import NOTHING, interval, money, pct, plural, score
from arenatui.kernel.units import ms as fmt_num
from arenatui.present.level_figures import goodput_text, limited_text, mark
from arenatui.present.safe_text import literal
from arenatui.present.wording import fmt_errors
from arenatui.session.live import ERRORED, FAILED, NO_TEXT_MODES, PASSED, UNREACHABLE, UNSCORED
from arenatui.stats import ModelRow
from arenatui.stats.f1_interval import FEW_CASES
from arenatui.store.queries import CallRow, CaseInfo, JudgedScorer
from arenatui.tui.call_text import CallContext, call_text, case_text
from arenatui.tui.outputs import ask_save_folder, save_and_tell
from arenatui.tui.results.data import Classification, RunView, case_detail
from arenatui.tui.widgets import CELL_GLYPHS, NO_ANSWER
from arenatui.tuning.budgets import Budgets, budgets_of

_LABEL = Style(bold=True)


MARKS = {"passed": CELL_GLYPHS[PASSED], "failed": CELL_GLYPHS[FAILED], "errored": CELL_GLYPHS[ERRORED],
         "unscored": CELL_GLYPHS[UNSCORED], "unreachable": CELL_GLYPHS[UNREACHABLE]}
"""A stored call's mark in the case grid: the call matrix's glyphs (and its ∅ for an answer with no text)."""
ANSWER_CHARS = 48
"""The most of an answer a grid cell shows (its first line, cut with …): the rest is the call's detail."""


def grid_cell(r: CallRow | None, sealed: bool) -> Text:
    """One call in the case grid: its mark, latency and the start of its answer (literal; none of a sealed case's)."""
    if r is None:
        return Text("–", style="dim")
    no_text = r.status == "failed" and r.failure_mode in NO_TEXT_MODES
    out = Text(CELL_GLYPHS[NO_ANSWER] if no_text else MARKS.get(r.status, "?"), style="bold")
    out.append(f" {fmt_num(r.latency_ms, ' ms'):>8}" if r.latency_ms is not None else f" {NOTHING:>8}")
    if r.error_class and r.status == "errored":
        out.append("  ")
        out.append(literal(r.error_class, newlines=False))
    elif not sealed and r.output:
        answer = r.output.strip()
        first = answer.split("\n", 1)[0]
        cut = first if len(first) < ANSWER_CHARS and len(first) == len(answer) else first[: ANSWER_CHARS - 1] + "…"
        out.append("  ")
        out.append(literal(cut, newlines=False))
    return out


class CaseDetail(ModalScreen[None]):
    """One case: the input and expected answer; a grid of its stored calls, a row per trial (of each prompt variant)
    and a column per model, each cell a mark, a latency and the answer's start; under it, the whole of the call the
    cursor is on (its figures, why it failed, its attempts, its judge's verdict, its output). Enter opens that call
    alone, full screen."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close"),
                Binding("s", "save_outputs", "Save whole outputs to files")]

    def __init__(self, db: Path, run_id: str, case: CaseInfo, models: tuple[str, ...],
                 judging: JudgedScorer | None = None) -> None:
        super().__init__()
        self.db = db
        self.run_id = run_id
        self.case = case
        self.models = models
        self.judging = judging
        """The llm_judge scorer that scores this case, if one does."""
        self.rows: dict[str, list[CallRow]] = {}
        """Each model's stored trials of the case (outputs cut to PREVIEW_CHARS), once loaded."""
        self.grid_rows: list[tuple[str, int]] = []
        """The grid's rows: (prompt variant, trial)."""
        self._calls: dict[tuple[str, str, int], CallRow] = {}

    def compose(self) -> ComposeResult:
        c = self.case
        with Vertical(classes="dialog detail"):
            title = Text("Case ", style="bold")
            title.append(literal(c.id, newlines=False))
            if c.stratum:
                title.append("   stratum ")
                title.append(literal(c.stratum, newlines=False))
            if c.tags:
                title.append("   tags ")
                title.append(literal(", ".join(c.tags), newlines=False))
            j = self.judging
            if j is not None:
                title.append("   judged by " if c.id in j.judged else "   unjudged: outside the sample of ")
                title.append(literal(j.judge if c.id in j.judged else j.scorer, newlines=False))
            yield Label(title)
            if c.sealed:
                head = Text("sealed case: its input, expected answer and outputs are never shown", "italic")
            else:
                head = case_text(c.input, c.expected)
                head.rstrip()
            with VerticalScroll(id="case-head-box"):
                yield Static(head, id="case-head")
            grid: DataTable[Text] = DataTable(id="case-grid", cursor_type="cell", zebra_stripes=True)
            yield grid
            with VerticalScroll(id="case-body"):
                yield Static(Text("loading…", style="dim"), id="case-call")
            # a sealed case's outputs are never saved: no key to offer
            keys = "arrows choose a call   Enter opens it alone   "
            yield Label(Text(keys + ("Escape closes" if c.sealed else "s saves the whole outputs to files   "
                                                                       "Escape closes")), classes="hint")

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, group="case", exit_on_error=False)
    def _load(self) -> None:
        self.app.call_from_thread(self.show_rows, case_detail(self.db, self.run_id, self.case.id))

    def action_save_outputs(self) -> None:
        if self.case.sealed:
            self.notify("a sealed case's outputs are never saved", severity="warning")
            return
        calls = [(r.model_key, r.trial) for trials in self.rows.values() for r in trials]
        ask_save_folder(self.app, self.run_id, sealed=self.case.sealed, then=lambda folder: self._save(folder, calls))

    @work(thread=True, group="case-save", exit_on_error=False)
    def _save(self, folder: Path, calls: list[tuple[str, int]]) -> None:
        save_and_tell(self.app, self.db, self.run_id, self.case.id, calls, folder)

    def show_rows(self, rows: dict[str, list[CallRow]]) -> None:
        self.rows = rows
        self._calls = {(m, split_lane(r.model_key)[1], r.trial): r for m, trials in rows.items() for r in trials}
        self.grid_rows = sorted({(v, t) for (_m, v, t) in self._calls})
        grid: DataTable[Text] = self.query_one("#case-grid", DataTable)
        grid.clear(columns=True)
        grid.add_column(Text("trial", style="bold"), key="trial")
        for i, m in enumerate(self.models):
            grid.add_column(literal(m, "bold", newlines=False), key=f"m{i}")
        sealed = self.case.sealed
        for v, t in self.grid_rows:
            label = Text(f"{t}") if not v else literal(f"{v} {t}", newlines=False)
            grid.add_row(label, *(grid_cell(self._calls.get((m, v, t)), sealed) for m in self.models),
                         key=f"{v}\x00{t}")
        grid.styles.height = min(len(self.grid_rows) + 2, GRID_MAX_ROWS)
        if self.grid_rows:
            grid.move_cursor(row=0, column=1 if self.models else 0)
            grid.focus()
        self.show_call(0, 1)

    def call_at(self, row: int, column: int) -> tuple[str, CallRow | None] | None:
        """The model and stored call of a grid cell (None: the trial column, or no such row)."""
        if not (0 <= row < len(self.grid_rows)) or not (1 <= column <= len(self.models)):
            return None
        v, t = self.grid_rows[row]
        m = self.models[column - 1]
        return m, self._calls.get((m, v, t))

    def show_call(self, row: int, column: int) -> None:
        found = self.call_at(row, column)
        box = self.query_one("#case-call", Static)
        if found is None:
            box.update(Text("nothing stored for this case" if not self.grid_rows else "", style="dim"))
            return
        box.update(self.render_call(*found))

    def render_call(self, model: str, r: CallRow | None) -> Text:
        out = literal(model, "bold", newlines=False)
        out.append("\n")
        if r is None:
            out.append("nothing stored\n")
        else:
            out.append_text(call_text(r, self.context()))
        return out

    def on_data_table_cell_highlighted(self, ev: DataTable.CellHighlighted) -> None:
        ev.stop()
        self.show_call(ev.coordinate.row, ev.coordinate.column)

    def on_data_table_cell_selected(self, ev: DataTable.CellSelected) -> None:
        ev.stop()
        found = self.call_at(ev.coordinate.row, ev.coordinate.column)
        if found is not None:
            self.app.push_screen(CallAlone(self.render_call(*found)))

    def context(self) -> CallContext:
        """What the call renderer needs of this case: its scorer (and judge), expected answer, sealed or not."""
        c, j = self.case, self.judging
        return CallContext(sealed=c.sealed, expected=c.expected, scorer=c.scorer, scorer_kind=c.scorer_kind,
                           judge=j.judge if j is not None else None, sample=j.sample if j is not None else None)


GRID_MAX_ROWS = 14
"""The case grid's most rows on screen (a header, 12 trials, a scroll bar); more scroll."""


class CallAlone(ModalScreen[None]):
    """One stored call of a case, the whole screen to itself (Enter on the case grid)."""

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close")]

    def __init__(self, text: Text) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            with VerticalScroll(id="call-alone"):
                yield Static(self.text)
            yield Label(Text("Escape closes"), classes="hint")


def model_text(view: RunView, s: ModelRow, budgets: Budgets | None = None) -> Text:
    """Every figure of one model, each beside what qualifies it (coverage beside score, errors beside latency);
    its max_tokens and timeout_s once `budgets` are read (a load run has none)."""
    out = Text()
    q = s.quality
    out.append("quality ", _LABEL)
    out.append(f"{score(q.estimate)}  95% CI {interval(q.low, q.high, q.n)} over {q.n} working cases "
               f"scored (errored calls are coverage, not zeros)\n")
    out.append("coverage ", _LABEL)
    out.append(f"{pct(s.coverage)}: {s.answered} of {s.planned} planned calls answered; {s.passed} passed, "
               f"{s.answered - s.unscored - s.passed} failed, {s.errored} errored"
               + (f" ({fmt_errors(s.errors)})" if s.errored else ""))
    if s.unscored:
        why = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(view.unscored.get(s.model, {}).items()))
        out.append(f", {s.unscored} unscored ({why}; answered: coverage, not quality)")
    out.append("\n")
    fails = view.failures.get(s.model, {})
    if fails:
        n = sum(fails.values())
        out.append("failed as ", _LABEL)
        out.append(", ".join(f"{mode} {k} ({k / n:.0%})" for mode, k in sorted(fails.items(), key=lambda kv: -kv[1])))
        out.append("\n")
    ro = view.tuning.get(s.model)
    if ro is not None and ro.levels:
        out.append("concurrency ", _LABEL)
        out.append(literal(ro.verdict.line(ro.model_key), newlines=False))
        out.append("\n")
        for lv in ro.levels:
            note = mark(lv, ro.best)
            line = (f"   level {lv.level:>3}: goodput {goodput_text(lv)}, 429s {limited_text(lv)}, n {lv.latencies}, "
                    f"p95 {fmt_num(lv.p95_ms, ' ms')}, held {lv.held_s:.1f} s" + (f"  {note}" if note else "") + "\n")
            out.append(line, "bold" if lv.level == ro.best else "")
    if view.load is None:
        out.append(budgets_text(budgets, s.model))
    out.append("pass@k ", _LABEL)
    out.append("  ".join(f"k={k} {score(v)}" for k, v in sorted(s.pass_at.items())))
    if s.pass_at:
        out.append(f" (over the {plural(s.pass_at_n, 'case')} with {max(s.pass_at)} answered trials)")
    out.append(f"   trials agree on {pct(s.consistency)} of cases\n")
    out.append("cost ", _LABEL)
    out.append(f"{money(s.spend)} spent (every attempt; its own calls, not a judge's); "
               f"{money(s.cost_per_correct)} per correct answer, "
               f"{money(s.cost_per_answered)} per answered call, "
               f"{fmt_num(s.tokens_per_correct)} tokens per correct answer\n")
    out.append("latency ", _LABEL)
    if s.latency_p50 is not None:
        out.append(f"p50 {fmt_num(s.latency_p50, ' ms')}  p95 {fmt_num(s.latency_p95, ' ms')}  "
                   f"p99 {fmt_num(s.latency_p99, ' ms')}")
    else:
        out.append("no answered calls")
    if s.ttft_p50 is not None:
        out.append(f"   TTFT p50 {fmt_num(s.ttft_p50, ' ms')}  p95 {fmt_num(s.ttft_p95, ' ms')}")
    out.append(f"\n        beside: errors {pct(s.error_rate)}, timeouts {pct(s.timeout_rate)} (a timeout removes the "
               f"slowest calls from the percentiles), retries {pct(s.retry_rate)} of calls\n")
    if s.sealed.n:
        out.append("sealed ", _LABEL)
        out.append(f"{score(s.sealed.estimate)} over {s.sealed.n} sealed case{'' if s.sealed.n == 1 else 's'}; "
                   f"{sealed_gap_words(s)}\n")
    if s.weighted is not None:
        w = s.weighted
        out.append("weighted ", _LABEL)
        out.append(f"{score(w.estimate)} ({score(w.low)}–{score(w.high)}) with each stratum at its [strata] "
                   f"weight, against {score(s.quality.estimate)} at its share of the cases\n")
    out.append("\nby stratum and tag\n", _LABEL)
    for g in view.groups:
        i = g.scores[s.model]
        out.append(literal(f"{g.kind} {g.group}", newlines=False))
        out.append(f"  {score(i.estimate)} ({score(i.low)}–{score(i.high)}, n {i.n})")
        below = [r.beaten for r in view.reversals if r.model == s.model and r.group == g.group and r.kind == g.kind]
        if below:
            out.append("  ▼ below ")
            out.append(literal(", ".join(below), newlines=False))
            out.append(", which it beats overall")
        out.append("\n")
    return out


def budgets_text(b: Budgets | None, model: str) -> Text:
    """The model's max_tokens and timeout_s recommendations (tuning.budgets), each with its evidence."""
    out = Text()
    out.append("max_tokens, timeout_s " if b is None or model not in b.max_tokens else "", _LABEL)
    if b is None:
        out.append("reading the model's answers…\n")
        return out
    rec = b.max_tokens.get(model)
    if rec is None:
        out.append("no answered calls to learn from\n")
        return out
    for label, r in (("max_tokens", rec), *((f"max_tokens ({kind} cases)", r) for kind, r in b.scorer_rows(model)),
                     ("timeout_s", b.timeouts[model])):
        out.append(label + " ", _LABEL)
        out.append(literal(r.unnamed(), newlines=False))
        out.append("\n")
        for d in r.detail:
            out.append("   ")
            out.append(literal(d, newlines=False))
            out.append("\n")
    return out


def _label_n(n: int) -> str:
    return f"{n} ⚠" if n < FEW_CASES else str(n)


def f1_tables(classes: list[Classification]) -> Group:
    """Per f1 scorer: its macro-F1, then each label's precision, recall and F1 (labels are the project's text)."""
    parts: list[Text | Table] = []
    for c in classes:
        head = Text("\nclassification ", _LABEL)
        head.append(literal(c.scorer, newlines=False))
        iv = c.interval
        ci = f" (95% CI {score(iv.low)}–{score(iv.high)} over {iv.n} cases)" if iv and iv.n > 1 else ""
        head.append(f": macro-F1 {NOTHING if c.macro_f1 is None else score(c.macro_f1)}{ci} over {c.answers} answered "
                    "calls (an answer with no label misses its label; ⚠ a label with fewer than 5 cases)")
        parts.append(head)
        t = Table(box=None, padding=(0, 2), show_edge=False, header_style="bold")
        for col in ("label", "precision", "recall", "F1", "expected", "given", "cases"):
            t.add_column(col, justify="left" if col == "label" else "right", no_wrap=True, min_width=len(col))
        for lb in c.labels:
            t.add_row(literal(lb.label, newlines=False), NOTHING if lb.precision is None else score(lb.precision),
                      NOTHING if lb.recall is None else score(lb.recall), score(lb.f1), str(lb.expected),
                      str(lb.predicted), _label_n(c.label_cases.get(lb.label, 0)))
        parts.append(t)
    return Group(*parts)


class ModelDetail(ModalScreen[None]):
    """One model's figures from the leaderboard, with the caveats that go with them; its max_tokens and timeout_s
    recommendations read from `db` in a thread (only this model's answers) when it opens."""

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close")]

    def __init__(self, view: RunView, model: str, db: Path | None = None) -> None:
        super().__init__()
        self.view = view
        self.model = model
        self.db = db
        self.budgets: Budgets | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            title = Text("Model ", style="bold")
            title.append(literal(self.model, newlines=False))
            yield Label(title)
            with VerticalScroll(id="model-body"):
                yield Static(self._text(), id="model-text")
                classes = self.view.classification.get(self.model)
                if classes:
                    yield Static(f1_tables(classes), id="model-f1")
            yield Label(Text("Escape closes"), classes="hint")

    def _text(self) -> Text:
        return model_text(self.view, self.view.by_model[self.model], self.budgets)

    def on_mount(self) -> None:
        if self.db is not None and self.view.load is None:
            self._read_budgets(self.db)

    @work(thread=True, group="model-budgets", exit_on_error=False)
    def _read_budgets(self, db: Path) -> None:
        from arenatui.results.budgets import budget_evidence
        from arenatui.store import Store

        with Store(db, read_only=True) as store:
            budgets = budgets_of(budget_evidence(store, self.view.run_id, self.model))
        self.app.call_from_thread(self._show_budgets, budgets)

    def _show_budgets(self, budgets: Budgets) -> None:
        self.budgets = budgets
        self.query_one("#model-text", Static).update(self._text())


def sealed_gap_words(s: ModelRow) -> str:
    """The stratum-matched working − sealed gap with its interval; contamination only when large and outside it."""
    g = s.gap
    if g is None:
        return "no stratum has scored cases in both splits: no gap to read"
    iv = g.gap
    if iv.n < 2 or math.isnan(iv.low):
        return (f"working − sealed {iv.estimate:+.3f} within strata {', '.join(g.strata) or '-'}: too few cases in "
                "a split for an interval, so nothing to read into it")
    ci = f" (95% CI {iv.low:+.3f} to {iv.high:+.3f})"
    tail = ("outside its interval: if large, the working cases may have leaked into training" if g.outside else
            "within its interval: no sign of contamination")
    return f"working − sealed {iv.estimate:+.3f}{ci} within strata {', '.join(g.strata) or '-'}, {tail}"

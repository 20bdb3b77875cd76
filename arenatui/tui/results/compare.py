"""The results view's compare tab: two models picked, their paired bootstrap, its histogram, per-stratum
differences and the cases where they disagree."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Select, Static

from arenatui.kernel.text import printable
from arenatui.kernel.units import NOTHING, signed
from arenatui.present.charts import histogram
from arenatui.present.columns import p_better
from arenatui.present.safe_text import literal
from arenatui.stats import Comparison, Disagreement
from arenatui.tui.results.cases import MAX_CASE_ROWS
from arenatui.tui.results.data import RunView, StratumDiff, interval_text
from arenatui.tui.results.tab import ResultsTab


class CompareTab(ResultsTab):
    """Model A against model B; a pick of two different models compares them in a worker."""

    def __init__(self) -> None:
        super().__init__("3 Compare", id="compare")
        self.view: RunView | None = None
        self.pair: Comparison | None = None
        """The comparison on screen, None while the picks are not two different models."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="compare-picks"):
            yield Select[str]([], prompt="model A", id="pick-a", allow_blank=True)
            yield Select[str]([], prompt="model B", id="pick-b", allow_blank=True)
        with VerticalScroll(id="compare-body"):
            yield Static(Text(""), id="verdict")
            yield Static(Text(""), id="histogram")
            yield DataTable(id="pair-strata", cursor_type="row", zebra_stripes=True)
            yield DataTable(id="disagree", cursor_type="row", zebra_stripes=True)

    def show_models(self, view: RunView) -> None:
        """The run's ranked models as the picks; a reload keeps the pair the user picked, a new run starts with its
        top two, compared at once."""
        self.view = view
        ranked = view.ranked
        options = [(printable(m, newlines=False), m) for m in ranked]
        a, b = self.query_one("#pick-a", Select), self.query_one("#pick-b", Select)
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

    def compare(self, a: str, b: str) -> None:
        """Pick a and b and show their paired comparison."""
        with self.prevent(Select.Changed):
            self.query_one("#pick-a", Select).value = a
            self.query_one("#pick-b", Select).value = b
        if self.view is not None:
            self._load_pair(self.view, a, b)

    # A description of its own: by default Textual describes a worker by the repr of its arguments, and the
    # repr of a 1M-call RunView took half a second on the UI loop.
    @work(thread=True, group="results-pair", exclusive=True, exit_on_error=False, description="compare two models")
    def _load_pair(self, view: RunView, a: str, b: str) -> None:
        pair = view.compare(a, b)
        strata = view.stratum_diffs(a, b)
        disagree = view.disagreements(a, b)
        self.app.call_from_thread(self._show_pair, view, pair, strata, disagree)

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

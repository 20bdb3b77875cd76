"""The results view's frontier tab: quality against $ per correct answer and against p95 latency, the Pareto
front marked."""

from __future__ import annotations

import math

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from arenatui.kernel.units import money
from arenatui.kernel.units import ms as fmt_num
from arenatui.present.charts import Point, scatter
from arenatui.present.safe_text import literal
from arenatui.tui.results.data import RunView
from arenatui.tui.results.tab import ResultsTab


class FrontierTab(ResultsTab):
    def __init__(self) -> None:
        super().__init__("7 Frontier", id="frontier")

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="frontier-body"):
            yield Static(Text(""), id="frontier-cost")
            yield Static(Text(""), id="frontier-latency", classes="spaced")
            yield Static(Text(""), id="frontier-loads", classes="note")

    def show_run(self, view: RunView) -> None:
        rows = [r for r in view.board if r.quality.n]
        width = max(40, min(100, self.app.size.width - 6))
        cost = [Point(r.model, r.cost_per_correct if r.cost_per_correct is not None else math.nan,
                      r.quality.estimate, r.on_cost_front) for r in rows]
        lat = [Point(r.model, r.latency_p95 if r.latency_p95 is not None else math.nan, r.quality.estimate,
                     r.on_latency_front) for r in rows]
        lat_name = "p95 latency"
        if view.at_load:  # load runs of the project: quality against p95 at the target load (arena report --load)
            at = {r.model: view.at_load.get(r.model, (math.nan, False)) for r in rows}
            lat = [Point(r.model, at[r.model][0], r.quality.estimate, at[r.model][1]) for r in rows]
            lat_name = f"p95 at the target load, {view.at_load_target}"
        self.query_one("#frontier-cost", Static).update(
            scatter(cost, width, 8, x_name="$ per correct answer", y_name="quality", log_x=True, x_fmt=money))
        self.query_one("#frontier-latency", Static).update(
            scatter(lat, width, 8, x_name=lat_name, y_name="quality", x_unit=" ms", x_fmt=fmt_num))
        loads = Text()
        if view.at_load_runs:  # which load run each p95 is from: picked in the runs tab (l), or the newest
            loads.append("p95 from load runs: ")
            for i, (m, (rid, picked)) in enumerate(view.at_load_runs.items()):
                loads.append("; " if i else "").append(literal(m, newlines=False))
                loads.append(f" {rid} ({'picked' if picked else 'newest'})")
            untested = [r.model for r in rows if r.model not in view.at_load_runs]
            if untested:
                loads.append("; not load-tested: ").append(literal(", ".join(untested), newlines=False))
            loads.append(". In the runs tab, l on a load run picks it for its model.")
        note = self.query_one("#frontier-loads", Static)
        note.update(loads)
        note.display = bool(loads)

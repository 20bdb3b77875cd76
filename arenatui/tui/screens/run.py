"""The run screen: watch a sweep and steer its concurrency."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, RichLog
from textual.worker import Worker, WorkerState

from arenatui.kernel.events import split_lane
from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.kernel.text import one_line, printable
from arenatui.kernel.units import NOTHING, money, plural
from arenatui.present.columns import fit_line
from arenatui.present.safe_text import literal
from arenatui.session.live import LiveSnapshot, ModelSnapshot
from arenatui.session.sweep import Sweep
from arenatui.tui.list_keys import LIST_KEYS, list_key
from arenatui.tui.results.screen import Results
from arenatui.tui.screens.common import fmt_errors, fmt_failures, fmt_num
from arenatui.tui.screens.detail import CallDetail
from arenatui.tui.screens.dialogs import Confirm, Help, ValueInput
from arenatui.tui.tuning_view import TuningReadout
from arenatui.tui.widgets import (
    ALTERNATIVES,
    JUDGE_MARK,
    CallMatrix,
    Column,
    ModelTable,
    RatesChart,
    StatusBar,
    bar,
    duration,
)
from arenatui.tui.widgets.lesson import LessonBanner, lesson_text

REFRESH_S = 0.25
"""The run screen samples live metrics this often (DESIGN.md: ~4 Hz keeps the engine within a few %)."""
BUSY_REFRESH_S = 1.0
"""Refresh interval while the process is CPU-bound (client CPU above BUSY_CPU of one core)."""
BUSY_CPU, IDLE_CPU = 0.9, 0.7
TABLE_EVERY = 4
"""The model table is refreshed every this many frames (1 Hz): rates over a 10 s window need no more."""
PANE_SHARE = 35
"""Per cent of the rows under the header the call matrix, and the model table, each take at most."""
LEGEND_MIN_HEIGHT = 30
BOTTOM_MIN_HEIGHT = 6
"""Rows the bottom row (rates or tuning, events) keeps at least (app.tcss's min-height)."""
WIDE_FOR_TUNING = 150
RATES_TITLE = "Rates over the run (t tuning)"
"""From this many columns the rates chart, the tuning readout and the events share the bottom row."""
"""Terminal rows from which the matrix shows its glyph legend."""
LOG_BATCH = 200
"""At most this many new log lines are written per frame; older ones in a burst are skipped, not queued."""


def concurrency_step(current: int, direction: int) -> int:
    """The next target on the 1, 2, 4, 8, 16… ladder above (direction > 0) or below the current one."""
    if direction > 0:
        n = 1
        while n <= current:
            n *= 2
        return n
    n = 1
    while n * 2 < current:
        n *= 2
    return max(1, n)



MODEL_COLUMNS = (
    # title, most characters, right-aligned, priority (lowest is left out first when the terminal is narrow);
    # which columns show depends on the width alone (plan widths), never on values: the set does not change mid-run.
    # cap, in flight and errors are what +/-, [ ] and m act on and what they change: they stay; the percentiles
    # beyond p50 and the sparkline go first (issue 37).
    Column("model", 24, False, 10),
    Column("cap", 4, True, 9, plan_width=3),
    Column("in flight", 9, True, 8),  # the header line has the total: per model it goes before the rest
    Column("backoff", 7, True, 2),
    Column("done", 22, True, 10, plan_width=12),
    Column("calls/s", 8, True, 6, plan_width=5),
    Column("tok/s", 7, True, 1, plan_width=5),
    Column("retries", 7, True, 6),
    Column("429 %", 5, True, 7),
    Column("errors", 24, False, 8, plan_width=12),
    Column("failed as", 22, False, 3, plan_width=12),
    Column("p50 ms", 6, True, 5),
    Column("p95 ms", 6, True, 2),
    Column("TTFT p50", 8, True, 1),
    Column("reasoning", 11, True, -1, priority_if_any=6),  # per call · share of spend, once a model reasons
    Column("latency, last 60 s", 60, False, 4, min_width=7),
)
MODELS_KEYS = " (↑↓ · [ ] cap ±1 · m cap)"


class FilterInput(Input):
    """The event filter: Escape or Enter leaves it (as in k9s and lazygit) and the screen's keys work again."""

    BINDINGS = [Binding("escape", "leave", "Back", show=True), Binding("enter", "leave", show=False)]

    class Left(Message):
        """The user is done typing the filter."""

    def action_leave(self) -> None:
        self.post_message(self.Left())


class RunScreen(Screen[None]):
    """Watch a sweep and steer its concurrency. Samples `sweep.live` on a timer; redraws only what changed."""

    # Footer order is priority order: the footer cuts from the right, and quit and help must be the last
    # hints a narrow terminal loses (issue 12).
    BINDINGS = [
        Binding("q", "stop", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("p", "pause", "Pause"),
        Binding("p", "resume", "Resume"),  # the footer says what p does now (check_action shows one of the two)
        Binding("plus,equals_sign", "step(1)", "Conc+", key_display="+"),
        Binding("minus", "step(-1)", "Conc-", key_display="-"),
        Binding("a", "toggle_tuner", "Auto-tune"),
        Binding("c", "ask_concurrency", "Set conc", show=False),  # hinted in the status line
        Binding("m", "ask_model_cap", "Model cap", show=False),  # hinted in the model table's title
        Binding("r", "results", "Results"),
        Binding("slash", "filter_log", "Filter"),
        Binding("w", "wrap_log", "Wrap events", show=False),
        Binding("t", "toggle_tuning_view", "Rates/tuning", show=False),  # hinted in the rates pane's title
        Binding("greater_than_sign", "nudge(1)", "+1", show=False),
        Binding("less_than_sign", "nudge(-1)", "-1", show=False),
        Binding("right_square_bracket", "model_cap(1)", "Cap +", show=False),
        Binding("left_square_bracket", "model_cap(-1)", "Cap -", show=False),
        Binding("x", "hide_lesson", "Hide lesson", show=False),  # the demo's banner says so
        *LIST_KEYS,  # the matrix and the model table bind j/k/g/G themselves; here for the events log
    ]

    def __init__(self, sweep: Sweep, *, autostart: bool = True, lesson: str | None = None) -> None:
        super().__init__()
        self.sweep = sweep
        self.lesson = lesson
        """The demo's model with a provider limit: a banner says what to press to find its optimum (x hides it)."""
        self.autostart = autostart
        self.sweep_ended = False
        self.exit_when_stopped = False
        self._shown_keys: dict[str, object] = {}
        self._log_seen = 0
        self._frame = 0
        self._said_single_slot: set[str] = set()
        """Models whose single-slot advice the console has shown (once each)."""
        self._log_filter = ""
        self._log_wrap = False
        self._tuning_shown = sweep.tune_at_start
        """On a narrow terminal, the bottom-left pane shows the tuning readout instead of the rates chart."""
        self._sweep_worker: Worker[Any] | None = None
        self._paused_at: float | None = None
        """The run's elapsed seconds when the header last saw it paused (None while it runs)."""
        self._paused_s = 0.0
        """Seconds this session has spent paused: left out of the elapsed time the header shows."""

    # ---- layout --------------------------------------------------------------------------------

    def _row_labels(self) -> list[str]:
        """The matrix's and the model table's rows: the models, then the judge lanes, marked as judges."""
        live = self.sweep.live
        return [JUDGE_MARK + k if live.is_judge(i) else k for i, k in enumerate(live.row_keys)]

    def compose(self) -> ComposeResult:
        plan = self.sweep.plan
        yield StatusBar(id="status")
        if self.lesson is not None:
            yield LessonBanner(id="lesson")
        defaults = plan.project.defaults
        yield from self._panes([c.id for c in plan.cases], plan.trials, any(c.depends_on for c in plan.cases),
                               TuningReadout(self.sweep.tuner, id="tuning", run_id=self.sweep.run_id,
                                             max_tokens={m.key: m.max_tokens or defaults.max_tokens
                                                         for m in plan.models}))
        yield Footer(compact=True)

    def _panes(self, case_ids: list[str], trials: int, chained: bool, tuning: TuningReadout) -> ComposeResult:
        """The matrix, the model table and the bottom row (rates, tuning, events): the console's and the watcher's."""
        live = self.sweep.live
        with Vertical(id="matrix-panel", classes="panel") as v:
            v.border_title = "Calls: models × cases" + (" (and judges)" if live.judge_keys else "")
            yield CallMatrix(self._row_labels(), case_ids, trials, live.cell_range,
                             cell_max=len(live.model_keys) * trials if live.judge_keys else None,
                             judged=bool(live.judge_keys), chained=chained, id="matrix")
        table = ModelTable(MODEL_COLUMNS, self._row_labels(), id="models")
        table.border_title = "Models" + MODELS_KEYS
        yield table
        with Horizontal(id="bottom"):
            chart = RatesChart(id="rates")
            chart.border_title = RATES_TITLE
            yield chart
            yield tuning
            with Vertical(id="log-panel", classes="panel") as lv:
                lv.border_title = "Events (/ filter · w wrap)"
                yield FilterInput(placeholder="filter events (/)", id="log-filter")
                yield RichLog(id="log", max_lines=1000, min_width=1, wrap=False, markup=False, highlight=False,
                              auto_scroll=True)

    def on_mount(self) -> None:
        self.query_one("#matrix", CallMatrix).focus()
        if self.autostart:
            # start once the first frame is on screen: the console shows at once and the engine's
            # first burst does not compete with the initial layout and styling
            self.call_after_refresh(self.start)
        self.refresh_now(everything=True)
        self._refresh_every = REFRESH_S
        self._timer = self.set_interval(REFRESH_S, self.refresh_now, name="live-refresh")

    def on_resize(self) -> None:
        # the glyph legend costs a row a short terminal needs for the panes; help (?) has it too
        matrix = self.query_one("#matrix", CallMatrix)
        legend = self.size.height >= LEGEND_MIN_HEIGHT
        if matrix.show_legend != legend:
            matrix.show_legend = legend
            matrix.refresh(layout=True)
        # Heights in rows, not per cent (a percentage is of the height left by the docked footer and rounds
        # down): at 80x24 both panes show four models. The matrix's own height is bounded too, not only its
        # panel's, so it knows how many model rows it shows and can follow the cursor past them.
        share = max(5, (self.size.height - 4) * PANE_SHARE // 100)
        self.query_one("#matrix-panel").styles.max_height = share
        matrix.styles.max_height = share - 2
        self.query_one("#models", ModelTable).styles.max_height = share
        self._place_tuning()

    def _place_tuning(self) -> None:
        """Rates and tuning side by side where the width allows, else one of them, `t` choosing which (turning
        the auto-tuner on shows the tuning readout): the bottom row keeps the events pane at every width."""
        both = self.size.width >= WIDE_FOR_TUNING
        tuning = self.query_one("#tuning", TuningReadout)
        self.query_one("#rates", RatesChart).display = both or not self._tuning_shown
        tuning.display = both or self._tuning_shown
        # narrow: the tuning pane takes the bottom row's width (t brings the rates and the events back), and where
        # its verdicts need more rows than it has, the call matrix gives them up (it scrolls; a verdict is never cut)
        self.query_one("#log-panel").display = both or not self._tuning_shown
        self._fit_tuning()

    def _fit_tuning(self) -> None:
        """The bottom row at least as high as every model's whole verdict needs (the panes above give up rows and
        scroll)."""
        tuning = self.query_one("#tuning", TuningReadout)
        need = tuning.lines_needed() + 2 if tuning.display and tuning.content_size.width > 0 else 0
        bottom = self.query_one("#bottom")
        height = max(BOTTOM_MIN_HEIGHT, need)
        if bottom.styles.min_height is None or bottom.styles.min_height.value != height:
            bottom.styles.min_height = height

    def action_toggle_tuning_view(self) -> None:
        self._tuning_shown = not self._tuning_shown
        self._place_tuning()

    def start(self) -> None:
        self._sweep_worker = self.run_worker(self.sweep.run(), name="sweep", group="sweep", exit_on_error=False)

    # ---- the timed refresh ---------------------------------------------------------------------

    def refresh_now(self, *, everything: bool = False) -> None:
        """One frame: sample the live metrics and redraw what changed (the model table at 1 Hz unless told)."""
        live = self.sweep.live
        if everything:
            self._frame = 0
        snap = live.snapshot()
        self._frame += 1
        self._pace(snap.client_cpu)
        with self.app.batch_update():
            self._show_status(snap)
            self.query_one("#matrix", CallMatrix).cells_changed(live.take_dirty())
            if self._frame % TABLE_EVERY == 1 or snap.state != "running" or self.sweep_ended:
                self._show_models(snap)
                self.query_one("#tuning", TuningReadout).show(snap)
                self._show_lesson()
                self._hint_truncation(snap)
                self._say_single_slot(snap)
                self._fit_tuning()
            # While running, chart whole seconds only: the current second's bucket is partial (a false dip),
            # and leaving it out redraws the chart once a second instead of every frame.
            running = snap.state in ("running", "paused") and not self.sweep_ended
            cut = slice(None, -1) if running and len(snap.throughput_series) > 1 else slice(None)
            per_model = tuple((m.key, m.throughput_series[cut]) for m in snap.models)
            self.query_one("#rates", RatesChart).update_series(snap.throughput_series[cut], snap.retry_series[cut],
                                                               snap.series_step_s, snap.markers, per_model)
            self._show_log()

    def _tuned_levels(self) -> tuple[tuple[str, int], ...]:
        """Each tuned model's level while the auto-tuner is on (empty when off)."""
        t = self.sweep.tuner
        if not t.enabled:
            return ()
        return tuple((k, n) for k in t.model_keys if k not in t.suspended and (n := t.level(k)) is not None)

    def _show_lesson(self) -> None:
        if self.lesson is None:
            return
        key, tuner, control = self.lesson, self.sweep.tuner, self.sweep.control
        readout = next((ro for ro in tuner.readouts() if ro.model_key == key), None)
        if readout is None:
            return
        on = tuner.enabled and key not in tuner.suspended
        level = (tuner.level(key) if on else None) or control.model_cap(key) or control.target
        self.query_one("#lesson", LessonBanner).show(lesson_text(key, readout, level, on))

    def action_hide_lesson(self) -> None:
        if self.lesson is not None:
            self.lesson = None
            self.query_one("#lesson", LessonBanner).remove()

    def _say_single_slot(self, snap: LiveSnapshot) -> None:
        """Once per model: its server stops a stream whenever another request arrives, and what to change."""
        for m in snap.models:
            if m.single_slot is not None and m.key not in self._said_single_slot:
                self._said_single_slot.add(m.key)
                self.app.notify(m.single_slot, title="One request at a time", severity="warning", timeout=30,
                                markup=False)

    def _hint_truncation(self, snap: LiveSnapshot) -> None:
        """Where the rates chart hides the tuning pane, its title says the pane has a max_tokens warning."""
        cut = any(m.truncated for m in snap.models)
        chart = self.query_one("#rates", RatesChart)
        room = chart.size.width - 4  # the border's corners and a space each side
        # the warning whole in the words that fit the pane, never cut mid-word ("⚠ answers c…" at 100 columns)
        title = next((t for t in (RATES_TITLE + " · ⚠ answers cut at max_tokens: t",
                                  "Rates (t tuning) · ⚠ answers cut at max_tokens", "Rates · ⚠ max_tokens cut: t",
                                  "⚠ max_tokens: t") if len(t) <= room), "⚠ t") if cut else RATES_TITLE
        if chart.border_title != title:
            chart.border_title = title

    def _pace(self, client_cpu: float | None) -> None:
        """Yield the CPU to the engine when the process is CPU-bound: a frame costs a full-screen
        composite (~40 ms at 160×48), so at 4 Hz the console would take a sixth of a saturated core.
        Back to 4 Hz once the process has room again (hysteresis avoids flapping)."""
        if client_cpu is None:
            return
        want = self._refresh_every
        if client_cpu > BUSY_CPU:
            want = BUSY_REFRESH_S
        elif client_cpu < IDLE_CPU:
            want = REFRESH_S
        if want != self._refresh_every:
            self._refresh_every = want
            self._timer.stop()
            self._timer = self.set_interval(want, self.refresh_now, name="live-refresh")

    def _state(self, snap: LiveSnapshot) -> str:
        if self.sweep_ended or snap.state in ("finished", "cancelled", "failed"):
            return self.sweep.status or snap.state
        if self.sweep.control.cancelled:
            return "stopping"
        return "paused" if self.sweep.control.paused else snap.state

    def _show_status(self, snap: LiveSnapshot) -> None:
        runner = self.sweep.control
        state = self._state(snap)
        frac = snap.done / snap.planned if snap.planned else 1.0
        # while paused the header stops: elapsed counts running time only, and no rolling rate is shown for a run
        # where nothing starts (issue 37: it kept printing 13.9 calls/s and counting)
        if state == "paused" and self._paused_at is None:
            self._paused_at = snap.elapsed_s
        elif state != "paused" and self._paused_at is not None:
            self._paused_s += max(0.0, snap.elapsed_s - self._paused_at)
            self._paused_at = None
        elapsed = (self._paused_at if self._paused_at is not None else snap.elapsed_s) - self._paused_s
        key = (state, snap.done, snap.planned, int(elapsed), None if snap.eta_s is None else int(snap.eta_s),
               round(snap.cost, 4), round(snap.judge_cost, 4), snap.judge_done, snap.estimated_calls, runner.target,
               snap.in_flight,
               snap.backing_off, round(snap.calls_per_s),
               snap.retries, snap.errored, snap.rates_window_s, self.size.width, self._tuned_levels(),
               None if snap.client_cpu is None else round(snap.client_cpu, 2), snap.client_overloaded)
        if self._shown_keys.get("status") == key:
            return
        self._shown_keys["status"] = key
        width = max(20, self.size.width)
        bold = Style(bold=True)
        glyph = {"running": "▶", "paused": "⏸", "finished": "✓", "cancelled": "■", "failed": "✗",
                 "stopping": "■"}.get(state, "•")
        # Three lines, each fitted to the width by priority (a wrap would push the concurrency line away).
        line1: list[tuple[Text, int]] = [
            (Text(" arena ", Style(bold=True, reverse=True)), 9),
            (Text.assemble("  ", literal(self.sweep.project.name, "bold", newlines=False)), 3),
            (Text(f"   run {self.sweep.run_id}"), 1),
            (Text.assemble("  ", (f" {glyph} {state} ", Style(bold=True, reverse=True))), 10),
            (Text(f"  elapsed {duration(elapsed)}"), 8),
            (Text(f"  ETA {duration(snap.eta_s) if snap.eta_s else NOTHING}"), 7),
            (Text(f"  spend {'≈' if snap.estimated_calls else ''}{money(snap.cost)}"), 6),
        ]
        if snap.estimated_calls:  # the server reported no usage for these: tokens and cost are arenatui's estimate
            estimated = plural(snap.estimated_calls, "call's", "calls'")
            line1.insert(7, (Text(f" ({estimated} tokens estimated)"), 2))
        if snap.judge_planned:  # judge spend is in the total and said apart (issue 13)
            line1.insert(7, (Text(f" (judges {money(snap.judge_cost)})"), 4))
        counts = f" {snap.done}/{snap.planned} ({frac:.0%})"
        rate = "  paused: no call starts" if state == "paused" else \
            f"  {snap.calls_per_s:.1f} calls/s" + ("" if snap.rates_window_s is None else
                                                  f" ({snap.rates_window_s:.0f} s)")
        bar_w = max(8, width - 2 - len(counts) - len(rate))
        judged = (f"  judged {snap.judge_done}/{snap.judge_planned}" if snap.judge_planned else "")
        bar_w = max(8, bar_w - len(judged))
        line2: list[tuple[Text, int]] = [(Text(f" {bar(frac, bar_w)}", bold), 5), (Text(counts), 9),
                                         (Text(judged), 6), (Text(rate), 8)]
        line3: list[tuple[Text, int]] = [
            (Text(" concurrency ", bold), 10),
            (Text(f"target {runner.target}", Style(bold=True, underline=True)), 10) if not self._tuned_levels() else
            # the tuner sets each model's level and the global target to their sum: the levels are what is true
            (Text("levels " + " · ".join(f"{k} {n}" for k, n in self._tuned_levels()),
                  Style(bold=True, underline=True)), 10),
            (Text(f"  in flight {snap.in_flight}"), 9),
            (Text(f"  backing off {snap.backing_off}"), 5),
            (Text(f"  retries {snap.retries}"), 8),
            (Text(f"  errors {snap.errored}"), 8),
        ]
        if snap.client_cpu is not None:  # the client's own load: when high, it is inside the latencies shown
            line3.append((Text(f"  client CPU {snap.client_cpu:.0%}"), 4))
            if snap.client_overloaded:
                warn = self.app.theme_variables.get("warning")
                line3.append((Text(" ⚠ client-bound: latencies inflated",
                                   Style(bold=True, color=warn) if warn else bold), 7))
        if self.sweep_ended or state in ("finished", "cancelled", "failed"):
            line3.append((Text(f"  — {'ended' if state == 'finished' else state}: r results", bold), 9))
        else:
            line3.append((Text("   + / - step · < / > ±1 · c set · p pause", Style(dim=True)), 1))
        st = Text(no_wrap=True, overflow="ellipsis")
        for i, parts in enumerate((line1, line2, line3)):
            if i:
                st.append("\n")
            st.append_text(fit_line(parts, width))
        self.query_one("#status", StatusBar).show(st)

    def _show_models(self, snap: LiveSnapshot) -> None:
        table = self.query_one("#models", ModelTable)
        window = snap.rates_window_s
        title = (f"Models · rates over the last {window:.0f} s" if window is not None else
                 "Models · rates are the run's totals")
        if table.border_title != title + MODELS_KEYS:
            table.border_title = title + MODELS_KEYS
        table.set_rows((i, self._model_row(m), m.latency_series) for i, m in enumerate(snap.models))

    def _cap(self, key: str) -> int | None:
        """A row's cap; None for a judge lane the engine keeps no cap for."""
        try:
            return self.sweep.control.model_cap(key)
        except KeyError:
            return None

    def _model_row(self, m: ModelSnapshot) -> tuple[str, ...]:
        cap = self._cap(m.key)
        # answered calls awaiting their judge (or outside its sample) are done, yet in no score: say how many
        done = f"{m.done}/{m.planned}" + (f" ○{m.unscored}" if m.unscored else "")
        if m.errored and m.errored == m.done:  # every call so far errored: "done 4/4" would read as a success
            done = ALTERNATIVES.join((f"0 answered, {m.errored} errored", f"0 ans, {m.errored} err",
                                      f"{m.errored} err"))
        return (
            "-" if cap is None else str(cap), str(m.in_flight), str(m.backing_off), done,
            f"{m.calls_per_s:.1f}", f"{m.tokens_per_s:.0f}", str(m.retries), f"{m.rate_limited_rate:.0%}",
            fmt_errors(m.errors), fmt_failures(m.failures), fmt_num(m.p50_ms), fmt_num(m.p95_ms),
            fmt_num(m.ttft_p50_ms), self._reasoning_cell(m), "",
        )

    def action_list_key(self, where: str) -> None:
        list_key(self.focused, where)
    _prices: dict[str, float] | None = None
    """Each model's output price, for its reasoning's share of spend."""

    def _reasoning_cell(self, m: ModelSnapshot) -> str:
        """'812 · 64%': reasoning tokens per call and their share of the model's spend; '-' for a model that does
        not reason."""
        prices = self._prices
        if prices is None:
            # a sweep's plan holds the models' settings; a watched run's stored plan only their keys (no price:
            # the share is then of output tokens, as for a model with no price)
            prices = self._prices = {c.key: c.price_out_per_mtok for c in self.sweep.plan.models
                                     if hasattr(c, "price_out_per_mtok")}
        figures = m.reasoning(prices.get(split_lane(m.key)[0], 0.0))
        return "-" if figures is None else f"{figures[0]:.0f} · {figures[1]:.0%}"

    def _log_line(self, t: float, kind: str, text: str) -> Text:
        vars_ = self.app.theme_variables
        colour = {"retry": "arena-retrying", "error": "arena-errored", "concurrency": "arena-marker",
                  "tuner": "arena-marker"}.get(kind)
        glyph = {"retry": "↻", "error": "!", "concurrency": "⇅", "state": "■", "tuner": "◆"}.get(kind, "·")
        # cut with … on one line, or (w) wrapped under its text so the reason at the end is readable
        line = Text(no_wrap=not self._log_wrap, overflow="ellipsis")
        line.append(f"{duration(t):>6} ")
        style = Style(color=vars_.get(colour)) if colour and vars_.get(colour) else Style()
        line.append(f"{glyph} {kind[:6]:<6} ", style)
        line.append(one_line(text, 400))
        return line

    def _matches(self, kind: str, model: str | None, text: str) -> bool:
        f = self._log_filter
        return not f or f in kind or f in text.lower() or (model is not None and f in model.lower())

    def _show_log(self) -> None:
        live = self.sweep.live
        new = live.log_seq - self._log_seen
        if new <= 0:
            return
        self._log_seen = live.log_seq
        entries = list(live.log)[-min(new, LOG_BATCH):]
        log = self.query_one("#log", RichLog)
        for e in entries:
            if self._matches(e.kind, e.model_key, e.text):
                log.write(self._log_line(e.t, e.kind, e.text))

    @on(Input.Changed, "#log-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._log_filter = event.value.strip().lower()
        self._rewrite_log()

    def action_wrap_log(self) -> None:
        self._log_wrap = not self._log_wrap
        self.query_one("#log", RichLog).wrap = self._log_wrap
        self._rewrite_log()  # no toast: it would cover the very pane that changed

    def _rewrite_log(self) -> None:
        log = self.query_one("#log", RichLog)
        log.clear()
        shown = [e for e in self.sweep.live.log if self._matches(e.kind, e.model_key, e.text)]
        for e in shown[-500:]:
            log.write(self._log_line(e.t, e.kind, e.text))

    # ---- the sweep worker ----------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._sweep_worker or event.state not in (WorkerState.SUCCESS, WorkerState.ERROR,
                                                                   WorkerState.CANCELLED):
            return
        self.sweep_ended = True
        self.refresh_now(everything=True)
        if self.exit_when_stopped:
            self.app.exit(self.sweep.status)
            return
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(one_line(f"{type(event.worker.error).__name__}: {event.worker.error}", 300),
                        title="The sweep failed", severity="error", timeout=30, markup=False)
        # A finished sweep gets no toast: it covered the Events pane's border, and the header already says
        # "✓ finished … ended: r results" while the events log "run finished".

    # ---- actions -------------------------------------------------------------------------------

    def _sweep_active(self) -> bool:
        return not self.sweep_ended and not self.sweep.control.cancelled

    def set_target(self, n: int) -> None:
        if self._sweep_active():
            self.sweep.control.set_concurrency(n, source="user")
            self.refresh_now(everything=True)

    def action_step(self, direction: int) -> None:
        self._change_target(concurrency_step(self.sweep.control.target, direction))

    def action_nudge(self, delta: int) -> None:
        self._change_target(self.sweep.control.target + delta)

    def _change_target(self, n: int) -> None:
        """A key's change of the global target, or a word on why there is none (never silence)."""
        if not self._sweep_active():
            self.notify("The sweep has ended: concurrency no longer applies.", timeout=4)
            return
        current = self.sweep.control.target
        if current <= 1 and n <= 1:
            self.notify("Concurrency is already at the minimum: 1 call at once.", timeout=4)
            return
        if n > MAX_CONCURRENCY:
            self.notify(f"Concurrency is already at the maximum: {MAX_CONCURRENCY} calls at once.", timeout=4)
            return
        self.set_target(max(1, n))

    def action_ask_concurrency(self) -> None:
        if not self._sweep_active():
            return

        def apply(n: int | None) -> None:
            if n:
                self.set_target(n)

        self.app.push_screen(ValueInput(Text("Global concurrency (calls at once, all models)"),
                                        str(self.sweep.control.target)), apply)

    def _highlighted_model(self) -> str:
        """The key of the model table's row under the cursor: a model's, or a judge lane's."""
        table = self.query_one("#models", ModelTable)
        keys = self.sweep.live.row_keys
        return keys[max(0, min(table.cursor_row, len(keys) - 1))]

    def _capped_lane(self, key: str) -> bool:
        """Whether the engine caps this row's calls; a judge lane it does not cap gets a word, not a crash."""
        try:
            self.sweep.control.model_cap(key)
        except KeyError:
            self.notify(f"{printable(key, newlines=False)}: this engine has no cap for a judge lane; its calls share "
                        "the global concurrency.", timeout=5, markup=False)
            return False
        return True

    def action_model_cap(self, delta: int) -> None:
        if not self._sweep_active():
            return
        key = self._highlighted_model()
        if not self._capped_lane(key):
            return
        cap = self.sweep.control.model_cap(key)
        if cap is None:
            # From no cap, step from what the model runs at now (its calls in flight), not from zero.
            live = self.sweep.live
            level = live.rows[live.row_keys.index(key)].in_flight or self.sweep.control.target
            new = max(1, min(level, self.sweep.control.target) + delta)
        else:
            new = cap + delta
        if new < 1:
            self.notify(f"{printable(key, newlines=False)} is already capped at the minimum: 1 call at once.",
                        timeout=4, markup=False)
            return
        self.sweep.control.set_model_cap(key, min(new, MAX_CONCURRENCY), source="user")
        self.refresh_now(everything=True)

    def action_ask_model_cap(self) -> None:
        if not self._sweep_active():
            return
        key = self._highlighted_model()
        if not self._capped_lane(key):
            return
        cap = self.sweep.control.model_cap(key)

        def apply(n: int | None) -> None:
            if n is not None and self._sweep_active():
                self.sweep.control.set_model_cap(key, n or None, source="user")
                self.refresh_now(everything=True)

        prompt = Text("Cap for ")
        prompt.append(literal(key, "bold", newlines=False))
        prompt.append(" (calls at once for this judge)" if key in self.sweep.live.judge_keys else
                      " (calls at once for this model)")
        self.app.push_screen(ValueInput(prompt, "" if cap is None else str(cap), allow_empty=True), apply)

    def action_toggle_tuner(self) -> None:
        if self._sweep_active():
            on = self.sweep.toggle_tuner()
            if on and not self._tuning_shown:  # what the tuner does is what the user now wants to watch
                self._tuning_shown = True
                self._place_tuning()
            self.notify("Auto-tuner on: each model's level is now the tuner's (a manual change suspends it)"
                        if on else "Auto-tuner off: levels stay where they are", timeout=6)
            self.refresh_now(everything=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "pause":
            return not self.sweep.control.paused
        if action == "resume":
            return self.sweep.control.paused
        return True

    def action_pause(self) -> None:
        """Pause the sweep, or resume it when paused (the palette's command toggles)."""
        if not self._sweep_active():
            return
        runner = self.sweep.control
        if runner.paused:
            runner.resume()
        else:
            runner.pause()
        self.refresh_bindings()
        self.refresh_now(everything=True)

    def action_resume(self) -> None:
        if self.sweep.control.paused:
            self.action_pause()

    def action_filter_log(self) -> None:
        self.query_one("#log-filter", Input).focus()

    @on(FilterInput.Left)
    def _filter_left(self) -> None:
        self.query_one("#matrix", CallMatrix).focus()

    def action_results(self) -> None:
        if self.sweep.live.snapshot().done == 0:
            self.notify("No finished calls yet: results appear once calls finish.")
            return
        self.app.push_screen(Results(self.sweep.db_path, self.sweep.run_id))

    def action_help(self) -> None:
        self.app.push_screen(Help())

    def action_stop(self) -> None:
        if self.sweep_ended or self._sweep_worker is None:
            self.app.exit(self.sweep.status)
            return

        def answer(yes: bool | None) -> None:
            if yes:
                self.stop_sweep()

        q = Text("Stop the sweep?\n\nCalls in flight are cancelled; every finished call stays stored. "
                 "Resume with:\n\n  ")
        q.append(literal(self.sweep.resume_in("run"), "bold", newlines=False))
        self.app.push_screen(Confirm(q), answer)

    def stop_sweep(self) -> None:
        """Cancel the engine; the app exits once the sweep has stored what finished (at once if it already ended:
        a `y` that came after the last call, while the question was open, would otherwise wait for an end that has
        been)."""
        if self.sweep_ended:
            self.app.exit(self.sweep.status)
            return
        self.exit_when_stopped = True
        self.sweep.control.cancel()
        self.refresh_now()

    @on(CallMatrix.CursorMoved)
    def _cursor_moved(self, event: CallMatrix.CursorMoved) -> None:
        """The cursor's case in full under the matrix: the ruler's names are cut to the cells' width."""
        matrix = self.query_one("#matrix", CallMatrix)
        self.query_one("#matrix-panel").border_subtitle = literal(matrix.cursor_words(), newlines=False)

    @on(CallMatrix.CellSelected)
    def _cell_selected(self, event: CallMatrix.CellSelected) -> None:
        self.app.push_screen(CallDetail(self.sweep, event.model_index, event.case_index))

    @on(ModelTable.RowSelected)
    def _model_selected(self, event: ModelTable.RowSelected) -> None:
        """Enter on a model's row: that model's call at the matrix's case (the matrix's cursor follows), and why
        its calls fail when some did: the most common error message."""
        matrix = self.query_one("#matrix", CallMatrix)
        matrix.move_cursor_to_row(event.row)
        snap = self.sweep.live.snapshot()
        m = snap.models[event.row] if 0 <= event.row < len(snap.models) else None
        why = None if m is None or m.common_error is None else (*m.common_error, m.errored)
        self.app.push_screen(CallDetail(self.sweep, event.row, matrix.case_index_at(matrix.cursor[1]),
                                        model_errors=why))



"""The load screen: watch an open-loop load run and change its offered rate with `+`/`-`."""

from __future__ import annotations

import math
from typing import Any, Protocol

from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from arenatui.kernel.limits import MAX_RPM
from arenatui.kernel.units import ms
from arenatui.load.live import HISTOGRAM_EDGES_MS, LoadSnapshot
from arenatui.present.columns import hbar

REFRESH_S = 0.25
"""A few times a second (DESIGN.md: refresh rate is engine slowdown on the same loop)."""
HIST_WIDTH = 40


class LoadRunView(Protocol):
    """What the screen needs of a `LoadRun` (tests pass a scripted one)."""

    run_id: str

    @property
    def status(self) -> str | None: ...

    def snapshot(self) -> LoadSnapshot: ...

    def change_rate(self, rate: float) -> None: ...

    def cancel(self) -> None: ...

    async def run(self) -> Any: ...


def rate_step(current: float, direction: int) -> float:
    """The next rate on the 1-2-5 ladder (…0.5, 1, 2, 5, 10, 20…) above (direction > 0) or below `current`."""
    if current <= 0:
        return 1.0
    exp = math.floor(math.log10(current))
    ladder = sorted({m * 10.0 ** e for e in range(exp - 1, exp + 2) for m in (1, 2, 5)})
    if direction > 0:
        return next(r for r in ladder if r > current * (1 + 1e-9))
    return next(r for r in reversed(ladder) if r < current * (1 - 1e-9))


def offered(rate: float) -> str:
    """A rate as asked for (`10`, `0.5`), or a trace's mean rate to two decimals (`4.07`, not `4.0678`)."""
    return f"{rate:g}" if rate == round(rate, 2) else f"{rate:.2f}"


def _ms(v: float) -> str:
    return ms(v, " ms")


LABEL_W = 24
SHORT_LABELS = {"offered (target)": "offered", "schedule lag p50/p99": "lag p50/p99",
                "latency p99 (schedule)": "lat p99 sched", "errors / 429 / timeout": "err/429/timeout",
                "requests done": "done"}
"""Labels for a pane too narrow for the long ones beside their values (half of an 80-column terminal)."""
SHORT_LABEL_W = max(len(v) for v in SHORT_LABELS.values()) + 2
WIDEST_VALUE = 20
"""About the widest value ("2.0% / 5.0% / 1.0%", "1.2 ms / 1,800 ms"): long labels need this much beside them."""


def figures_text(s: LoadSnapshot, width: int = 80) -> Text:
    """The live figures, one a line; a warning beside its figure where it fits, else on the line below (never
    wrapped to the pane's left edge); shorter labels when the pane leaves no room for the long ones."""
    t = Text(no_wrap=True, overflow="ellipsis")
    label = Style(dim=True)
    short = width < LABEL_W + WIDEST_VALUE
    label_w = SHORT_LABEL_W if short else LABEL_W

    def row(name: str, value: str, warn: bool = False) -> None:
        style = Style(bold=True, color="yellow") if warn else Style(bold=True)
        value, _, note = value.partition("  (")
        t.append(f"{SHORT_LABELS.get(name, name) if short else name:<{label_w}}", label)
        t.append(value, style)
        if note:
            note = "(" + note
            t.append(f"  {note}\n" if label_w + len(value) + 2 + len(note) <= width else
                     f"\n{'':<{label_w}}{note}\n", style)
        else:
            t.append("\n")

    # Once the window holds only the current rate, a shortfall is the system not keeping up, not noise
    behind = s.settled and s.achieved_rate < 0.9 * s.target_rate
    row("offered (target)", f"{offered(s.target_rate)} req/s")
    row("sent", f"{s.sent_rate:.2f} req/s", s.settled and s.sent_rate < 0.9 * s.target_rate)
    row("achieved", f"{s.achieved_rate:.2f} req/s" + ("  (not keeping up)" if behind else ""), behind)
    row("in flight", str(s.in_flight))
    lagging = not math.isnan(s.lag_p99_ms) and s.lag_p99_ms > 50.0
    row("schedule lag p50/p99", f"{_ms(s.lag_p50_ms)} / {_ms(s.lag_p99_ms)}" +
        ("  (client-bound)" if lagging else ""), lagging)
    row("TTFT p50/p99", f"{_ms(s.ttft_p50_ms)} / {_ms(s.ttft_p99_ms)}")
    row("latency p50/p99", f"{_ms(s.latency_p50_ms)} / {_ms(s.latency_p99_ms)}")
    row("latency p99 (schedule)", _ms(s.latency_sched_p99_ms))
    row("errors / 429 / timeout", f"{s.error_share:.1%} / {s.rate_limited_share:.1%} / {s.timeout_share:.1%}",
        s.error_share + s.rate_limited_share + s.timeout_share > 0)
    if s.client_cpu is not None:
        row("client CPU", f"{s.client_cpu:.0%} of a core", s.client_cpu > 0.8)
    row("requests done", f"{s.done:,}")
    return t


def histogram_text(s: LoadSnapshot, width: int = 10 + HIST_WIDTH + 8) -> Text:
    """A bar per latency bucket, the longest as wide as the pane leaves beside the labels and counts."""
    t = Text(no_wrap=True, overflow="crop")
    peak = max(s.histogram) if s.histogram else 0
    labels = [f"≤{e:g} ms" if e < 1000 else f"≤{e / 1000:g} s" for e in HISTOGRAM_EDGES_MS]
    labels.append(f">{HISTOGRAM_EDGES_MS[-1] / 1000:g} s")
    bar_w = max(4, min(HIST_WIDTH, width - 10 - len(f" {peak:,}") - 1))
    for lab, n in zip(labels, s.histogram, strict=True):
        fraction = 0.0 if peak == 0 else max(n / peak, 1 / (8 * bar_w) if n else 0.0)
        t.append(f"{lab:>9} ", Style(dim=True))
        t.append(hbar(fraction, bar_w).rstrip())
        t.append(f" {n:,}\n")
    return t


class LoadScreen(Screen[None]):
    """Samples the run's live figures on a timer, in a thread (numpy), and redraws what changed."""

    DEFAULT_CSS = """
    LoadScreen { layout: vertical; background: $background; }
    #load-status { height: 1; background: $panel; color: $foreground; }
    #load-body { height: auto; }
    #load-figures-panel, #load-histogram-panel { width: 1fr; }
    #load-figures { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    BINDINGS = [
        Binding("plus,equals_sign", "step(1)", "Rate +", key_display="+"),
        Binding("minus", "step(-1)", "Rate -", key_display="-"),
        Binding("q", "stop", "Stop / quit"),
    ]

    def __init__(self, run: LoadRunView, *, autostart: bool = True) -> None:
        super().__init__()
        self.load = run
        self.autostart = autostart
        self.ended = False
        self.rate: float | None = None
        self._shown: tuple[Any, ...] | None = None
        self._worker: Worker[Any] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="load-status")
        with Horizontal(id="load-body"):
            with Vertical(classes="panel", id="load-figures-panel") as v:
                v.border_title = "Live figures (last 10 s)"
                yield Static(id="load-figures")
            with Vertical(classes="panel", id="load-histogram-panel") as v:
                v.border_title = "Latency from schedule (last 10 s)"
                yield Static(id="load-histogram")
        yield Footer()

    def on_mount(self) -> None:
        if self.autostart:
            self._worker = self.run_worker(self.load.run(), name="load", group="load", exit_on_error=False)
        self.set_interval(REFRESH_S, self.refresh_now, name="load-refresh")
        self.refresh_now()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is self._worker and event.state in (WorkerState.SUCCESS, WorkerState.ERROR,
                                                            WorkerState.CANCELLED):
            self.ended = True
            if event.state == WorkerState.ERROR and event.worker.error is not None:
                self.notify(str(event.worker.error), title="Load run failed", severity="error", markup=False)
            self.refresh_now()

    def refresh_now(self) -> None:
        self._sample()

    @work(thread=True, exclusive=True, group="load-snapshot", exit_on_error=False)
    def _sample(self) -> None:
        snap = self.load.snapshot()
        self.app.call_from_thread(self.show, snap)

    def show(self, s: LoadSnapshot) -> None:
        self.rate = s.target_rate
        key = (s, self.ended, self.load.status)
        if key == self._shown:
            return  # nothing changed: assign nothing, redraw nothing
        self._shown = key
        state = (self.load.status or "finished") if self.ended else "running"
        st = Text()
        st.append(f" arena load   run {self.load.run_id}   ")
        st.append(f" {state} ", Style(bold=True, reverse=True))
        st.append(f"   {s.elapsed_s:.0f}/{s.total_s:.0f} s   segment {s.segment}   "
                  f"offered {offered(s.target_rate)} req/s")
        if self.ended:
            st.append("   q quits; the tables print after")
        self.query_one("#load-status", Static).update(st)
        figures, hist = self.query_one("#load-figures", Static), self.query_one("#load-histogram", Static)
        figures.update(figures_text(s, figures.size.width or 80))
        hist.update(histogram_text(s, hist.size.width or 10 + HIST_WIDTH + 8))

    def action_step(self, direction: int) -> None:
        if self.ended or self.rate is None:
            return
        new = min(rate_step(self.rate, direction), MAX_RPM / 60.0)
        try:
            self.load.change_rate(new)
        except ValueError as e:  # a trace's times are fixed
            self.notify(str(e), severity="warning", markup=False)
            return
        self.rate = new
        self.notify(f"offered rate → {new:g} req/s (a new segment)", timeout=3, markup=False)

    def action_stop(self) -> None:
        if self.ended:
            self.app.exit()
            return
        self.load.cancel()

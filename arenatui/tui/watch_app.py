"""`arena watch`: the run screen attached to a run another process is running, read from its database(s).

The screen is the console's own run screen (matrix, model table, rates, tuning, events) over a `WatchedRun`, which
offers what that screen reads of a sweep: `live` (a LiveMetrics rebuilt from the stored rows), `control` (requests
written to the database, answered by the running process) and `tuner` (the published readout). What a watcher does
differently is here: polling, the header (who runs it, where, last heard), answers to requests, read-only mode, shards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.widgets import Footer, Static

from arenatui.kernel.errors import ArenaError
from arenatui.kernel.text import one_line
from arenatui.kernel.units import NOTHING, money
from arenatui.present.columns import fit_line
from arenatui.present.safe_text import literal
from arenatui.session.live import LiveSnapshot
from arenatui.session.watch import WatchedRun
from arenatui.tui.results.screen import Results
from arenatui.tui.screens import RunScreen
from arenatui.tui.themes import STATE_VARIABLES, use_themes
from arenatui.tui.tuning_view import TuningReadout
from arenatui.tui.widgets import CallMatrix, ModelTable, StatusBar, bar, duration

if TYPE_CHECKING:
    from arenatui.session.sweep import Sweep
    from arenatui.store.watch_queries import StoredSoFar
    from arenatui.tuning.controller import Tuner


class WatchScreen(RunScreen):
    """The run screen over a WatchedRun: each frame folds the database's new rows first."""

    def __init__(self, run: WatchedRun) -> None:
        # The run screen reads `live`, `control`, `tuner`, `run_id`, `db_path` and `tune_at_start` of its sweep,
        # which a WatchedRun has; what reads more of a Sweep (compose, start, stop, call detail) is replaced here.
        super().__init__(cast("Sweep", run), autostart=False)
        self.watched = run
        self._ended_said = False
        self._read_only_said = False

    def compose(self) -> ComposeResult:
        run = self.watched
        yield StatusBar(id="status")
        if len(run.shards) > 1:
            shards = Static(id="shards")
            shards.styles.height = len(run.shards)
            yield shards
        yield from self._panes([c.id for c in run.plan.cases], run.plan.trials, run.plan.chained,
                               TuningReadout(cast("Tuner", run.tuner), id="tuning", run_id=run.run_id))
        yield Footer(compact=True)

    def on_mount(self) -> None:
        super().on_mount()
        if not self.watched.stored_read:  # the screen first, then the stored rows (seconds on a long run)
            # exit_on_error stays on: an exception other than the store's own must end the app, not vanish
            self.run_worker(self._read_stored, thread=True, group="watch-read", name="stored rows")

    def _read_stored(self) -> None:
        """In a thread: the SQL aggregates; the figures take them on the app's thread (they are not shared)."""
        try:
            so_far = self.watched.read_stored()
        except ArenaError as e:
            self.app.call_from_thread(self.notify, one_line(str(e), 400), title="Cannot read the run",
                                      severity="error", timeout=30, markup=False)
            return
        self.app.call_from_thread(self._take_stored, so_far)

    def _take_stored(self, so_far: list[StoredSoFar]) -> None:
        self.watched.take_stored(so_far)
        self.refresh_now(everything=True)

    def refresh_now(self, *, everything: bool = False) -> None:
        run = self.watched
        run.poll()
        if run.ended is not None and not self.sweep_ended:
            self.sweep_ended = True
            everything = True
        super().refresh_now(everything=everything)
        for req, status, reply in run.take_answers():
            self.notify(one_line(f"{req.words()}: {status}" + (f": {reply}" if reply else ""), 200),
                        title="Applied" if status == "applied" else "Refused",
                        severity="information" if status == "applied" else "warning", timeout=6, markup=False)
        if run.read_only_reason and not self._read_only_said:
            self._read_only_said = True
            self.notify(one_line(run.read_only_reason, 400), title="Read-only", severity="error", timeout=15,
                        markup=False)
        if self.sweep_ended and not self._ended_said:
            self._ended_said = True
            self.notify(f"The run ended ({run.ended}): r opens its results, q leaves.", timeout=10, markup=False)
        if len(run.shards) > 1:
            text = "\n".join(run.shard_lines())
            shards = self.query_one("#shards", Static)
            if self._shown_keys.get("shards") != text:
                self._shown_keys["shards"] = text
                shards.update(Text(text, no_wrap=True, overflow="ellipsis"))

    def _pace(self, client_cpu: float | None) -> None:
        """The client CPU shown is the running process's, not this one's: the watcher keeps its own pace."""

    def _show_status(self, snap: LiveSnapshot) -> None:
        run = self.watched
        state = run.status_words()
        frac = snap.done / snap.planned if snap.planned else 1.0
        key = (state, run.catching_up, snap.done, snap.planned, int(snap.elapsed_s),
               None if snap.eta_s is None else int(snap.eta_s),
               round(snap.cost, 4), snap.target, snap.in_flight, snap.backing_off, round(snap.calls_per_s, 1),
               snap.retries, snap.errored, snap.rates_window_s, self.size.width, run.read_only_reason is None)
        if self._shown_keys.get("status") == key:
            return
        self._shown_keys["status"] = key
        width = max(20, self.size.width)
        bold = Style(bold=True)
        glyph = {"running": "▶", "paused": "⏸", "finished": "✓", "cancelled": "■", "failed": "✗"}.get(state, "•")
        if run.catching_up:  # the figures are behind the database by the rows the next frames will read
            state += " · catching up"
        st = run.shards[0].state
        where = f"   {st.user}@{st.host} pid {st.pid}" if st is not None and len(run.shards) == 1 else \
            f"   {len(run.shards)} shards"
        line1: list[tuple[Text, int]] = [
            (Text(" arena watch ", Style(bold=True, reverse=True)), 9),
            (Text.assemble("  ", literal(run.project_name, "bold", newlines=False)), 3),
            (Text(f"   run {run.run_id}"), 4),
            (Text.assemble("  ", (f" {glyph} {state} ", Style(bold=True, reverse=True))), 10),
            (literal(where, newlines=False), 2),
            (Text(f"  elapsed {duration(snap.elapsed_s)}"), 8),
            (Text(f"  ETA {duration(snap.eta_s) if snap.eta_s else NOTHING}"), 7),
            (Text(f"  spend {money(snap.cost)}"), 6),
        ]
        counts = f" {snap.done}/{snap.planned} ({frac:.0%})"
        rate = f"  {snap.calls_per_s:.1f} calls/s" + ("" if snap.rates_window_s is None else
                                                        f" ({snap.rates_window_s:.0f} s)")
        bar_w = max(8, width - 2 - len(counts) - len(rate))
        line2: list[tuple[Text, int]] = [(Text(f" {bar(frac, bar_w)}", bold), 5), (Text(counts), 9), (Text(rate), 8)]
        line3: list[tuple[Text, int]] = [
            (Text(" concurrency ", bold), 10),
            (Text(f"target {snap.target}", Style(bold=True, underline=True)), 10),
            (Text(f"  in flight {snap.in_flight}"), 9),
            (Text(f"  backing off {snap.backing_off}"), 5),
            (Text(f"  retries {snap.retries}"), 8),
            (Text(f"  errors {snap.errored}"), 8),
        ]
        if run.ended is not None:
            line3.append((Text(f"  — {run.ended}: r results · q leave", bold), 9))
        elif run.read_only_reason is not None:
            line3.append((Text("  read-only: this database cannot be written here, so no key steers", bold), 9))
        elif not run.running():
            line3.append((Text("  — not running: nothing applies a request", bold), 9))
        else:
            line3.append((Text("   + / - step · c set · [ ] cap · p pause · a tuner (asked of the run)",
                               Style(dim=True)), 1))
        out = Text(no_wrap=True, overflow="ellipsis")
        for i, parts in enumerate((line1, line2, line3)):
            if i:
                out.append("\n")
            out.append_text(fit_line(parts, width))
        self.query_one("#status", StatusBar).show(out)

    def _sweep_active(self) -> bool:
        if self.watched.ended is not None:
            return False
        if not self.watched.running():
            self.notify("The run is not running: nothing would apply a request.", timeout=4)
            return False
        return True

    def action_toggle_tuner(self) -> None:
        if self._sweep_active():
            on = not self.watched.tuner.enabled
            self.watched.tuner.toggle()
            self.notify(f"Asked the run: auto-tuner {'on' if on else 'off'}", timeout=3)

    def action_results(self) -> None:
        """The run's results: of several shards, merged as `arena merge` would (once every shard has ended)."""
        if self.watched.live.snapshot().done == 0:
            super().action_results()  # (says there is nothing yet)
            return
        try:
            path = self.watched.results_db()
        except ArenaError as e:
            self.notify(one_line(str(e), 400), title="No merged results yet", severity="warning", timeout=10,
                        markup=False)
            return
        self.app.push_screen(Results(path, self.watched.run_id))

    def action_stop(self) -> None:
        """q leaves the watcher; the run goes on (stop it where it runs)."""
        self.app.exit()

    @on(CallMatrix.CellSelected)
    def _cell_selected(self, event: CallMatrix.CellSelected) -> None:
        event.prevent_default()  # the run screen's call detail reads the plan of a sweep in this process
        self.notify("A watcher shows figures, not calls: r opens the stored calls.", timeout=4)

    @on(ModelTable.RowSelected)
    def _model_selected(self, event: ModelTable.RowSelected) -> None:
        event.prevent_default()
        m = next((m for m in self.watched.live.snapshot().models if m.key == self._highlighted_model()), None)
        if m is not None and m.common_error is not None:
            self.notify(one_line(f"{m.key}: most common error ({m.common_error[1]}×): {m.common_error[0]}", 400),
                        timeout=10, markup=False)


class WatchApp(App[None]):
    """The watcher: one WatchScreen, themes as the console has them."""

    CSS_PATH = "app.tcss"
    TITLE = "arena watch"

    def __init__(self, run: WatchedRun, *, theme: str | None = None) -> None:
        super().__init__()
        self.watched = run
        use_themes(self, theme)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(STATE_VARIABLES)

    def on_mount(self) -> None:
        self.push_screen(WatchScreen(self.watched))

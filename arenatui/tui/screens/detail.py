"""The call detail: one (model, case) with every trial as stored."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from arenatui.live import STATE_NAMES
from arenatui.safe_text import literal
from arenatui.sweep import Sweep
from arenatui.tui.screens.common import fmt_num


class CallDetail(ModalScreen[None]):
    """One (model, case): every trial as stored, read in a thread; sealed cases show only scores."""

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close")]

    def __init__(self, sweep: Sweep, model_index: int, case_index: int) -> None:
        super().__init__()
        self.sweep = sweep
        self.model_key = sweep.plan.models[model_index].key
        self.case = sweep.plan.cases[case_index]
        self.model_index = model_index
        self.case_index = case_index

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            title = Text("Call ", style="bold")
            title.append(literal(self.model_key, newlines=False))
            title.append(" × ")
            title.append(literal(self.case.id, newlines=False))
            if self.case.sealed:
                title.append("   (sealed: input, expected and output are never shown)", style="italic")
            yield Label(title)
            with VerticalScroll(id="detail-body"):
                yield Static(Text("loading…"), id="detail-text")

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, group="detail", exit_on_error=False)
    def _load(self) -> None:
        from arenatui.store import Store

        rows: list[dict[str, Any] | None] = []
        with Store(self.sweep.db_path) as store:
            for trial in range(self.sweep.plan.trials):
                row = store.result(self.sweep.run_id, self.model_key, self.case.id, trial)
                if row is not None:  # the attempt history: why a call needed more than one attempt
                    row["failed_attempts"] = store.failed_attempts(self.sweep.run_id, self.model_key, self.case.id,
                                                                   trial)
                rows.append(row)
        self.app.call_from_thread(self.show_rows, rows)

    def show_rows(self, rows: list[dict[str, Any] | None]) -> None:
        self.query_one("#detail-text", Static).update(self.render_rows(rows))

    def render_rows(self, rows: list[dict[str, Any] | None]) -> Text:
        out = Text()
        sealed = self.case.sealed
        label = Style(bold=True)
        if not sealed:
            out.append("input\n", label)
            out.append(literal(self.case.prompt_text()))
            out.append("\n\nexpected\n", label)
            out.append(literal(self.case.expected if self.case.expected is not None else "(none)"))
            out.append("\n")
        counts = self.sweep.live.cell(self.model_index, self.case_index)
        for trial, row in enumerate(rows):
            out.append(f"\ntrial {trial}  ", label)
            if row is None:
                live = ", ".join(f"{n} {STATE_NAMES[i]}" for i, n in enumerate(counts) if n)
                out.append(f"not stored yet (this cell now: {live})\n")
                continue
            out.append(literal(str(row["status"]), newlines=False))
            score = row["score"]
            out.append(f"   score {score:.3f}" if score is not None else "   score -")
            out.append(f"   attempts {row['attempts']}   latency {fmt_num(row['latency_ms'], ' ms')}"
                       f"   total {fmt_num(row['total_ms'], ' ms')}   TTFT {fmt_num(row['ttft_ms'], ' ms')}"
                       f"   tokens {row['input_tokens']}→{row['output_tokens']}\n")
            if row["connect_ms"] is not None and row["connect_ms"] >= 1.0:
                # worth a line only when it is: a new connection (TCP, TLS), or arenatui itself running behind
                out.append(f"request on the wire after {fmt_num(row['connect_ms'], ' ms')} (connecting, TLS, client "
                           f"queueing; not in the latency)\n")
            for fa in row.get("failed_attempts") or ():
                out.append(f"  attempt {fa['attempt']} failed: ", label)
                out.append(literal(str(fa["error_class"]), newlines=False))
                if fa["http_status"] is not None:
                    out.append(f" (HTTP {fa['http_status']})")
                if fa["retry_after_s"] is not None:
                    out.append(f", asked to wait {fa['retry_after_s']:.2f}s")
                if fa["delay_s"] is not None:
                    out.append(f", slept {fa['delay_s']:.2f}s")
                out.append("\n")
            if row["error_class"]:
                out.append("error ", label)
                out.append(literal(str(row["error_class"]), newlines=False))
                out.append(": ")
                out.append(literal(row["error_message"]))
                out.append("\n")
            if not sealed:
                out.append("output\n", label)
                out.append(literal(row["output"]) if row["output"] is not None else Text("(none)"))
                out.append("\n")
        return out



"""The call detail: one (model, case) with every trial as stored, long texts cut to a screenful's worth."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from arenatui.engine.sealed import scrub_sealed
from arenatui.errors import ArenaError
from arenatui.live import STATE_NAMES
from arenatui.safe_text import literal, one_line
from arenatui.sweep import Sweep
from arenatui.tui.screens.common import fmt_num

SCORER_WORDS = {"exact": "exact match", "contains": "must contain the expected answer",
                "regex": "must match a pattern", "choice": "the chosen option must be the expected one",
                "numeric": "the last number must equal the expected one", "json_valid": "must be valid JSON",
                "json_schema": "must validate against a JSON Schema", "f1": "the label must be the expected one",
                "python": "a function of the project's", "code_exec": "the code must pass the case's tests"}
"""What each scorer kind asks of an answer, for a failed trial's "why"."""

PREVIEW_CHARS = 20_000
"""Characters of an output (or a case's input) read and shown: pages of text, where a whole 50 MB answer
froze the console for 40 s at 3.3 GB. The whole of an output is one key away (s saves it to a file)."""


def _file_part(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("._")[:60] or "x"


class CallDetail(ModalScreen[None]):
    """One (model, case): every trial as stored, read in a thread; sealed cases show only scores."""

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close"),
                Binding("s", "save_outputs", "Save whole outputs to files")]

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
            if not self.case.sealed:
                yield Label(Text(f"s saves each trial's whole output to a file (shown: the first {PREVIEW_CHARS:,} "
                                 "characters)   Escape closes"), classes="hint")

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, group="detail", exit_on_error=False)
    def _load(self) -> None:
        from arenatui.store import Store

        rows: list[dict[str, Any] | None] = []
        with Store(self.sweep.db_path) as store:
            for trial in range(self.sweep.plan.trials):
                row = store.result_preview(self.sweep.run_id, self.model_key, self.case.id, trial, PREVIEW_CHARS)
                if row is not None:  # the attempt history: why a call needed more than one attempt
                    row["failed_attempts"] = store.failed_attempts(self.sweep.run_id, self.model_key, self.case.id,
                                                                   trial)
                rows.append(row)
        self.app.call_from_thread(self.show_rows, rows)

    def action_save_outputs(self) -> None:
        if self.case.sealed:
            self.notify("This case is sealed: its outputs are never shown or exported.", severity="warning",
                        markup=False)
            return
        try:
            folder = Path.cwd()
        except OSError as e:  # the folder the console was started in is gone
            self.notify(f"Could not save the output: no current folder ({e})", severity="error", markup=False)
            return
        self._save(folder)

    @work(thread=True, group="detail-save", exit_on_error=False)
    def _save(self, folder: Path) -> None:
        from arenatui.store import Store

        saved: list[tuple[Path, int]] = []
        try:
            with Store(self.sweep.db_path) as store:
                for trial in range(self.sweep.plan.trials):
                    dest = folder / (f"arena-output-{_file_part(self.sweep.run_id)}-{_file_part(self.model_key)}-"
                                     f"{_file_part(self.case.id)}-t{trial}.txt")
                    n = store.save_output(self.sweep.run_id, self.model_key, self.case.id, trial, dest)
                    if n is not None:
                        saved.append((dest, n))
        except (OSError, sqlite3.Error, ArenaError) as e:  # a read-only folder, a full disk, a locked database
            self.app.call_from_thread(self.notify, f"Could not save the output into {folder}: {e}",
                                      severity="error", markup=False)
            return
        if not saved:
            msg = "No output stored for this call yet."
        elif len(saved) <= 3:
            msg = "Saved " + "; ".join(f"{p} ({n:,} bytes)" for p, n in saved)
        else:
            msg = f"Saved {len(saved)} files ({sum(n for _, n in saved):,} bytes) in {folder}: {saved[0][0].name} …"
        self.app.call_from_thread(self.notify, msg, timeout=15, markup=False)

    def show_rows(self, rows: list[dict[str, Any] | None]) -> None:
        self.query_one("#detail-text", Static).update(self.render_rows(rows))

    def _why_failed(self, row: dict[str, Any]) -> Text:
        """A failed (answered) trial's reason in words: which scorer, what it wanted (unless sealed)."""
        scorers = self.sweep.plan.project.scorers
        name = self.case.scorer or (scorers[0].name if scorers else "?")
        kind = next((sc.kind for sc in scorers if sc.name == name), "?")
        score = row["score"]
        why = Text(f"scored {score:g} by {name} ({SCORER_WORDS.get(kind, kind)})" if score is not None else
                   f"not passed by {name} ({SCORER_WORDS.get(kind, kind)})")
        if self.case.sealed:
            why.append(": the expected answer is sealed")
        elif self.case.expected is not None:
            why.append(": expected ")
            why.append(literal(one_line(self.case.expected, 120), "bold", newlines=False))
        mode = row.get("failure_mode")
        if mode and mode not in ("none", "wrong_answer"):
            why.append("; failed as ")
            why.append(mode, "bold")
        detail = row.get("score_detail")
        if detail and not self.case.sealed:
            why.append(" (")
            why.append(literal(one_line(detail, 200), newlines=False))
            why.append(")")
        return why

    def render_rows(self, rows: list[dict[str, Any] | None]) -> Text:
        out = Text()
        sealed = self.case.sealed
        label = Style(bold=True)
        if not sealed:
            out.append("input\n", label)
            prompt = self.case.prompt_text()
            out.append(literal(prompt[:PREVIEW_CHARS]))
            if len(prompt) > PREVIEW_CHARS:
                out.append(f"\n… the first {PREVIEW_CHARS:,} of {len(prompt):,} characters", "italic")
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
            out.append(f"   attempts {row['attempts']}\n")
            # the figures on a line of their own, short enough for an 80-column dialog (no orphaned "8→52")
            figures = [f"latency {fmt_num(row['latency_ms'], ' ms')}", f"total {fmt_num(row['total_ms'], ' ms')}",
                       f"TTFT {fmt_num(row['ttft_ms'], ' ms')}", f"tokens {row['input_tokens']}→{row['output_tokens']}"]
            out.append("  " + " · ".join(figures) + "\n")
            if row["status"] == "failed":
                out.append("why ", label)
                out.append_text(self._why_failed(row))
                out.append("\n")
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
                out.append("why ", label)
                out.append(literal(str(row["error_class"]), newlines=False))
                out.append(": ")
                out.append(literal(scrub_sealed(self.case, row["error_message"])))
                out.append("\n")
            if not sealed:
                out.append("output\n", label)
                output = row["output"]
                out.append(literal(output[:PREVIEW_CHARS]) if output is not None else Text("(none)"))
                total = row.get("output_chars")
                if output is not None and total is not None and total > len(output[:PREVIEW_CHARS]):
                    out.append(f"\n… the first {PREVIEW_CHARS:,} of {total:,} characters: s saves the whole output "
                               "to a file", "italic")
                out.append("\n")
        return out



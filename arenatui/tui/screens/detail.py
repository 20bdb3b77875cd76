"""The call detail: one (model, case) with every trial as stored, long texts cut to a screenful's worth; on a judge
lane's row, every judge call of that case (one per model and trial) with its verdict and the judge's answer."""

from __future__ import annotations

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

from arenatui.config.schema import JUDGE_LANE_PREFIX, ScorerConfig
from arenatui.engine.sealed import scrub_sealed
from arenatui.figures import money
from arenatui.live import STATE_NAMES
from arenatui.plan import judge_trial
from arenatui.redact import redact_urls_in_text
from arenatui.safe_text import literal, one_line
from arenatui.sweep import Sweep
from arenatui.tui.outputs import PREVIEW_CHARS, ask_save_folder, preview, save_and_tell
from arenatui.tui.screens.common import fmt_num
from arenatui.wording import plural

SCORER_WORDS = {"exact": "exact match", "contains": "must contain the expected answer",
                "regex": "must match a pattern", "choice": "the chosen option must be the expected one",
                "numeric": "the last number must equal the expected one", "json_valid": "must be valid JSON",
                "json_schema": "must validate against a JSON Schema", "f1": "the label must be the expected one",
                "python": "a function of the project's", "code_exec": "the code must pass the case's tests",
                "llm_judge": "a judge model's verdict"}
"""What each scorer kind asks of an answer, for a failed trial's "why"."""

def common_error_text(model_key: str, message: str, n: int, errored: int) -> Text:
    """Why a model's calls fail: its most common error message on one line (URL credentials redacted, shown
    literally), and how many of its errored calls said it."""
    out = Text("most common error ", style="bold")
    out.append(literal(model_key, newlines=False))
    out.append(f": {n} of {errored} errored calls said: ")
    out.append(literal(one_line(redact_urls_in_text(message), 300), newlines=False))
    return out


class CallDetail(ModalScreen[None]):
    """One (model, case): every trial as stored, read in a thread; sealed cases show only scores."""

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close"),
                Binding("s", "save_outputs", "Save whole outputs to files")]

    def __init__(self, sweep: Sweep, model_index: int, case_index: int, *,
                 model_errors: tuple[str, int, int] | None = None) -> None:
        super().__init__()
        self.model_errors = model_errors
        """Opened from the model's row: its most common error message, the calls that said it, its errored calls."""
        self.sweep = sweep
        self.model_key = sweep.live.row_keys[model_index]
        """The row's key: a model's, or a judge lane's (``judge:<model key>``)."""
        self.judge_lane = sweep.live.is_judge(model_index)
        self.case = sweep.plan.cases[case_index]
        self.model_index = model_index
        self.case_index = case_index

    def _scorer(self) -> ScorerConfig | None:
        scorers = self.sweep.plan.project.scorers
        name = self.case.scorer or (scorers[0].name if scorers else None)
        return next((sc for sc in scorers if sc.name == name), None)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog detail"):
            title = Text("Judge calls " if self.judge_lane else "Call ", style="bold")
            title.append(literal(self.model_key, newlines=False))
            title.append(" × ")
            title.append(literal(self.case.id, newlines=False))
            if self.case.sealed:
                title.append("   (sealed: input, expected and output are never shown)", style="italic")
            yield Label(title)
            if self.model_errors is not None:
                yield Static(common_error_text(self.model_key, *self.model_errors), id="model-errors")
            with VerticalScroll(id="detail-body"):
                yield Static(Text("loading…"), id="detail-text")
            if self.judge_lane:
                yield Label(Text(f"shown: the first {PREVIEW_CHARS:,} characters of each judge's answer   Escape "
                                 "closes"), classes="hint")
            elif not self.case.sealed:
                yield Label(Text(f"s saves each trial's whole output to a file (shown: the first {PREVIEW_CHARS:,} "
                                 "characters)   Escape closes"), classes="hint")

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, group="detail", exit_on_error=False)
    def _load(self) -> None:
        from arenatui.store import Store
        from arenatui.store.queries import judgment_dicts

        rows: list[dict[str, Any] | None] = []
        run_id, plan = self.sweep.run_id, self.sweep.plan
        with Store(self.sweep.db_path) as store:
            if self.judge_lane:
                self.app.call_from_thread(self.show_judgments, self._judge_calls(store, judgment_dicts(
                    store, run_id, self.case.id, judge_key=self.model_key.removeprefix(JUDGE_LANE_PREFIX))))
                return
            verdicts = {j["trial"]: j for j in judgment_dicts(store, run_id, self.case.id, model_key=self.model_key)}
            for trial in range(plan.trials):
                row = store.result_preview(run_id, self.model_key, self.case.id, trial, PREVIEW_CHARS)
                if row is not None:  # the attempt history: why a call needed more than one attempt
                    row["failed_attempts"] = store.failed_attempts(run_id, self.model_key, self.case.id, trial)
                    row["judgment"] = verdicts.get(trial)
                rows.append(row)
        self.app.call_from_thread(self.show_rows, rows)

    def _judge_calls(self, store: Any, stored: list[dict[str, Any]]) -> list[tuple[str, int, dict[str, Any] | None]]:
        """Every judge call this lane makes on the case, (candidate model, trial, stored judgment or None), with
        its failed attempts (stored under the lane and the judge call's trial)."""
        plan = self.sweep.plan
        by_call = {(j["model_key"], j["trial"]): j for j in stored}
        out: list[tuple[str, int, dict[str, Any] | None]] = []
        for mi, m in enumerate(plan.models):
            for trial in range(plan.trials):
                j = by_call.get((m.key, trial))
                if j is not None:
                    j["failed_attempts"] = store.failed_attempts(self.sweep.run_id, self.model_key, self.case.id,
                                                                 judge_trial(mi, trial, plan.trials))
                out.append((m.key, trial, j))
        return out

    def action_save_outputs(self) -> None:
        if self.judge_lane:
            self.notify("A judge lane's answers are shown here (the first "
                        f"{PREVIEW_CHARS:,} characters of each); s saves a model's outputs.", markup=False)
            return
        ask_save_folder(self.app, self.sweep.run_id, sealed=self.case.sealed, then=self._save)

    @work(thread=True, group="detail-save", exit_on_error=False)
    def _save(self, folder: Path) -> None:
        calls = [(self.model_key, trial) for trial in range(self.sweep.plan.trials)]
        save_and_tell(self.app, self.sweep.db_path, self.sweep.run_id, self.case.id, calls, folder)

    def show_rows(self, rows: list[dict[str, Any] | None]) -> None:
        self.query_one("#detail-text", Static).update(self.render_rows(rows))

    def show_judgments(self, calls: list[tuple[str, int, dict[str, Any] | None]]) -> None:
        self.query_one("#detail-text", Static).update(self.render_judgments(calls))

    def _case_text(self, out: Text) -> None:
        """The case's input and expected answer (never a sealed case's)."""
        label = Style(bold=True)
        out.append("input\n", label)
        prompt = self.case.prompt_text()
        preview(out, prompt, len(prompt), save_hint=False)
        out.append("\nexpected\n", label)
        out.append(literal(self.case.expected if self.case.expected is not None else "(none)"))
        out.append("\n")

    def _judge_words(self) -> Text:
        """Which scorer judges this case, on what scale, and how much of its cases it judges."""
        sc = self._scorer()
        out = Text()
        if sc is None or sc.kind != "llm_judge":
            return out
        out.append("scored by ")
        out.append(literal(sc.name, "bold", newlines=False))
        out.append(" (llm_judge, judge ")
        out.append(literal(sc.judge or "?", newlines=False))
        out.append(f", scale {sc.scale}")
        if sc.scale_range() is not None:
            out.append(f", passes from {sc.passing_verdict():g}")
        if sc.sample != 1.0:
            out.append(f", sample {sc.sample:g}" + (" of its cases" if sc.sample < 1.0 else " cases"))
        out.append(")")
        return out

    def render_judgments(self, calls: list[tuple[str, int, dict[str, Any] | None]]) -> Text:
        """A judge lane's cell: each judge call of the case, its verdict on the model's answer and its own figures."""
        out = Text()
        label = Style(bold=True)
        sealed = self.case.sealed
        lane_case = self.case.id in next((set(j.case_ids) for j in self.sweep.plan.judges
                                          if j.key == self.model_key), set())
        out.append("A judge lane: one judge call per model and trial that answered this case; its verdict is that "
                   "answer's score.\n")
        out.append_text(self._judge_words())
        out.append("\n")
        if not lane_case:
            out.append("\nThis case is not judged by this judge (another scorer, or outside its sample): its answers "
                       "are scored otherwise or stay unscored.\n", "italic")
            return out
        if not sealed:
            out.append("\n")
            self._case_text(out)
        counts = self.sweep.live.cell(self.model_index, self.case_index)
        for model_key, trial, j in calls:
            out.append("\n")
            out.append(literal(model_key, "bold", newlines=False))
            out.append(f" trial {trial}  ", label)
            if j is None:
                live = ", ".join(f"{n} {STATE_NAMES[i]}" for i, n in enumerate(counts) if n)
                out.append(f"not judged yet (this lane on this case now: {live})\n")
                continue
            out.append(literal(str(j["status"]), newlines=False))
            if j["score_detail"] and not sealed:
                out.append("   ")
                out.append(literal(one_line(j["score_detail"], 80), newlines=False))
            out.append(f"   attempts {j['attempts']}\n")
            figures = [f"latency {fmt_num(j['latency_ms'], ' ms')}", f"total {fmt_num(j['total_ms'], ' ms')}",
                       f"tokens {j['input_tokens']}→{j['output_tokens']}", f"cost {money(j['cost'])}"]
            out.append("  " + " · ".join(figures) + "\n")
            self._attempts(out, j.get("failed_attempts") or ())
            self._why_errored(out, j)
            if not sealed:
                out.append("judge's answer\n", label)
                self._output(out, j["output"], j.get("output_chars"), save_hint=False)
        return out

    def _why_errored(self, out: Text, call: dict[str, Any]) -> None:
        """Why a call (or a judge call) ended errored, its message shown literally and without a sealed case's text."""
        if call["error_class"]:
            out.append("why ", Style(bold=True))
            out.append(literal(str(call["error_class"]), newlines=False))
            out.append(": ")
            out.append(literal(scrub_sealed(self.case, call["error_message"])))
            out.append("\n")
            if call["error_class"] == "solver_error" and call.get("score_detail") and not self.case.sealed:
                out.append("solver traceback\n", Style(bold=True))  # the one-line message above is its last line
                out.append(literal(call["score_detail"]))
                out.append("\n")

    def _attempts(self, out: Text, failed: Any) -> None:
        label = Style(bold=True)
        for fa in failed:
            out.append(f"  attempt {fa['attempt']} failed: ", label)
            out.append(literal(str(fa["error_class"]), newlines=False))
            if fa["http_status"] is not None:
                out.append(f" (HTTP {fa['http_status']})")
            if fa["retry_after_s"] is not None:
                out.append(f", asked to wait {fa['retry_after_s']:.2f}s")
                if fa.get("retry_after_source"):
                    out.append(" (")
                    out.append(literal(str(fa["retry_after_source"]), newlines=False))
                    out.append(")")
            elif fa["error_class"] == "rate_limited" and fa["delay_s"] is not None:
                out.append(", with no retry hint (no Retry-After or rate-limit reset header): backed off")
            if fa["delay_s"] is not None:
                out.append(f", slept {fa['delay_s']:.2f}s")
            out.append("\n")

    def _output(self, out: Text, output: str | None, total: int | None, *, save_hint: bool = True) -> None:
        preview(out, output, total, save_hint=save_hint)

    def _why_unscored(self, row: dict[str, Any]) -> Text:
        """An unscored trial: answered, and why it has no score (yet)."""
        sc = self._scorer()
        judge = (sc.judge or "?") if sc is not None else "?"
        if row.get("failure_mode") == "unjudged":
            why = Text("answered, not scored: this case is outside the sample of the llm_judge scorer ")
            why.append(literal(sc.name if sc is not None else "?", "bold", newlines=False))
            why.append(f" (sample {sc.sample:g})" if sc is not None else "")
            why.append("; it never will be, and counts as answered, not in the pass rate")
            return why
        why = Text("answered, awaiting its judge ")
        why.append(literal(JUDGE_LANE_PREFIX + judge, "bold", newlines=False))
        why.append(": scored when the judge answers (resume judges what an interrupted run left)")
        return why

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
            self._case_text(out)
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
            elif row["status"] == "unscored":
                out.append("why ", label)
                out.append_text(self._why_unscored(row))
                out.append("\n")
            j = row.get("judgment")
            if j is not None:  # the verdict that scored it, and what judging it cost (apart from the answer's)
                out.append("judge ", label)
                out.append(literal(JUDGE_LANE_PREFIX + str(j["judge_key"]), newlines=False))
                out.append(f": {j['status']}")
                if j["score_detail"] and not sealed:
                    out.append(" (")
                    out.append(literal(one_line(j["score_detail"], 80), newlines=False))
                    out.append(")")
                out.append(f" · {plural(j['attempts'], 'attempt')} · {money(j['cost'])}")
                if not sealed and j["output"]:
                    out.append(" · said: ")
                    out.append(literal(one_line(j["output"], 160), newlines=False))
                out.append("\n")
            if row["connect_ms"] is not None and row["connect_ms"] >= 1.0:
                # worth a line only when it is: a new connection (TCP, TLS), or arenatui itself running behind
                out.append(f"request on the wire after {fmt_num(row['connect_ms'], ' ms')} (connecting, TLS, client "
                           f"queueing; not in the latency)\n")
            self._attempts(out, row.get("failed_attempts") or ())
            self._why_errored(out, row)
            if not sealed:
                out.append("output\n", label)
                self._output(out, row["output"], row.get("output_chars"))
        return out



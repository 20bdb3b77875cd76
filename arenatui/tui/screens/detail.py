"""The call detail: one (model, case) with every trial as stored, long texts cut to a screenful's worth; on a judge
lane's row, every judge call of that case (one per model and trial) with its verdict and the judge's answer."""

from __future__ import annotations

import functools
from pathlib import Path

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
from arenatui.kernel.events import DeclaredLimits
from arenatui.kernel.redact import redact_urls_in_text
from arenatui.kernel.text import one_line
from arenatui.plan import judge_trial
from arenatui.present.safe_text import literal
from arenatui.session.live import STATE_NAMES
from arenatui.session.sweep import Sweep
from arenatui.store.queries import CallRow, JudgmentRow, call_details, judge_calls
from arenatui.tui.call_text import PREVIEW_CHARS, CallContext, call_text, case_text, judgment_text
from arenatui.tui.outputs import ask_save_folder, save_and_tell


def common_error_text(model_key: str, message: str, n: int, errored: int) -> Text:
    """Why a model's calls fail: its most common error message on one line (URL credentials redacted, shown
    literally), and how many of its errored calls said it."""
    out = Text("most common error ", style="bold")
    out.append(literal(model_key, newlines=False))
    out.append(f": {n} of {errored} errored calls said: ")
    out.append(literal(one_line(redact_urls_in_text(message), 300), newlines=False))
    return out


def declared_text(model_key: str, limits: DeclaredLimits) -> Text:
    """The rate limits a model's provider states in its response headers (the latest): requests and tokens per
    minute, what is left of them, and when they reset."""
    out = Text("declared limits ", style="bold")
    out.append(literal(model_key, newlines=False))
    out.append(f": {limits.describe().removeprefix('declares ')}")
    resets = [f"{what} reset in {s:.1f} s" for what, s in (("requests", limits.requests_reset_s),
                                                             ("tokens", limits.tokens_reset_s)) if s is not None]
    if resets:
        out.append(f"; {', '.join(resets)}")
    out.append(" (the provider's response headers)", style="italic")
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
            snap = self.sweep.live.snapshot().models
            declared = snap[self.model_index].declared if 0 <= self.model_index < len(snap) else None
            if declared is not None:  # what the model's provider states of its rate limits, latest first
                yield Static(declared_text(self.model_key, declared), id="model-declared")
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

        run_id, plan = self.sweep.run_id, self.sweep.plan
        with Store(self.sweep.db_path) as store:
            if self.judge_lane:
                lanes = {m.key: mi for mi, m in enumerate(plan.models)}
                judged = judge_calls(store, run_id, self.case.id, self.model_key.removeprefix(JUDGE_LANE_PREFIX),
                                     lambda lane, trial: judge_trial(lanes.get(lane, -1), trial, plan.trials))
                self.app.call_from_thread(self.show_judgments, self._judge_calls(judged))
                return
            stored = {r.trial: r for r in call_details(store, run_id, self.case.id, lane=self.model_key,
                                                       preview=PREVIEW_CHARS, final=False)}
        self.app.call_from_thread(self.show_rows, [stored.get(trial) for trial in range(plan.trials)])

    def _judge_calls(self, stored: list[JudgmentRow]) -> list[tuple[str, int, JudgmentRow | None]]:
        """Every judge call this lane makes on the case: (candidate model, trial, stored judgment or None)."""
        plan = self.sweep.plan
        by_call = {(j.model_key, j.trial): j for j in stored}
        return [(m.key, trial, by_call.get((m.key, trial))) for m in plan.models for trial in range(plan.trials)]

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

    def show_rows(self, rows: list[CallRow | None]) -> None:
        self.query_one("#detail-text", Static).update(self.render_rows(rows))

    def show_judgments(self, calls: list[tuple[str, int, JudgmentRow | None]]) -> None:
        self.query_one("#detail-text", Static).update(self.render_judgments(calls))

    def context(self) -> CallContext:
        """What the call renderer needs of this case: its scorer, expected answer and whether it is sealed."""
        sc = self._scorer()
        case = self.case
        return CallContext(sealed=case.sealed, expected=None if case.sealed else case.expected,
                           scorer=sc.name if sc is not None else None, scorer_kind=sc.kind if sc is not None else None,
                           judge=sc.judge if sc is not None else None, sample=sc.sample if sc is not None else None,
                           scrub=functools.partial(scrub_sealed, case) if case.sealed else None,
                           save_hint=not self.judge_lane)

    def _case_text(self) -> Text:
        """The case's input and expected answer (never a sealed case's)."""
        return case_text(self.case.prompt_text(), self.case.expected)

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

    def _live_now(self) -> str:
        counts = self.sweep.live.cell(self.model_index, self.case_index)
        return ", ".join(f"{n} {STATE_NAMES[i]}" for i, n in enumerate(counts) if n)

    def render_judgments(self, calls: list[tuple[str, int, JudgmentRow | None]]) -> Text:
        """A judge lane's cell: each judge call of the case, its verdict on the model's answer and its own figures."""
        out = Text()
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
        if not self.case.sealed:
            out.append("\n")
            out.append_text(self._case_text())
        ctx = self.context()
        for model_key, trial, j in calls:
            out.append("\n")
            out.append(literal(model_key, "bold", newlines=False))
            out.append(f" trial {trial}  ", Style(bold=True))
            if j is None:
                out.append(f"not judged yet (this lane on this case now: {self._live_now()})\n")
                continue
            out.append_text(judgment_text(j, ctx))
        return out

    def render_rows(self, rows: list[CallRow | None]) -> Text:
        """Every trial of the cell: each stored call as `call_text` renders it, or what the live metrics say of it."""
        out = Text()
        if not self.case.sealed:
            out.append_text(self._case_text())
        ctx = self.context()
        for trial, row in enumerate(rows):
            out.append("\n")
            if row is None:
                out.append(f"trial {trial}  ", Style(bold=True))
                out.append(f"not stored yet (this cell now: {self._live_now()})\n")
                continue
            out.append_text(call_text(row, ctx))
        return out

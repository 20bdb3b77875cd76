"""One stored call as text, the same in every view that opens it (the console's call detail, the results view's case
detail): its outcome and why, its figures, failed attempts, repair steps, the judge's verdict and its output, from
one typed row (`store.queries.CallRow`). Textual-free; untrusted text enters only through `safe_text`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from arenatui.kernel.events import JUDGE_LANE_PREFIX, split_lane
from arenatui.kernel.text import one_line
from arenatui.kernel.units import money, ms
from arenatui.present.safe_text import literal
from arenatui.store.queries import CallRow, CallStep, FailedAttempt, JudgmentRow

PREVIEW_CHARS = 20_000
"""Characters of an output (or a case's input) read and shown: pages of text, where a whole 50 MB answer
froze the console for 40 s at 3.3 GB. The whole of an output is one key away (s saves it to a file)."""

SCORER_WORDS = {"exact": "exact match", "contains": "must contain the expected answer",
                "regex": "must match a pattern", "choice": "the chosen option must be the expected one",
                "numeric": "the last number must equal the expected one", "json_valid": "must be valid JSON",
                "json_schema": "must validate against a JSON Schema", "f1": "the label must be the expected one",
                "python": "a function of the project's", "code_exec": "the code must pass the case's tests",
                "llm_judge": "a judge model's verdict"}
"""What each scorer kind asks of an answer, for a failed call's "why"."""

_LABEL = Style(bold=True)


@dataclass(frozen=True, slots=True)
class CallContext:
    """What a call's text needs besides its row: the case's scorer and expected answer (a failure's "why"), whether
    the case is sealed (then no input, expected answer, output or judge's answer is shown)."""

    sealed: bool = False
    expected: str | None = None
    """The case's expected answer (None for a sealed case or one without)."""
    scorer: str | None = None
    """The name of the case's scorer, when known."""
    scorer_kind: str | None = None
    judge: str | None = None
    """The judge's model key, when the scorer is an llm_judge."""
    sample: float | None = None
    """The llm_judge scorer's sample, as configured."""
    scrub: Callable[[str | None], str | None] | None = None
    """Removes a sealed case's texts from an error message (a provider's error may echo the prompt)."""
    save_hint: bool = True
    """The view saves whole outputs with `s`: a cut output says so."""

    def message(self, text: str | None) -> Text:
        return literal(self.scrub(text) if self.scrub is not None else text)


def preview(out: Text, text: str | None, total: int | None, *, save_hint: bool = True, none: str = "(none)") -> None:
    """Append the first PREVIEW_CHARS of `text` (untrusted: literal) and, when `total` says there is more, how much
    there is and how to get it."""
    out.append(literal(text[:PREVIEW_CHARS]) if text is not None else Text(none))
    if text is not None and total is not None and total > len(text[:PREVIEW_CHARS]):
        out.append(f"\n… the first {PREVIEW_CHARS:,} of {total:,} characters"
                   + (": s saves the whole output to a file" if save_hint else ""), "italic")
    out.append("\n")


def case_text(prompt: str, expected: str | None) -> Text:
    """A case's input and expected answer (never a sealed case's: the caller does not ask)."""
    out = Text()
    out.append("input\n", _LABEL)
    preview(out, prompt, len(prompt), save_hint=False)
    out.append("expected\n", _LABEL)
    preview(out, expected, None if expected is None else len(expected), save_hint=False)
    return out


def call_text(r: CallRow, ctx: CallContext) -> Text:
    """One stored call: outcome, score and attempts; its figures on a line short enough for an 80-column dialog; why
    it failed, is unscored or errored; how long it took to connect; each failed attempt; its repair steps; the
    judge's verdict; its output (none of a sealed case's texts)."""
    out = Text()
    out.append(f"trial {r.trial}  ", _LABEL)
    out.append(literal(r.status, newlines=False))
    out.append(f"   score {r.score:.3f}" if r.score is not None else "   score -")
    out.append(f"   attempts {r.attempts}")
    variant = split_lane(r.model_key)[1]
    if variant:  # the console's title names the lane; the results view's column only the model
        out.append("   variant ")
        out.append(literal(variant, newlines=False))
    out.append("\n")
    tokens = f"{r.input_tokens}→{r.output_tokens}" + (" (estimated)" if r.tokens_estimated else "")
    out.append(_figures(("latency", ms(r.latency_ms, " ms")), ("total", ms(r.total_ms, " ms")),
                        ("TTFT", ms(r.ttft_ms, " ms")), ("tokens", tokens), ("cost", money(r.cost))))
    if r.reasoning_tokens is not None or r.reasoning is not None:  # a reasoning model: its thinking apart
        thought = "–" if r.reasoning_tokens is None else f"{r.reasoning_tokens}" + (
            " (estimated)" if r.reasoning_estimated else "")
        out.append(_figures(("reasoning tokens", thought), ("first answer token", ms(r.answer_ttft_ms, " ms"))))
    if r.status == "failed":
        out.append("why ", _LABEL)
        out.append_text(_why_failed(r, ctx))
        out.append("\n")
    elif r.status == "unscored":
        out.append("why ", _LABEL)
        out.append_text(_why_unscored(r, ctx))
        out.append("\n")
    judge_said = r.judgment is not None and r.judgment.error_class == r.error_class
    if r.error_class and not judge_said:  # a judge_error is the judge call's: its block below says why
        out.append_text(_why_errored(r.error_class, r.error_message, r.http_status, ctx))
        if r.error_class == "solver_error" and r.score_detail and not ctx.sealed:
            out.append("solver traceback\n", _LABEL)  # the one-line message above is its last line
            out.append(literal(r.score_detail))
            out.append("\n")
        elif r.error_class == "incomplete_stream" and r.score_detail and not ctx.sealed:
            out.append("what the stream carried (not an answer) ", _LABEL)
            out.append(literal(r.score_detail))
            out.append("\n")
    if r.connect_ms is not None and r.connect_ms >= 1.0:
        # worth a line only when it is: a new connection (TCP, TLS), or arenatui itself running behind
        out.append(f"request on the wire after {ms(r.connect_ms, ' ms')} (connecting, TLS, client queueing; not in "
                   "the latency)\n")
    out.append_text(attempts_text(r.failed_attempts))
    out.append_text(_steps_text(r, ctx))
    if r.judgment is not None:
        out.append_text(judgment_text(r.judgment, ctx))
    # an answer that could not be scored (scoring_error, judge_error) is kept: shown like any answer
    if not ctx.sealed and r.reasoning is not None:
        out.append("reasoning (never scored)\n", _LABEL)
        preview(out, r.reasoning, len(r.reasoning), save_hint=False)
    if not ctx.sealed and (not r.error_class or r.output is not None):
        out.append("output\n", _LABEL)
        preview(out, r.output, r.output_chars, save_hint=ctx.save_hint, none="(no output)")
    return out


def judgment_text(j: JudgmentRow, ctx: CallContext) -> Text:
    """A judge call: its verdict on the candidate's answer, what it took, its failed attempts and the judge's own
    answer (untrusted: literal; not for a sealed case, whose answer the judge may quote)."""
    out = Text()
    out.append("judge ", _LABEL)
    out.append(literal(j.judge, newlines=False))
    out.append(": ")
    out.append(literal(j.status, newlines=False))
    if j.score_detail and not ctx.sealed:
        out.append(" (")
        out.append(literal(one_line(j.score_detail, 80), newlines=False))
        out.append(")")
    out.append("\n")
    out.append(_figures(("attempts", str(j.attempts)), ("latency", ms(j.latency_ms, " ms")),
                        ("total", ms(j.total_ms, " ms")), ("tokens", f"{j.input_tokens}→{j.output_tokens}"),
                        ("cost", money(j.cost))))
    if j.error_class:
        out.append_text(_why_errored(j.error_class, j.error_message, None, ctx))
    out.append_text(attempts_text(j.failed_attempts))
    if ctx.sealed:
        out.append("judge's answer hidden: sealed case\n", "italic")
    else:
        out.append("judge's answer\n", _LABEL)
        preview(out, j.answer, j.answer_chars, save_hint=False, none="(no answer)")
    return out


def _figures(*figures: tuple[str, str]) -> str:
    """An indented line of figures, each held together (a narrow column wraps between figures, never inside one)."""
    return "  " + "\u00a0· ".join(f"{label} {value}".replace(" ", "\u00a0") for label, value in figures) + "\n"


def attempts_text(failed: Iterable[FailedAttempt]) -> Text:
    """Each failed attempt of a call: why, what the server asked for, and what the retry slept."""
    out = Text()
    for fa in failed:
        out.append(f"  attempt {fa.attempt} failed: ", _LABEL)
        out.append(literal(fa.error_class, newlines=False))
        if fa.http_status is not None:
            out.append(f" (HTTP {fa.http_status})")
        if fa.retry_after_s is not None:
            out.append(f", asked to wait {fa.retry_after_s:.2f}s")
            if fa.retry_after_source:
                out.append(" (")
                out.append(literal(fa.retry_after_source, newlines=False))
                out.append(")")
        elif fa.error_class == "rate_limited" and fa.delay_s is not None:
            out.append(", with no retry hint (no Retry-After or rate-limit reset header): backed off")
        if fa.delay_s is not None:
            out.append(f", slept {fa.delay_s:.2f}s")
        out.append("\n")
    return out


def _why_errored(error_class: str, message: str | None, http_status: int | None, ctx: CallContext) -> Text:
    """Why a call ended errored, its message shown literally and without a sealed case's text."""
    out = Text()
    out.append("why ", _LABEL)
    out.append(literal(error_class, newlines=False))
    if http_status is not None:
        out.append(f" (HTTP {http_status})")
    out.append(": ")
    out.append_text(ctx.message(message))
    out.append("\n")
    return out


def _scorer_words(ctx: CallContext) -> Text:
    """" by NAME (what its kind asks)", as far as it is known."""
    out = Text()
    if ctx.scorer is not None:
        out.append(" by ")
        out.append(literal(ctx.scorer, newlines=False))
    if ctx.scorer_kind is not None:
        out.append(" (")
        out.append(literal(SCORER_WORDS.get(ctx.scorer_kind, ctx.scorer_kind), newlines=False))
        out.append(")")
    return out


def _why_failed(r: CallRow, ctx: CallContext) -> Text:
    """A failed (answered) call's reason in words: which scorer, what it wanted (unless sealed)."""
    why = Text(f"scored {r.score:g}" if r.score is not None else "not passed")
    why.append_text(_scorer_words(ctx))
    if ctx.sealed:
        why.append(": the expected answer is sealed")
    elif ctx.expected is not None:
        why.append(": expected ")
        why.append(literal(one_line(ctx.expected, 120), "bold", newlines=False))
    if r.failure_mode and r.failure_mode not in ("none", "wrong_answer"):
        why.append("; failed as ")
        why.append(literal(r.failure_mode, "bold", newlines=False))
    if r.score_detail and not ctx.sealed:
        why.append(" (")
        why.append(literal(one_line(r.score_detail, 200), newlines=False))
        why.append(")")
    return why


def _why_unscored(r: CallRow, ctx: CallContext) -> Text:
    """An unscored call: answered, and why it has no score (yet)."""
    if r.failure_mode == "unjudged":
        why = Text("answered, not scored: this case is outside the sample of the llm_judge scorer ")
        why.append(literal(ctx.scorer or "?", "bold", newlines=False))
        if ctx.sample is not None:
            why.append(f" (sample {ctx.sample:g})" if ctx.sample <= 1.0 else f" (sample {int(ctx.sample)} cases)")
        why.append("; it never will be, and counts as answered, not in the pass rate")
        return why
    why = Text("answered, awaiting its judge ")
    why.append(literal(JUDGE_LANE_PREFIX + (ctx.judge or "?"), "bold", newlines=False))
    why.append(": scored when the judge answers (resume judges what an interrupted run left)")
    return why


def _steps_text(r: CallRow, ctx: CallContext) -> Text:
    """A call that went on to repair turns or an escalation: what followed its first answer, and each answer."""
    out = Text()
    if not (r.repairs or r.escalated_to or r.steps):
        return out
    out.append("follow-ups ", _LABEL)
    parts = [Text(f"{r.repairs} repair turn{'' if r.repairs == 1 else 's'}")] if r.repairs else []
    if r.escalated_to:
        parts.append(Text("escalated to ") + literal(r.escalated_to, newlines=False))
    if r.first_passed is not None:
        parts.append(Text("the first answer " + ("passed" if r.first_passed else "failed")))
    out.append_text(Text(", ").join(parts))
    out.append("\n")
    for st in r.steps:
        out.append_text(_step_text(st, ctx))
    return out


def _step_text(st: CallStep, ctx: CallContext) -> Text:
    out = Text()
    out.append(f"  step {st.step} ", _LABEL)
    out.append(literal(st.kind, newlines=False))
    out.append(" by ")
    out.append(literal(st.answered_by, newlines=False))
    out.append(": ")
    out.append(literal(st.status, newlines=False))
    if st.score is not None:
        out.append(f", score {st.score:.3f}")
    if st.failure_mode and st.failure_mode not in ("none", "wrong_answer"):
        out.append(", failed as ")
        out.append(literal(st.failure_mode, newlines=False))
    out.append(f" · attempts {st.attempts} · latency {ms(st.latency_ms, ' ms')} · "
               f"tokens {st.input_tokens}→{st.output_tokens} · cost {money(st.cost)}\n")
    if st.error_class:
        out.append("    ")
        out.append_text(_why_errored(st.error_class, st.error_message, None, ctx))
    if not ctx.sealed:
        if st.score_detail:
            out.append("    scorer: ")
            out.append(literal(one_line(st.score_detail, 160), newlines=False))
            out.append("\n")
        if st.output is not None:
            out.append("    said: ")
            out.append(literal(one_line(st.output, 160), newlines=False))
            out.append("\n")
    return out

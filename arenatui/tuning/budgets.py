"""`max_tokens` and `timeout_s` recommended from a stored run's evidence: steps 2 and 4 of the tuning order.

Step 2, `max_tokens`: generation time is roughly linear in the tokens produced, so a limit far above what the
task needs lets every answer that runs on (a model that does not know rambles until the limit) cost time and
money for nothing. The evidence is the output tokens of the answers that *passed*: the smallest limit that would
have cut none of them is their maximum; `MAX_TOKENS_MARGIN` above it (rounded up to a multiple of
`MAX_TOKENS_STEP`) leaves room for a longer passing answer the run did not happen to see. The saving is what the
answers that ran past that limit would not have generated: their extra tokens at the model's measured seconds
per token (the slope of latency over output tokens across its answered calls) and at its output price. Answers
stopped at the current limit (`finish_reason` length) that failed are the opposite signal: the limit is cutting
answers, so the recommendation is to raise it, never to lower it.

Step 4, `timeout_s`: one attempt's limit, first byte of the request to the last of the answer. Too low and
slow-but-valid calls fail and retry (strictly worse than waiting); too high and one hung call holds a worker for
the whole of it. The evidence is the duration of every attempt that got an answer (connect + latency): the
recommendation is `TIMEOUT_MARGIN` × the slowest of them, rounded up to a whole second, so it cuts none of them.
Answered attempts that came within `NEAR_LIMIT` of the current limit, beside attempts that timed out, say the
limit is cutting slow-but-valid calls; timed-out attempts that never saw a first byte were probably hung.

Both say "not enough evidence: ..." below `MIN_ANSWERS` answers, like the concurrency optimum. Pure: no store,
no UI; `arenatui.results.budgets` gathers the evidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from arenatui.kernel.units import money, plural

MIN_ANSWERS = 30
"""Answers (passing ones, for max_tokens; answered attempts, for timeout_s) needed before recommending."""
MAX_TOKENS_MARGIN = 1.25
MAX_TOKENS_STEP = 16
MIN_CHANGE = 0.8
"""A lower limit is recommended only when it is below this share of the current one: smaller changes save
too little to be worth a setting that differs from the project's default."""
TRUNCATION_SHARE = 0.01
"""Failed answers stopped at the limit, as a share of answers, from which the limit is said to cut answers."""
TIMEOUT_MARGIN = 1.5
TIMEOUT_FLOOR_S = 10.0
"""The least timeout_s a hosted model's ordinary call needs (a long answer streams for seconds; a busy provider
queues it for more). A timeout measured below it rests on answers faster than any hosted call (simulated, local,
cached): `arena tune --write` writes it only with a line saying so (`below_floor`)."""
RAMBLING = 0.5
"""Failed answers stopped at the limit while every passing answer stayed under this share of it ramble: the
limit is not what failed them (a would-be-correct answer four times longer than any correct one is not
plausible), so they argue for a lower limit, not a higher one."""
NEAR_LIMIT = 0.8
"""An answered attempt that took more than this share of the limit was nearly cut."""

Action = Literal["lower", "raise", "keep", "none"]


@dataclass(frozen=True, slots=True)
class Answer:
    """One answered call, as the max_tokens evidence needs it."""

    output_tokens: int
    passed: bool
    truncated: bool
    """Stopped at the token limit (finish_reason length / max_tokens)."""
    latency_s: float | None
    estimated: bool = False
    """Its token counts were estimated by arenatui (the server reported none)."""
    reasoning_tokens: int = 0
    """Of `output_tokens`, those a reasoning model spent thinking: max_tokens limits reasoning and answer together."""


@dataclass(frozen=True, slots=True)
class Recommendation:
    """One setting's recommendation for one model, with the evidence it rests on."""

    setting: Literal["max_tokens", "timeout_s"]
    model_key: str
    current: float
    action: Action
    """lower / raise: change it to `value`; keep: the current value fits (`value` is what the evidence alone
    would give); none: not enough evidence."""
    value: float | None
    verdict: str
    """The whole verdict in words, evidence included: what every view prints."""
    n: int
    """The answers (or answered attempts) it rests on."""
    detail: tuple[str, ...] = ()
    """Further lines of evidence (savings, near misses, hung calls)."""

    def unnamed(self) -> str:
        """The verdict without its setting's name, for a view that labels it already: "lower 256 → 96: …",
        "256 fits: …", "not enough evidence: …"."""
        v = self.verdict
        name = ("[run] " if self.model_key == "*" else "") + self.setting
        for verb in ("lower ", "raise "):
            if v.startswith(verb + name):
                return verb.strip() + v[len(verb + name):]
        return v.removeprefix(name + " ")

    def as_dict(self) -> dict[str, Any]:
        return {"setting": self.setting, "current": self.current, "action": self.action, "value": self.value,
                "verdict": self.verdict, "n": self.n, "detail": list(self.detail)}

    @property
    def writable(self) -> bool:
        """Whether `arena tune --write` may write it: a change resting on enough evidence."""
        return self.action in ("lower", "raise") and self.value is not None


def _round_up(x: float, step: int) -> int:
    return max(step, math.ceil(x / step) * step)


def seconds_per_token(answers: Sequence[Answer]) -> float | None:
    """The least-squares slope of latency over output tokens: the model's measured seconds per generated token.
    None when the answers' lengths barely vary (no slope to measure) or the slope is not positive."""
    pts = [(a.output_tokens, a.latency_s) for a in answers if a.latency_s is not None and not a.estimated]
    if len(pts) < MIN_ANSWERS:
        return None
    n = len(pts)
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    if sxx / n < 1.0:  # token counts all (nearly) equal
        return None
    slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
    return slope if slope > 0 else None


def cut_direction(current: int, answered: int, passing: int, cut_failed: int, longest_passing: int) -> Action:
    """Which way the token limit should move, from counts alone (the live console's warning and
    `recommend_max_tokens` both ask this): "raise" when answers stopped at the limit and failed while passing ones
    came near it (or when it cut nearly everything); "lower" when the failures at the limit are rambling beside
    short passing answers (RAMBLING), so a lower limit cuts none that would pass; "keep" when nothing failed at the
    limit, or too few of them to matter beside long passing answers; "none" below the evidence needed."""
    if not cut_failed:
        return "keep"
    cut_share = cut_failed / answered if answered else 0.0
    rambling = passing >= MIN_ANSWERS and longest_passing < RAMBLING * current
    # a limit that cuts answers shows as passing answers near it, or (when it cuts nearly everything) as few
    # passing answers at all; failures at the limit beside short passing answers are rambling (RAMBLING)
    if cut_share >= TRUNCATION_SHARE and not rambling and (passing >= MIN_ANSWERS or cut_share >= 0.5):
        return "raise"
    if passing < MIN_ANSWERS:
        return "none"
    return "lower" if rambling else "keep"


def recommend_max_tokens(model_key: str, current: int, answers: Sequence[Answer], *,
                         price_out_per_mtok: float = 0.0) -> Recommendation:
    """The max_tokens verdict for one model (or one model × scorer kind) from its answered calls."""
    passing = [a.output_tokens for a in answers if a.passed]
    n = len(answers)
    cut_failed = sum(1 for a in answers if a.truncated and not a.passed)
    cut = sum(1 for a in answers if a.truncated)
    estimated = sum(1 for a in answers if a.estimated)
    note: tuple[str, ...] = (f"; {estimated} of them with estimated token counts",) if estimated else ()
    reasoned = sum(1 for a in answers if a.reasoning_tokens)
    if reasoned:  # a reasoning model's limit must leave room for its thinking, not only for its answer
        note = (*note, f"{reasoned} of {plural(n, 'answer')} reasoned first: their tokens count reasoning + answer "
                       f"({sum(a.reasoning_tokens for a in answers) // reasoned} reasoning tokens per answer that "
                       f"reasoned), and max_tokens must cover both")
    longest_passing = max(passing, default=0)
    if cut_direction(current, n, len(passing), cut_failed, longest_passing) == "raise":
        value = current * 2
        return Recommendation(
            "max_tokens", model_key, current, "raise", value,
            f"raise max_tokens: {cut_failed} of {plural(n, 'answer')} ({cut_failed / n:.0%}) stopped at the limit of "
            f"{current} and failed; try {value}", n,
            (f"{plural(cut, 'answer')} stopped at the limit in all; how long a cut answer would have run is not known, "
             f"so the figure doubles the limit and a rerun tells", *note))
    if len(passing) < MIN_ANSWERS:
        return Recommendation("max_tokens", model_key, current, "none", None,
                              f"not enough evidence: {len(passing)} passing answers, {MIN_ANSWERS} needed", n, note)
    if cut_failed:
        note = (f"{cut_failed} failed answers ran to the limit while every passing one stayed under "
                f"{longest_passing + 1} tokens: they ramble; the limit cut no answer that would have passed", *note)
    longest = max(passing)
    value = _round_up(longest * MAX_TOKENS_MARGIN, MAX_TOKENS_STEP)
    basis = (f"the longest of {len(passing)} passing answers was {longest} tokens; "
             f"+{MAX_TOKENS_MARGIN - 1:.0%} margin, rounded up to a multiple of {MAX_TOKENS_STEP}")
    if value >= current * MIN_CHANGE:
        return Recommendation("max_tokens", model_key, current, "keep", value,
                              f"max_tokens {current} fits: {basis} gives {value}", n, note)
    extra = [a.output_tokens - value for a in answers if a.output_tokens > value]
    tokens_saved = sum(extra)
    if not tokens_saved:
        return Recommendation("max_tokens", model_key, current, "keep", value,
                              f"max_tokens {current} fits: no answer ran past {value} tokens ({basis}), so a lower "
                              f"limit would save nothing measured", n, note)
    per_token = seconds_per_token(answers)
    saving = [f"{len(extra)} of {plural(n, 'answer')} ran past {value} tokens: {tokens_saved} tokens "
              f"({tokens_saved / n:.0f} per answered call) they would not have generated"]
    if per_token is not None:
        saving.append(f"≈ {tokens_saved * per_token / n:.2f} s of generation per answered call "
                      f"at the measured {per_token * 1000:.2f} ms per output token")
    else:
        saving.append("time saved: – (the answers' lengths do not vary enough to measure seconds per token)")
    if price_out_per_mtok:
        saving.append(f"≈ {money(tokens_saved * price_out_per_mtok / 1e6)} of output spend on these calls "
                      f"({money(tokens_saved * price_out_per_mtok / 1e6 / n)} per answered call)")
    return Recommendation("max_tokens", model_key, current, "lower", value,
                          f"lower max_tokens {current} → {value}: it cuts none of the passing answers ({basis})",
                          n, (*saving, *note))


@dataclass(frozen=True, slots=True)
class TimeoutEvidence:
    """Attempt durations for one model: those that got an answer, and those the limit cut."""

    answered_s: Sequence[float]
    """Every answered attempt's duration, connect + latency (one per answered call: earlier attempts of a call
    that failed on a 429 or a 5xx got no answer to time)."""
    timed_out: int
    """Attempts that ended at the limit."""
    timed_out_no_first_byte: int | None = None
    """Of those, the ones that had seen no first token (probably hung); None where it was not recorded for every
    one of them (a non-streamed answer arrives whole, so its silence until the limit tells nothing)."""
    left_out: int = 0
    """Answered attempts not in `answered_s`: started above the level the auto-tuner settled on, where a server that
    queues makes a call wait behind the tuner's own."""


def recommend_timeout(model_key: str, current: float, ev: TimeoutEvidence) -> Recommendation:
    """The timeout_s verdict for one model."""
    n = len(ev.answered_s)
    if n < MIN_ANSWERS:
        return Recommendation("timeout_s", model_key, current, "none", None,
                              f"not enough evidence: {n} answered attempts, {MIN_ANSWERS} needed", n)
    slowest = max(ev.answered_s)
    near = sum(1 for s in ev.answered_s if s > NEAR_LIMIT * current)
    lines = []
    if ev.left_out:
        lines.append(f"{plural(ev.left_out, 'answered attempt')} left out: started above the level the auto-tuner "
                     "settled on, where they may have queued behind its own calls")
    if ev.timed_out:
        hung = ev.timed_out_no_first_byte
        lines.append(f"{plural(ev.timed_out, 'attempt')} timed out at {current:g} s" + (
            "" if hung is None else f"; {hung} of them had no first token (probably hung), "
                                    f"{ev.timed_out - hung} had started answering (slow)"))
    if ev.timed_out and near:
        value = float(math.ceil(current * 2))
        return Recommendation(
            "timeout_s", model_key, current, "raise", value,
            f"raise timeout_s: {near} of {n} answered attempts took over {NEAR_LIMIT:.0%} of the {current:g} s "
            f"limit and {ev.timed_out} timed out: slow-but-valid calls are being cut; try {value:g} s", n,
            tuple(lines))
    value = float(max(1, math.ceil(slowest * TIMEOUT_MARGIN)))
    basis = (f"the slowest of {n} answered attempts took {slowest:.2f} s; ×{TIMEOUT_MARGIN:g} margin, "
             f"rounded up to a whole second")
    if value >= current * MIN_CHANGE:
        return Recommendation("timeout_s", model_key, current, "keep", value,
                              f"timeout_s {current:g} fits: {basis} gives {value:g} s", n, tuple(lines))
    lines.append(f"a hung call would hold a worker {value:g} s instead of {current:g} s")
    return Recommendation("timeout_s", model_key, current, "lower", value,
                          f"lower timeout_s {current:g} → {value:g} s: it cuts none of the answered attempts "
                          f"({basis})", n, tuple(lines))


def run_timeout(recs: Sequence[Recommendation], current: float) -> Recommendation | None:
    """The one `[run] timeout_s` for the project: the run has one limit for every model (a bake-off keeps
    conditions identical: a shorter limit flatters a slow model's percentiles by turning slowness into errors),
    so it must cover the slowest model's legitimate calls. None when any model lacks evidence."""
    if not recs or any(r.action == "none" for r in recs):
        return None
    raise_ = [r for r in recs if r.action == "raise"]
    if raise_:
        worst = max(raise_, key=lambda r: r.value or 0.0)
        return Recommendation("timeout_s", "*", current, "raise", worst.value,
                              f"raise [run] timeout_s {current:g} → {worst.value:g} s (for {worst.model_key})", worst.n)
    top = max(recs, key=lambda r: r.value or 0.0)
    n = sum(r.n for r in recs)
    if top.value is None or top.value >= current * MIN_CHANGE:
        return Recommendation("timeout_s", "*", current, "keep", top.value,
                              f"[run] timeout_s {current:g} fits every model (the slowest, {top.model_key}, "
                              f"needs {top.value:g} s)", n)
    return Recommendation("timeout_s", "*", current, "lower", top.value,
                          f"lower [run] timeout_s {current:g} → {top.value:g} s (set by {top.model_key}, the slowest)",
                          n)


def below_floor(timeout_s: float) -> str | None:
    """The line beside a written `[run] timeout_s` below TIMEOUT_FLOOR_S, or None."""
    if timeout_s >= TIMEOUT_FLOOR_S:
        return None
    return (f"[run] timeout_s {timeout_s:g} s is below the {TIMEOUT_FLOOR_S:g} s floor a hosted model's calls need: "
            "it was measured on this run's answers, all faster than that (simulated, local or cached?); raise it "
            "before pointing the project at a hosted provider")


# ---- the evidence of one stored run (arenatui.results.budgets reads it) --------------------------------

@dataclass(slots=True)
class ModelBudget:
    """One model's current limits and the evidence about them."""

    model_key: str
    max_tokens: int
    price_out_per_mtok: float
    answers: list[Answer] = field(default_factory=list)
    """Every answered call (passed, failed or unscored; a scorer's or a judge's error on an answer too)."""
    by_scorer: dict[str, list[Answer]] = field(default_factory=dict)
    """The same answers per scorer kind, where the run has more than one."""
    answered_s: list[float] = field(default_factory=list)
    above_settled: int = 0
    """Answered calls started while the auto-tuner held the model above the level it settled on (probes, a climb
    past the optimum): their time may be a queue behind the tuner's own calls, so not in `answered_s`."""
    timed_out: int = 0
    timed_out_streamed: int = 0
    """Of the timed-out attempts, those streamed (recorded since migration 16): they tell hung from slow."""
    timed_out_no_token: int = 0


@dataclass(frozen=True, slots=True)
class BudgetEvidence:
    run_id: str
    timeout_s: float
    models: dict[str, ModelBudget]

    def timeout_evidence(self, model_key: str) -> TimeoutEvidence:
        m = self.models[model_key]
        known = m.timed_out > 0 and m.timed_out_streamed == m.timed_out  # hung or slow is known for each one
        return TimeoutEvidence(tuple(m.answered_s), m.timed_out, m.timed_out_no_token if known else None,
                               m.above_settled)



@dataclass(frozen=True, slots=True)
class Budgets:
    """Every budget recommendation of one stored run: what `arena tune`, the results view's model detail and
    `arena report` print."""

    max_tokens: dict[str, Recommendation]
    max_tokens_by_scorer: dict[str, dict[str, Recommendation]]
    timeouts: dict[str, Recommendation]
    run_timeout: Recommendation | None
    timeout_s: float

    def scorer_rows(self, model_key: str) -> list[tuple[str, Recommendation]]:
        """(scorer kind, recommendation) where a scorer kind's own max_tokens has evidence and says something the
        model's does not (a classification task needing far fewer tokens than a code task)."""
        rec = self.max_tokens.get(model_key)
        return [(r.model_key.rpartition(" · ")[2], r) for r in self.max_tokens_by_scorer.get(model_key, {}).values()
                if r.action != "none" and (rec is None or (r.action, r.value) != (rec.action, rec.value))]

    def as_dict(self) -> dict[str, Any]:
        """JSON-shaped, for the report: per model its max_tokens (and per scorer kind) and timeout_s, and the run's
        one timeout_s."""
        return {"models": {k: {"max_tokens": rec.as_dict(), "timeout_s": self.timeouts[k].as_dict(),
                               "max_tokens_by_scorer": {kind: r.as_dict() for kind, r in self.scorer_rows(k)}}
                           for k, rec in self.max_tokens.items()},
                "run_timeout_s": None if self.run_timeout is None else self.run_timeout.as_dict(),
                "timeout_s": self.timeout_s}


def budgets_of(ev: BudgetEvidence) -> Budgets:
    """Every model's max_tokens (overall and per scorer kind) and timeout_s, and the run's timeout_s."""
    mt = {k: recommend_max_tokens(k, m.max_tokens, m.answers, price_out_per_mtok=m.price_out_per_mtok)
          for k, m in ev.models.items() if m.answers or m.answered_s}
    by_scorer = {k: {kind: recommend_max_tokens(f"{k} · {kind}", m.max_tokens, answers,
                                                price_out_per_mtok=m.price_out_per_mtok)
                     for kind, answers in sorted(m.by_scorer.items())}
                 for k, m in ev.models.items() if m.by_scorer}
    to = {k: recommend_timeout(k, ev.timeout_s, ev.timeout_evidence(k)) for k in mt}
    return Budgets(mt, by_scorer, to, run_timeout(list(to.values()), ev.timeout_s), ev.timeout_s)

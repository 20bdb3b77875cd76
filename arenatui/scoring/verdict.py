"""The stored verdict on one call, for every path of the runner: an answer scored (or left unscored for its judge),
an answer the scorer could not judge, a judge's reading of a candidate, a call that ended without an answer, and a
chained call never made.

The runner times a call; what its result *says* (status, score, passed, error class and message, failure mode,
the scorer's detail) is decided here, once, so the console, the store and the reports read one verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from arenatui.kernel.events import ErrorClass, Status, build_tuple
from arenatui.scoring.base import Score
from arenatui.scoring.failure_modes import answer_mode, classify

if TYPE_CHECKING:
    from arenatui.config.schema import ScorerConfig


class Verdict(NamedTuple):
    status: Status
    score: float | None
    passed: bool
    error_class: ErrorClass | None
    error_message: str | None
    """As the scorer or judge said it: the runner bounds it (and scrubs a sealed case's texts) before storing."""
    failure_mode: str
    detail: str | None = None
    """The scorer's own word on the answer (bounded like error_message)."""


UNJUDGED = Verdict("unscored", None, False, None, None, "unjudged")
"""An llm_judge case outside its scorer's sample: answered, never scored."""
AWAITING_JUDGE = Verdict("unscored", None, False, None, None, "awaiting_judge")
"""An llm_judge case in its sample: its judge's JudgeFinished will score it."""


PASSED = Verdict("passed", 1.0, True, None, None, "none")
"""The common verdict, built once: a full score with nothing to add (the engine's hot path)."""


def scored(sc: Score, output: str, finish_reason: str | None, language: str | None) -> Verdict:
    """A scorer's verdict on an answer."""
    if sc.passed:
        if sc.detail is None and sc.value == 1.0:
            return PASSED
        return Verdict("passed", sc.value, True, None, None, "none", sc.detail)
    return build_tuple(Verdict, ("failed", sc.value, False, None, None,
                          sc.failure_mode or answer_mode(output, finish_reason, sc.invalid_format, language),
                          sc.detail))


def unscorable(why: str) -> Verdict:
    """The scorer could not judge the answer (the answer is kept; the call is errored, never a silent 0)."""
    return Verdict("errored", None, False, "scoring_error", why, "scoring_error")


def answered(sc: Score | str | None, output: str, finish_reason: str | None, language: str | None,
             judged: bool) -> Verdict:
    """The verdict on an answer: `sc` a Score, a message saying why there is none, or None for an llm_judge case
    (`judged`: in its judge's sample)."""
    if type(sc) is Score:  # the usual case, first; `scored`'s common verdict inline (a call less per answer)
        if sc.passed and sc.detail is None and sc.value == 1.0:
            return PASSED
        return scored(sc, output, finish_reason, language)
    if sc is None:
        return AWAITING_JUDGE if judged else UNJUDGED
    return unscorable(sc)  # type: ignore[arg-type]  # a message (no cast(): a call)


def from_judge(cfg: ScorerConfig, answer: str, candidate_output: str, candidate_finish: str | None,
               language: str | None, judge_finish: str | None = None) -> Verdict:
    """A judge's answer (`judge_finish`: the judge's own finish reason) read as the verdict on its candidate; an
    unreadable one is a judge_error, never a 0; one the candidate's own verdicts made ambiguous is a fail."""
    from arenatui.scoring.judge import JudgeUnreadable, read_verdict

    try:
        v = read_verdict(cfg, answer, candidate_output, judge_finish)
    except JudgeUnreadable as e:
        return Verdict("errored", None, False, "judge_error", str(e), "judge_error")
    if v.passed:
        return Verdict("passed", v.score, True, None, None, "none", v.detail)
    return Verdict("failed", v.score, False, None, None,
                   classify(passed=False, output=candidate_output, finish_reason=candidate_finish,
                            invalid_format=False, language=language), v.detail)


def unreachable(why: str) -> Verdict:
    """A chained call that is not made: a case it depends on did not pass (coverage as not run, never wrong)."""
    return Verdict("unreachable", None, False, "unreachable", why, "unreachable")


def ended(error_class: ErrorClass, message: str) -> Verdict:
    """A call that ended without an answer (rate limited, timed out, failed, cancelled)."""
    return Verdict("errored", None, False, error_class, message, error_class)

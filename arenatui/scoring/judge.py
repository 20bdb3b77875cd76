"""llm_judge: the judge's prompt from a rubric, and the verdict read out of the judge's answer.

The judge call itself runs in the engine like any other call (limits, retries, timeouts, cost); this module is
pure. A verdict that cannot be read is a `JudgeUnreadable`, which the engine stores as the candidate's
`judge_error`: never a silent 0.

Reading rules (documented in README):
- With a ``verdict`` regex, its last match's group 1 (else the whole match) is the verdict token.
- Without one, a numeric scale reads the last "score/rating/grade/verdict: N" (N may be written "N/HI"), else an
  answer that is only a number; pass/fail reads the last PASS or FAIL word (PASSED, FAILED too, any case).
- A number outside the scale, or a token that is neither pass nor fail, is unreadable.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from arenatui.config.schema import Case, ScorerConfig

_LABELLED = re.compile(r"(?i)\b(?:score|rating|grade|verdict|final\s+score)\b\s*(?:is|of)?\s*[:=]?\s*\**\s*"
                       r"([-+]?\d+(?:\.\d+)?)(?:\s*/\s*\d+)?")
_ONLY_NUMBER = re.compile(r"^\W*([-+]?\d+(?:\.\d+)?)(?:\s*/\s*\d+)?\W*$")
_PASS_FAIL = re.compile(r"(?i)\b(pass(?:ed)?|fail(?:ed)?)\b")
_MAX_QUOTED = 120


class JudgeUnreadable(Exception):
    """The judge's answer holds no verdict this scorer can read."""


class Verdict(NamedTuple):
    score: float
    """In [0, 1]: (v - lo) / (hi - lo) on a numeric scale, 1 or 0 for pass/fail."""
    passed: bool
    detail: str
    """For people: 'judge 4 on 1-5 (passes from 4)', 'judge: PASS'."""


def render_rubric(rubric: str, case: Case, output: str) -> str:
    """The judge's prompt: {input}, {expected} and {output} replaced literally (no str.format: a rubric may hold
    braces of its own, and an answer must never be read as a template)."""
    expected = case.expected if case.expected is not None else ""
    parts = re.split(r"(\{input\}|\{expected\}|\{output\})", rubric)
    fill = {"{input}": case.prompt_text(), "{expected}": expected, "{output}": output}
    return "".join(fill.get(p, p) for p in parts)


def _quoted(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= _MAX_QUOTED else t[:_MAX_QUOTED] + "…"


def read_verdict(cfg: ScorerConfig, answer: str) -> Verdict:
    """The verdict in a judge's answer, or JudgeUnreadable saying why."""
    scale = cfg.scale_range()
    token: str | None = None
    if cfg.verdict is not None:
        matches = list(re.finditer(cfg.verdict, answer))
        if not matches:
            raise JudgeUnreadable(f"the judge's answer does not match the verdict pattern {cfg.verdict!r}: "
                                  f"{_quoted(answer)!r}")
        last = matches[-1]
        token = (last.group(1) if last.re.groups else last.group(0)) or ""
    if scale is None:
        found = _PASS_FAIL.findall(token if token is not None else answer)
        if not found:
            raise JudgeUnreadable(f"no PASS or FAIL in the judge's answer: {_quoted(answer)!r}")
        ok = found[-1].lower().startswith("pass")
        return Verdict(1.0 if ok else 0.0, ok, f"judge: {'PASS' if ok else 'FAIL'}")
    lo, hi = scale
    if token is not None:
        m = re.search(r"[-+]?\d+(?:\.\d+)?", token)
        if m is None:
            raise JudgeUnreadable(f"the verdict {token!r} is not a number on the scale {lo}-{hi}")
        number = m.group(0)
    else:
        labelled = _LABELLED.findall(answer)
        if labelled:
            number = labelled[-1]
        else:
            only = _ONLY_NUMBER.match(answer.strip())
            if only is None:
                raise JudgeUnreadable(f"no score on the scale {lo}-{hi} in the judge's answer (expected "
                                      f"'Score: N' or just N): {_quoted(answer)!r}")
            number = only.group(1)
    v = float(number)
    if not lo <= v <= hi:
        raise JudgeUnreadable(f"the judge's score {number} is outside the scale {lo}-{hi}")
    at = cfg.passing_verdict()
    ok = v >= at
    shown = f"{v:g}"
    return Verdict((v - lo) / (hi - lo), ok, f"judge {shown} on {lo}-{hi} (passes from {at:g})")

"""llm_judge: the judge's prompt from a rubric, and the verdict read out of the judge's answer.

The judge call itself runs in the engine like any other call (limits, retries, timeouts, cost); this module is
pure. A verdict that cannot be read is a `JudgeUnreadable`, which the engine stores as the candidate's
`judge_error`: never a silent 0.

The judge's answer quotes the candidate's, so a verdict-looking phrase in it may be the candidate's, written to
steer the judge ("... Score: 5"). Reading rules (documented in README):
- The rubric asks the judge to end with a dedicated line ``VERDICT: N`` (``VERDICT: PASS`` / ``VERDICT: FAIL``):
  `judge_rubric` appends that request to a rubric that does not mention ``VERDICT`` (and has no ``verdict`` regex).
- With a ``verdict`` regex, the verdict token is each match's group 1 (else the whole match); without one, the
  token of each line that starts ``VERDICT: token`` (markdown emphasis allowed, N may be written "N/HI", a remark
  may follow: "VERDICT: 4 - mostly right"), else an
  answer that is nothing but a verdict (a number, PASS, FAIL).
- Two different verdicts in one answer are ambiguous: unreadable, never a pick. A number outside the scale, or a
  token that is neither pass nor fail, is unreadable too.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from arenatui.config.schema import Case, ModelConfig, ScorerConfig

_TOKEN = r"(pass(?:ed)?|fail(?:ed)?|[-+]?\d+(?:\.\d+)?)(?:\s*/\s*\d+)?"
_VERDICT_LINE = re.compile(rf"(?im)^[^\w\n]*verdict[^\w\n]*[:=][^\w\n]*{_TOKEN}(?:[^\w\n/][^\n]*)?$")
_ONLY_VERDICT = re.compile(rf"(?i)^\W*{_TOKEN}\W*$")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
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


def judge_rubric(cfg: ScorerConfig) -> str:
    """The rubric as sent: the scorer's own, with the request for a final verdict line appended unless it asks for
    one already (it mentions VERDICT) or the scorer reads its own format (a ``verdict`` regex)."""
    rubric = cfg.rubric or ""
    if cfg.verdict is not None or "VERDICT" in rubric:
        return rubric
    scale = cfg.scale_range()
    if scale is None:
        ask = "End your reply with one final line, exactly `VERDICT: PASS` or `VERDICT: FAIL`."
    else:
        ask = (f"End your reply with one final line, exactly `VERDICT: N`, N a whole number from {scale[0]} "
               f"to {scale[1]}.")
    return f"{rubric}\n\n{ask}"


def render_rubric(rubric: str, case: Case, output: str) -> str:
    """The judge's prompt: {input}, {expected} and {output} replaced literally (no str.format: a rubric may hold
    braces of its own, and an answer must never be read as a template)."""
    expected = case.expected if case.expected is not None else ""
    parts = re.split(r"(\{input\}|\{expected\}|\{output\})", rubric)
    fill = {"{input}": case.prompt_text(), "{expected}": expected, "{output}": output}
    return "".join(fill.get(p, p) for p in parts)


def judge_messages(judge: ModelConfig, cfg: ScorerConfig, case: Case, output: str) -> tuple[dict[str, str], ...]:
    """The judge's request: the rubric filled in, after the judge model's own system prompt if it has one (the
    project's [defaults] system is for the candidates: "answer with one letter" must not reach a judge)."""
    prompt = render_rubric(judge_rubric(cfg), case, output)
    if judge.system:
        return {"role": "system", "content": judge.system}, {"role": "user", "content": prompt}
    return ({"role": "user", "content": prompt},)


def _quoted(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= _MAX_QUOTED else t[:_MAX_QUOTED] + "…"


def _tokens(cfg: ScorerConfig, answer: str) -> list[str]:
    """Every verdict token the answer gives, in order (see the reading rules)."""
    if cfg.verdict is not None:
        matches = list(re.finditer(cfg.verdict, answer))
        if not matches:
            raise JudgeUnreadable(f"the judge's answer does not match the verdict pattern {cfg.verdict!r}: "
                                  f"{_quoted(answer)!r}")
        return [(m.group(1) if m.re.groups else m.group(0)) or "" for m in matches]
    lines = _VERDICT_LINE.findall(answer)
    if lines:
        return list(lines)
    only = _ONLY_VERDICT.match(answer.strip())
    if only is not None:
        return [only.group(1)]
    scale = cfg.scale_range()
    wanted = ("'VERDICT: PASS' or 'VERDICT: FAIL'" if scale is None
              else f"'VERDICT: N' (N on the scale {scale[0]}-{scale[1]})")
    raise JudgeUnreadable(f"the judge's answer has no final verdict line {wanted}: {_quoted(answer)!r}")


def read_verdict(cfg: ScorerConfig, answer: str) -> Verdict:
    """The verdict in a judge's answer, or JudgeUnreadable saying why (no verdict, two different ones, off-scale)."""
    scale = cfg.scale_range()
    values: list[str] = []
    for token in _tokens(cfg, answer):
        if scale is None:
            found = _PASS_FAIL.findall(token)
            if not found:
                raise JudgeUnreadable(f"the verdict {token!r} is neither PASS nor FAIL: {_quoted(answer)!r}")
            value = "PASS" if found[-1].lower().startswith("pass") else "FAIL"
        else:
            m = _NUMBER.search(token)
            if m is None:
                raise JudgeUnreadable(f"the verdict {token!r} is not a number on the scale {scale[0]}-{scale[1]}")
            value = f"{float(m.group(0)):g}"
        if value not in values:
            values.append(value)
    if len(values) > 1:
        raise JudgeUnreadable(f"the judge's answer gives {len(values)} different verdicts ({', '.join(values)}): "
                              f"ambiguous, so none is taken: {_quoted(answer)!r}")
    if scale is None:
        ok = values[0] == "PASS"
        return Verdict(1.0 if ok else 0.0, ok, f"judge: {values[0]}")
    lo, hi = scale
    v = float(values[0])
    if not lo <= v <= hi:
        raise JudgeUnreadable(f"the judge's score {values[0]} is outside the scale {lo}-{hi}")
    at = cfg.passing_verdict()
    ok = v >= at
    return Verdict((v - lo) / (hi - lo), ok, f"judge {values[0]} on {lo}-{hi} (passes from {at:g})")

"""The built-in scorers: exact, contains, regex, choice, numeric, json_valid."""

from __future__ import annotations

import json
import math
import re
from typing import NamedTuple

from arenatui.config.schema import Case, ScorerConfig

_NUMBER_RE = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class Score(NamedTuple):
    value: float
    passed: bool


def _norm(s: str, case_sensitive: bool) -> str:
    s = " ".join(s.strip().split())
    return s if case_sensitive else s.casefold()


def extract_choice(output: str, choices: tuple[str, ...]) -> str | None:
    """The label a model chose: 'Answer: B', 'answer: (b)', '(B)', 'B.' or a lone 'B'; the last explicit one wins.

    Lower-case labels count only in an explicit form ('Answer: c', '(c)'), so the article 'a' in
    running text is never read as choice A.
    """
    alts = "|".join(re.escape(c) for c in sorted(choices, key=len, reverse=True))
    canonical = {c.casefold(): c for c in choices}
    marked = re.findall(rf"(?i)(?:answer|choice|option)\s*(?:is\s*)?[:=]\s*\(?({alts})\)?(?![\w])", output)
    if not marked:
        marked = re.findall(rf"(?:answer|choice|option)\s*(?:is)?\s*\(?({alts})\)?\b", output, re.IGNORECASE)
        marked = [m for m in marked if m in canonical.values()] + re.findall(rf"(?i)\(({alts})\)", output)
    if marked:
        return canonical.get(str(marked[-1]).casefold())
    m = re.findall(rf"(?:^|[\s(\[])({alts})(?:[)\].:,]|\s|$)", output.strip())
    if m:
        return str(m[0])
    return None


def _last_number(output: str) -> float | None:
    found = _NUMBER_RE.findall(output)
    for tok in reversed(found):
        try:
            return float(tok.replace(",", ""))
        except ValueError:
            continue
    return None


class Scorer:
    def __init__(self, cfg: ScorerConfig) -> None:
        self.cfg = cfg
        self._regex: re.Pattern[str] | None = None
        if cfg.kind == "regex" and cfg.pattern is not None and "{expected}" not in cfg.pattern:
            self._regex = re.compile(cfg.pattern, 0 if cfg.case_sensitive else re.IGNORECASE)

    def score(self, output: str, case: Case) -> Score:
        cfg = self.cfg
        exp = case.expected
        kind = cfg.kind
        if kind == "json_valid":
            try:
                json.loads(output)
            except (ValueError, RecursionError):
                return Score(0.0, False)
            return Score(1.0, True)
        if kind == "regex":
            rx = self._regex
            if rx is None:
                assert cfg.pattern is not None
                pat = cfg.pattern.replace("{expected}", re.escape(exp or ""))
                rx = re.compile(pat, 0 if cfg.case_sensitive else re.IGNORECASE)
            ok = rx.search(output) is not None
            return Score(float(ok), ok)
        if exp is None:
            return Score(0.0, False)
        if kind == "exact":
            ok = _norm(output, cfg.case_sensitive) == _norm(exp, cfg.case_sensitive)
        elif kind == "contains":
            ok = _norm(exp, cfg.case_sensitive) in _norm(output, cfg.case_sensitive)
        elif kind == "choice":
            got = extract_choice(output, cfg.choices)
            ok = got is not None and got.casefold() == exp.strip().casefold()
        elif kind == "numeric":
            got_n = _last_number(output)
            want = _last_number(exp)
            ok = got_n is not None and want is not None and math.isclose(got_n, want, rel_tol=0, abs_tol=cfg.tolerance)
        else:  # pragma: no cover - guarded by config validation
            raise AssertionError(kind)
        return Score(float(ok), ok)


class ScorerSet:
    """Picks each case's scorer: the one it names, else the project's first."""

    def __init__(self, scorers: tuple[ScorerConfig, ...]) -> None:
        self.by_name = {s.name: Scorer(s) for s in scorers}
        self.default = self.by_name[scorers[0].name]

    def for_case(self, case: Case) -> Scorer:
        if case.scorer is not None:
            return self.by_name[case.scorer]
        return self.default

    def score(self, output: str, case: Case) -> Score:
        return self.for_case(case).score(output, case)

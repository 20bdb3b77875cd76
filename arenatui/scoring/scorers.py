"""The scorers: exact, contains, regex, choice, numeric, json_valid, json_schema, f1, python, code_exec.

Each returns a Score; ``invalid_format`` says the scorer could not read an answer out of the output at all
(unparseable JSON, no option chosen, no number), which failure_modes reports apart from a wrong answer, and
``detail`` says why in a line (the JSON path that failed, the code's verdict).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import NamedTuple

from arenatui.config.schema import Case, ScorerConfig
from arenatui.scoring.code_exec import ExecLimits, extract_code, run_code
from arenatui.scoring.json_schema import SchemaValidator
from arenatui.scoring.plugin import UserScorer, coerce, load_function

_NUMBER_RE = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class Score(NamedTuple):
    value: float
    passed: bool
    invalid_format: bool = False
    detail: str | None = None


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


def extract_label(output: str, labels: tuple[str, ...]) -> str | None:
    """The label a classification answer gives: the whole answer, or the only label it names as a word."""
    norm = _norm(output, False).strip(" .!\"'`*")
    by_norm = {_norm(lb, False): lb for lb in labels}
    if norm in by_norm:
        return by_norm[norm]
    named = [lb for n, lb in by_norm.items() if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", norm)]
    return named[0] if len(named) == 1 else None


class Scorer:
    blocking = False
    """True when scoring may take long (user code, a process): the engine runs it in a worker thread."""

    def __init__(self, cfg: ScorerConfig, project_dir: Path | None = None) -> None:
        self.cfg = cfg
        self._regex: re.Pattern[str] | None = None
        if cfg.kind == "regex" and cfg.pattern is not None and "{expected}" not in cfg.pattern:
            self._regex = re.compile(cfg.pattern, 0 if cfg.case_sensitive else re.IGNORECASE)
        self._schema: SchemaValidator | None = None
        self._function: UserScorer | None = None
        if cfg.kind == "json_schema" and cfg.schema is not None:
            self._schema = SchemaValidator(cfg.schema)
        elif cfg.kind == "python" and cfg.function is not None:
            self._function = load_function(cfg.function, project_dir)
            self.blocking = True
        elif cfg.kind == "code_exec":
            self.blocking = True

    def score(self, output: str, case: Case) -> Score:
        cfg = self.cfg
        exp = case.expected
        kind = cfg.kind
        if kind == "json_valid":
            try:
                json.loads(output)
            except (ValueError, RecursionError) as e:
                return Score(0.0, False, True, f"not JSON: {e}")
            return Score(1.0, True)
        if kind == "json_schema":
            assert self._schema is not None
            problem = self._schema.problem(output)
            return Score(1.0, True) if problem is None else Score(0.0, False, True, problem)
        if kind == "python":
            assert self._function is not None
            value, passed = coerce(self._function(case, output))
            return Score(value, passed)
        if kind == "code_exec":
            if not case.tests:
                return Score(0.0, False, False, "the case has no tests to run the code against")
            result = run_code(extract_code(output), case.tests,
                              ExecLimits(timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb))
            return Score(float(result.passed), result.passed, False, result.summary(200))
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
            if got is None:
                return Score(0.0, False, True, f"no choice among {', '.join(cfg.choices)}")
            ok = got.casefold() == exp.strip().casefold()
        elif kind == "f1":
            label = extract_label(output, cfg.labels)
            if label is None:
                return Score(0.0, False, True, f"no label among {', '.join(cfg.labels)}")
            ok = _norm(label, False) == _norm(exp, False)
        elif kind == "numeric":
            got_n = _last_number(output)
            if got_n is None:
                return Score(0.0, False, True, "no number in the answer")
            want = _last_number(exp)
            ok = want is not None and math.isclose(got_n, want, rel_tol=0, abs_tol=cfg.tolerance)
        else:  # pragma: no cover - guarded by config validation
            raise AssertionError(kind)
        return Score(float(ok), ok)


class ScorerSet:
    """Picks each case's scorer: the one it names, else the project's first."""

    def __init__(self, scorers: tuple[ScorerConfig, ...], project_dir: Path | None = None) -> None:
        self.by_name = {s.name: Scorer(s, project_dir) for s in scorers}
        self.default = self.by_name[scorers[0].name]

    def for_case(self, case: Case) -> Scorer:
        if case.scorer is not None:
            return self.by_name[case.scorer]
        return self.default

    def score(self, output: str, case: Case) -> Score:
        return self.for_case(case).score(output, case)

"""The scorers: exact, contains, regex, choice, numeric, json_valid, json_schema, f1, python, code_exec (llm_judge's
verdict is a judge model's call, which the engine makes: arenatui.scoring.judge reads it).

Each returns a Score; ``invalid_format`` says the scorer could not read an answer out of the output at all
(unparseable JSON, no option chosen, no number), which failure_modes reports apart from a wrong answer, and
``detail`` says why in a line (the JSON path that failed, the code's verdict).

A scorer's verdict on one output either comes back or raises `ScoringError`, which the engine stores as
that call's `scoring_error` (never the sweep's end). Regex scorers run a user's pattern on a model's
output, and a pattern like ``(L+)+X`` on 5,000 L's backtracks for longer than the universe: they use
the `regex` library, whose matcher takes a ``timeout`` (the stdlib's `re` has none and cannot be
interrupted, not even by Ctrl-C), so every verdict is bounded in time. Scorers that may take long by
nature (``python`` functions, ``code_exec``) are `blocking`: the engine runs them in worker threads under
a limit of their own.
"""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path
from typing import Any, NamedTuple

from arenatui.config.schema import Case, ScorerConfig
from arenatui.scoring.code_exec import ExecLimits, extract_code, run_code
from arenatui.scoring.f1 import extract_label
from arenatui.scoring.json_schema import SchemaValidator
from arenatui.scoring.plugin import PluginFailed, PluginProblem, UserScorer, call, coerce, load_function
from arenatui.scoring.registry import scorer_kind

REGEX_TIMEOUT_S = 2.0
"""The longest a regex scorer may take over one output before the call gets a scoring error: far above
what a sane pattern needs on a long answer (a linear scan of 50 MB takes well under a second)."""

_NUMBER_RE = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class Score(NamedTuple):
    value: float
    passed: bool
    invalid_format: bool = False
    detail: str | None = None
    failure_mode: str | None = None
    """The failure mode when the scorer knows it better than the answer's text (code_exec's tests_not_run)."""


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


class ScoringError(Exception):
    """One output could not be scored: the call is stored as errored with error class `scoring_error`."""


class ScoringSlow(ScoringError):
    """A regex scorer ran past the time it was given: the caller may try again with more time elsewhere."""


class Scorer:
    blocking = False
    """True when scoring may take long (user code, a process): the engine runs it in a worker thread."""

    def __init__(self, cfg: ScorerConfig, project_dir: Path | None = None) -> None:
        self.cfg = cfg
        self._flags = 0
        if cfg.kind == "regex":  # `regex` is imported only by a project that has a regex scorer (start-up time)
            import regex

            self._flags = regex.V0 | (0 if cfg.case_sensitive else regex.IGNORECASE)
        self._regex: Any = None
        self._broken: ScoringError | None = None
        if cfg.kind == "regex" and cfg.pattern is not None and "{expected}" not in cfg.pattern:
            try:
                self._regex = self._compile(cfg.pattern)
            except ScoringError as e:  # the config check compiles with `re`; a difference shows per call
                self._broken = e
        self._schema: SchemaValidator | None = None
        self._function: UserScorer | None = None
        self._stuck: list[threading.Thread] = []
        """python: this scorer's calls still running past their timeout (plugin.call)."""
        added = scorer_kind(cfg.kind)
        self._added = added if added is not None and not added.builtin else None
        """A kind added through the registry: it gives the verdict itself."""
        if self._added is not None:
            self.blocking = self._added.blocking
        elif cfg.kind == "json_schema" and cfg.schema is not None:
            self._schema = SchemaValidator(cfg.schema)
        elif cfg.kind == "python" and cfg.function is not None:
            self.blocking = True
            try:
                self._function = load_function(cfg.function, project_dir)
            except PluginProblem as e:  # checked when the project loaded; a resume elsewhere may not find it
                self._broken = ScoringError(f"scorer {cfg.name!r}: {e}")
        elif cfg.kind == "code_exec":
            self.blocking = True

    def _compile(self, pattern: str) -> Any:
        import regex

        try:
            return regex.compile(pattern, self._flags)
        except (regex.error, ValueError, OverflowError, RecursionError) as e:
            what = "with this case's expected text filled in " if "{expected}" in (self.cfg.pattern or "") else ""
            raise ScoringError(f"scorer {self.cfg.name!r}: its pattern {what}is not a valid regular expression "
                               f"({e})") from None

    def score(self, output: str, case: Case, timeout_s: float = REGEX_TIMEOUT_S) -> Score:
        """The verdict on `output`; raises ScoringSlow if a regex needs longer than `timeout_s`, ScoringError
        if the scorer cannot judge this case at all."""
        cfg = self.cfg
        exp = case.expected
        kind = cfg.kind
        if self._added is not None:
            return self._added.score(cfg, output, case)
        if kind == "llm_judge":  # its verdict comes from a judge model's call, which the engine makes
            raise ScoringError(f"scorer {cfg.name!r} is an llm_judge: its judge model scores the answer, in the sweep")
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
            if self._broken is not None:
                raise self._broken
            assert self._function is not None
            try:
                return Score(*coerce(call(self._function, case, output, cfg.timeout_s, self._stuck)))
            except (PluginFailed, ValueError) as e:
                raise ScoringError(f"scorer {cfg.name!r}: {e}") from None
        if kind == "code_exec":
            if not case.tests:
                return Score(0.0, False, False, "the case has no tests to run the code against")
            result = run_code(extract_code(output), case.tests,
                              ExecLimits(timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb))
            return Score(float(result.passed), result.passed, False, result.summary(200),
                         "tests_not_run" if result.verdict == "tests_not_run" else None)
        if kind == "regex":
            if self._broken is not None:
                raise self._broken
            rx = self._regex
            if rx is None:
                import regex

                assert cfg.pattern is not None
                rx = self._compile(cfg.pattern.replace("{expected}", regex.escape(exp or "", special_only=True)))
            try:
                # concurrent: the matcher lets go of the GIL, so a slow match in a thread leaves the loop free
                ok = rx.search(output, timeout=timeout_s, concurrent=True) is not None
            except TimeoutError:
                raise ScoringSlow(f"scorer {cfg.name!r}: the regex gave no verdict within {timeout_s:g}s on an "
                                  f"output of {len(output):,} characters (catastrophic backtracking?)") from None
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

    def score(self, output: str, case: Case, timeout_s: float = REGEX_TIMEOUT_S) -> Score:
        return self.for_case(case).score(output, case, timeout_s)

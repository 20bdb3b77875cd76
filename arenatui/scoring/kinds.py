"""The built-in scorer kinds, one class each: the settings it checks when a project loads and its verdict on an
output. exact, contains, regex, choice, numeric, json_valid, json_schema, f1, python, code_exec; llm_judge's verdict
is a judge model's call, which the engine makes (arenatui.scoring.judge reads it).

Nothing heavy is imported until a kind needs it: `regex`, `jsonschema`, the code sandbox and the user's plugins
load with the first scorer (or setting) of their kind, so loading a project stays quick.

Regex scorers run a user's pattern on a model's output, and a pattern like ``(L+)+X`` on 5,000 L's backtracks
for longer than the universe: they use the `regex` library, whose matcher takes a ``timeout`` (the stdlib's `re`
has none and cannot be interrupted, not even by Ctrl-C), so every verdict is bounded in time. Scorers that may
take long by nature (``python`` functions, ``code_exec``) are `blocking`: the engine runs them in worker threads
under a limit of their own.
"""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arenatui.scoring.base import (
    JudgeSettings,
    Score,
    ScorerKind,
    ScoringError,
    ScoringSlow,
    SettingsTable,
    Verdict,
)
from arenatui.scoring.f1 import extract_label

if TYPE_CHECKING:
    from arenatui.config.schema import Case, ScorerConfig
    from arenatui.scoring.plugin import UserScorer

_NUMBER_RE = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _norm(s: str, case_sensitive: bool) -> str:
    s = " ".join(s.split())  # split() strips
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


# ---- kinds that compare with the case's expected answer ---------------------------------------------------------

_HIT = Score(1.0, True)
_MISS = Score(0.0, False)


class Exact(ScorerKind):
    name = "exact"

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        return self.prepare(cfg, None)(output, case, 0.0)

    def prepare(self, cfg: ScorerConfig, project_dir: Path | None) -> Verdict:
        # The commonest scorer, on the engine's path once per answer: each expected answer is normalised once,
        # not once per trial, and the verdict is one call (benchmarks/engine_overhead.py).
        cs = cfg.case_sensitive
        normalised: dict[str, str] = {}

        def verdict(output: str, case: Case, timeout_s: float) -> Score:
            want = case.expected
            if want is None:
                return _MISS
            if output == want:  # as it is: equal however normalised (no normalising, the usual hit)
                return _HIT
            norm = normalised.get(want)
            if norm is None:
                norm = normalised[want] = _norm(want, cs)
            return _HIT if _norm(output, cs) == norm else _MISS

        return verdict


class Contains(ScorerKind):
    name = "contains"

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        if case.expected is None:
            return Score(0.0, False)
        ok = _norm(case.expected, cfg.case_sensitive) in _norm(output, cfg.case_sensitive)
        return Score(float(ok), ok)


class Choice(ScorerKind):
    name = "choice"

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        if case.expected is None:
            return Score(0.0, False)
        got = extract_choice(output, cfg.choices)
        if got is None:
            return Score(0.0, False, True, f"no choice among {', '.join(cfg.choices)}")
        ok = got.casefold() == case.expected.strip().casefold()
        return Score(float(ok), ok)


class Numeric(ScorerKind):
    name = "numeric"

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        if case.expected is None:
            return Score(0.0, False)
        got = _last_number(output)
        if got is None:
            return Score(0.0, False, True, "no number in the answer")
        want = _last_number(case.expected)
        ok = want is not None and math.isclose(got, want, rel_tol=0, abs_tol=cfg.tolerance)
        return Score(float(ok), ok)


class F1(ScorerKind):
    """One label per answer; the run's macro-F1 over the labels is computed by stats, the pass here is per case."""

    name = "f1"

    def read(self, t: SettingsTable, judge: JudgeSettings) -> dict[str, Any]:
        out = super().read(t, judge)
        labels = t.get("labels", list, [], "an array of strings")
        if len(labels) < 2:
            raise t.error("labels", "an f1 scorer needs the label set: at least two labels, e.g. [\"pos\", \"neg\"]")
        return out

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        if case.expected is None:
            return Score(0.0, False)
        label = extract_label(output, cfg.labels)
        if label is None:
            return Score(0.0, False, True, f"no label among {', '.join(cfg.labels)}")
        ok = _norm(label, False) == _norm(case.expected, False)
        return Score(float(ok), ok)


# ---- kinds that read the answer's form --------------------------------------------------------------------------

class JsonValid(ScorerKind):
    name = "json_valid"

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        try:
            json.loads(output)
        except (ValueError, RecursionError) as e:
            return Score(0.0, False, True, f"not JSON: {e}")
        return Score(1.0, True)


class JsonSchema(ScorerKind):
    name = "json_schema"

    def read(self, t: SettingsTable, judge: JudgeSettings) -> dict[str, Any]:
        """The schema: inline ``schema`` table or ``schema_file`` (JSON), checked now."""
        from arenatui.scoring.json_schema import SchemaProblem, check_schema

        out = super().read(t, judge)
        inline: dict[str, Any] | None = t.get("schema", dict, None, "an inline table holding a JSON Schema")
        path = t.string("schema_file")
        if (inline is None) == (path is None):
            raise t.error("schema", "a json_schema scorer needs exactly one of 'schema' (inline table) or "
                                    "'schema_file'")
        key = "schema"
        if path is not None:
            key = "schema_file"
            f = Path(path) if Path(path).is_absolute() else t.file.parent / path
            try:
                inline = json.loads(f.read_text(encoding="utf-8"))
            except OSError as e:
                raise t.error("schema_file", f"cannot read {f}: {e.strerror or e}") from None
            except (ValueError, RecursionError) as e:
                raise t.error("schema_file", f"{f} is not valid JSON ({e})") from None
            if not isinstance(inline, dict):
                raise t.error("schema_file", f"{f} must hold a JSON object (a schema)")
        assert inline is not None
        try:
            check_schema(inline)
        except SchemaProblem as e:
            raise t.error(key, f"is not a valid JSON Schema: {e}") from None
        return {**out, "schema": dict(inline)}

    def prepare(self, cfg: ScorerConfig, project_dir: Path | None) -> Verdict:
        from arenatui.scoring.json_schema import SchemaValidator

        validator = SchemaValidator(cfg.schema) if cfg.schema is not None else None

        def verdict(output: str, case: Case, timeout_s: float) -> Score:
            assert validator is not None  # read() put the schema there
            problem = validator.problem(output)
            return Score(1.0, True) if problem is None else Score(0.0, False, True, problem)

        return verdict


class Regex(ScorerKind):
    name = "regex"

    def read(self, t: SettingsTable, judge: JudgeSettings) -> dict[str, Any]:
        out = super().read(t, judge)
        pattern = t.string("pattern")
        if pattern is None:
            raise t.error("pattern", "is required for a regex scorer (a Python regular expression)")
        try:
            re.compile(pattern.replace("{expected}", "x"))
        except re.error as e:
            raise t.error("pattern", f"is not a valid regular expression ({e})") from None
        return out

    def prepare(self, cfg: ScorerConfig, project_dir: Path | None) -> Verdict:
        return RegexVerdict(cfg)


class RegexVerdict:
    """A regex scorer's verdict: its pattern compiled once (per case when it holds {expected}), each match
    bounded in time. A pattern the `regex` library rejects (the config check compiles with `re`) is an error of
    each call, never of the sweep's start."""

    def __init__(self, cfg: ScorerConfig) -> None:
        import regex  # imported only by a project that has a regex scorer (start-up time)

        self.cfg = cfg
        self.flags = regex.V0 | (0 if cfg.case_sensitive else regex.IGNORECASE)
        self.compiled: Any = None
        self.broken: ScoringError | None = None
        if cfg.pattern is not None and "{expected}" not in cfg.pattern:
            try:
                self.compiled = self._compile(cfg.pattern)
            except ScoringError as e:
                self.broken = e

    def _compile(self, pattern: str) -> Any:
        import regex

        try:
            return regex.compile(pattern, self.flags)
        except (regex.error, ValueError, OverflowError, RecursionError) as e:
            what = "with this case's expected text filled in " if "{expected}" in (self.cfg.pattern or "") else ""
            raise ScoringError(f"scorer {self.cfg.name!r}: its pattern {what}is not a valid regular expression "
                               f"({e})") from None

    def __call__(self, output: str, case: Case, timeout_s: float) -> Score:
        if self.broken is not None:
            raise self.broken
        rx = self.compiled
        if rx is None:
            import regex

            assert self.cfg.pattern is not None
            rx = self._compile(self.cfg.pattern.replace("{expected}",
                                                        regex.escape(case.expected or "", special_only=True)))
        try:
            # concurrent: the matcher lets go of the GIL, so a slow match in a thread leaves the loop free
            ok = rx.search(output, timeout=timeout_s, concurrent=True) is not None
        except TimeoutError:
            raise ScoringSlow(f"scorer {self.cfg.name!r}: the regex gave no verdict within {timeout_s:g}s on an "
                              f"output of {len(output):,} characters (catastrophic backtracking?)") from None
        return Score(float(ok), ok)


# ---- kinds that run something -----------------------------------------------------------------------------------

class Python(ScorerKind):
    name = "python"
    blocking = True

    def read(self, t: SettingsTable, judge: JudgeSettings) -> dict[str, Any]:
        out = super().read(t, judge)
        function = t.string("function")
        if function is None:
            raise t.error("function", "is required for a python scorer: 'package.module:function'")
        from arenatui.scoring.plugin import PluginProblem, load_function

        try:
            load_function(function, t.file.parent)
        except PluginProblem as e:
            raise t.error("function", str(e)) from None
        return out

    def prepare(self, cfg: ScorerConfig, project_dir: Path | None) -> Verdict:
        return PythonVerdict(cfg, project_dir)


class PythonVerdict:
    """A python scorer's verdict: the project's function, imported once, called within its timeout."""

    def __init__(self, cfg: ScorerConfig, project_dir: Path | None) -> None:
        from arenatui.scoring.plugin import PluginProblem, load_function

        self.cfg = cfg
        self.function: UserScorer | None = None
        self.broken: ScoringError | None = None
        self.stuck: list[threading.Thread] = []
        """This scorer's calls still running past their timeout (plugin.call)."""
        if cfg.function is not None:
            try:
                self.function = load_function(cfg.function, project_dir)
            except PluginProblem as e:  # checked when the project loaded; a resume elsewhere may not find it
                self.broken = ScoringError(f"scorer {cfg.name!r}: {e}")

    def __call__(self, output: str, case: Case, timeout_s: float) -> Score:
        from arenatui.scoring.plugin import PluginFailed, call

        if self.broken is not None:
            raise self.broken
        assert self.function is not None
        try:
            return Score(*call(self.function, case, output, self.cfg.timeout_s, self.stuck))
        except (PluginFailed, ValueError) as e:
            raise ScoringError(f"scorer {self.cfg.name!r}: {e}") from None


class CodeExec(ScorerKind):
    name = "code_exec"
    blocking = True

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        from arenatui.scoring.code_exec import ExecLimits, extract_code, run_code

        if not case.tests:
            return Score(0.0, False, False, "the case has no tests to run the code against")
        limits = ExecLimits(timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb)
        result = run_code(extract_code(output), case.tests, limits)
        return Score(float(result.passed), result.passed, False, result.summary(200),
                     "tests_not_run" if result.verdict == "tests_not_run" else None)


class LlmJudge(ScorerKind):
    name = "llm_judge"

    def read(self, t: SettingsTable, judge: JudgeSettings) -> dict[str, Any]:
        if judge.judge is None:
            raise t.error("judge", "is required for an llm_judge scorer: the key of the [[models]] entry that judges")
        rubric = judge.rubric
        if rubric is None or not rubric.strip():
            raise t.error("rubric", "is required for an llm_judge scorer: the judge's prompt, with {output} (and "
                                    "{input}, {expected} if it needs them) where the texts go")
        if "{output}" not in rubric:
            raise t.error("rubric", "must contain {output}, where the answer to judge goes")
        scale, pass_at = judge.scale, judge.pass_at
        m_scale = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", scale)
        if m_scale:
            lo, hi = int(m_scale.group(1)), int(m_scale.group(2))
            if hi <= lo:
                raise t.error("scale", f"expected LO-HI with LO < HI, got {scale!r}")
            scale = f"{lo}-{hi}"
            if pass_at is not None and not lo <= pass_at <= hi:
                raise t.error("pass_at", f"expected a verdict within the scale {scale}, got {pass_at:g}")
        elif scale.strip().lower() in ("pass/fail", "pass-fail", "passfail"):
            scale = "pass/fail"
            if pass_at is not None:
                raise t.error("pass_at", "applies to a numeric scale only (scale = \"1-5\"); this one is pass/fail")
        else:
            raise t.error("scale", f'expected "pass/fail" or a whole-number range such as "1-5", got {scale!r}')
        if judge.verdict is not None:
            try:
                re.compile(judge.verdict)
            except re.error as e:
                raise t.error("verdict", f"is not a valid regular expression ({e})") from None
        sample = judge.sample
        if sample > 1.0 and not float(sample).is_integer():
            raise t.error("sample", f"expected a share in (0, 1] or a whole number of cases, got {sample:g}")
        return {"scale": scale}

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        raise ScoringError(f"scorer {cfg.name!r} is an llm_judge: its judge model scores the answer, in the sweep")


BUILTIN_KINDS: tuple[ScorerKind, ...] = (Exact(), Contains(), Regex(), Choice(), Numeric(), JsonValid(), JsonSchema(),
                                         F1(), Python(), CodeExec(), LlmJudge())
"""In the order `scorer_kinds()` lists them (a project's unknown kind is told these)."""

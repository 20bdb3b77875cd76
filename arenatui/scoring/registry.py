"""Which scorer kinds exist: one class per kind that checks its own settings (the shape of harlequin's adapter
options), behind a name → kind registry that `config.load` dispatches through.

A kind reads and checks the settings only it has when a project loads (a regex's pattern, a judge's rubric and
scale); the settings every scorer may carry (name, choices, labels, tolerance, ...) are read by the loader. A kind
added here (`register`) also gives the verdict itself (`score`) and keeps its own settings in
`ScorerConfig.options`; the built-in kinds' verdicts are in `scorers.Scorer`. Adding a kind is one new class and
one `register` call; nothing here imports a scorer implementation (`regex`, `jsonschema`, the user's plugins)
until a setting needs checking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

if TYPE_CHECKING:
    from arenatui.config.schema import Case, ScorerConfig
    from arenatui.scoring.scorers import Score

T = TypeVar("T")


class SettingsTable(Protocol):
    """The typed reads of one [[scorers]] table (config.load's table: each read is remembered, so a key nobody
    reads is an unknown-key error with "did you mean")."""

    file: Path

    def error(self, name: str | None, expected: str) -> Exception: ...

    def get(self, name: str, typ: type[T] | tuple[type, ...], default: T, what: str) -> T: ...

    def string(self, name: str, default: str | None = None, *, required: bool = False) -> str | None: ...

    def number(self, name: str, default: float | None, *, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False) -> float | None: ...

    def integer(self, name: str, default: int | None, *, lo: int | None = None,
                hi: int | None = None) -> int | None: ...

    def boolean(self, name: str, default: bool) -> bool: ...


@dataclass(slots=True)
class JudgeSettings:
    """The settings only an llm_judge scorer may have, as read (the loader reads them for every scorer, so that
    another kind given one is told it applies to llm_judge only)."""

    judge: str | None
    rubric: str | None
    scale: str
    verdict: str | None
    pass_at: float | None
    sample: float


class ScorerKind:
    """One kind of scorer: its name, the settings it checks, and (for a kind added through `register`) its verdict."""

    name: str
    """What a project's `kind = "..."` says."""
    builtin: ClassVar[bool] = False
    """A built-in kind's verdict is in scorers.Scorer; an added kind's is its own `score`."""
    blocking: ClassVar[bool] = False
    """Its verdict may take long (user code, a process): the engine runs it in a worker thread."""

    def read(self, t: SettingsTable, judge: JudgeSettings) -> dict[str, Any]:
        """Check this kind's own settings (raise `t.error(key, expected)`); return the ScorerConfig fields it sets
        or normalises (an added kind returns {"options": {...}} with its own settings)."""
        for k, v in (("judge", judge.judge), ("rubric", judge.rubric), ("verdict", judge.verdict),
                     ("pass_at", judge.pass_at)):
            if v is not None:
                raise t.error(k, f"applies to llm_judge scorers only (this one is {self.name})")
        return {}

    def score(self, cfg: ScorerConfig, output: str, case: Case) -> Score:
        raise NotImplementedError(f"the {self.name} scorer's verdict is in arenatui.scoring.scorers")


class _Builtin(ScorerKind):
    builtin = True


class _Plain(_Builtin):
    """A built-in kind with no settings of its own (exact, contains, choice, numeric, json_valid)."""

    def __init__(self, name: str) -> None:
        self.name = name


class Regex(_Builtin):
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


class JsonSchema(_Builtin):
    name = "json_schema"

    def read(self, t: SettingsTable, judge: JudgeSettings) -> dict[str, Any]:
        """The schema: inline ``schema`` table or ``schema_file`` (JSON), checked now."""
        import json

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


class F1(_Builtin):
    name = "f1"

    def read(self, t: SettingsTable, judge: JudgeSettings) -> dict[str, Any]:
        out = super().read(t, judge)
        labels = t.get("labels", list, [], "an array of strings")
        if len(labels) < 2:
            raise t.error("labels", "an f1 scorer needs the label set: at least two labels, e.g. [\"pos\", \"neg\"]")
        return out


class Python(_Builtin):
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


class CodeExec(_Builtin):
    name = "code_exec"
    blocking = True


class LlmJudge(_Builtin):
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


_KINDS: dict[str, ScorerKind] = {}


def register(kind: ScorerKind) -> None:
    """Add a scorer kind (a name given twice replaces the first: tests register toys)."""
    _KINDS[kind.name] = kind


def unregister(name: str) -> None:
    _KINDS.pop(name, None)


def scorer_kind(name: str) -> ScorerKind | None:
    return _KINDS.get(name)


def scorer_kinds() -> tuple[str, ...]:
    return tuple(_KINDS)


for _kind in (_Plain("exact"), _Plain("contains"), Regex(), _Plain("choice"), _Plain("numeric"), _Plain("json_valid"),
              JsonSchema(), F1(), Python(), CodeExec(), LlmJudge()):
    register(_kind)

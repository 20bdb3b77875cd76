"""What a scorer kind is: the settings it checks when a project loads, its verdict on one output (a `Score`), and
the errors a verdict may raise. `kinds.py` holds the built-in kinds, `registry.py` names them; a kind of your own
subclasses `ScorerKind` and is registered there.

A scorer's verdict on one output either comes back or raises `ScoringError`, which the engine stores as that
call's `scoring_error` (never the sweep's end). ``invalid_format`` says the scorer could not read an answer out of
the output at all (unparseable JSON, no option chosen, no number), which failure_modes reports apart from a wrong
answer, and ``detail`` says why in a line (the JSON path that failed, the code's verdict).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:
    from arenatui.config.schema import Case, ScorerConfig

T = TypeVar("T")

REGEX_TIMEOUT_S = 2.0
"""The longest a regex scorer may take over one output before the call gets a scoring error: far above
what a sane pattern needs on a long answer (a linear scan of 50 MB takes well under a second)."""


class Score(NamedTuple):
    value: float
    passed: bool
    invalid_format: bool = False
    detail: str | None = None
    failure_mode: str | None = None
    """The failure mode when the scorer knows it better than the answer's text (code_exec's tests_not_run)."""


class ScoringError(Exception):
    """One output could not be scored: the call is stored as errored with error class `scoring_error`."""


class ScoringSlow(ScoringError):
    """A regex scorer ran past the time it was given: the caller may try again with more time elsewhere."""


Verdict = Callable[[str, "Case", float], Score]
"""One scorer's verdict: (output, case, the time a slow verdict may take) → Score, or ScoringError."""


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
    """One kind of scorer: its name, the settings it checks, and its verdict.

    A kind with nothing to prepare gives its verdict in `score`; one that holds something per scorer (a compiled
    pattern, an imported function) builds it once in `prepare`.
    """

    name: str
    """What a project's `kind = "..."` says."""
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
        """The verdict on one output (a kind that overrides `prepare` need not give this)."""
        raise NotImplementedError(f"the {self.name} scorer kind gives no verdict")

    def prepare(self, cfg: ScorerConfig, project_dir: Path | None) -> Verdict:
        """The verdict of one configured scorer of this kind, built once when a sweep starts."""
        return lambda output, case, timeout_s: self.score(cfg, output, case)

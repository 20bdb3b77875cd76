"""The scorers of a sweep: each configured scorer's verdict, taken from its kind in the registry (`registry.py`;
the built-in kinds in `kinds.py`), and the pick of each case's scorer.

Each verdict returns a Score or raises ScoringError (see `base.py`); a kind whose verdict may take long (python
functions, code_exec) is `blocking`, and the engine runs it in worker threads under a limit of its own.
"""

from __future__ import annotations

from pathlib import Path

from arenatui.config.schema import Case, ScorerConfig
from arenatui.scoring.base import REGEX_TIMEOUT_S, Score, ScoringError, ScoringSlow, Verdict
from arenatui.scoring.kinds import extract_choice
from arenatui.scoring.registry import scorer_kind

__all__ = ["REGEX_TIMEOUT_S", "Score", "Scorer", "ScorerSet", "ScoringError", "ScoringSlow", "extract_choice"]


class Scorer:
    """One configured scorer: its kind's verdict, prepared once (a pattern compiled, a function imported)."""

    def __init__(self, cfg: ScorerConfig, project_dir: Path | None = None) -> None:
        self.cfg = cfg
        kind = scorer_kind(cfg.kind)
        self.blocking = kind.blocking if kind is not None else False
        """True when scoring may take long (user code, a process): the engine runs it in a worker thread."""
        self.verdict: Verdict = kind.prepare(cfg, project_dir) if kind is not None else self._unknown
        """The kind's verdict for this scorer (a resumed run's kind may no longer be registered: each call says so)."""

    def _unknown(self, output: str, case: Case, timeout_s: float) -> Score:
        raise ScoringError(f"scorer {self.cfg.name!r}: no scorer kind {self.cfg.kind!r} is registered")

    def score(self, output: str, case: Case, timeout_s: float = REGEX_TIMEOUT_S) -> Score:
        """The verdict on `output`; raises ScoringSlow if a regex needs longer than `timeout_s`, ScoringError
        if the scorer cannot judge this case at all."""
        return self.verdict(output, case, timeout_s)


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

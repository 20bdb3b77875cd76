"""Which scorer kinds exist: a name → kind registry that `config.load` dispatches through (the shape of harlequin's
adapter options) and `scorers.Scorer` takes each scorer's verdict from.

A kind (a `base.ScorerKind`) reads and checks the settings only it has when a project loads (a regex's pattern, a
judge's rubric and scale) and gives the verdict on an output; the settings every scorer may carry (name, choices,
labels, tolerance, ...) are read by the loader. The built-in kinds are in `kinds.py`. Adding a kind is one new
class (in its own module) and one `register` call; an added kind keeps its own settings in `ScorerConfig.options`.
Nothing here imports a scorer implementation (`regex`, `jsonschema`, the user's plugins) until a setting needs
checking or a scorer is built.
"""

from __future__ import annotations

from arenatui.scoring.base import JudgeSettings, ScorerKind, SettingsTable
from arenatui.scoring.kinds import BUILTIN_KINDS

__all__ = ["JudgeSettings", "ScorerKind", "SettingsTable", "register", "scorer_kind", "scorer_kinds", "unregister"]

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


for _kind in BUILTIN_KINDS:
    register(_kind)

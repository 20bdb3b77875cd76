"""Which calls a sweep makes: models × cases × trials after filters, minus what is already stored."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from arenatui.config.schema import Case, ModelConfig, Project
from arenatui.errors import PlanError
from arenatui.limits import MAX_TRIALS


@dataclass(frozen=True, slots=True)
class Filters:
    """What the user narrowed the sweep to; stored with a run so resume plans the same calls."""

    models: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    limit: int | None = None
    trials: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"models": list(self.models), "tags": list(self.tags), "limit": self.limit, "trials": self.trials}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Filters:
        return cls(models=tuple(d.get("models") or ()), tags=tuple(d.get("tags") or ()), limit=d.get("limit"),
                   trials=d.get("trials"))


@dataclass(slots=True)
class Plan:
    project: Project
    models: tuple[ModelConfig, ...]
    cases: tuple[Case, ...]
    trials: int
    done: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    """Per model, (case id, trial) already stored with a final result."""

    @property
    def total(self) -> int:
        return len(self.models) * len(self.cases) * self.trials

    @property
    def done_count(self) -> int:
        return sum(len(s) for s in self.done.values())

    @property
    def remaining(self) -> int:
        return self.total - self.done_count

    def pending(self, model_key: str) -> Iterator[tuple[Case, int]]:
        """This model's calls still to make, lazily, case-major so every case fills in across trials."""
        done = self.done.get(model_key)
        for case in self.cases:
            for trial in range(self.trials):
                if done and (case.id, trial) in done:
                    continue
                yield case, trial

    def describe(self) -> str:
        return (f"{len(self.models)} model{'s' if len(self.models) != 1 else ''} × {len(self.cases)} "
                f"test{'s' if len(self.cases) != 1 else ''} × {self.trials} trial(s) = {self.total} calls")


def make_plan(project: Project, filters: Filters = Filters(),
              done: dict[str, set[tuple[str, int]]] | None = None) -> Plan:
    models = project.models
    if filters.models:
        known = [m.key for m in project.models]
        for k in filters.models:
            if k not in known:
                close = difflib.get_close_matches(k, known, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else f"; the project has: {', '.join(known)}"
                raise PlanError(f"--models: no model {k!r} in {project.path}{hint}")
        models = tuple(m for m in project.models if m.key in filters.models)
    cases = project.cases
    if filters.tags:
        wanted = set(filters.tags)
        cases = tuple(c for c in cases if wanted.intersection(c.tags) or (c.stratum in wanted))
        if not cases:
            raise PlanError(f"--tags {','.join(filters.tags)}: no case in {project.path} has any of these tags "
                            "or strata")
    if filters.limit is not None:
        if filters.limit < 1:
            raise PlanError(f"--limit: expected a whole number >= 1, got {filters.limit}")
        cases = cases[: filters.limit]
    trials = filters.trials if filters.trials is not None else project.run.trials
    if not 1 <= trials <= MAX_TRIALS:
        raise PlanError(f"--trials: expected a whole number from 1 to {MAX_TRIALS}, got {trials}")
    return Plan(project=project, models=models, cases=cases, trials=trials, done=done or {})

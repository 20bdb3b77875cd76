"""Chained cases: a case whose input uses other cases' answers (``depends_on``, ``{output:ID}``).

Each (model, trial) is one episode: its root cases run like any case; a dependent becomes ready once every parent
has passed, with ``{output:ID}`` replaced by that parent's answer of the same model and trial; when a parent failed
or errored, the dependent (and what depends on it) is decided 'unreachable' without a call. Pure bookkeeping: the
runner asks it what a finished call unlocks and queues or records that.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from arenatui.config.schema import OUTPUT_REF, Case

Outcome = tuple[bool, str | None]
"""(passed, its answer)."""


def fill_outputs(case: Case, outputs: Mapping[str, str | None]) -> Case:
    """The case with each ``{output:ID}`` replaced, literally, by the answer of parent ID."""

    def fill(text: str) -> str:
        return OUTPUT_REF.sub(lambda m: outputs.get(m.group(1)) or "", text)

    if isinstance(case.input, str):
        return dataclasses.replace(case, input=fill(case.input))
    return dataclasses.replace(case, input=tuple({**m, "content": fill(m.get("content", ""))} for m in case.input))


class Chains:
    """What each finished call of a chained project unlocks, per (lane, trial)."""

    def __init__(self, cases: Sequence[Case]) -> None:
        self.cases = {c.id: c for c in cases}
        self.dependents = frozenset(c.id for c in cases if c.depends_on)
        self.children: dict[str, list[Case]] = {}
        for c in cases:
            for p in c.depends_on:
                self.children.setdefault(p, []).append(c)
        self.involved = frozenset({c.id for c in cases if c.depends_on} | {p for p in self.children if p in self.cases})
        """Cases that take part in a chain: once all of an episode's have ended, it is forgotten (a long sweep keeps
        only the episodes under way, not every parent's answer)."""
        self._outcomes: dict[tuple[str, int], dict[str, Outcome | None]] = {}
        """(lane, trial) -> case id -> how its call ended, None while it is under way (decided ready)."""

    def is_root(self, case_id: str) -> bool:
        return case_id not in self.dependents

    def finished(self, lane: str, case_id: str, trial: int, outcome: Outcome
                 ) -> list[tuple[Case, str | None]]:
        """Record how a call ended; returns the dependents it decided: (the case with its input filled, None) when
        ready to run, or (the case, why) when unreachable. An unreachable case's own dependents follow it."""
        episode = self._outcomes.setdefault((lane, trial), {})
        episode[case_id] = outcome
        decided: list[tuple[Case, str | None]] = []
        todo = [case_id]
        while todo:
            parent = todo.pop()
            for child in self.children.get(parent, ()):
                if child.id in episode or not _ended(episode, child.depends_on):
                    continue  # decided already, or a parent has not ended yet
                failed = [p for p in child.depends_on if not _passed(episode, p)]
                if failed:
                    why = (f"not run: {'its parent' if len(failed) == 1 else 'its parents'} "
                           f"{', '.join(repr(p) for p in failed)} did not pass in this trial")
                    episode[child.id] = (False, None)
                    decided.append((child, why))
                    todo.append(child.id)
                else:
                    episode[child.id] = None  # under way: its own result replaces this
                    decided.append((fill_outputs(child, _answers(episode, child.depends_on)), None))
        if len(episode) >= len(self.involved) and all(o is not None for o in episode.values()):
            del self._outcomes[(lane, trial)]
        return decided

    @property
    def episodes(self) -> int:
        """Episodes (lane, trial) remembered: those with a chain still under way."""
        return len(self._outcomes)

    def start(self, lane: str, stored: Iterable[tuple[str, int, Outcome]], pending: Iterable[tuple[str, int]]
              ) -> list[tuple[Case, int, str | None]]:
        """Before a run starts: `lane`'s stored outcomes (a resumed run), then what its `pending` dependents (case id,
        trial) can be decided from them now, as (case with its input filled, trial, None) ready to run or (case,
        trial, why) unreachable. A parent outside the run (left out by a filter) makes its dependents unreachable."""
        for cid, trial, outcome in stored:
            self._outcomes.setdefault((lane, trial), {})[cid] = outcome
        waiting = sorted(pending, key=lambda k: (self._depth(k[0]), k[1]))
        out: list[tuple[Case, int, str | None]] = []
        for cid, trial in waiting:
            episode = self._outcomes.setdefault((lane, trial), {})
            case = self.cases[cid]
            outside = [p for p in case.depends_on if p not in self.cases]
            if outside:
                episode[cid] = (False, None)
                out.append((case, trial, f"not run: its parent {outside[0]!r} is not in this run (left out by a "
                                         "filter)"))
            elif _ended(episode, case.depends_on):
                failed = [p for p in case.depends_on if not _passed(episode, p)]
                episode[cid] = (False, None) if failed else None
                out.append((case, trial, f"not run: its parent {failed[0]!r} did not pass in this trial")
                           if failed else (fill_outputs(case, _answers(episode, case.depends_on)), trial, None))
        return out

    def _depth(self, case_id: str) -> int:
        """Longest chain of parents above a case (the loader refused cycles)."""
        case = self.cases.get(case_id)
        if case is None or not case.depends_on:
            return 0
        return 1 + max(self._depth(p) for p in case.depends_on)


def _ended(episode: Mapping[str, Outcome | None], ids: Iterable[str]) -> bool:
    return all(episode.get(p) is not None for p in ids)


def _passed(episode: Mapping[str, Outcome | None], case_id: str) -> bool:
    o = episode.get(case_id)
    return o is not None and o[0]


def _answers(episode: Mapping[str, Outcome | None], ids: Iterable[str]) -> dict[str, str | None]:
    return {p: o[1] for p in ids if (o := episode.get(p)) is not None}

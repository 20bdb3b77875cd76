"""Which calls a sweep makes: models × cases × trials after filters, minus what is already stored."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import random
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from arenatui.config.schema import Case, ModelConfig, Project, ScorerConfig
from arenatui.kernel.errors import PlanError
from arenatui.kernel.events import JUDGE_LANE_PREFIX, AwaitingJudge, OpenStep, lane_key
from arenatui.kernel.judge_sample import judge_sample
from arenatui.kernel.limits import MAX_TRIALS
from arenatui.kernel.units import models_by_variants, plural


@dataclass(frozen=True, slots=True)
class Filters:
    """What the user narrowed the sweep to; stored with a run so resume plans the same calls."""

    models: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    limit: int | None = None
    trials: int | None = None
    shard: Shard | None = None
    """`--shard K/N`: only the calls whose stable index falls to shard K (`in_shard`)."""
    prompts: tuple[str, ...] = ()
    """`--prompts a,b`: only these prompt variants."""
    sample_seed: int | None = None
    """With `limit`: the cases are a sample of that many drawn with this seed (kept in file order), not the first
    ones (`arena tune --budget`: a sorted case file's first cases are no fair mix)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"models": list(self.models), "tags": list(self.tags), "limit": self.limit,
                               "trials": self.trials}
        if self.prompts:
            out["prompts"] = list(self.prompts)
        if self.sample_seed is not None:
            out["sample_seed"] = self.sample_seed
        if self.shard is not None:  # absent otherwise: an unsharded run's stored filters are as they always were
            out["shard"] = [self.shard.index, self.shard.count]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Filters:
        shard = d.get("shard")
        return cls(models=tuple(d.get("models") or ()), tags=tuple(d.get("tags") or ()), limit=d.get("limit"),
                   trials=d.get("trials"), shard=Shard(int(shard[0]), int(shard[1])) if shard else None,
                   prompts=tuple(d.get("prompts") or ()), sample_seed=d.get("sample_seed"))


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard `index` of `count` (0 <= index < count): one machine's share of a run (`--shard K/N`)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(value: str, where: str = "--shard") -> Shard:
    """`K/N` with 0 <= K < N (K is 0-based, as JOB_COMPLETION_INDEX is; a Slurm array can start at 0 too)."""
    k, sep, n = value.strip().partition("/")
    try:
        index, count = int(k), int(n)
    except ValueError:
        index = count = -1
    if not sep or count < 1 or not 0 <= index < count:
        raise PlanError(f"{where}: expected K/N with 0 <= K < N (e.g. 0/4 ... 3/4; K is 0-based like "
                        f"JOB_COMPLETION_INDEX), got {value!r}")
    return Shard(index, count)


def shard_of(seed: int, model_key: str, case_id: str, trial: int, count: int) -> int:
    """The shard a sweep's call falls to: its stable index (BLAKE2b of the run's seed, model, case and trial) modulo
    the shard count. Stable: the same in every process and on every machine, whatever the call order, the filters
    or the other models, so N shards of one seed cover the run's calls exactly once between them."""
    digest = hashlib.blake2b(f"{seed}|{model_key}|{case_id}|{trial}".encode(), digest_size=8, person=b"arena-shard")
    return int.from_bytes(digest.digest(), "little") % count


def in_shard(seed: int, model_key: str, case_id: str, trial: int, shard: Shard) -> bool:
    """Whether a sweep's call falls to `shard` (`shard_of`)."""
    return shard_of(seed, model_key, case_id, trial, shard.count) == shard.index


def judge_lane(judge_key: str) -> str:
    """The engine's lane (and the console's row) of a judge model."""
    return JUDGE_LANE_PREFIX + judge_key


def judge_trial(model_index: int, trial: int, trials: int) -> int:
    """A judge call's trial in its lane: one per candidate model and trial, so each has a cell of its own."""
    return model_index * trials + trial


def judged_case_ids(project: Project, scorer: ScorerConfig) -> frozenset[str]:
    """The cases an llm_judge scorer judges: all of its cases, or its `sample` of them (judge_sample says how)."""
    default = project.scorers[0].name
    mine = [c.id for c in project.cases if (c.scorer or default) == scorer.name]
    return judge_sample(scorer.name, scorer.sample, mine)


def call_order(seed: int, model_key: str, n: int) -> Iterator[int]:
    """A permutation of range(n) (index = case position × trials + trial) drawn from the run's seed and the model.

    Calls in case-file order put a throttled model's errors, or an outage mid-run, on the cases that come last:
    with the easy cases first, a rate-limited twin of a model ranked above it in 16 of 16 runs (issue 26). Drawn
    per model, the order spreads any time window's errors over the whole file. The same seed, model and plan give
    the same order in any process, so a resumed run continues the same order (stored calls are skipped). An
    array of 4-byte ints: 4 MB for a million calls of one model.
    """
    order = array("I", range(n))
    random.Random(f"{seed}|{model_key}|call-order").shuffle(order)
    return iter(order)


@dataclass(frozen=True, slots=True)
class JudgePlan:
    """One judge model's lane: which of the plan's cases its scorers judge."""

    model: ModelConfig
    case_ids: frozenset[str]
    """The plan's cases it judges (for every candidate model and trial)."""
    total: int
    """Judge calls the whole plan makes: judged cases × candidate models × trials."""

    @property
    def key(self) -> str:
        return judge_lane(self.model.key)


@dataclass(frozen=True, slots=True)
class Plan:
    project: Project
    models: tuple[ModelConfig, ...]
    """The candidates' lanes: the models asked the cases (judges are in `judges`), one lane per prompt variant of a
    model that has variants (key ``model · variant``, ModelConfig.variant set)."""
    cases: tuple[Case, ...]
    trials: int
    done: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    """Per model, (case id, trial) already stored with a final result."""
    judges: tuple[JudgePlan, ...] = ()
    awaiting: tuple[AwaitingJudge, ...] = ()
    """Answers stored unscored and awaiting their judge (resume): judged before anything else of their lane."""
    chain_outcomes: dict[str, list[tuple[str, int, tuple[bool, str | None]]]] = field(default_factory=dict)
    """Resume of a chained project: per model, (case id, trial, (passed, answer)) of the stored calls of cases
    others depend on, from which the dependents still to run take their inputs."""
    filters: Filters = field(default_factory=Filters)
    """What the plan was narrowed by, its shard among them."""
    escalations: dict[str, ModelConfig] = field(default_factory=dict)
    """Per candidate model key with escalate_to, the model its still-failed cases go to."""
    steps: dict[str, list[OpenStep]] = field(default_factory=dict)
    """Resume of a run with repairs or escalations: per lane, the stored steps of calls not yet final,
    so the chain goes on where it stopped."""
    _shard_cells: array[int] | None = field(default=None, init=False, repr=False, compare=False)
    """shard_cells(), counted on first use (a cache: a plan is never changed after it is made)."""

    def judged_cases(self) -> dict[str, tuple[ScorerConfig, str]]:
        """Case id → (its llm_judge scorer, its judge lane), for the plan's cases that are judged."""
        out: dict[str, tuple[ScorerConfig, str]] = {}
        default = self.project.scorers[0]
        by_name = {s.name: s for s in self.project.scorers}
        chosen = {s.name: judged_case_ids(self.project, s) for s in self.project.scorers if s.kind == "llm_judge"}
        for c in self.cases:
            s = by_name[c.scorer] if c.scorer is not None else default
            if s.kind == "llm_judge" and c.id in chosen[s.name]:
                assert s.judge is not None
                out[c.id] = (s, judge_lane(s.judge))
        return out

    @property
    def total(self) -> int:
        return len(self.models) * len(self.cases) * self.trials

    @property
    def done_count(self) -> int:
        return sum(len(s) for s in self.done.values())

    @property
    def remaining(self) -> int:
        return self.shard_total() - self.done_count

    def pending(self, model_key: str) -> Iterator[tuple[Case, int]]:
        """This model's calls still to make, lazily, in its seeded interleaved order (`call_order`)."""
        done = self.done.get(model_key)
        shard, seed, trials = self.shard, self.project.run.seed, self.trials
        for k in call_order(seed, model_key, len(self.cases) * trials):
            case, trial = self.cases[k // trials], k % trials
            if done and (case.id, trial) in done:
                continue
            if shard is not None and not in_shard(seed, model_key, case.id, trial, shard):
                continue
            yield case, trial

    @property
    def shard(self) -> Shard | None:
        return self.filters.shard

    def mine(self, model_key: str, case_id: str, trial: int) -> bool:
        """Whether this process makes the call (always, unless the run is sharded)."""
        shard = self.filters.shard
        return shard is None or in_shard(self.project.run.seed, model_key, case_id, trial, shard)

    def shard_cells(self) -> array[int]:
        """Per (model, case), models-major, the trials this process makes: every trial, or a shard's. A shard's are
        counted once, one hash per call of the whole plan (a few µs each: seconds for a 1,000,000-call plan)."""
        if self._shard_cells is None:
            if self.shard is None:
                cells = array("I", [self.trials]) * (len(self.models) * len(self.cases))
            else:
                cells = array("I", [sum(self.mine(m.key, c.id, t) for t in range(self.trials))
                                    for m in self.models for c in self.cases])
            object.__setattr__(self, "_shard_cells", cells)  # the one cache of a frozen plan
            return cells
        return self._shard_cells

    def shard_total(self) -> int:
        """The calls of the plan this process makes: all of them, or a shard's."""
        return self.total if self.shard is None else sum(self.shard_cells())

    def describe(self) -> str:
        per_model: dict[str, int] = {}
        for m in self.models:
            per_model[m.base_key] = per_model.get(m.base_key, 0) + 1
        first = models_by_variants(per_model, any(m.variant is not None for m in self.models))
        whole = (f"{first} × {plural(len(self.cases), 'case')} × {plural(self.trials, 'trial')} = "
                 f"{plural(self.total, 'call')}")
        return whole if self.shard is None else f"{whole}, shard {self.shard} of them: {self.shard_total()}"


def _variant_lanes(project: Project, models: tuple[ModelConfig, ...], wanted: tuple[str, ...]
                   ) -> tuple[ModelConfig, ...]:
    """Each model once per prompt variant it is asked with (key ``model · variant``), or once as it is when the
    project has none; `wanted` (--prompts) keeps only those variants."""
    if wanted:
        known = [p.name for p in project.prompts]
        for name in wanted:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = (f"; did you mean '{close[0]}'?" if close else
                        f"; the project has: {', '.join(known)}" if known else "; the project has no [[prompts]]")
                raise PlanError(f"--prompts: no prompt variant {name!r} in {project.path}{hint}")
    if not project.prompts:
        return models
    out: list[ModelConfig] = []
    for m in models:
        for v in project.variants_of(m):
            if not wanted or v.name in wanted:
                out.append(dataclasses.replace(m, key=lane_key(m.key, v.name), variant=v))
    if not out:
        raise PlanError(f"--prompts {','.join(wanted)}: no model of {project.path} is asked with these variants")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Resumed:
    """What a stored run already holds, for the plan that continues it (`session.resume.read_resume` reads it)."""

    done: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    """Per lane, (case id, trial) stored with a final result: never called again."""
    awaiting: tuple[AwaitingJudge, ...] = ()
    """Answers stored unscored and awaiting their judge."""
    steps: dict[str, list[OpenStep]] = field(default_factory=dict)
    """Per lane, the stored steps of repairs and escalations not yet final."""
    chain_outcomes: dict[str, list[tuple[str, int, tuple[bool, str | None]]]] = field(default_factory=dict)
    """Per lane, the stored outcomes of the cases others depend on."""


def make_plan(project: Project, filters: Filters = Filters(), resume: Resumed | None = None) -> Plan:
    """The calls a sweep of `project` under `filters` makes, less what a stored run already holds (`resume`); built
    once, never changed after."""
    resume = resume or Resumed()
    models = tuple(m for m in project.models if m.candidate)
    if filters.models:
        known = [m.key for m in models]
        for k in filters.models:
            if k not in known:
                close = difflib.get_close_matches(k, known, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else f"; the project has: {', '.join(known)}"
                raise PlanError(f"--models: no model {k!r} in {project.path}{hint}")
        models = tuple(m for m in models if m.key in filters.models)
    models = _variant_lanes(project, models, filters.prompts)
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
        if filters.sample_seed is not None and filters.limit < len(cases):
            picked = random.Random(f"{filters.sample_seed}|case-sample").sample(range(len(cases)), filters.limit)
            cases = tuple(cases[i] for i in sorted(picked))
        else:
            cases = cases[: filters.limit]
    trials = filters.trials if filters.trials is not None else project.run.trials
    if not 1 <= trials <= MAX_TRIALS:
        raise PlanError(f"--trials: expected a whole number from 1 to {MAX_TRIALS}, got {trials}")
    if filters.shard is not None and any(c.depends_on for c in cases):
        raise PlanError("--shard splits a run call by call, and a chained case (depends_on) needs its parents' answers "
                        f"from the same process: run {project.path} unsharded")
    plan = Plan(project=project, models=models, cases=cases, trials=trials, done=resume.done, filters=filters,
                escalations={m.key: project.model(m.escalate_to) for m in project.models if m.escalate_to},
                awaiting=resume.awaiting, steps=resume.steps, chain_outcomes=resume.chain_outcomes)
    judged = plan.judged_cases()
    lanes: dict[str, set[str]] = {}
    for cid, (_s, lane) in judged.items():
        lanes.setdefault(lane, set()).add(cid)
    return dataclasses.replace(plan, judges=tuple(
        JudgePlan(model=m, case_ids=frozenset(lanes[judge_lane(m.key)]),
                  total=len(lanes[judge_lane(m.key)]) * len(models) * trials)
        for m in project.models if judge_lane(m.key) in lanes))

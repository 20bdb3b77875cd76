"""One read model for a stored run: `read_run(store, run) -> StoredRun`, what report, export, compare, browse and the
headless summary read.

The stored plan is built from the configuration stored with the run *as stored* (arenatui.config.project_to_dict
wrote it normalised: cases inline, scorers named, judges marked), never re-validated: no scorer plugin is imported,
no schema or cases file is read, nothing of the user's runs. A colleague opening the database on another machine
sees the results even where the project's files are gone. The read path never climbs back to `config` or `plan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from arenatui.results.runs import read_plan_results, variant_results
from arenatui.stats.bootstrap import run_seed
from arenatui.stats.compare import LEVEL, N_RESAMPLES
from arenatui.stats.items import RunResults
from arenatui.stats.variants import PromptRobustness, VariantResults, analyse_variants
from arenatui.store.bakeoff_queries import modes_by_case
from arenatui.store.db import RunRecord, Store
from arenatui.store.load_queries import run_kinds
from arenatui.store.queries import (
    FollowUps,
    ReasoningUsage,
    RunPlan,
    RunSpend,
    estimated_usage,
    failure_modes,
    follow_ups,
    judgments_by_case,
    reasoning_usage,
    resolve_run,
    run_spend,
    scored_outputs,
    stored_plan,
    table_list,
    top_errors,
    unscored_modes,
)

if TYPE_CHECKING:
    from arenatui.load.metrics import LoadOutcome
    from arenatui.tuning.levels import ModelReadout

F1Answers = dict[tuple[str, str], tuple[tuple[str, ...], list[tuple[str, str | None]], list[str]]]
"""Per (model, f1 scorer): the scorer's labels and the (expected, answered label) pairs."""

@dataclass(frozen=True, slots=True)
class StoredRun:
    """Everything the views show of one stored run, read once."""

    plan: RunPlan
    results: RunResults
    """(model × case) arrays: calls, scores, passes, cost, tokens, attempts, errors by class, latencies."""
    kind: str
    """'sweep' or 'load'."""
    spend: RunSpend
    """The models' spend, each judge's apart, and their total."""
    failure_modes: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per model, what its calls that did not pass looked like (arenatui.scoring.failure_modes)."""
    unscored_modes: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per model, why its unscored calls have no score ('unjudged', 'awaiting_judge')."""
    judgments: dict[str, int] = field(default_factory=dict)
    """Judge calls stored per case."""
    top_errors: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    """Per model, its most frequent (error class, error message, calls)."""
    f1: F1Answers = field(default_factory=dict)
    """Per (model, f1 scorer): labels and (expected, answered label) pairs, working cases only."""
    estimated_usage: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per model with any: (calls whose tokens were estimated because the server reported no usage, calls)."""
    tuning: tuple[ModelReadout, ...] = ()
    """The per-level readout every sweep keeps (tuned or not), per model."""
    load: LoadOutcome | None = None
    """A load run's figures, recomputed exactly from its stored requests."""
    refusals: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per model, per case id: calls that ended a refusal (a category a candidate refuses can decide alone)."""
    variants: VariantResults | None = None
    """Per (model, prompt variant, case) scores of a run with [[prompts]] (stats.variants analyses them)."""
    follow_ups: tuple[FollowUps, ...] = ()
    """Per model of a run with repairs or escalations: completion before and after, cost per completed case."""
    reasoning: dict[str, ReasoningUsage] = field(default_factory=dict)
    """Per model whose calls reasoned: how many, and the reasoning's share of their output tokens."""

    @property
    def record(self) -> RunRecord:
        return self.plan.record

    @property
    def run_id(self) -> str:
        return self.plan.record.run_id


def read_run(store: Store, run: str | RunRecord, *, latency: bool = True, detail: bool = True) -> StoredRun:
    """A stored run by id ('last' for the newest) read into one StoredRun.

    latency=False leaves out the per-call latency samples (percentiles), detail=False everything past the
    result arrays and the spend (failure and unscored modes, judgments, top errors, F1 answers, tuning readout,
    load figures): a comparison needs neither."""
    record = run if isinstance(run, RunRecord) else resolve_run(store, run)
    plan = stored_plan(record)
    results = read_plan_results(store, plan, latency=latency)
    kind = run_kinds(store, [record.run_id])[record.run_id][0]
    spend = run_spend(store, record.run_id)
    if not detail:
        return StoredRun(plan, results, kind, spend)
    rid = record.run_id
    load: LoadOutcome | None = None
    tuning: tuple[ModelReadout, ...] = ()
    f1: F1Answers = {}
    refusals: dict[str, dict[str, int]] = {}
    if kind == "load":
        from arenatui.load.store import stored_outcome_of

        load = stored_outcome_of(store.path, record)
    else:
        tuning = tuning_readouts(store, rid)
        f1 = f1_answers(store, plan)
        refusals = modes_by_case(store, rid, "refusal")
    return StoredRun(plan, results, kind, spend, failure_modes(store, rid), unscored_modes(store, rid),
                     judgments_by_case(store, rid) if plan.judged else {}, top_errors(store, rid), f1,
                     estimated_usage(store, rid), tuning, load, refusals, variant_results(store, plan),
                     tuple(follow_ups(store, plan)), reasoning_usage(store, rid))


def tuning_readouts(store: Store, run_id: str) -> tuple[ModelReadout, ...]:
    """A stored run's per-level readout (every sweep keeps one, tuned or not), per model, its verdict re-derived
    from the stored counts by today's rules (tuning.levels)."""
    from arenatui.tuning.levels import readouts_from_rows

    declared = {k: limits for k, (_at, limits) in store.declared_limits(run_id).items()}
    return tuple(readouts_from_rows(store.tuning_levels(run_id), declared))


def f1_answers(store: Store, plan: RunPlan) -> F1Answers:
    """Per (model, f1 scorer): the scorer's labels and, for every answered working case it scores, the
    (expected, answered label) pair (a sealed output is not kept)."""
    cfg = plan.record.config
    scorers = [s for s in table_list(cfg.get("scorers")) if isinstance(s.get("kind"), str)]
    if not any(s["kind"] == "f1" for s in scorers):
        return {}
    from arenatui.scoring.f1 import extract_label

    default = str(scorers[0].get("name") or scorers[0]["kind"])
    labels = {str(s.get("name") or s["kind"]): tuple(str(x) for x in s.get("labels") or ())
              for s in scorers if s["kind"] == "f1"}
    scorer_of = {str(c["id"]): str(c.get("scorer") or default) for c in table_list(cfg.get("cases"))
                 if c.get("id") is not None}
    cases = {c.id: (scorer_of[c.id], c.expected) for c in plan.cases
             if scorer_of.get(c.id) in labels and not c.sealed and c.expected is not None}
    out: F1Answers = {}
    for mk, cid, output in scored_outputs(store, plan.record.run_id):
        if cid in cases:
            name, expected = cases[cid]
            assert expected is not None
            got = out.setdefault((mk, name), (labels[name], [], []))
            got[1].append((expected, extract_label(output or "", labels[name])))
            got[2].append(cid)  # each answer's case: macro-F1's interval resamples cases
    return out


def open_and_read(db: Path | str | None, run: str, **kw: bool) -> StoredRun:
    """read_run on a database by path (the default database when None)."""
    with Store(db, read_only=True) as store:
        return read_run(store, run, **kw)


def prompt_robustness(run: StoredRun, *, n_resamples: int = N_RESAMPLES, level: float = LEVEL
                      ) -> PromptRobustness | None:
    """The prompt-variant analysis of a stored run (its read model's `variants`), or None when the run had no
    prompt variants: the one function the report and the bake-off page call."""
    if run.variants is None:
        return None
    return analyse_variants(run.variants, n_resamples=n_resamples, level=level,
                            seed=run_seed(run.plan.record.run_id))

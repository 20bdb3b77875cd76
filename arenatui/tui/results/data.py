"""What the results screens show of a stored run, gathered from the stats API in one worker call (no Textual).

`arenatui.stats` and `arenatui.store.queries` compute everything; this module only puts together what
one screen needs at once, and the few table shapes the screens want (outcomes per case and model).
Quality is over scored calls only (an unscored call, answered but outside an llm_judge sample, is coverage);
sealed cases are scored apart and their text never reaches here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arenatui.kernel.events import split_lane
from arenatui.kernel.units import signed_interval
from arenatui.load.metrics import LoadOutcome
from arenatui.present.variant_tables import follow_up_dicts
from arenatui.results.read import F1Answers, read_run
from arenatui.scoring.f1 import LabelScore, label_scores, macro_f1
from arenatui.stats import (
    Comparison,
    Disagreement,
    GroupScores,
    ModelRow,
    PairDecision,
    Reversal,
    RunChange,
    RunResults,
    all_pairs,
    answered_models,
    compare_models,
    compare_runs,
    disagreements,
    group_differences,
    group_scores,
    leaderboard,
    reversals,
)
from arenatui.stats.bootstrap import Interval
from arenatui.stats.f1_interval import label_cases, macro_f1_interval
from arenatui.stats.strata import groups
from arenatui.stats.variants import VariantResults, analyse_variants
from arenatui.store import Store
from arenatui.store.queries import (
    OUTCOMES,
    CallRow,
    CaseInfo,
    ReasoningUsage,
    RunPlan,
    RunSpend,
    call_details,
)
from arenatui.tui.call_text import PREVIEW_CHARS
from arenatui.tuning.levels import ModelReadout


@dataclass(frozen=True, slots=True)
class CaseRow:
    """One case of the cases table: per model, how its trials ended."""

    case: CaseInfo
    outcomes: dict[str, tuple[int, int, int, int]]
    """Per model: (passed, failed, errored, unscored) trials, in OUTCOMES order."""
    judged: bool | None = None
    """For a case an llm_judge scorer scores: whether it is in the judge's sample; None for other cases."""

    def has(self, model: str | None, outcome: str | None) -> bool:
        """Whether `model` (any model when None) has a trial that ended as `outcome` (any when None)."""
        if outcome is None:
            return True
        i = OUTCOMES.index(outcome)
        keys = [model] if model else list(self.outcomes)
        return any(self.outcomes.get(k, (0, 0, 0, 0))[i] for k in keys)

    def matches(self, text: str) -> bool:
        """Case-insensitive search over the id, the input and the expected answer (a sealed case has neither)."""
        t = text.lower()
        return t in self.case.id.lower() or t in self.case.input.lower() or t in (self.case.expected or "").lower()


@dataclass(frozen=True, slots=True)
class Classification:
    """One model's answers to the cases of one f1 scorer: macro-F1 and each label's precision, recall and F1."""

    scorer: str
    answers: int
    """Answered working cases × trials scored by this scorer (errored calls are coverage, not misses)."""
    macro_f1: float | None
    labels: list[LabelScore]
    interval: Interval | None = None
    """Macro-F1's bootstrap interval over cases (n = cases)."""
    label_cases: dict[str, int] = field(default_factory=dict)
    """Per label, the cases that expect it (its n; under 5 is marked)."""


def classifications(answers: F1Answers) -> dict[str, list[Classification]]:
    """Per model, one Classification per f1 scorer (scorers by name), from the read model's F1 answers."""
    out: dict[str, list[Classification]] = {}
    for (model, scorer), (labels, pairs, cids) in sorted(answers.items()):
        out.setdefault(model, []).append(
            Classification(scorer, len(pairs), macro_f1(pairs, labels), label_scores(pairs, labels),
                           macro_f1_interval(pairs, labels, cids), label_cases(pairs, cids)))
    return out


@dataclass(frozen=True, slots=True)
class StratumDiff:
    label: str
    comparison: Comparison


@dataclass(slots=True)
class RunView:
    """Everything the results screens show about one run, computed once in a worker."""

    plan: RunPlan
    results: RunResults
    board: list[ModelRow]
    """Best quality first."""
    pairs: list[PairDecision]
    groups: list[GroupScores]
    reversals: list[Reversal]
    rows: list[CaseRow]
    complete: bool = False
    """False while only the leaderboard is computed (`read_board`), True after `complete_view`."""
    by_model: dict[str, ModelRow] = field(default_factory=dict)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per model, its failed answers by failure mode (arenatui.scoring.failure_modes)."""
    tuning: dict[str, ModelReadout] = field(default_factory=dict)
    """Per model, the concurrency levels it ran at and what each gave (stored with every sweep)."""
    load: LoadOutcome | None = None
    """A load run's figures, recomputed from its stored requests (a load run has no per-case results)."""
    classification: dict[str, list[Classification]] = field(default_factory=dict)
    """Per model, its f1-scored answers (empty when the run has no f1 scorer with answered cases)."""
    unscored: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per model, its unscored calls by why (unjudged, awaiting_judge): not failures."""
    spend: RunSpend = field(default_factory=lambda: RunSpend(0.0))
    """What the run spent: candidates and each judge apart, and the total."""
    judgments: dict[str, int] = field(default_factory=dict)
    """Per case id, judgments stored (every model and trial)."""
    variant_results: VariantResults | None = None
    """Per (model, prompt variant, case) scores, of a run with [[prompts]]."""
    robustness: dict[str, Any] | None = None
    """The prompt-variant analysis (stats.variants), JSON-shaped: computed with the pairs (`complete_view`)."""
    follow_ups: list[dict[str, Any]] = field(default_factory=list)
    """Per model of a run with repairs or escalations: completion before and after, cost per completed case."""
    at_load: dict[str, tuple[float, bool]] = field(default_factory=dict)
    """Per model with a load run of the same project: p95 from schedule at the target load, and whether it is on
    the quality-p95 front there (arenatui.bakeoff.sections)."""
    at_load_target: str = ""
    """The target load those p95s are at, in words."""
    reasoning: dict[str, ReasoningUsage] = field(default_factory=dict)
    """Per model whose calls reasoned: how many, their reasoning and output tokens (store.queries.reasoning_usage)."""
    at_load_runs: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Per model in `at_load`: the load run its p95 is from, and whether it was picked in the runs tab (else it is
    the model's newest finished load run of the project)."""

    def __post_init__(self) -> None:
        self.by_model = {r.model: r for r in self.board}

    @property
    def run_id(self) -> str:
        return self.plan.record.run_id

    @property
    def ranked(self) -> list[str]:
        return [r.model for r in self.board]

    def macro_f1(self, model: str) -> float | None:
        """The model's macro-F1: of its one f1 scorer, or the mean over several (each has its own labels)."""
        values = [c.macro_f1 for c in self.classification.get(model, []) if c.macro_f1 is not None]
        return sum(values) / len(values) if values else None

    def decision(self, a: str, b: str) -> PairDecision | None:
        """The all-pairs (Holm) decision for a and b, in either order."""
        for p in self.pairs:
            if {p.comparison.a, p.comparison.b} == {a, b}:
                return p
        return None

    def case(self, case_id: str) -> CaseInfo | None:
        return next((c for c in self.plan.cases if c.id == case_id), None)

    def group_labels(self) -> list[str]:
        return [f"{g.kind} {g.group}" for g in self.groups]

    def group_case_ids(self, label: str) -> set[str]:
        for name, kind, mask in groups(self.results):
            if f"{kind} {name}" == label:
                return {c for c, keep in zip(self.results.cases, mask, strict=True) if keep}
        return set()

    def compare(self, a: str, b: str) -> Comparison:
        return compare_models(self.results, a, b)

    def stratum_diffs(self, a: str, b: str) -> list[StratumDiff]:
        """A − B inside each stratum and tag, over the working cases there that both answered."""
        return [StratumDiff(f"{kind} {name}", c) for name, kind, c in group_differences(self.results, a, b)]

    def disagreements(self, a: str, b: str) -> list[Disagreement]:
        return disagreements(self.results, a, b)


def _case_rows(plan: RunPlan, res: RunResults) -> list[CaseRow]:
    failed = res.scored - res.passed
    errored = res.calls - res.scored - res.unscored
    judged = plan.judged_case_ids()
    by_scorer = {c: True for j in plan.judged for c in j.case_ids}
    return [CaseRow(c, {m: (int(res.passed[i, j]), int(failed[i, j]), int(errored[i, j]), int(res.unscored[i, j]))
                        for i, m in enumerate(res.models)}, (c.id in judged) if c.id in by_scorer else None)
            for j, c in enumerate(plan.cases)]


def read_board(db: Path | str, run: str, picked: Mapping[tuple[str, str], str] | None = None) -> RunView:
    """Read a run ('last' for the newest) and compute its leaderboard: what the view shows first. `picked`: load
    runs picked in the runs tab, by (project, model): a sweep's frontier reads those of its project."""
    with Store(db, read_only=True) as store:
        stored = read_run(store, run)
        board = leaderboard(stored.results)
        at_load: dict[str, tuple[float, bool]] = {}
        at_load_runs: dict[str, tuple[str, bool]] = {}
        target = ""
        if stored.kind == "sweep":  # the frontier against p95 at the target load, when load runs of the project exist
            from arenatui.bakeoff.sections import load_section, read_loads

            mine = {m: rid for (project, m), rid in (picked or {}).items() if project == stored.record.project}
            loads, series = read_loads(store, stored, None, mine)
            if loads:
                section = load_section(board, stored, loads, series)
                target = section["target"]
                shown = [r for r in section["rows"] if r["load_run"] and r["latency_ms"]["p95"] is not None]
                at_load = {r["model"]: (r["latency_ms"]["p95"], r["on_front"]) for r in shown}
                at_load_runs = {r["model"]: (r["load_run"], mine.get(r["model"]) == r["load_run"]) for r in shown}
    res = stored.results
    return RunView(stored.plan, res, board, [], [], [], [], failures=stored.failure_modes,
                   tuning={ro.model_key: ro for ro in stored.tuning}, load=stored.load,
                   classification=classifications(stored.f1), unscored=stored.unscored_modes, spend=stored.spend,
                   judgments=stored.judgments, at_load=at_load, at_load_target=target, at_load_runs=at_load_runs,
                   variant_results=stored.variants, follow_ups=follow_up_dicts(stored.follow_ups),
                   reasoning=stored.reasoning)


def complete_view(view: RunView) -> RunView:
    """The rest, which takes longer (all pairs above all): the view with pairs, strata and the case table."""
    res = view.results
    if view.load is not None:  # requests on a schedule, not cases: nothing to pair or stratify
        return dataclasses.replace(view, complete=True)
    pairs = all_pairs(res, answered_models(res))
    table = group_scores(res)
    vr = view.variant_results
    robustness = None if vr is None else analyse_variants(vr).to_dict()
    return dataclasses.replace(view, pairs=pairs, groups=table, reversals=reversals(res, pairs),
                               rows=_case_rows(view.plan, res), complete=True, robustness=robustness)


def read_run_view(db: Path | str, run: str) -> RunView:
    return complete_view(read_board(db, run))


def case_detail(db: Path | str, run_id: str, case_id: str) -> dict[str, list[CallRow]]:
    """Every stored trial of one case, per model (a model asked with prompt variants: every variant's), each with its
    attempts, judgment and steps (outputs cut to PREVIEW_CHARS; the caller hides a sealed case's)."""
    with Store(db, read_only=True) as store:
        calls = call_details(store, run_id, case_id, preview=PREVIEW_CHARS)  # a 50 MB answer: its start
    out: dict[str, list[CallRow]] = {}
    for c in calls:
        out.setdefault(split_lane(c.model_key)[0], []).append(c)
    return out


def run_changes(db: Path | str, old_id: str, new_id: str) -> list[RunChange]:
    """Model by model, new − old over the working cases both runs answered."""
    with Store(db, read_only=True) as store:
        old = read_run(store, old_id, latency=False, detail=False).results
        new = read_run(store, new_id, latency=False, detail=False).results
    return compare_runs(old, new)


def interval_text(i: Interval) -> str:
    return signed_interval(i.low, i.high, i.n)

"""Read-side queries for the results views, reports and exports: aggregated in SQLite, handed over as arrays.

A run's per-item results are one GROUP BY over (model, case) that walks the results table's primary key
(run_id, model_key, case_id, trial), so a 1,000,000-call run arrives as 200,000 aggregate rows rather than
a million Python tuples (benchmarks/results_scale.py measures it).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arenatui.kernel.advice import single_slot_advice
from arenatui.kernel.errors import PlanError
from arenatui.kernel.events import JUDGE_LANE_PREFIX, VARIANT_SEP, lane_key, split_lane
from arenatui.kernel.judge_sample import judge_sample
from arenatui.store.db import RunRecord, Store

_DEFAULT_TRIALS = 1
"""[run] trials when a stored configuration does not say (RunSettings' default)."""
_FINAL = "(error_class IS NULL OR error_class != 'cancelled')"
"""A cancelled call is not final: resume runs it again, so no view counts it."""
SCORED = "status IN ('passed', 'failed')"
"""A call whose answer was scored: the only calls quality reads. An 'unscored' call (an llm_judge case outside its
judge's sample, or awaiting its judge) was answered: coverage, never a zero and never an error."""
OUTCOMES = ("passed", "failed", "errored", "unscored")
"""Every stored status, in the order views list them."""
UNSCORED_MODES = ("unjudged", "awaiting_judge")
"""Why an unscored call has no score (its failure_mode): outside the judge's sample, or not judged yet."""


@dataclass(frozen=True, slots=True)
class CaseInfo:
    id: str
    stratum: str | None
    tags: tuple[str, ...]
    sealed: bool
    input: str
    """The prompt as text ('' for a sealed case: never shown)."""
    expected: str | None
    """None for a sealed case: never shown."""
    cluster: str | None = None
    """The case's `cluster` (cases sharing a passage or template), if it has one."""
    scorer: str | None = None
    """The name of the scorer that scores it."""
    scorer_kind: str | None = None
    """That scorer's kind (exact, contains, llm_judge, ...), as stored."""


@dataclass(frozen=True, slots=True)
class JudgedScorer:
    """An llm_judge scorer of a stored run: which of the plan's cases it judges (its sample) and which it does not."""

    scorer: str
    judge: str
    """The judge's model key."""
    sample: float
    """As configured: a share in (0, 1] or a whole number of cases."""
    case_ids: tuple[str, ...]
    """The plan's cases this scorer scores, in plan order (M)."""
    judged: tuple[str, ...]
    """Those of them its judge judges (N of M), in plan order; the rest stay unscored ('unjudged')."""

    @property
    def sample_text(self) -> str:
        return f"sample {self.sample:g}" if self.sample <= 1.0 else f"sample {int(self.sample)} cases"


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What a stored run planned: its models, cases (with strata, tags, sealed flags) and trials."""

    record: RunRecord
    models: tuple[str, ...]
    """The candidates (a judge-only model is in `judges`)."""
    cases: tuple[CaseInfo, ...]
    trials: int
    judged: tuple[JudgedScorer, ...] = ()
    """The run's llm_judge scorers, each with its judged cases."""
    strata_weights: dict[str, float] = field(default_factory=dict)
    """[strata] weights: production shares for the reweighted score."""
    chained: bool = False
    """Some case depends on others: calls may be stored 'unreachable' (neither scored nor answered)."""
    variants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per model asked with prompt variants ([[prompts]]), the variants it was asked with (empty: none)."""
    follow_ups: bool = False
    """The run sent failed answers on to repair turns or escalations ([run] repair, escalate_to)."""

    @property
    def variant_names(self) -> tuple[str, ...]:
        """Every variant some model was asked with, in the order first named."""
        return tuple(dict.fromkeys(v for vs in self.variants.values() for v in vs))

    @property
    def calls_per_case(self) -> int:
        """Calls planned per (model, case): trials, times the variants (the most any model has)."""
        return self.trials * max((len(v) for v in self.variants.values()), default=1)

    @property
    def judges(self) -> tuple[str, ...]:
        """Judge model keys, in the order their scorers are listed (each once)."""
        return tuple(dict.fromkeys(j.judge for j in self.judged))

    def judged_case_ids(self) -> frozenset[str]:
        """Every case some llm_judge scorer judges."""
        return frozenset(c for j in self.judged for c in j.judged)

    def judge_scorer(self, case_id: str) -> JudgedScorer | None:
        """The llm_judge scorer that scores this case, if one does."""
        return next((j for j in self.judged if case_id in j.case_ids), None)

    @property
    def total(self) -> int:
        return len(self.models) * len(self.cases) * self.trials


@dataclass(frozen=True, slots=True)
class RunListing:
    """A row of the runs view: a stored run with its models and calls."""

    run_id: str
    project: str
    started_at: float
    status: str
    models: tuple[str, ...]
    calls: int
    """Calls stored with a final result."""
    planned: int


@dataclass(frozen=True, slots=True)
class CallRow:
    """One stored call, for the cases view and exports."""

    model_key: str
    """The call's lane: the model's key, ``model · variant`` for a prompt variant's call."""
    case_id: str
    trial: int
    status: str
    output: str | None
    score: float | None
    passed: bool
    error_class: str | None
    error_message: str | None
    attempts: int
    latency_ms: float | None
    ttft_ms: float | None
    total_ms: float
    input_tokens: int
    output_tokens: int
    cost: float
    failure_mode: str | None = None
    """What a wrong answer looked like; for an unscored call why it has no score (UNSCORED_MODES)."""
    score_detail: str | None = None
    """The scorer's own word on the score (a judge's: "judge 4 on 1-5")."""
    output_chars: int | None = None
    """The whole output's length when `output` holds only its start (read with `preview`), else None."""
    tokens_estimated: bool = False
    """The server reported no usage: the tokens (and so the cost) are arenatui's estimate."""
    connect_ms: float | None = None
    """How long the request took to get onto the wire (connecting, TLS, client queueing), left out of latency_ms."""
    http_status: int | None = None
    """The HTTP status of the attempt that ended an errored call."""
    repairs: int = 0
    """Repair turns the call took ([run] repair)."""
    escalated_to: str | None = None
    """The model that answered after an escalation (escalate_to), if the call escalated."""
    first_passed: bool | None = None
    """Whether the first answer passed, when repairs or an escalation followed it."""
    reasoning_tokens: int | None = None
    """Of output_tokens, those a reasoning model spent thinking (None: it showed no reasoning)."""
    reasoning_estimated: bool = False
    """reasoning_tokens is arenatui's estimate: the server reported none."""
    answer_ttft_ms: float | None = None
    """A streamed answer's first answer token, after any reasoning (ttft_ms: the first token of any kind)."""
    reasoning: str | None = None
    """What the model reasoned before answering, capped (read for a call's detail only: `call_details`)."""
    failed_attempts: tuple[FailedAttempt, ...] = ()
    """Its failed attempts, first first (read for a call's detail only: `call_details`)."""
    judgment: JudgmentRow | None = None
    """The judge call that scored it (read for a call's detail only)."""
    steps: tuple[CallStep, ...] = ()
    """Each answer of a call that went on to repairs or an escalation (read for a call's detail only)."""


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One failed attempt of a call: why, what the server asked for and what the retry slept."""

    attempt: int
    error_class: str
    http_status: int | None
    retry_after_s: float | None
    """The wait the server asked for, when it gave one."""
    delay_s: float | None
    """What the retry slept before the next attempt; None for the attempt that ended the call."""
    message: str | None
    retry_after_source: str | None = None
    """The header the wait was read from (retry-after, x-ratelimit-reset-requests, ...)."""


@dataclass(frozen=True, slots=True)
class CallStep:
    """One answer of a call with repairs or an escalation: the first answer (step 0), then each repair turn or
    escalation, as scored."""

    step: int
    kind: str
    """'answer', 'repair' or 'escalation'."""
    answered_by: str
    """The model that answered this step."""
    status: str
    score: float | None
    failure_mode: str | None
    error_class: str | None
    error_message: str | None
    score_detail: str | None
    output: str | None
    """Its first STEP_OUTPUT_CHARS characters (untrusted)."""
    attempts: int
    latency_ms: float | None
    input_tokens: int
    output_tokens: int
    cost: float


STEP_OUTPUT_CHARS = 2_000
"""Characters of a step's answer read for a call's detail (shown on a line or two; the last step's is the output)."""

_CALL_COLUMNS = (f"model_key || CASE WHEN variant != '' THEN '{VARIANT_SEP}' || variant ELSE '' END, case_id, trial, "
                 "status, output, score, passed, error_class, error_message, attempts, "
                 "latency_ms, ttft_ms, total_ms, input_tokens, output_tokens, cost, failure_mode, score_detail, "
                 "tokens_estimated, connect_ms, http_status, repairs, escalated_to, first_passed, reasoning_tokens, "
                 "reasoning_estimated, answer_ttft_ms")


def _call_row(r: tuple[Any, ...]) -> CallRow:
    return CallRow(r[0], r[1], int(r[2]), r[3], r[4], r[5], bool(r[6]), r[7], r[8], int(r[9]), r[10], r[11],
                   float(r[12]), int(r[13]), int(r[14]), float(r[15]), r[16], r[17], tokens_estimated=bool(r[18]),
                   connect_ms=r[19], http_status=r[20], repairs=int(r[21] or 0), escalated_to=r[22],
                   first_passed=None if r[23] is None else bool(r[23]), reasoning_tokens=r[24],
                   reasoning_estimated=bool(r[25]), answer_ttft_ms=r[26])


def last_run(store: Store, kind: str | None = None) -> RunRecord:
    """What 'last' means: the newest run of `kind` ('sweep', 'load'; None: either) that is not still running, else
    the newest running one (`RunRecord.status` says so, for the caller to tell the person). A run started later
    elsewhere (a console run beside a resumed sweep, another job on a shared database) that is still at work is not
    what a command reading results means."""
    where = "" if kind is None else ("WHERE kind = 'load'" if kind == "load" else "WHERE kind != 'load'")
    ids = [r[0] for r in store.conn.execute(
        f"SELECT run_id FROM runs {where} ORDER BY started_at DESC, rowid DESC LIMIT 200").fetchall()]
    if not ids:
        if kind is None:
            raise PlanError(f"no runs stored in {str(store.path)!r} yet, so there is no 'last' run; run a sweep "
                            "first (arena demo), or pass --db to the database that holds your runs")
        what = {"load": "load run", "sweep": "sweep"}[kind]
        other = store.conn.execute("SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1").fetchone()
        if other is not None:
            is_ = "a sweep, not a load run" if kind == "load" else "a load run, not a sweep"
            raise PlanError(f"no {what} is stored in {str(store.path)!r}, so there is no 'last' one: the newest run, "
                            f"{other[0]}, is {is_} (arena report {other[0]} shows it)")
        raise PlanError(f"no {what} is stored in {str(store.path)!r} yet, so there is no 'last' one; run one first "
                        f"({'arena load' if kind == 'load' else 'arena demo'}), or pass --db to the database that "
                        "holds your runs")
    newest = None
    for rid in ids:
        rec = store.get_run(rid)
        newest = newest or rec
        if rec.status != "running":
            return rec
    assert newest is not None
    return newest


def resolve_run(store: Store, run: str) -> RunRecord:
    """A run by id, or with 'last' the newest finished one (`last_run`); an unknown id is bad input (exit 2) that
    names the database."""
    if run == "last":
        return last_run(store)
    elif store.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run,)).fetchone() is None:
        raise PlanError(f"no run {run!r} in {str(store.path)!r}; `arena runs` lists the stored runs (RUN is a run "
                        "id or 'last')")
    return store.get_run(run)


def candidate_models(cfg: Mapping[str, Any]) -> list[str]:
    """The models a stored configuration answers with, in its order: a model an llm_judge scorer names as its judge
    only judges, unless it says `candidate = true` (the one rule the read model and the list of runs share)."""
    judge_keys = {s.get("judge") for s in table_list(cfg.get("scorers")) if s.get("kind") == "llm_judge"}
    return [str(m.get("key")) for m in table_list(cfg.get("models"))
            if m.get("candidate", m.get("key") not in judge_keys)]


def stored_plan(record: RunRecord) -> RunPlan:
    """The run's planned models, cases and trials, from the configuration and filters stored with it, as stored."""
    cfg = record.config
    filters = record.filters
    scorers = [s for s in table_list(cfg.get("scorers")) if isinstance(s.get("kind"), str)]
    names = [str(s.get("name") or s["kind"]) for s in scorers]
    default = names[0] if names else "exact"
    models = candidate_models(cfg)
    wanted_models = set(filters.get("models") or ())
    if wanted_models:
        models = [m for m in models if m in wanted_models]
    raw_cases = [c for c in table_list(cfg.get("cases")) if c.get("id") is not None]
    kinds = dict(zip(names, (str(s["kind"]) for s in scorers), strict=True))
    case_scorer = {str(c["id"]): str(c.get("scorer") or default) for c in raw_cases}
    all_cases = [_case_info(c, case_scorer[str(c["id"])], kinds) for c in raw_cases]
    cases = all_cases
    tags = set(filters.get("tags") or ())
    if tags:
        cases = [c for c in cases if tags.intersection(c.tags) or c.stratum in tags]
    limit = filters.get("limit")
    if isinstance(limit, int) and limit >= 1:
        cases = cases[:limit]
    run = cfg.get("run")
    trials = filters.get("trials") or (run.get("trials") if isinstance(run, Mapping) else None) or _DEFAULT_TRIALS
    judged = []
    for s, name in zip(scorers, names, strict=True):
        if s["kind"] != "llm_judge" or not isinstance(s.get("judge"), str):
            continue
        sample = float(s.get("sample", 1.0))
        chosen = judge_sample(name, sample, [c.id for c in all_cases if case_scorer[c.id] == name])
        mine = tuple(c.id for c in cases if case_scorer[c.id] == name)
        judged.append(JudgedScorer(name, s["judge"], sample, mine, tuple(c for c in mine if c in chosen)))
    planned = {c.id for c in cases}
    chained = any(c.get("depends_on") for c in raw_cases if str(c["id"]) in planned)
    strata = cfg.get("strata")
    weights = strata.get("weights") if isinstance(strata, Mapping) else None
    strata_weights = {str(k): float(v) for k, v in weights.items()} if isinstance(weights, Mapping) else {}
    return RunPlan(record, tuple(models), tuple(cases), int(trials), tuple(judged), strata_weights=strata_weights,
                   chained=chained, variants=_stored_variants(cfg, models, filters),
                   follow_ups=bool(isinstance(run, Mapping) and run.get("repair"))
                   or any(m.get("escalate_to") for m in table_list(cfg.get("models")) if m.get("key") in models))


def _stored_variants(cfg: Mapping[str, Any], models: Sequence[str], filters: Mapping[str, Any]
                     ) -> dict[str, tuple[str, ...]]:
    """Per model, the prompt variants a stored run asked it with (the plan's rule: its own list, else the project's,
    else every [[prompts]] entry; --prompts narrows)."""
    defined = [str(p.get("name")) for p in table_list(cfg.get("prompts")) if p.get("name")]
    if not defined:
        return {}
    project = cfg.get("project")
    default = [str(x) for x in (project.get("prompts") or ())] if isinstance(project, Mapping) else []
    wanted = set(filters.get("prompts") or ())
    out: dict[str, tuple[str, ...]] = {}
    for m in table_list(cfg.get("models")):
        key = str(m.get("key"))
        if key in models:
            names = [str(x) for x in (m.get("prompts") or ())] or default or defined
            out[key] = tuple(n for n in names if n in defined and (not wanted or n in wanted))
    return out


run_plan = stored_plan
"""The name callers knew it by."""


def table_list(v: Any) -> list[Mapping[str, Any]]:
    """The tables of an array of tables in a stored configuration (anything else left out)."""
    return [x for x in v if isinstance(x, Mapping)] if isinstance(v, Sequence) and not isinstance(v, str) else []


def _case_info(c: Mapping[str, Any], scorer: str, kinds: Mapping[str, str]) -> CaseInfo:
    sealed = bool(c.get("sealed", False))
    expected = c.get("expected")
    raw_tags = c.get("tags") or ()
    stratum = c.get("stratum")
    return CaseInfo(str(c["id"]), None if stratum is None else str(stratum),
                    tuple(str(t) for t in raw_tags) if not isinstance(raw_tags, str) else (raw_tags,), sealed,
                    "" if sealed else _prompt_text(c.get("input")),
                    None if sealed or expected is None else str(expected),
                    None if c.get("cluster") is None else str(c.get("cluster")), scorer, kinds.get(scorer))


def _prompt_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, Sequence):
        return "\n".join(str(m.get("content", "")) for m in v if isinstance(m, Mapping))
    return ""


def list_runs(store: Store, limit: int = 50) -> list[RunListing]:
    """Stored runs, newest first, with the models each planned and its stored calls."""
    out = []
    for r in store.list_runs(limit):
        wanted = set(r.filters.get("models") or ())
        if r.filters.get("kind") == "load" and r.filters.get("model"):  # a load run drives one model
            wanted = {str(r.filters["model"])}
        models = tuple(m for m in candidate_models(r.config) if not wanted or m in wanted)
        out.append(RunListing(r.run_id, r.project, r.started_at, r.status, models, r.stored, r.planned))
    return out


@dataclass(frozen=True, slots=True)
class CellTotals:
    """A run's final calls summed per (model, case), in the stored plan's order: the store's record of its results
    (arenatui.results.runs builds `RunResults` from it). The unscored columns are zeros unless the plan is judged."""

    calls: np.ndarray[Any, Any]
    scored: np.ndarray[Any, Any]
    score_sum: np.ndarray[Any, Any]
    passed: np.ndarray[Any, Any]
    attempts: np.ndarray[Any, Any]
    tokens: np.ndarray[Any, Any]
    cost: np.ndarray[Any, Any]
    unscored: np.ndarray[Any, Any]
    unscored_cost: np.ndarray[Any, Any]
    unscored_tokens: np.ndarray[Any, Any]
    errors: dict[str, dict[str, int]]
    """Per model, its errored and unreachable calls by error class."""


def cell_totals(store: Store, plan: RunPlan) -> CellTotals:
    """The run's (model × case) totals of its final calls, and its errors by class (the plan as stored)."""
    run_id = plan.record.run_id
    models, case_ids = plan.models, tuple(c.id for c in plan.cases)
    m_index = {m: i for i, m in enumerate(models)}
    c_index = {c: j for j, c in enumerate(case_ids)}
    shape = (len(models), len(case_ids))
    calls = np.zeros(shape, np.int64)
    scored = np.zeros(shape, np.int64)
    unscored = np.zeros(shape, np.int64)
    passed = np.zeros(shape, np.int64)
    attempts = np.zeros(shape, np.int64)
    tokens = np.zeros(shape, np.int64)
    unscored_tokens = np.zeros(shape, np.int64)
    score_sum = np.zeros(shape)
    cost = np.zeros(shape)
    unscored_cost = np.zeros(shape)
    figures: tuple[tuple[np.ndarray[Any, Any], type], ...] = (
        (calls, np.int64), (scored, np.int64), (score_sum, np.float64), (passed, np.int64), (attempts, np.int64),
        (tokens, np.int64), (cost, np.float64))
    # Without an llm_judge scorer no call is unscored: the plain form then. The unscored columns cost ~+20% on a
    # 1,000,000-call leaderboard (benchmarks/results_scale.py --judged: 1.84-1.99 s against 1.53-1.55 s without);
    # a second pass over the unscored rows measured no faster.
    scored_sql, unscored_sql = (SCORED, ", SUM(status = 'unscored'), TOTAL(CASE WHEN status = 'unscored' THEN cost "
                                "END), TOTAL(CASE WHEN status = 'unscored' THEN input_tokens + output_tokens END)") \
        if plan.judged else (SCORED if plan.chained else "status != 'errored'", "")
    if plan.judged:
        figures += ((unscored, np.int64), (unscored_cost, np.float64), (unscored_tokens, np.int64))
    rows = store.conn.execute(
        f"SELECT model_key, case_id, COUNT(*), SUM({scored_sql}), TOTAL(CASE WHEN {scored_sql} THEN score END), "
        # a call never made (unreachable: its chain broke) has 0 attempts but is no negative retry
        f"SUM(passed), SUM(MAX(attempts, 1)), SUM(input_tokens + output_tokens), TOTAL(cost){unscored_sql} "
        f"FROM results WHERE run_id = ? AND {_FINAL} GROUP BY model_key, case_id", (run_id,)).fetchall()
    _fill(rows, m_index, c_index, figures)
    errors: dict[str, dict[str, int]] = {}
    for mk, ec, n in store.conn.execute(
            "SELECT model_key, error_class, COUNT(*) FROM results WHERE run_id = ? AND status IN ('errored', "
            f"'unreachable') AND {_FINAL} GROUP BY model_key, error_class", (run_id,)):
        if mk in m_index:
            errors.setdefault(mk, {})[str(ec)] = int(n)
    return CellTotals(calls, scored, score_sum, passed, attempts, tokens, cost, unscored, unscored_cost,
                      unscored_tokens, errors)


def variant_totals(store: Store, plan: RunPlan, *, passes: bool = True
                   ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """Per (model, variant, case) in the plan's order: scored calls, their scores' sum and (with `passes`) their
    passes; None without prompt variants."""
    if not plan.variants:
        return None
    models, variants, case_ids = plan.models, plan.variant_names, tuple(c.id for c in plan.cases)
    mi, vi, ci = ({k: i for i, k in enumerate(keys)} for keys in (models, variants, case_ids))
    scored = np.zeros((len(models), len(variants), len(case_ids)), np.int64)
    score_sum = np.zeros(scored.shape)
    passed = np.zeros(scored.shape, np.int64)
    passed_sql = f", SUM(CASE WHEN {SCORED} THEN passed ELSE 0 END)" if passes else ", 0"
    for mk, v, cid, n, total, p in store.conn.execute(
            f"SELECT model_key, variant, case_id, SUM({SCORED}), TOTAL(CASE WHEN {SCORED} THEN score END)"
            f"{passed_sql} FROM results WHERE run_id = ? AND {_FINAL} "
            "GROUP BY model_key, variant, case_id", (plan.record.run_id,)):
        if mk in mi and v in vi and cid in ci:
            at = (mi[mk], vi[v], ci[cid])
            scored[at], score_sum[at], passed[at] = n, total, p
    return scored, score_sum, passed


@dataclass(frozen=True, slots=True)
class FollowUps:
    """One model's completion before and after repair turns and escalations, and what a completed case cost."""

    model: str
    scored: int
    first_passed: int
    """Scored calls whose first answer passed (before any repair or escalation)."""
    passed: int
    repairs: int
    """Repair turns taken."""
    repaired: int
    """Calls that took at least one repair turn."""
    escalated: int
    """Calls sent on to another model."""
    tokens: int
    """Every step's tokens, repairs and escalations included (errored calls too)."""
    cost: float

    @property
    def before(self) -> float | None:
        return self.first_passed / self.scored if self.scored else None

    @property
    def after(self) -> float | None:
        return self.passed / self.scored if self.scored else None

    @property
    def cost_per_completed(self) -> float | None:
        return self.cost / self.passed if self.passed else None

    @property
    def tokens_per_completed(self) -> float | None:
        return self.tokens / self.passed if self.passed else None


def follow_ups(store: Store, plan: RunPlan) -> list[FollowUps]:
    """Per model of a run with repairs or escalations: completion before and after them, and tokens and cost per
    completed (passed) case, every step's spend included; empty for a run without either."""
    if not plan.follow_ups:
        return []
    rows = {r[0]: r for r in store.conn.execute(
        f"SELECT model_key, SUM({SCORED}), SUM(CASE WHEN {SCORED} THEN COALESCE(first_passed, passed) END), "
        "SUM(passed), SUM(repairs), SUM(repairs > 0), SUM(escalated_to IS NOT NULL), "
        f"SUM(input_tokens + output_tokens), TOTAL(cost) FROM results WHERE run_id = ? AND {_FINAL} "
        "GROUP BY model_key", (plan.record.run_id,))}
    return [FollowUps(m, int(r[1] or 0), int(r[2] or 0), int(r[3] or 0), int(r[4] or 0), int(r[5] or 0),
                      int(r[6] or 0), int(r[7] or 0), float(r[8] or 0.0))
            for m in plan.models if (r := rows.get(m)) is not None]


def _fill(rows: list[Any], m_index: dict[str, int], c_index: dict[str, int],
          into: tuple[tuple[np.ndarray[Any, Any], type], ...]) -> None:
    """Aggregate rows (model, case, figures...) into their [model, case] cells: `into` is (array, dtype) per
    figure, in the rows' order."""
    if not rows:
        return
    cols = list(zip(*rows, strict=True))
    mi = np.fromiter((m_index.get(m, -1) for m in cols[0]), np.int64, len(rows))
    ci = np.fromiter((c_index.get(c, -1) for c in cols[1]), np.int64, len(rows))
    ok = (mi >= 0) & (ci >= 0)  # rows outside the plan (none, unless the database was edited) are left out
    at = (mi[ok], ci[ok])
    for k, (arr, dtype) in enumerate(into):
        arr[at] = np.asarray(cols[k + 2], dtype=dtype)[ok]


def latencies(store: Store, run_id: str, model: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """One model's answered calls' latencies and TTFTs (ms), read by the primary key's (run, model) prefix.
    Unscored calls are answered: their times count (the judge's do not: they are not in the results table)."""
    cur = store.conn.execute(
        "SELECT IFNULL(latency_ms, -1.0), IFNULL(ttft_ms, -1.0) FROM results WHERE run_id = ? AND model_key = ? "
        "AND status != 'errored'", (run_id, model))
    flat = np.fromiter(itertools.chain.from_iterable(cur), np.float64)  # NULL arrives as -1: never a real time
    lat, ttft = flat[0::2], flat[1::2]
    return lat[lat >= 0], ttft[ttft >= 0]


def call_rows(store: Store, run_id: str, *, models: tuple[str, ...] = (), case_ids: tuple[str, ...] = (),
              outcome: str | None = None, search: str | None = None, limit: int | None = None,
              offset: int = 0, preview: int | None = None, lane: str | None = None, final: bool = True
              ) -> list[CallRow]:
    """Stored final calls, ordered by case, model and trial, filtered for the cases view.

    outcome: 'passed', 'failed', 'errored' or 'unscored'. search: a substring of the output or error message
    (literal, not a pattern). Strata and tags are case properties: filter `case_ids` with the run's plan.
    preview: read only the first this many characters of each output (and its whole length into `output_chars`):
    a 50 MB answer is not read whole to show a screenful of it. lane: one lane's calls (a model's key, or a
    variant lane's ``model · variant``). final=False keeps cancelled calls too.
    """
    where = ["run_id = ?", _FINAL] if final else ["run_id = ?"]
    params: list[Any] = [run_id]
    columns = _CALL_COLUMNS
    if preview is not None:
        columns = _CALL_COLUMNS.replace("output,", "substr(output, 1, ?),", 1) + ", length(output)"
        params.insert(0, preview)
    if models:
        where.append(f"model_key IN ({', '.join('?' for _ in models)})")
        params.extend(models)
    if lane is not None:
        where.append("model_key = ? AND variant = ?")
        params.extend(split_lane(lane))
    if case_ids:
        where.append(f"case_id IN ({', '.join('?' for _ in case_ids)})")
        params.extend(case_ids)
    if outcome is not None:
        if outcome not in OUTCOMES:
            raise ValueError(outcome)
        where.append("status = ?")
        params.append(outcome)
    if search:
        where.append("(instr(lower(output), lower(?)) > 0 OR instr(lower(error_message), lower(?)) > 0)")
        params.extend((search, search))
    sql = f"SELECT {columns} FROM results WHERE {' AND '.join(where)} ORDER BY case_id, model_key, variant, trial"
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        params.extend((limit, offset))
    rows = store.conn.execute(sql, params)
    if preview is None:
        return [_call_row(r) for r in rows]
    return [dataclasses.replace(_call_row(r), output_chars=r[-1]) for r in rows]


def iter_call_rows(store: Store, run_id: str, batch: int = 10_000) -> Iterator[CallRow]:
    """Every stored final call of a run, in (model, case, trial) order, without holding them all at once."""
    cur = store.conn.execute(
        f"SELECT {_CALL_COLUMNS} FROM results WHERE run_id = ? AND {_FINAL} "
        "ORDER BY model_key, variant, case_id, trial", (run_id,))
    while True:
        chunk = cur.fetchmany(batch)
        if not chunk:
            return
        yield from (_call_row(r) for r in chunk)


def top_errors(store: Store, run_id: str, limit: int = 3) -> dict[str, list[tuple[str, str, int]]]:
    """Per model, its most frequent (error class, error message, calls), final calls only."""
    out: dict[str, list[tuple[str, str, int]]] = {}
    for mk, ec, msg, n in store.conn.execute(
            "SELECT model_key, error_class, error_message, COUNT(*) AS n FROM results WHERE run_id = ? AND "
            "status = 'errored' AND error_class != 'cancelled' GROUP BY model_key, error_class, error_message "
            "ORDER BY model_key, n DESC", (run_id,)):
        rows = out.setdefault(mk, [])
        if len(rows) < limit:
            rows.append((str(ec), str(msg or ""), int(n)))
    return out


def scored_outputs(store: Store, run_id: str) -> Iterator[tuple[str, str, str | None]]:
    """(model, case id, output) of every scored call, in storage order."""
    yield from store.conn.execute(
        f"SELECT model_key, case_id, output FROM results WHERE run_id = ? AND {SCORED}", (run_id,))


def failure_modes(store: Store, run_id: str) -> dict[str, dict[str, int]]:
    """Per model, its failed answers (answered, not passed) by failure mode: what each wrong answer looked like.
    Rows stored before failure modes existed count as wrong_answer."""
    out: dict[str, dict[str, int]] = {}
    for mk, mode, n in store.conn.execute(
            "SELECT model_key, COALESCE(failure_mode, 'wrong_answer'), COUNT(*) FROM results WHERE run_id = ? AND "
            "status = 'failed' GROUP BY 1, 2", (run_id,)):
        out.setdefault(str(mk), {})[str(mode)] = int(n)
    return out


def unscored_modes(store: Store, run_id: str) -> dict[str, dict[str, int]]:
    """Per model, its unscored calls by why (UNSCORED_MODES): not failures, listed apart from them."""
    out: dict[str, dict[str, int]] = {}
    for mk, mode, n in store.conn.execute(
            "SELECT model_key, COALESCE(failure_mode, 'awaiting_judge'), COUNT(*) FROM results WHERE run_id = ? AND "
            "status = 'unscored' GROUP BY 1, 2", (run_id,)):
        out.setdefault(str(mk), {})[str(mode)] = int(n)
    return out


# ---- llm_judge: what the judges did and spent (the judgments table) -----------------------------------------


@dataclass(frozen=True, slots=True)
class JudgeSpend:
    """One judge model's calls in a run: verdicts, judge errors, tokens and spend (apart from the candidates')."""

    judge: str
    """The judge's model key."""
    calls: int
    """Judgments stored: one per judged candidate call (a call judged again replaces its judgment)."""
    passed: int
    failed: int
    errors: int
    """Judgments that ended in judge_error: the judge call failed or its answer held no readable verdict."""
    attempts: int
    input_tokens: int
    output_tokens: int
    cost: float
    """Every judge attempt's spend, judge errors and earlier judgings of the same call included."""
    mean_latency_ms: float | None

    @property
    def retries(self) -> int:
        return self.attempts - self.calls

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class RunSpend:
    """What a run spent: the candidates' calls and each judge's, and their total."""

    candidates: float
    """Every attempt of every candidate call stored (results.cost), retries and errored calls included."""
    judges: tuple[JudgeSpend, ...] = ()

    @property
    def judge_total(self) -> float:
        return sum(j.cost for j in self.judges)

    @property
    def total(self) -> float:
        return self.candidates + self.judge_total


def judge_spend(store: Store, run_id: str) -> list[JudgeSpend]:
    """Per judge model, its judgments, judge errors, attempts, tokens and spend, in judge key order."""
    return [JudgeSpend(str(k), int(n), int(p), int(f), int(e), int(a), int(ti), int(to), float(c),
                       None if lat is None else float(lat))
            for k, n, p, f, e, a, ti, to, c, lat in store.conn.execute(
                "SELECT judge_key, COUNT(*), SUM(status = 'passed'), SUM(status = 'failed'), "
                "SUM(error_class IS 'judge_error'), SUM(attempts), SUM(input_tokens), SUM(output_tokens), TOTAL(cost), "
                "AVG(latency_ms) FROM judgments WHERE run_id = ? GROUP BY judge_key ORDER BY judge_key", (run_id,))]


def estimated_usage(store: Store, run_id: str) -> dict[str, tuple[int, int]]:
    """Per model with any, (calls whose tokens arenatui estimated because the server reported no usage, calls
    stored): their tokens, and so their cost, are estimates."""
    return {str(m): (int(e), int(n)) for m, e, n in store.conn.execute(
        "SELECT model_key, SUM(tokens_estimated), COUNT(*) FROM results WHERE run_id = ? GROUP BY model_key "
        "HAVING SUM(tokens_estimated) > 0 ORDER BY model_key", (run_id,))}


@dataclass(frozen=True, slots=True)
class ReasoningUsage:
    """A model's reasoning in a run: how many of its calls reasoned and what share of its output it took."""

    calls: int
    """Calls whose answer showed reasoning (or reported reasoning tokens)."""
    reasoning_tokens: int
    output_tokens: int
    """Every output token of those calls, reasoning included (what output prices are paid on)."""
    estimated: int
    """Of `calls`, those whose reasoning tokens arenatui estimated (the server reported none)."""

    @property
    def per_call(self) -> float:
        return self.reasoning_tokens / self.calls if self.calls else 0.0

    @property
    def share(self) -> float:
        """Reasoning's share of these calls' output tokens, and so of their output spend."""
        return self.reasoning_tokens / self.output_tokens if self.output_tokens else 0.0


def reasoning_usage(store: Store, run_id: str) -> dict[str, ReasoningUsage]:
    """Per model with any calls that reasoned: their count, reasoning and output tokens, and how many estimated."""
    try:
        rows = store.conn.execute(
            "SELECT model_key, COUNT(*), SUM(reasoning_tokens), SUM(output_tokens), SUM(reasoning_estimated) "
            "FROM results WHERE run_id = ? AND reasoning_tokens IS NOT NULL GROUP BY model_key ORDER BY model_key",
            (run_id,)).fetchall()
    except sqlite3.OperationalError:  # a read-only database from before schema 18
        return {}
    return {str(m): ReasoningUsage(int(n), int(r or 0), int(o or 0), int(e or 0)) for m, n, r, o, e in rows}


def interrupted_while_busy(store: Store, run_id: str) -> dict[str, tuple[int, int]]:
    """Per model with any, (attempts that ended `incomplete_stream` while another of its calls was under way,
    attempts in all): the evidence for `single_slot_advice`. "Under way" is a stored call's span, from its first
    attempt to its end (a call backing off counts: close enough for a pattern seen dozens of times)."""
    cut = store.conn.execute(
        "SELECT model_key, variant, case_id, trial, at FROM failed_attempts WHERE run_id = ? "
        "AND error_class = 'incomplete_stream'", (run_id,)).fetchall()
    if not cut:
        return {}
    models = sorted({str(m) for m, *_ in cut})
    spans: dict[str, list[tuple[float, float, tuple[Any, ...]]]] = {m: [] for m in models}
    attempts: dict[str, int] = dict.fromkeys(models, 0)
    for m, v, c, t, a, b, n in store.conn.execute(
            f"SELECT model_key, variant, case_id, trial, started_at, finished_at, attempts FROM results "
            f"WHERE run_id = ? AND model_key IN ({','.join('?' * len(models))})", (run_id, *models)):
        spans[m].append((float(a), float(b), (v, c, t)))
        attempts[m] += int(n or 0)
    busy: dict[str, int] = dict.fromkeys(models, 0)
    for m in models:  # one pass over time: the calls under way at each cut stream (a heap of their ends)
        calls = sorted(spans[m], key=lambda s: s[0])
        open_: list[tuple[float, tuple[Any, ...]]] = []
        i = 0
        for _m, v, c, t, at in sorted((r for r in cut if r[0] == m), key=lambda r: r[4]):
            while i < len(calls) and calls[i][0] <= at:
                heapq.heappush(open_, (calls[i][1], calls[i][2]))
                i += 1
            while open_ and open_[0][0] < at:
                heapq.heappop(open_)
            if len(open_) > 1 or (open_ and open_[0][1] != (v, c, t)):
                busy[m] += 1
    return {m: (busy[m], attempts[m]) for m in models if busy[m]}


def single_slot_lines(store: Store, run_id: str) -> list[str]:
    """`single_slot_advice` for every model of the run it applies to."""
    lines = (single_slot_advice(m, n, attempts) for m, (n, attempts) in interrupted_while_busy(store, run_id).items())
    return [line for line in lines if line]


def recent_attempts(store: Store, run_id: str, since: float) -> list[tuple[str, str, float]]:
    """(model key, case id, epoch seconds) of every attempt a run made at or after `since`: each stored call's last
    attempt (at its finish), each failed attempt that was retried, and each judge call (under its judge model's
    key): what a resume's rate limiters must count as already spent."""
    return [(str(m), str(c), float(t)) for m, c, t in store.conn.execute(
        "SELECT model_key, case_id, finished_at FROM results WHERE run_id = ? AND finished_at >= ? "
        "AND (error_class IS NULL OR error_class != 'cancelled') "
        "UNION ALL SELECT model_key, case_id, at FROM failed_attempts WHERE run_id = ? AND at >= ? "
        "AND delay_s IS NOT NULL "
        "UNION ALL SELECT judge_key, case_id, finished_at FROM judgments WHERE run_id = ? AND finished_at >= ? "
        "ORDER BY 3", (run_id, since, run_id, since, run_id, since))]


def run_spend(store: Store, run_id: str) -> RunSpend:
    """The run's spend: candidates (every stored call, cancelled ones too: their attempts were paid) and judges."""
    (candidates,) = store.conn.execute("SELECT TOTAL(cost) FROM results WHERE run_id = ?", (run_id,)).fetchone()
    return RunSpend(float(candidates), tuple(judge_spend(store, run_id)))


def judgments_by_case(store: Store, run_id: str) -> dict[str, int]:
    """Per case id, judgments stored (over every candidate model and trial)."""
    return {str(c): int(n) for c, n in store.conn.execute(
        "SELECT case_id, COUNT(*) FROM judgments WHERE run_id = ? GROUP BY case_id", (run_id,))}


JUDGE_ANSWER_CHARS = 20_000
"""Characters of a judge's answer read for a view: pages of text (the whole answer is in the database)."""


@dataclass(frozen=True, slots=True)
class JudgmentRow:
    """One judge call: its verdict on a candidate call (model_key, case_id, trial), its answer and what it took."""

    model_key: str
    case_id: str
    trial: int
    judge: str
    status: str
    """The verdict: passed, failed, or errored (error_class judge_error)."""
    score: float | None
    passed: bool
    error_class: str | None
    error_message: str | None
    answer: str | None
    """The judge's answer (untrusted text), its first JUDGE_ANSWER_CHARS characters."""
    answer_chars: int
    attempts: int
    latency_ms: float | None
    total_ms: float
    input_tokens: int
    output_tokens: int
    cost: float
    score_detail: str | None
    failed_attempts: tuple[FailedAttempt, ...] = ()
    """The judge call's failed attempts (read for a judge lane's detail only: `judge_calls`)."""


def _judgment_rows(store: Store, where: str, params: tuple[Any, ...]) -> Iterator[tuple[JudgmentRow, str]]:
    """(judgment, its candidate's variant) of the judgments `where` picks."""
    rows = store.conn.execute(
        "SELECT model_key, case_id, trial, judge_key, status, score, passed, error_class, error_message, "
        "substr(output, 1, ?), IFNULL(length(output), 0), attempts, latency_ms, total_ms, input_tokens, "
        f"output_tokens, cost, score_detail, variant FROM judgments WHERE {where} ORDER BY model_key, variant, trial",
        (JUDGE_ANSWER_CHARS, *params))
    for r in rows:
        yield (JudgmentRow(r[0], r[1], int(r[2]), r[3], r[4], r[5], bool(r[6]), r[7], r[8], r[9], int(r[10]),
                           int(r[11]), r[12], float(r[13]), int(r[14]), int(r[15]), float(r[16]), r[17]), str(r[18]))


def _judgments(store: Store, where: str, params: tuple[Any, ...]) -> list[JudgmentRow]:
    return [j for j, _ in _judgment_rows(store, where, params)]


def judged_rows(store: Store, run_id: str, *, retry_errored: bool = False) -> list[tuple[Any, ...]]:
    """A run's stored judge calls as live metrics preload them: `live.StoredResult` order keyed by the judge lane
    (``judge:<model key>``), then started_at and finished_at (epoch). With retry_errored the judge calls that
    ended errored are left out: their candidates are judged again."""
    skip = " AND status != 'errored'" if retry_errored else ""
    return store.conn.execute(
        "SELECT ? || judge_key, case_id, trial, status, score, error_class, attempts, latency_ms, NULL, cost, "
        "input_tokens, output_tokens, NULL, 0, started_at, finished_at FROM judgments WHERE run_id = ?"
        f"{skip} ORDER BY judge_key, case_id, model_key, trial", (JUDGE_LANE_PREFIX, run_id)).fetchall()


def _lane_where(lane: str | None) -> tuple[str, tuple[str, ...]]:
    """SQL narrowing a case's rows to one lane (its model key and variant), or nothing for every lane."""
    if lane is None:
        return "", ()
    model, variant = split_lane(lane)
    return " AND model_key = ? AND variant = ?", (model, variant)


def _failed_attempts(store: Store, run_id: str, case_id: str, lane: str | None
                     ) -> dict[tuple[str, int], tuple[FailedAttempt, ...]]:
    """A case's failed attempts by (lane, trial), first first."""
    where, args = _lane_where(lane)
    out: dict[tuple[str, int], list[FailedAttempt]] = {}
    for mk, variant, trial, *fa in store.conn.execute(
            "SELECT model_key, variant, trial, attempt, error_class, http_status, retry_after_s, delay_s, message, "
            f"retry_after_source FROM failed_attempts WHERE run_id = ? AND case_id = ?{where} "
            "ORDER BY model_key, variant, trial, attempt, at", (run_id, case_id, *args)):
        out.setdefault((lane_key(mk, variant), int(trial)), []).append(
            FailedAttempt(int(fa[0]), str(fa[1]), fa[2], fa[3], fa[4], fa[5], fa[6]))
    return {k: tuple(v) for k, v in out.items()}


def call_details(store: Store, run_id: str, case_id: str, *, lane: str | None = None, preview: int,
                 final: bool = True) -> list[CallRow]:
    """One case's stored calls (of one lane, or of every lane), each with everything a call's detail shows: its
    output's first `preview` characters (`output_chars` its whole length), failed attempts, judgment and steps.
    Ordered by lane and trial. `final=False` keeps cancelled calls (the console shows what is stored now)."""
    rows = call_rows(store, run_id, case_ids=(case_id,), lane=lane, final=final, preview=preview)
    if not rows:
        return rows
    where, args = _lane_where(lane)
    attempts = _failed_attempts(store, run_id, case_id, lane)
    judged = {(lane_key(j.model_key, v), j.trial): j for j, v in _judgment_rows(
        store, f"run_id = ? AND case_id = ?{where}", (run_id, case_id, *args))}
    steps: dict[tuple[str, int], list[CallStep]] = {}
    for mk, variant, trial, *st in store.conn.execute(
            "SELECT model_key, variant, trial, step, kind, answered_by, status, score, failure_mode, error_class, "
            "error_message, score_detail, substr(output, 1, ?), attempts, latency_ms, input_tokens, output_tokens, "
            f"cost FROM call_steps WHERE run_id = ? AND case_id = ?{where} ORDER BY model_key, variant, trial, step",
            (STEP_OUTPUT_CHARS, run_id, case_id, *args)):
        steps.setdefault((lane_key(mk, variant), int(trial)), []).append(CallStep(
            int(st[0]), str(st[1]), str(st[2]), str(st[3]), st[4], st[5], st[6], st[7], st[8], st[9], int(st[10]),
            st[11], int(st[12]), int(st[13]), float(st[14])))
    reasoned = {(lane_key(mk, variant), int(trial)): text for mk, variant, trial, text in store.conn.execute(
        f"SELECT model_key, variant, trial, reasoning FROM results WHERE run_id = ? AND case_id = ?{where} "
        "AND reasoning IS NOT NULL", (run_id, case_id, *args))}
    return [dataclasses.replace(r, failed_attempts=attempts.get((r.model_key, r.trial), ()),
                                judgment=judged.get((r.model_key, r.trial)),
                                steps=tuple(steps.get((r.model_key, r.trial), ())),
                                reasoning=reasoned.get((r.model_key, r.trial))) for r in rows]


def judge_calls(store: Store, run_id: str, case_id: str, judge_key: str,
                lane_trial: Callable[[str, int], int]) -> list[JudgmentRow]:
    """One judge model's calls on a case (one per candidate lane and trial it judged), each with its failed
    attempts: those are stored under the judge's lane and the judge call's trial, `lane_trial(candidate lane,
    candidate trial)` (the plan's numbering)."""
    attempts = _failed_attempts(store, run_id, case_id, JUDGE_LANE_PREFIX + judge_key)
    return [dataclasses.replace(j, model_key=lane_key(j.model_key, v), failed_attempts=attempts.get(
        (JUDGE_LANE_PREFIX + judge_key, lane_trial(lane_key(j.model_key, v), j.trial)), ()))
        for j, v in _judgment_rows(store, "run_id = ? AND case_id = ? AND judge_key = ?",
                                  (run_id, case_id, judge_key))]


def error_messages(store: Store, run_id: str, per_model: int = 3) -> dict[str, list[tuple[str, str, int]]]:
    """Per model, its most frequent (error class, error message, calls) among errored calls (cancelled ones left
    out), most frequent first: what a dead server or a wrong key actually said."""
    return top_errors(store, run_id, per_model)


def budget_rows(store: Store, run_id: str, model_key: str | None = None) -> Iterator[tuple[Any, ...]]:
    """Every stored call of a run (or of one model), for the max_tokens and timeout_s evidence: model_key, case_id,
    status, passed, error_class, output_tokens, finish_reason, latency_ms, connect_ms, tokens_estimated,
    reasoning_tokens, variant, started_at."""
    one, args = ("", (run_id,)) if model_key is None else (" AND model_key = ?", (run_id, model_key))
    return iter(store.conn.execute(
        "SELECT model_key, case_id, status, passed, error_class, output_tokens, finish_reason, latency_ms,"
        " connect_ms, tokens_estimated, reasoning_tokens, variant, started_at FROM results WHERE run_id = ?" + one,
        args))


def timed_out_attempts(store: Store, run_id: str, model_key: str | None = None) -> list[tuple[str, int, int, int]]:
    """Per model, its attempts that timed out: how many, how many of them streamed, and of those how many never saw
    a first token."""
    one, args = ("", (run_id,)) if model_key is None else (" AND model_key = ?", (run_id, model_key))
    return [(str(k), int(n), int(streamed), int(no_token or 0)) for k, n, streamed, no_token in store.conn.execute(
        "SELECT model_key, COUNT(*), COUNT(stream), SUM(stream IS NOT NULL AND ttft_ms IS NULL)"
        " FROM failed_attempts WHERE run_id = ? AND error_class = 'timeout'" + one + " GROUP BY model_key", args)]


def run_origins(store: Store, run_ids: Sequence[str]) -> dict[str, str]:
    """Per run id, what kind of run it is in the words of the command that makes it: 'load', 'shard' (one shard's
    database), 'merged' (shards merged), 'sweep level N' (arena sweep), else the command that started it ('run',
    'evaluate', 'demo', 'bench', 'tune'; `runs.started_by`). A run recorded before that was stored reads as it did:
    'tune' when the auto-tuner set its levels, 'demo', else 'run'."""
    import json

    out: dict[str, str] = {}
    for rid in run_ids:
        row = store.conn.execute(
            "SELECT kind, filters_json, project, started_by,"
            " (SELECT MIN(level) FROM level_sweeps s WHERE s.run_id = r.run_id),"
            " EXISTS (SELECT 1 FROM tuning_decisions d WHERE d.run_id = r.run_id),"
            " (SELECT COUNT(*) FROM run_shards h WHERE h.run_id = r.run_id)"
            " FROM runs r WHERE run_id = ?", (rid,)).fetchone()
        if row is None:
            continue
        kind, filters_json, project, started_by, level, tuned, shards = row
        try:
            sharded = bool(json.loads(filters_json).get("shard"))
        except (ValueError, AttributeError):
            sharded = False
        if kind == "load":
            out[rid] = "load"
        elif sharded:
            out[rid] = "shard"
        elif shards:
            out[rid] = "merged"
        elif level is not None:
            out[rid] = f"sweep level {level}"
        elif started_by:
            out[rid] = str(started_by)
        elif tuned:
            out[rid] = "tune"
        else:
            out[rid] = "demo" if project == "demo" else "run"
    return out

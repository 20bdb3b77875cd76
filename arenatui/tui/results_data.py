"""What the results screens show, computed from a stored run: read in a thread, pure numpy, no Textual.

An adapter between the store / `arenatui.stats` and the screens: everything here runs in a worker, and
the screens only format what it returns. Quality is over answered calls only (an errored call is
coverage, never a zero); sealed cases are scored apart and their text never leaves this module.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from arenatui.config.load import project_from_dict
from arenatui.config.schema import Case
from arenatui.errors import PlanError
from arenatui.plan import Filters, make_plan
from arenatui.stats.bootstrap import Interval, _resampled_means, mean_ci, paired_bootstrap
from arenatui.store import Store
from arenatui.store.db import RunRecord

Floats = NDArray[np.float64]
N_RESAMPLES = 10_000
SEED = 0
ALPHA = 0.05
OUTCOMES = ("passed", "failed", "errored")

_ROW_SQL = ("SELECT model_key, case_id, trial, status, score, error_class, attempts, latency_ms, ttft_ms, cost, "
            "input_tokens, output_tokens FROM results WHERE run_id = ? AND "
            "(error_class IS NULL OR error_class != 'cancelled')")


@dataclass(frozen=True, slots=True)
class ModelStats:
    key: str
    score: Interval
    """Mean per-case score over the working cases it answered (trials averaged first), 95% bootstrap interval."""
    planned: int
    answered: int
    passed: int
    failed: int
    errored: int
    errors: dict[str, int]
    attempts: int
    pass_at: tuple[float, ...]
    """pass@k for k = 1..trials, unbiased estimator over cases with at least k answered trials (NaN if none)."""
    consistency: float
    """Share of cases answered in every trial whose trials all agree (all passed or all failed)."""
    spend: float
    tokens: int
    latency: tuple[float, float, float] | None
    """p50, p95, p99 of latency (ms) over answered calls."""
    ttft: tuple[float, float] | None
    sealed: Interval | None
    """Score over sealed cases, apart (aggregates only); None without sealed cases."""

    @property
    def stored(self) -> int:
        return self.answered + self.errored

    @property
    def coverage(self) -> float:
        return self.answered / self.planned if self.planned else float("nan")

    @property
    def error_rate(self) -> float:
        return self.errored / self.stored if self.stored else float("nan")

    @property
    def timeout_rate(self) -> float:
        return self.errors.get("timeout", 0) / self.stored if self.stored else float("nan")

    @property
    def retry_rate(self) -> float:
        """Retries per stored call: well above zero means the concurrency was too high for the provider."""
        return (self.attempts - self.stored) / self.stored if self.stored else float("nan")

    @property
    def cost_per_correct(self) -> float | None:
        """Spend of every attempt (retries and failures included) divided by the answers that passed."""
        return self.spend / self.passed if self.passed else None

    @property
    def cost_per_answered(self) -> float | None:
        return self.spend / self.answered if self.answered else None

    @property
    def tokens_per_correct(self) -> float | None:
        return self.tokens / self.passed if self.passed else None

    @property
    def sealed_gap(self) -> float | None:
        """Working − sealed score: a large positive gap hints that the working cases leaked into training."""
        if self.sealed is None or self.sealed.n == 0 or self.score.n == 0:
            return None
        return self.score.estimate - self.sealed.estimate


@dataclass(frozen=True, slots=True)
class PairResult:
    a: str
    b: str
    diff: Interval
    """Mean of a − b over the working cases both answered."""
    p_a_better: float
    p_value: float
    """Two-sided bootstrap p-value of 'no difference' (2 × the smaller tail, capped at 1)."""
    resamples: Floats
    cases: tuple[str, ...]
    """The case ids compared, in the order of the per-case arrays below."""
    a_scores: Floats
    b_scores: Floats
    working: int
    """Working cases in the run: the comparison is over `diff.n` of them."""

    @property
    def decided(self) -> bool:
        return bool(self.diff.n) and (self.diff.low > 0 or self.diff.high < 0)

    def cases_needed(self) -> int | None:
        """Cases an interval would need to exclude zero at the observed difference (width ∝ 1/√n)."""
        d = abs(self.diff.estimate)
        if not self.diff.n or not d or math.isnan(d):
            return None
        half = (self.diff.high - self.diff.low) / 2
        return max(self.diff.n + 1, math.ceil(self.diff.n * (half / d) ** 2))

    def verdict(self) -> str:
        d = self.diff
        if not d.n:
            return f"no cases answered by both {self.a} and {self.b}: nothing to compare"
        ci = f"95% CI {d.low:+.3f} to {d.high:+.3f}"
        if self.decided:
            better, worse = (self.a, self.b) if d.estimate > 0 else (self.b, self.a)
            return f"{better} is better than {worse} by {abs(d.estimate):.3f} ({ci}, n = {d.n} cases)"
        need = self.cases_needed()
        tail = (f"; about {need} cases would resolve a difference of {abs(d.estimate):.3f}" if need
                else "; the observed difference is zero")
        return f"no ordering established on this evidence ({d.n} cases; {ci}){tail}"

    def coverage_note(self) -> str | None:
        if self.diff.n < self.working:
            return (f"compared over the {self.diff.n} of {self.working} working cases both models answered "
                    f"(coverage differs)")
        return None

    def disagreements(self) -> list[tuple[str, float, float]]:
        """(case id, a's score, b's score) where the two differ, largest difference first."""
        d = self.a_scores - self.b_scores
        order = np.argsort(-np.abs(d), kind="stable")
        return [(self.cases[i], float(self.a_scores[i]), float(self.b_scores[i])) for i in order if d[i] != 0]


@dataclass(frozen=True, slots=True)
class GroupScores:
    """One stratum or tag: each model's score over the working cases in it."""

    label: str
    """'stratum easy' or 'tag math'."""
    n_cases: int
    scores: dict[str, Interval]
    reversals: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per model, the models it beats overall (Holm-decided) but scores below here: Simpson's reversal."""


@dataclass(frozen=True, slots=True)
class CaseRow:
    case: Case
    outcomes: dict[str, tuple[int, int, int]]
    """Per model: (passed, failed, errored) trials."""
    means: dict[str, float]
    """Per model: mean score over answered trials (NaN when none answered)."""

    def has(self, model: str | None, outcome: str | None) -> bool:
        keys = [model] if model else list(self.outcomes)
        if outcome is None:
            return True
        i = OUTCOMES.index(outcome)
        return any(self.outcomes.get(k, (0, 0, 0))[i] for k in keys)

    def matches(self, text: str) -> bool:
        """Case-insensitive search over id, and input and expected unless sealed (sealed text is never read)."""
        t = text.lower()
        if t in self.case.id.lower():
            return True
        if self.case.sealed:
            return False
        return t in self.case.prompt_text().lower() or t in (self.case.expected or "").lower()


@dataclass(frozen=True, slots=True)
class FrontierPoint:
    model: str
    quality: float
    cost_per_correct: float | None
    p95_ms: float | None
    on_cost_front: bool
    on_latency_front: bool


@dataclass(slots=True)
class RunView:
    """Everything the results screens show about one run, computed once in a worker."""

    run: RunRecord
    models: tuple[str, ...]
    cases: tuple[Case, ...]
    trials: int
    stats: dict[str, ModelStats]
    per_case: dict[str, Floats]
    """Per model: mean score per working case over answered trials (NaN where none answered), case order."""
    working: tuple[str, ...]
    rows: list[CaseRow]
    groups: list[GroupScores] = field(default_factory=list)
    pairs: list[PairResult] = field(default_factory=list)
    holm: dict[tuple[str, str], bool] = field(default_factory=dict)
    """Per ordered pair (a, b) with a before b in `ranked`: whether the Holm-adjusted test rejects 'no difference'."""

    @property
    def ranked(self) -> list[str]:
        """Models best first by score (models without an answered working case last)."""
        def key(m: str) -> float:
            s = self.stats[m].score
            return -s.estimate if s.n else math.inf
        return sorted(self.models, key=key)

    def compare(self, a: str, b: str) -> PairResult:
        return compare_models(self, a, b)

    def stratum_diffs(self, pair: PairResult) -> list[tuple[str, Interval]]:
        """The paired difference a − b inside each stratum and tag, over the cases both answered."""
        index = {cid: i for i, cid in enumerate(pair.cases)}
        out = []
        for label, ids in group_cases(self.cases):
            idx = [index[c] for c in ids if c in index]
            if not idx:
                continue
            cmp = paired_bootstrap(pair.a_scores[idx], pair.b_scores[idx], n_resamples=2_000, seed=SEED)
            out.append((label, cmp.diff))
        return out

    def frontier(self) -> list[FrontierPoint]:
        pts = [(m, self.stats[m]) for m in self.models if self.stats[m].score.n]
        q = {m: s.score.estimate for m, s in pts}
        cost = {m: s.cost_per_correct for m, s in pts}
        lat = {m: s.latency[1] if s.latency else None for m, s in pts}
        cost_front = pareto(q, cost)
        lat_front = pareto(q, lat)
        return [FrontierPoint(m, q[m], cost[m], lat[m], m in cost_front, m in lat_front) for m, _ in pts]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one case with n samples of which c passed: 1 − C(n−c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pareto(quality: dict[str, float], cost: dict[str, float | None]) -> set[str]:
    """Models no other model beats on both higher quality and lower cost (a missing cost is never on the front)."""
    known = {m: c for m, c in cost.items() if c is not None}
    front = set()
    for m, c in known.items():
        dominated = any(
            (quality[o] >= quality[m] and oc <= c) and (quality[o] > quality[m] or oc < c)
            for o, oc in known.items() if o != m)
        if not dominated:
            front.add(m)
    return front


def holm(p_values: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down: which hypotheses are rejected with the family-wise error kept at alpha."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    out = [False] * len(p_values)
    m = len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] <= alpha / (m - rank):
            out[i] = True
        else:
            break
    return out


def group_cases(cases: tuple[Case, ...]) -> list[tuple[str, list[str]]]:
    """Working cases by stratum, then by tag: (label, case ids)."""
    strata: dict[str, list[str]] = defaultdict(list)
    tags: dict[str, list[str]] = defaultdict(list)
    for c in cases:
        if c.sealed:
            continue
        if c.stratum:
            strata[c.stratum].append(c.id)
        for t in c.tags:
            tags[t].append(c.id)
    return ([(f"stratum {k}", v) for k, v in sorted(strata.items())]
            + [(f"tag {k}", v) for k, v in sorted(tags.items())])


def _percentiles(values: list[float], qs: tuple[float, ...]) -> tuple[float, ...] | None:
    if not values:
        return None
    return tuple(float(x) for x in np.percentile(np.asarray(values), qs))


def compare_models(view: RunView, a: str, b: str) -> PairResult:
    x, y = view.per_case[a], view.per_case[b]
    both = ~np.isnan(x) & ~np.isnan(y)
    xs, ys = x[both], y[both]
    ids = tuple(cid for cid, keep in zip(view.working, both, strict=True) if keep)
    cmp = paired_bootstrap(xs, ys, n_resamples=N_RESAMPLES, seed=SEED)
    if xs.size:
        # the same draws as paired_bootstrap's (same seed, same path): the histogram shows what the interval is from
        resamples = _resampled_means(xs - ys, N_RESAMPLES, np.random.default_rng(SEED))
        p = min(1.0, 2 * min(float(np.mean(resamples > 0)) + float(np.mean(resamples == 0)) / 2,
                             float(np.mean(resamples < 0)) + float(np.mean(resamples == 0)) / 2))
    else:
        resamples, p = np.empty(0), 1.0
    return PairResult(a, b, cmp.diff, cmp.p_a_better, p, resamples, ids, xs, ys, len(view.working))


def load_run_view(db: Path | str, run_id: str) -> RunView:
    """Read a run and compute the leaderboard, all pairs, strata and the case table (seconds at 100k calls)."""
    with Store(db) as store:
        rec = store.get_run(run_id)
        rows = store.conn.execute(_ROW_SQL, (rec.run_id,)).fetchall()
    project = project_from_dict(rec.config, Path(rec.project_path or f"run {rec.run_id}"))
    try:
        plan = make_plan(project, Filters.from_dict(rec.filters))
    except PlanError:
        raise
    models = tuple(m.key for m in plan.models)
    extra = sorted({str(r[0]) for r in rows} - set(models))
    models = models + tuple(extra)
    cases = plan.cases
    trials = plan.trials
    case_index = {c.id: i for i, c in enumerate(cases)}
    sealed = np.array([c.sealed for c in cases], dtype=bool)
    nm, nc = len(models), len(cases)
    m_index = {m: i for i, m in enumerate(models)}
    score_sum = np.zeros((nm, nc))
    answered = np.zeros((nm, nc), dtype=np.int64)
    passed = np.zeros((nm, nc), dtype=np.int64)
    failed = np.zeros((nm, nc), dtype=np.int64)
    errored = np.zeros((nm, nc), dtype=np.int64)
    errors: list[dict[str, int]] = [defaultdict(int) for _ in models]
    attempts = [0] * nm
    spend = [0.0] * nm
    tokens = [0] * nm
    lat: list[list[float]] = [[] for _ in models]
    ttft: list[list[float]] = [[] for _ in models]
    for mk, cid, _trial, status, score, ec, att, latency, tt, cost, tin, tout in rows:
        mi = m_index[mk]
        ci = case_index.get(cid)
        attempts[mi] += int(att)
        spend[mi] += float(cost)
        tokens[mi] += int(tin) + int(tout)
        if ci is None:
            continue  # a case no longer in the run's plan: counted in spend, not scored
        if status == "errored":
            errored[mi, ci] += 1
            errors[mi][str(ec)] += 1
            continue
        answered[mi, ci] += 1
        score_sum[mi, ci] += float(score or 0.0)
        if status == "passed":
            passed[mi, ci] += 1
        else:
            failed[mi, ci] += 1
        if latency is not None:
            lat[mi].append(float(latency))
        if tt is not None:
            ttft[mi].append(float(tt))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(answered > 0, score_sum / np.maximum(answered, 1), np.nan)
    working_mask = ~sealed
    working = tuple(c.id for c in cases if not c.sealed)
    stats: dict[str, ModelStats] = {}
    per_case: dict[str, Floats] = {}
    for mi, m in enumerate(models):
        w = means[mi, working_mask]
        per_case[m] = w
        s = means[mi, sealed]
        pass_at = []
        for k in range(1, trials + 1):
            vals = [pass_at_k(int(answered[mi, ci]), int(passed[mi, ci]), k)
                    for ci in range(nc) if working_mask[ci] and answered[mi, ci] >= k]
            pass_at.append(float(np.mean(vals)) if vals else float("nan"))
        full = working_mask & (answered[mi] == trials)
        agree = (passed[mi] == trials) | (passed[mi] == 0)
        n_full = int(full.sum())
        stats[m] = ModelStats(
            key=m, score=mean_ci(w[~np.isnan(w)], seed=SEED), planned=nc * trials,
            answered=int(answered[mi].sum()), passed=int(passed[mi].sum()), failed=int(failed[mi].sum()),
            errored=int(errored[mi].sum()), errors=dict(errors[mi]), attempts=attempts[mi], pass_at=tuple(pass_at),
            consistency=float((agree & full).sum() / n_full) if n_full else float("nan"),
            spend=spend[mi], tokens=tokens[mi],
            latency=_percentiles(lat[mi], (50, 95, 99)),  # type: ignore[arg-type]
            ttft=_percentiles(ttft[mi], (50, 95)),  # type: ignore[arg-type]
            sealed=mean_ci(s[~np.isnan(s)], seed=SEED) if sealed.any() else None,
        )
    case_rows = [CaseRow(c, {m: (int(passed[mi, ci]), int(failed[mi, ci]), int(errored[mi, ci]))
                             for mi, m in enumerate(models)},
                         {m: float(means[mi, ci]) for mi, m in enumerate(models)})
                 for ci, c in enumerate(cases)]
    view = RunView(rec, models, cases, trials, stats, per_case, working, case_rows)
    ranked = view.ranked
    view.pairs = [compare_models(view, a, b) for a, b in itertools.combinations(ranked, 2)]
    decisions = holm([p.p_value if p.diff.n else 1.0 for p in view.pairs])
    view.holm = {(p.a, p.b): d for p, d in zip(view.pairs, decisions, strict=True)}
    view.groups = _groups(view)
    return view


def _groups(view: RunView) -> list[GroupScores]:
    index = {cid: i for i, cid in enumerate(view.working)}
    # "a beats b overall" only where the Holm-adjusted comparison says so: noise is not a reversal
    beats: dict[str, list[str]] = defaultdict(list)
    for p in view.pairs:
        if view.holm.get((p.a, p.b)):
            win, lose = (p.a, p.b) if p.diff.estimate > 0 else (p.b, p.a)
            beats[win].append(lose)
    out = []
    for label, ids in group_cases(view.cases):
        idx = [index[c] for c in ids]
        scores = {}
        for m in view.models:
            v = view.per_case[m][idx]
            scores[m] = mean_ci(v[~np.isnan(v)], n_resamples=2_000, seed=SEED)
        rev = {}
        for m in view.models:
            below = tuple(o for o in beats[m] if scores[m].n and scores[o].n
                          and scores[m].estimate < scores[o].estimate)
            if below:
                rev[m] = below
        out.append(GroupScores(label, len(idx), scores, rev))
    return out


def case_results(db: Path | str, run_id: str, case_id: str) -> dict[str, list[dict[str, object]]]:
    """Every stored trial of one case, per model (outputs included: the caller hides sealed ones)."""
    with Store(db) as store:
        cols = ("model_key", "trial", "status", "output", "score", "error_class", "error_message", "attempts",
                "latency_ms", "ttft_ms", "cost")
        rows = store.conn.execute(
            f"SELECT {', '.join(cols)} FROM results WHERE run_id = ? AND case_id = ? ORDER BY model_key, trial",
            (run_id, case_id)).fetchall()
    out: dict[str, list[dict[str, object]]] = defaultdict(list)
    for r in rows:
        d = dict(zip(cols, r, strict=True))
        out[str(d["model_key"])].append(d)
    return dict(out)


@dataclass(frozen=True, slots=True)
class RunPairDiff:
    model: str
    diff: Interval
    verdict: str


def compare_runs(old: RunView, new: RunView) -> list[RunPairDiff]:
    """Model by model, the paired difference new − old over the working cases both runs answered."""
    out = []
    for m in new.models:
        if m not in old.per_case:
            continue
        old_scores = dict(zip(old.working, old.per_case[m], strict=True))
        pairs = [(s, old_scores[c]) for c, s in zip(new.working, new.per_case[m], strict=True)
                 if c in old_scores and not math.isnan(s) and not math.isnan(old_scores[c])]
        cmp = paired_bootstrap([p[0] for p in pairs], [p[1] for p in pairs], seed=SEED)
        d = cmp.diff
        if not d.n:
            verdict = "no shared answered cases"
        elif cmp.decided:
            verdict = "better in the newer run" if d.estimate > 0 else "worse in the newer run: a regression"
        else:
            verdict = "no change established"
        out.append(RunPairDiff(m, d, verdict))
    return out

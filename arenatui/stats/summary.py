"""Per-model summaries of a run's stored results: the leaderboard's numbers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from arenatui.stats.bootstrap import Interval, mean_ci

SUMMARY_COLUMNS: tuple[str, ...] = (
    "model_key", "case_id", "trial", "status", "score", "error_class", "attempts", "latency_ms", "cost",
)


@dataclass(frozen=True, slots=True)
class ModelSummary:
    model_key: str
    calls: int
    score: Interval
    """Mean per-case score over scored calls (trials averaged first; errored and unscored calls left out), 95%
    bootstrap interval over cases. The first results screen's figure; stats.leaderboard is the full one."""
    passed: int
    failed: int
    errored: int
    unscored: int
    """Answered, not scored (an llm_judge case outside the sample or awaiting its judge): neither zero nor error."""
    errors: dict[str, int]
    retries: int
    mean_latency_ms: float | None
    p95_latency_ms: float | None
    spend: float
    cost_per_completed: float | None
    """The model's own spend (retries' included, unscored calls' left out: their outcome is unknown) divided by
    calls that produced a scored answer. A judge's spend is the judge's (store.queries.run_spend)."""


def summarize(rows: Iterable[Sequence[object]], model_order: Sequence[str] | None = None) -> list[ModelSummary]:
    """Rows in SUMMARY_COLUMNS order (cancelled rows are ignored); sorted by score, best first."""
    per_model: dict[str, list[Sequence[object]]] = defaultdict(list)
    for r in rows:
        if r[5] == "cancelled":
            continue
        per_model[str(r[0])].append(r)
    out = []
    for key, rs in per_model.items():
        by_case: dict[str, list[float]] = defaultdict(list)
        lat = []
        errors: dict[str, int] = defaultdict(int)
        passed = failed = errored = unscored = retries = 0
        spend = unscored_spend = 0.0
        for _mk, cid, _trial, status, score, ec, attempts, latency, cost in rs:
            if status in ("passed", "failed"):  # errored and unscored calls are coverage, never zeros (issue 10)
                by_case[str(cid)].append(float(score) if score is not None else 0.0)  # type: ignore[arg-type]
            retries += int(attempts) - 1  # type: ignore[call-overload]
            spend += float(cost)  # type: ignore[arg-type]
            if status == "passed":
                passed += 1
            elif status == "failed":
                failed += 1
            elif status == "unscored":
                unscored += 1
                unscored_spend += float(cost)  # type: ignore[arg-type]
            else:
                errored += 1
                errors[str(ec)] += 1
            if status != "errored" and latency is not None:
                lat.append(float(latency))  # type: ignore[arg-type]
        per_case = [sum(v) / len(v) for v in by_case.values()]
        completed = passed + failed
        out.append(ModelSummary(
            model_key=key, calls=len(rs), score=mean_ci(per_case), passed=passed, failed=failed, errored=errored,
            unscored=unscored,
            errors=dict(errors), retries=retries,
            mean_latency_ms=float(np.mean(lat)) if lat else None,
            p95_latency_ms=float(np.percentile(lat, 95)) if lat else None,
            spend=spend, cost_per_completed=((spend - unscored_spend) / completed) if completed else None,
        ))
    if model_order is not None:
        rank = {k: i for i, k in enumerate(model_order)}
        out.sort(key=lambda s: rank.get(s.model_key, len(rank)))
    out.sort(key=lambda s: -(s.score.estimate if s.score.n else -1.0))
    return out

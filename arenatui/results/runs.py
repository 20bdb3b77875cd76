"""A stored run's results as the stats read them: `RunResults` ((model × case) arrays, errors by class, latencies,
cells per prompt variant) and `VariantResults`, built from the store's records (arenatui.store.queries)."""

from __future__ import annotations

import numpy as np

from arenatui.stats.items import LatencySample, RunResults, VariantCells
from arenatui.stats.variants import VariantResults
from arenatui.store.db import RunRecord, Store
from arenatui.store.queries import RunPlan, cell_totals, latencies, resolve_run, run_plan, variant_totals


def read_results(store: Store, run: str | RunRecord, *, latency: bool = True) -> RunResults:
    """A run's results as (model × case) arrays, with errors by class and answered calls' latencies (the plan as
    stored, never re-validated)."""
    record = run if isinstance(run, RunRecord) else resolve_run(store, run)
    return read_plan_results(store, run_plan(record), latency=latency)


def read_plan_results(store: Store, plan: RunPlan, *, latency: bool = True,
                      cluster_by: str | None = None) -> RunResults:
    """The run's (model × case) arrays; clustered by the cases' `cluster` when any case has one, or by
    `cluster_by` ('cluster', 'stratum' or 'tag:X', see stats.items.cluster_labels)."""
    run_id = plan.record.run_id
    t = cell_totals(store, plan)
    # Percentiles need every answered call's time: one read per model by the primary key's (run, model) prefix
    # (≈ 0.5 s for 1,000,000 calls; a thread beside the GROUP BY measured no faster: both build Python objects).
    lat = {m: latency_sample(store, run_id, m) for m in plan.models} if latency else {}
    return RunResults(
        run_id=run_id, models=plan.models, cases=tuple(c.id for c in plan.cases), trials=plan.trials,
        by_variant=_variant_cells(store, plan), strata=tuple(c.stratum for c in plan.cases),
        tags=tuple(c.tags for c in plan.cases), sealed=np.array([c.sealed for c in plan.cases], dtype=bool),
        calls=t.calls, scored=t.scored, unscored=t.unscored, score_sum=t.score_sum, passed=t.passed, cost=t.cost,
        tokens=t.tokens, attempts=t.attempts, unscored_cost=t.unscored_cost, unscored_tokens=t.unscored_tokens,
        errors=t.errors, latency=lat, weights=dict(plan.strata_weights),
        case_clusters=tuple(c.cluster for c in plan.cases)).clustered_by(cluster_by)


def latency_sample(store: Store, run_id: str, model: str) -> LatencySample:
    """One model's answered calls' latencies and TTFTs (ms)."""
    return LatencySample(*latencies(store, run_id, model))


def _variant_cells(store: Store, plan: RunPlan) -> VariantCells | None:
    """Per (model, variant, case): scored calls, their scores' sum and passes (None without prompt variants)."""
    totals = variant_totals(store, plan)
    if totals is None:
        return None
    scored, score_sum, passed = totals
    return VariantCells(plan.variant_names, dict(plan.variants), scored, score_sum, passed)


def variant_results(store: Store, plan: RunPlan) -> VariantResults | None:
    """Per (model, variant, case): calls scored and their scores' sum, for the prompt-variant analysis; None when the
    run had no prompt variants."""
    totals = variant_totals(store, plan, passes=False)
    if totals is None:
        return None
    scored, score_sum, _ = totals
    return VariantResults(plan.models, plan.variant_names, tuple(c.id for c in plan.cases), scored, score_sum,
                          dict(plan.variants))

"""Build RunResults from per-call outcomes in memory, for the stats tests (no database)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from arenatui.stats.items import LatencySample, RunResults

Outcome = float | str | None
"""A call's score (1.0 pass, 0.0 fail, or a fraction), None for an errored call, or "unscored" for an answered call
no scorer scored (an llm_judge case outside its sample)."""


def make_results(calls: Mapping[str, Sequence[Sequence[Outcome]]], *, strata: Sequence[str | None] | None = None,
                 tags: Sequence[tuple[str, ...]] | None = None, sealed: Sequence[bool] | None = None,
                 cost_per_call: Mapping[str, float] | None = None, error_class: str = "rate_limited",
                 latency: Mapping[str, Sequence[float]] | None = None, run_id: str = "run",
                 unscored_cost: float | None = None) -> RunResults:
    """calls[model][case] = that case's trials' outcomes; every model has the same cases and trial count."""
    models = tuple(calls)
    n_cases = len(next(iter(calls.values())))
    trials = max(len(t) for per_model in calls.values() for t in per_model)
    shape = (len(models), n_cases)
    c_calls, answered, passed = np.zeros(shape, np.int64), np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    unscored, u_cost = np.zeros(shape, np.int64), np.zeros(shape)
    score_sum, cost = np.zeros(shape), np.zeros(shape)
    errors: dict[str, dict[str, int]] = {}
    for i, m in enumerate(models):
        for j, outcomes in enumerate(calls[m]):
            for o in outcomes:
                c_calls[i, j] += 1
                cost[i, j] += (cost_per_call or {}).get(m, 0.0)
                if o is None:
                    errors.setdefault(m, {}).setdefault(error_class, 0)
                    errors[m][error_class] += 1
                    continue
                if isinstance(o, str):
                    unscored[i, j] += 1
                    if unscored_cost is not None:  # the unscored call's own price, apart from the model's
                        cost[i, j] += unscored_cost - (cost_per_call or {}).get(m, 0.0)
                    u_cost[i, j] += unscored_cost if unscored_cost is not None else (cost_per_call or {}).get(m, 0.0)
                    continue
                answered[i, j] += 1
                score_sum[i, j] += o
                passed[i, j] += int(o >= 1.0)
    return RunResults(
        run_id=run_id, models=models, cases=tuple(f"c{j}" for j in range(n_cases)), trials=trials,
        strata=tuple(strata) if strata is not None else (None,) * n_cases,
        tags=tuple(tags) if tags is not None else ((),) * n_cases,
        sealed=np.array(sealed if sealed is not None else [False] * n_cases, dtype=bool),
        calls=c_calls, scored=answered, unscored=unscored, score_sum=score_sum, passed=passed, cost=cost,
        tokens=c_calls * 100, attempts=c_calls.copy(), unscored_cost=u_cost, unscored_tokens=unscored * 100,
        errors=errors,
        latency={m: LatencySample(np.asarray(v, dtype=float), np.zeros(0)) for m, v in (latency or {}).items()},
    )


def binary_results(a: Sequence[float], b: Sequence[float], names: tuple[str, str] = ("A", "B")) -> RunResults:
    """Two models, one trial each, scores given per case."""
    return make_results({names[0]: [[x] for x in a], names[1]: [[x] for x in b]})

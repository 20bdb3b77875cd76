"""Statistics over per-item results: pure numpy, no I/O, no UI.

The results views use it in this order (in a worker thread: SQL and numpy never run on the UI loop)::

    results = store.read.read_run(store, "last").results  # RunResults: (model × case) arrays (clusters, weights)
    pairs = all_pairs(results, answered_models(results))   # Holm-adjusted decisions for every pair
    rows = leaderboard(results, decisions=pairs)           # ModelRow per model in the coverage-fair order
    c = compare_models(results, a, b)                       # verdict, interval, P(A > B), power note, histogram
    table = group_scores(results); flags = reversals(results, pairs)   # subgroup reversals on evidence
    group_differences(results, a, b); disagreements(results, a, b)
    compare_runs(old_results, new_results)                  # per model, overall and per stratum (Holm)

Every view of a run uses one resampling count and the run's own seed (compare.PAIR_RESAMPLES, bootstrap.run_seed:
stable for a run, different across runs), so every view prints the same interval, P and power figure; power.py
plans (arena plan) and reads power after a run.
"""

import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arenatui.stats.bootstrap import Interval, mean_ci, paired_bootstrap
    from arenatui.stats.compare import (
        Comparison,
        Disagreement,
        PairDecision,
        RunChange,
        all_pairs,
        compare_models,
        compare_runs,
        disagreements,
        holm_adjust,
        paired_differences,
        verdict_text,
    )
    from arenatui.stats.frontier import pareto_front
    from arenatui.stats.items import LatencySample, RunResults
    from arenatui.stats.leaderboard import ModelRow, leaderboard, model_row, ranked_models
    from arenatui.stats.passk import consistency, pass_at_k, pass_at_k_case, pass_at_ks
    from arenatui.stats.power import PowerNote
    from arenatui.stats.ranking import Ranking, Standing, answered_models, rank_models
    from arenatui.stats.strata import GroupScores, Reversal, group_differences, group_scores, reversals

_WHERE = {
    "Comparison": "compare",
    "Disagreement": "compare",
    "GroupScores": "strata",
    "Interval": "bootstrap",
    "LatencySample": "items",
    "ModelRow": "leaderboard",
    "PairDecision": "compare",
    "PowerNote": "power",
    "Ranking": "ranking",
    "Reversal": "strata",
    "RunChange": "compare",
    "RunResults": "items",
    "Standing": "ranking",
    "all_pairs": "compare",
    "answered_models": "ranking",
    "compare_models": "compare",
    "compare_runs": "compare",
    "consistency": "passk",
    "disagreements": "compare",
    "group_differences": "strata",
    "group_scores": "strata",
    "holm_adjust": "compare",
    "leaderboard": "leaderboard",
    "mean_ci": "bootstrap",
    "model_row": "leaderboard",
    "paired_bootstrap": "bootstrap",
    "paired_differences": "compare",
    "pareto_front": "frontier",
    "pass_at_k": "passk",
    "pass_at_k_case": "passk",
    "pass_at_ks": "passk",
    "rank_models": "ranking",
    "ranked_models": "leaderboard",
    "reversals": "strata",
    "verdict_text": "compare",
}
"""Each public name → the module that defines it: the package loads a module (and numpy) only when one of its
names is first asked for, so `stats.percentiles` stays importable on the engine's start path."""

__all__ = [
    "Comparison",
    "Disagreement",
    "GroupScores",
    "Interval",
    "LatencySample",
    "ModelRow",
    "PairDecision",
    "PowerNote",
    "Ranking",
    "Reversal",
    "RunChange",
    "RunResults",
    "Standing",
    "all_pairs",
    "answered_models",
    "compare_models",
    "compare_runs",
    "consistency",
    "disagreements",
    "group_differences",
    "group_scores",
    "holm_adjust",
    "leaderboard",
    "mean_ci",
    "model_row",
    "paired_bootstrap",
    "paired_differences",
    "pareto_front",
    "pass_at_k",
    "pass_at_k_case",
    "pass_at_ks",
    "rank_models",
    "ranked_models",
    "reversals",
    "verdict_text",
]


class _Package(types.ModuleType):
    """The package, with one rule of an eager `from .leaderboard import leaderboard` kept: importing the submodule
    `leaderboard` does not rebind the package's name `leaderboard`, which stays the function."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _WHERE and isinstance(value, types.ModuleType):
            return  # the submodule stays in sys.modules; the name is the function's (see __getattr__)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"arenatui.stats.{module}"), name)
    globals()[name] = value
    return value

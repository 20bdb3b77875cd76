"""Results at scale: a 1,000,000-call store, then the leaderboard, one compare, all pairs, and peak RSS.

    python benchmarks/results_scale.py [--models 20] [--cases 10000] [--trials 5] [--repeat 3] [--db PATH] [--judged]

The store is built fast by inserting synthetic rows directly (executemany), not by running a sweep: what is
measured is the read side. Model i passes a case with probability 0.5 + 0.02·i shifted by a per-case
difficulty, 3% of calls error (rate-limited or timeout), a tenth of cases are sealed. With --judged, every other
case is an llm_judge scorer's with sample = 0.2: the calls of the cases outside the sample are stored unscored.
Targets on 2 cores: results_leaderboard_s < 2, results_compare_s < 0.3, results_all_pairs_s < 5,
results_peak_rss_mb < 500. Then the max_tokens / timeout_s evidence: one model's (the model detail) and the whole
run's (`arena report`), with the peak memory after it. results_leaderboard_over_scan divides the leaderboard
by one plain scan of the results table (SELECT COUNT(*), TOTAL(score)), a figure that moves less with the
machine's load. results_stratified_s_{old,new}: every model's strata-weighted score (weights easy 0.5, medium 0.3,
hard 0.2) and sealed gap at 1,000 resamples (before issue 35) and at STRATIFIED_RESAMPLES, with their ratio measured
in the same run. Each time is the median of --repeat runs (this shared machine moves ±50% between runs). Prints one
JSON line per figure (DESIGN.md, Benchmarks).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from arenatui.kernel.events import CallResult
from arenatui.results.runs import read_results
from arenatui.stats import all_pairs, compare_models, leaderboard
from arenatui.store import Store
from arenatui.store.db import result_row


def _project(n_models: int, n_cases: int, trials: int, judged: bool = False) -> dict[str, Any]:
    if judged:
        p = _project(n_models, n_cases, trials)
        p["models"].append({"key": "judge", "provider": "sim", "model": "j"})
        p["scorers"].append({"name": "judged", "kind": "llm_judge", "judge": "judge", "rubric": "Rate: {output}",
                             "sample": 0.2})
        for j, c in enumerate(p["cases"]):
            if j % 2:
                c["scorer"] = "judged"
        return p
    return {
        "project": {"name": "scale"},
        "run": {"concurrency": 64, "trials": trials, "timeout_s": 60.0},
        "models": [{"key": f"model-{i:02d}", "provider": "sim", "model": f"m{i}",
                    "sim": {"base_latency_s": 0.0, "per_token_s": 0.0}} for i in range(n_models)],
        "scorers": [{"name": "exact", "kind": "exact"}],
        "cases": [{"id": f"case-{j:05d}", "input": f"question {j}", "expected": "yes",
                   "stratum": ("easy", "medium", "hard")[j % 3], "tags": [f"t{j % 7}"],
                   **({"sealed": True} if j % 10 == 0 else {})} for j in range(n_cases)],
    }


def build(db: Path, n_models: int, n_cases: int, trials: int, judged: bool = False) -> str:
    rng = np.random.default_rng(0)
    with Store(db) as store:
        project = _project(n_models, n_cases, trials, judged)
        run_id = store.create_run("scale", None, project, {}, n_models * n_cases * trials)
        if judged:
            from arenatui.plan import judged_case_ids
            from arenatui.project import project_from_dict

            proj = project_from_dict(project, Path("scale.toml"))
            chosen = judged_case_ids(proj, proj.scorers[1])
            unjudged = {c.id for c in proj.cases if c.scorer == "judged" and c.id not in chosen}
        else:
            unjudged = set()
        difficulty = rng.normal(0.0, 0.2, n_cases)
        now = time.time()
        for i in range(n_models):
            p = np.clip(0.5 + 0.02 * i + difficulty, 0.02, 0.98)
            passed = rng.random((n_cases, trials)) < p[:, None]
            err = rng.random((n_cases, trials)) < 0.03
            lat = rng.lognormal(np.log(300 + 20 * i), 0.4, (n_cases, trials))
            rows = []
            mk = f"model-{i:02d}"
            for j in range(n_cases):
                cid = f"case-{j:05d}"
                for t in range(trials):
                    if err[j, t]:
                        ec = "timeout" if (j + t) % 3 == 0 else "rate_limited"
                        r = CallResult(mk, cid, t, "errored", None, None, False, ec, "simulated", 3, None, 900.0,
                                       None, 10, 0, 0.0001, None, False, now, now, None, ec)
                    elif cid in unjudged:
                        ms = float(lat[j, t])
                        r = CallResult(mk, cid, t, "unscored", "maybe", None, False, None, None, 1, ms, ms, ms / 4,
                                       10, 5, 0.0002, "stop", False, now, now, None, "unjudged")
                    else:
                        ok = bool(passed[j, t])
                        ms = float(lat[j, t])
                        r = CallResult(mk, cid, t, "passed" if ok else "failed", "yes" if ok else "no",
                                       1.0 if ok else 0.0, ok, None, None, 1, ms, ms, ms / 4, 10, 5, 0.0002, "stop",
                                       False, now, now, None, "none" if ok else "wrong_answer")
                    rows.append(result_row(run_id, r))  # the store's own row: new columns follow CallResult
            store.write_rows(rows)
        store.mark_run(run_id, "finished")
    return run_id


def _rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 1024 / 1024


def _budgets(db: Path, run: str, model: str) -> list[tuple[str, float, str]]:
    """The max_tokens and timeout_s evidence: one model's (what the results view's model detail reads when it opens)
    and every model's (what `arena report` reads), and the peak memory after it (measured last: it reads every
    answer of the run)."""
    from arenatui.results.budgets import budget_evidence
    from arenatui.store.queries import resolve_run
    from arenatui.tuning.budgets import budgets_of

    with Store(db, read_only=True) as store:
        run_id = resolve_run(store, run).run_id
        t0 = time.perf_counter()
        budgets_of(budget_evidence(store, run_id, model))
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        budgets_of(budget_evidence(store, run_id))
        every = time.perf_counter() - t0
    return [("results_model_budgets_s", one, "s"), ("results_report_budgets_s", every, "s"),
            ("results_peak_rss_with_budgets_mb", _rss_mb(), "MB")]


def _stratified(results: Any, repeat: int) -> list[tuple[str, float, str]]:
    """The strata-weighted score and the sealed gap of every model, at 1,000 resamples and at today's count."""
    from arenatui.stats.leaderboard import STRATIFIED_RESAMPLES
    from arenatui.stats.weighted import reweighted, sealed_gap

    weights = {"easy": 0.5, "medium": 0.3, "hard": 0.2}
    took: dict[int, list[float]] = {1_000: [], STRATIFIED_RESAMPLES: []}
    for _ in range(repeat):
        for n in took:
            t0 = time.perf_counter()
            for m in results.models:
                s = results.case_scores(m)
                reweighted(s, results.strata, results.working, weights, n_resamples=n, seed=1)
                sealed_gap(s, results.strata, results.working, results.sealed, n_resamples=n, seed=1)
            took[n].append(time.perf_counter() - t0)
    old, new = statistics.median(took[1_000]), statistics.median(took[STRATIFIED_RESAMPLES])
    return [("results_stratified_s_old_1000", old, "s"), (f"results_stratified_s_new_{STRATIFIED_RESAMPLES}", new, "s"),
            ("results_stratified_new_over_old", new / old, "ratio")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--db", help="reuse (or build) this database instead of a temporary one")
    ap.add_argument("--judged", action="store_true", help="half the cases under an llm_judge scorer, sample 0.2")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(a.db) if a.db else Path(tmp) / "scale.db"
        t0 = time.perf_counter()
        fresh = not db.exists()
        run_id = build(db, a.models, a.cases, a.trials, a.judged) if fresh else "last"
        build_s = time.perf_counter() - t0
        figures: list[tuple[str, float, str]] = []
        if fresh:
            figures.append(("results_build_s", build_s, "s"))
        times: dict[str, list[float]] = {"results_leaderboard_s": [], "results_compare_s": [],
                                         "results_all_pairs_s": [], "results_scan_s": []}
        for _ in range(a.repeat):
            with Store(db) as store:
                t0 = time.perf_counter()
                calls = store.conn.execute("SELECT COUNT(*), TOTAL(score) FROM results").fetchone()[0]
                times["results_scan_s"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                results = read_results(store, run_id)
                rows = leaderboard(results)
                times["results_leaderboard_s"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            compare_models(results, rows[0].model, rows[1].model)
            times["results_compare_s"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            pairs = all_pairs(results)
            times["results_all_pairs_s"].append(time.perf_counter() - t0)
        figures.append(("results_calls", float(calls), "calls"))
        figures.append(("results_pairs", float(len(pairs)), "pairs"))
        figures.extend((name, statistics.median(v), "s") for name, v in times.items())
        # The machine's speed moves with its load: the leaderboard against one plain scan of the same table.
        figures.append(("results_leaderboard_over_scan", statistics.median(times["results_leaderboard_s"]) /
                        statistics.median(times["results_scan_s"]), "ratio"))
        figures += _stratified(results, a.repeat)
        figures.append(("results_peak_rss_mb", _rss_mb(), "MB"))
        figures.extend(_budgets(db, run_id, rows[0].model))
    for name, value, unit in figures:
        print(json.dumps({"name": name, "value": round(value, 4), "unit": unit}))


if __name__ == "__main__":
    main()

"""Decisions on simulated data with a known truth (issue 26): how often the figures mislead.

    python benchmarks/decision_coverage.py [--seeds 40]

- twin_*: two models identical per stratum (easy 0.95, hard 0.50; the easy cases first), one giving up on the
  cases after the first 38 of 200 (as throttling in file order left it), or after 120 (60% coverage): how often
  the limited twin is ranked first by its own-coverage score (the old rule) and by the coverage-fair ranking, and
  the mean common-case headline difference (truth 0).
- reversal_false_flags: A = 0.80, B = 0.65 in each of 20 strata of 20 cases: subgroup-reversal flags per run
  (every flag is false).
- paradox_flagged: A better than B in every stratum, A answering only the hard half: runs where A ranks first and
  the coverage paradox is flagged.
- clustered_coverage / unclustered_coverage: 30 clusters of 10 cases sharing a pass rate drawn around 0.7 (sd 0.2):
  share of 95% intervals holding the truth, resampling clusters and resampling cases.
- iid_coverage: 300 independent cases at 0.7: the plain interval's coverage.
- power_at_planned_n: the share of runs deciding a true +0.10 difference over a 0.7 baseline at the cases
  `arena plan` asks for (the target is 80%).

Prints one JSON line per figure (DESIGN.md, Benchmarks).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

from stats_support import make_results

from arenatui.stats import all_pairs, leaderboard, reversals
from arenatui.stats.bootstrap import mean_ci
from arenatui.stats.compare import paired_differences
from arenatui.stats.power import planned_cases


def _twins(rng: np.random.Generator, answered: int) -> dict[str, list[list[float | None]]]:
    p = np.array([0.95] * 100 + [0.50] * 100)
    full = (rng.random(200) < p).astype(float)
    lim = (rng.random(200) < p).astype(float)
    return {"full": [[x] for x in full], "limited": [[x] if j < answered else [None] for j, x in enumerate(lim)]}


def twins(seeds: int, answered: int) -> tuple[float, float, float]:
    own_first = fair_first = 0
    diffs = []
    for s in range(seeds):
        rows = leaderboard(make_results(_twins(np.random.default_rng(s), answered)), n_resamples=200)
        by = {r.model: r for r in rows}
        own_first += by["limited"].quality.estimate > by["full"].quality.estimate
        fair_first += rows[0].model == "limited" and rows[0].rank == 1
        if by["limited"].rank:
            diffs.append(by["limited"].common.estimate - by["full"].common.estimate)
    return own_first / seeds, fair_first / seeds, float(np.mean(diffs)) if diffs else float("nan")


def reversal_flags(seeds: int) -> float:
    strata = [f"s{j // 20}" for j in range(400)]
    flags = 0
    for s in range(seeds):
        rng = np.random.default_rng(1000 + s)
        res = make_results({"A": [[float(rng.random() < 0.80)] for _ in range(400)],
                            "B": [[float(rng.random() < 0.65)] for _ in range(400)]}, strata=strata)
        flags += len(reversals(res, all_pairs(res)))
    return flags / seeds


def paradox(seeds: int) -> float:
    hits = 0
    for s in range(seeds):
        u = np.random.default_rng(2000 + s).random(240)
        a = [[None]] * 120 + [[float(x < 0.55)] for x in u[120:]]
        b = [[float(x < 0.90)] for x in u[:120]] + [[float(x < 0.32)] for x in u[120:]]
        rows = leaderboard(make_results({"A": a, "B": b}, strata=["easy"] * 120 + ["hard"] * 120), n_resamples=200)
        hits += rows[0].model == "A" and rows[0].paradox is not None
    return hits / seeds


def clustered(sims: int) -> tuple[float, float]:
    rng = np.random.default_rng(7)
    hit_c = hit_u = 0
    for s in range(sims):
        p = np.clip(rng.normal(0.7, 0.2, 30), 0.02, 0.98)
        clusters = np.repeat(np.arange(30), 10)
        v = (rng.random(300) < p[clusters]).astype(float)
        c = mean_ci(v, clusters=clusters, n_resamples=1_000, seed=s)
        u = mean_ci(v, n_resamples=1_000, seed=s)
        hit_c += c.low <= 0.7 <= c.high
        hit_u += u.low <= 0.7 <= u.high
    return hit_c / sims, hit_u / sims


def iid(sims: int) -> float:
    rng = np.random.default_rng(8)
    hits = 0
    for s in range(sims):
        iv = mean_ci((rng.random(300) < 0.7).astype(float), n_resamples=1_000, seed=s)
        hits += iv.low <= 0.7 <= iv.high
    return hits / sims


def power(sims: int) -> float:
    n = planned_cases(0.10, 0.7) or 0
    rng = np.random.default_rng(9)
    hits = 0
    for s in range(sims):
        a = (rng.random(n) < 0.8).astype(float)
        b = (rng.random(n) < 0.7).astype(float)
        hits += paired_differences(a, b, seed=s).decided
    return hits / sims


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    a = ap.parse_args()
    figures: list[tuple[str, float, str]] = []
    own, fair, diff = twins(a.seeds, 38)
    figures += [("twin38_limited_first_own_coverage", own, "share"), ("twin38_limited_ranked_first_fair", fair,
                                                                      "share")]
    own, fair, diff = twins(a.seeds, 120)
    figures += [("twin120_limited_first_own_coverage", own, "share"),
                ("twin120_limited_ranked_first_fair", fair, "share"), ("twin120_mean_headline_diff", diff, "score")]
    figures.append(("reversal_false_flags_per_run_20_strata", reversal_flags(max(8, a.seeds)), "flags"))
    figures.append(("paradox_ranked_and_flagged", paradox(a.seeds), "share"))
    c, u = clustered(25 * a.seeds)
    figures += [("clustered_coverage", c, "share"), ("unclustered_coverage_on_clustered", u, "share"),
                ("iid_coverage", iid(25 * a.seeds), "share"), ("power_at_planned_n", power(10 * a.seeds), "share")]
    for name, value, unit in figures:
        print(json.dumps({"name": name, "value": round(value, 4), "unit": unit}))


if __name__ == "__main__":
    main()

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

Issue 35 (each figure with its Monte Carlo standard error `mc_se` and the simulations it rests on, `sims`):

- gate_null_false_exit_{3,10}_models: `arena compare OLD NEW --fail-on-regression` on reruns where nothing changed
  (400 cases in 4 strata of 100, per-case pass rates drawn from Beta(4, 1.5), every model redrawn from the same
  rates): the share of pairs of runs that exit 1 (target <= 5%); gate_family_{3,10}_models: the tests corrected over.
- gate_power_one_stratum: one stratum of 100 cases of one of 3 models drops 0.80 -> 0.65 (every other cell 0.80):
  the share of runs the gate catches it, beside gate_power_theory_one_test_holm4 (one test Holm-corrected over its
  model's 4 strata: the old rule) and gate_power_theory_family (over the whole family, as now).
- cluster_{leaderboard,paired,stratum,weighted}_coverage_{5,10,20,30}: G clusters of 10 cases whose pass rates are
  drawn from Beta(2.975, 1.275) (mean 0.7, sd 0.2): the share of 95% intervals holding the truth (target >= 92%);
  the paired interval is A − B with both models' cluster rates drawn apart (truth 0); the per-stratum interval is a
  stratum of G clusters in a run of two (group_scores); the weighted interval is G clusters over two strata weighted
  0.3/0.7 (truth 0.56). cluster_bootstrap_leaderboard_coverage_G: the old percentile cluster bootstrap, same data.
  cluster_warning_G: 1 when the interval says "few clusters" (under 20).
- twin_tie_limited_first: the rate-limited twin of twin120 over --tie-seeds runs, a tie counted half (both rank =1),
  target 50%; twin_tie_runs_tied: the share of runs tied.
- variants_equal_named_winner: two equal models (0.7) under two prompt variants of 100 cases: the share of pairs
  where some variant names a winner (target <= 5%, Holm over the variants).

Prints one JSON line per figure (DESIGN.md, Benchmarks).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

from stats_support import make_results

from arenatui.stats import all_pairs, compare_runs, group_scores, leaderboard, rank_models, reversals
from arenatui.stats.bootstrap import mean_ci, resampled_cluster_means
from arenatui.stats.compare import paired_differences
from arenatui.stats.items import RunResults
from arenatui.stats.power import planned_cases
from arenatui.stats.variants import FLIPS, HOLDS, UNDECIDED_IN_SOME, VariantResults, analyse_variants
from arenatui.stats.weighted import reweighted

Figure = tuple[str, float, str, float | None, int | None]
"""name, value, unit, Monte Carlo standard error (for a share: sqrt(p(1 − p)/sims)), simulations."""


def _share(name: str, hits: float, sims: int) -> Figure:
    p = hits / sims
    return name, p, "share", math.sqrt(max(p * (1 - p), 1e-12) / sims), sims


def _binary(run_id: str, passed: np.ndarray, strata: list[str]) -> RunResults:
    """RunResults of one trial per (model, case), 0/1 scores: `passed` is [model, case] booleans."""
    k, n = passed.shape
    ones = np.ones((k, n), np.int64)
    return RunResults(
        run_id=run_id, models=tuple(f"m{i}" for i in range(k)), cases=tuple(f"c{j}" for j in range(n)), trials=1,
        strata=tuple(strata), tags=((),) * n, sealed=np.zeros(n, bool), calls=ones, scored=ones,
        unscored=0 * ones, score_sum=passed.astype(float), passed=passed.astype(np.int64), cost=np.zeros((k, n)),
        tokens=ones, attempts=ones, unscored_cost=np.zeros((k, n)), unscored_tokens=0 * ones)


_GATE_STRATA = [f"s{j // 100}" for j in range(400)]


def gate_null(sims: int, models: int) -> tuple[Figure, Figure]:
    exits, family = 0, 0
    for s in range(sims):
        rng = np.random.default_rng(30_000 + 97 * models + s)
        p = rng.beta(4, 1.5, 400)
        old = _binary(f"old-{models}-{s}", rng.random((models, 400)) < p, _GATE_STRATA)
        new = _binary(f"new-{models}-{s}", rng.random((models, 400)) < p, _GATE_STRATA)
        changes = compare_runs(old, new)
        exits += any(ch.regressions for ch in changes)
        family = changes[0].family
    return (_share(f"gate_null_false_exit_{models}_models", exits, sims),
            (f"gate_family_{models}_models", family, "tests", None, None))


def gate_power(sims: int) -> list[Figure]:
    hits = 0
    family = 15
    for s in range(sims):
        rng = np.random.default_rng(40_000 + s)
        p_new = np.full((3, 400), 0.80)
        p_new[0, :100] = 0.65
        old = _binary(f"old-p-{s}", rng.random((3, 400)) < 0.80, _GATE_STRATA)
        new = _binary(f"new-p-{s}", rng.random((3, 400)) < p_new, _GATE_STRATA)
        changes = compare_runs(old, new)
        family = changes[0].family
        hits += any(st.regression and st.stratum == "s0" for st in changes[0].strata)
    se = math.sqrt((0.8 * 0.2 + 0.65 * 0.35) / 100)
    z = NormalDist()

    def theory(tests: int) -> float:  # the drop's own test against a Holm bar of alpha/tests (the others null)
        crit = z.inv_cdf(1 - 0.05 / tests / 2)
        return 1 - z.cdf(crit - 0.15 / se)

    return [_share("gate_power_one_stratum", hits, sims),
            ("gate_power_theory_one_test_holm4", theory(4), "share", None, None),
            ("gate_power_theory_family", theory(family), "share", None, None)]


def _cluster_rates(rng: np.random.Generator, g: int) -> np.ndarray:
    return rng.beta(2.975, 1.275, g)


def cluster_coverage(sims: int, g: int) -> list[Figure]:
    hits = dict.fromkeys(("leaderboard", "paired", "stratum", "weighted", "bootstrap"), 0)
    warned = 0
    for s in range(sims):
        rng = np.random.default_rng(50_000 + 1000 * g + s)
        clusters = np.repeat(np.arange(g), 10)
        v = (rng.random(10 * g) < _cluster_rates(rng, g)[clusters]).astype(float)
        iv = mean_ci(v, clusters=clusters, seed=s)
        hits["leaderboard"] += iv.low <= 0.7 <= iv.high
        warned += iv.few_clusters
        boot = resampled_cluster_means(v, clusters, 1_000, np.random.default_rng(s))
        lo, hi = np.quantile(boot, [0.025, 0.975])
        hits["bootstrap"] += lo <= 0.7 <= hi
        w = (rng.random(10 * g) < _cluster_rates(rng, g)[clusters]).astype(float)
        c = paired_differences(v, w, clusters=clusters, seed=s)
        hits["paired"] += c.diff.low <= 0 <= c.diff.high
        # a stratum of G clusters (rates around 0.7) beside one of G clusters around 0.5, in one clustered run
        other = (rng.random(10 * g) < rng.beta(2, 2, g)[clusters]).astype(float)
        scores = np.concatenate([v, other])
        strata = ["a"] * (10 * g) + ["b"] * (10 * g)
        res = _binary(f"cl-{g}-{s}", np.zeros((1, 20 * g), bool), strata)
        res = dataclasses.replace(res, score_sum=scores[None, :], passed=scores[None, :].astype(np.int64),
                                  clusters=np.concatenate([clusters, clusters + g]), cluster_by="cluster")
        st = next(x for x in group_scores(res) if x.group == "a").scores["m0"]
        hits["stratum"] += st.low <= 0.7 <= st.high
        # G clusters over two strata (the first half of the clusters around 0.7, the rest around 0.5)
        half = max(1, g // 2)
        rates = np.where(np.arange(g) < half, _cluster_rates(rng, g), rng.beta(2, 2, g))
        x = (rng.random(10 * g) < rates[clusters]).astype(float)
        wstrata = ["a" if k < half else "b" for k in clusters]
        wi = reweighted(x, wstrata, np.ones(10 * g, bool), {"a": 0.3, "b": 0.7}, clusters=clusters, seed=s)
        hits["weighted"] += wi is not None and wi.low <= 0.3 * 0.7 + 0.7 * 0.5 <= wi.high
    out = [_share(f"cluster_{k}_coverage_{g}", hits[k], sims) for k in ("leaderboard", "paired", "stratum",
                                                                         "weighted")]
    out.append(_share(f"cluster_bootstrap_leaderboard_coverage_{g}", hits["bootstrap"], sims))
    out.append((f"cluster_warning_{g}", warned / sims, "share", None, sims))
    return out


def twin_tie(seeds: int) -> list[Figure]:
    first = tied = 0.0
    for s in range(seeds):
        r = rank_models(make_results(_twins(np.random.default_rng(s), 120)))
        by = {x.model: x for x in r.standings}
        if by["limited"].tied and by["full"].tied:
            tied += 1
            first += 0.5
        else:
            first += by["limited"].rank == 1
    return [_share("twin_tie_limited_first", first, seeds), _share("twin_tie_runs_tied", tied, seeds)]


def variants_equal(sims: int) -> Figure:
    named = 0
    for s in range(sims):
        rng = np.random.default_rng(60_000 + s)
        p = rng.beta(4, 1.7, 100)
        scored = np.ones((2, 2, 100), np.int64)
        sums = (rng.random((2, 2, 100)) < p).astype(float)
        vr = VariantResults(("A", "B"), ("qa", "terse"), tuple(f"c{j}" for j in range(100)), scored, sums)
        (pair,) = analyse_variants(vr, seed=s).pairs
        named += pair.verdict in (HOLDS, FLIPS, UNDECIDED_IN_SOME)
    return _share("variants_equal_named_winner", named, sims)


def _twins(rng: np.random.Generator, answered: int) -> dict[str, list[list[float | None]]]:
    p = np.array([0.95] * 100 + [0.50] * 100)
    full = (rng.random(200) < p).astype(float)
    lim = (rng.random(200) < p).astype(float)
    return {"full": [[x] for x in full], "limited": [[x] if j < answered else [None] for j, x in enumerate(lim)]}


def twins(seeds: int, answered: int) -> tuple[float, float, float]:
    own_first = 0
    fair_first = 0.0
    diffs = []
    for s in range(seeds):
        rows = leaderboard(make_results(_twins(np.random.default_rng(s), answered)), n_resamples=200)
        by = {r.model: r for r in rows}
        own_first += by["limited"].quality.estimate > by["full"].quality.estimate
        lim = by["limited"]
        fair_first += 0.5 if lim.tied and lim.rank == 1 else float(lim.rank == 1 and not lim.tied)  # a tie: half
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
    ap.add_argument("--gate-sims", type=int, default=500, help="pairs of runs per gate figure (issue 35)")
    ap.add_argument("--cluster-sims", type=int, default=1000, help="simulations per clustered coverage figure")
    ap.add_argument("--tie-seeds", type=int, default=1000)
    ap.add_argument("--variant-sims", type=int, default=1000)
    ap.add_argument("--only-issue35", action="store_true", help="skip the issue 26 figures")
    ap.add_argument("--skip-issue35", action="store_true", help="only the issue 26 figures")
    a = ap.parse_args()
    new: list[Figure] = []
    if not a.skip_issue35:
        for k in (3, 10):
            new += gate_null(a.gate_sims, k)
        new += gate_power(a.gate_sims)
        for g in (5, 10, 20, 30):
            new += cluster_coverage(a.cluster_sims, g)
        new += twin_tie(a.tie_seeds)
        new.append(variants_equal(a.variant_sims))
    for name, value, unit, mc_se, sims in new:
        print(json.dumps({"name": name, "value": round(value, 4), "unit": unit,
                          **({} if mc_se is None else {"mc_se": round(mc_se, 4)}),
                          **({} if sims is None else {"sims": sims})}), flush=True)
    if a.only_issue35:
        return
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

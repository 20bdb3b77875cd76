"""Decisions a reader can defend (issue 26): the coverage-fair ranking, pass@k over one case set, reversal flags
with evidence, exact zero, power, clusters, the regression gate, strata weights and the sealed gap."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stats_support import make_results

from arenatui.stats import (
    RunResults,
    all_pairs,
    compare_models,
    compare_runs,
    group_scores,
    holm_adjust,
    leaderboard,
    pass_at_ks,
    rank_models,
    reversals,
)
from arenatui.stats.bootstrap import clustered_se, mean_ci
from arenatui.stats.compare import paired_differences
from arenatui.stats.power import cases_for, planned_cases, planned_mde, power_note
from arenatui.stats.weighted import reweighted, sealed_gap


def _twins(rng: np.random.Generator, answered: int) -> dict[str, list[list[float | None]]]:
    """Identical per stratum (easy 0.95, hard 0.50; the 100 easy cases first); 'limited' gives up on the cases after
    the first `answered` in file order, as throttling in file order left it."""
    p = np.array([0.95] * 100 + [0.50] * 100)
    full = (rng.random(200) < p).astype(float)
    lim = (rng.random(200) < p).astype(float)
    return {"full": [[x] for x in full], "limited": [[x] if j < answered else [None] for j, x in enumerate(lim)]}


def test_twin_headline_difference_is_noise_and_own_coverage_is_beside_it() -> None:
    diffs, own_gaps = [], []
    for seed in range(12):
        rows = {r.model: r for r in leaderboard(make_results(_twins(np.random.default_rng(seed), 120)))}
        full, lim = rows["full"], rows["limited"]
        assert full.rank and lim.rank and full.common.n == lim.common.n == 120  # "n common cases"
        diffs.append(lim.common.estimate - full.common.estimate)
        own_gaps.append(lim.quality.estimate - full.quality.estimate)
    # own coverage ranks luck: the limited twin answered mostly easy cases (0.83 against 0.725 expected)
    assert np.mean(own_gaps) > 0.07
    # over the common cases the two are the same model: the mean difference is within noise of zero
    se = np.std(diffs, ddof=1) / math.sqrt(len(diffs))
    assert abs(np.mean(diffs)) < 3 * se + 0.02


def test_a_low_coverage_model_is_listed_apart_with_why() -> None:
    res = make_results({**_twins(np.random.default_rng(1), 38), "one": [[1.0]] + [[None]] * 199})
    rows = leaderboard(res)
    assert [r.model for r in rows if r.rank] == ["full"]
    apart = {r.model: r for r in rows if r.rank is None}
    assert set(apart) == {"limited", "one"}
    assert "scores for 38 working cases, under half the 200" in (apart["limited"].unranked or "")
    assert "scores for 1 working case," in (apart["one"].unranked or "")
    assert math.isnan(apart["one"].common.estimate) and apart["one"].quality.estimate == 1.0


def _paradox(seed: int) -> dict[str, list[list[float | None]]]:
    """A better than B in every stratum; A answers only the hard cases."""
    rng = np.random.default_rng(seed)
    u = rng.random(240)
    easy, hard = u[:120], u[120:]
    a = [[None]] * 120 + [[float(x < 0.55)] for x in hard]
    b = [[float(x < 0.90)] for x in easy] + [[float(x < 0.32)] for x in hard]
    return {"A": a, "B": b}


def test_coverage_paradox_ranks_by_the_common_cases_and_is_flagged() -> None:
    res = make_results(_paradox(3), strata=["easy"] * 120 + ["hard"] * 120)
    rows = leaderboard(res)
    own = {r.model: r.quality.estimate for r in rows}
    assert own["B"] > own["A"]  # what the old leaderboard ranked by
    assert [r.model for r in rows] == ["A", "B"] and rows[0].common.n == 120
    assert compare_models(res, "A", "B").better == "A"
    assert rows[0].paradox is not None and rows[0].paradox.startswith("coverage paradox: B's own-coverage score")


def test_order_never_contradicts_a_decided_verdict() -> None:
    # X and Y share 60 cases where X is clearly better; Y also has 60 cases X errored on, where Y fails, and X's
    # extra cases with Z push the common set to the cases where X is weaker: the verdict must still hold.
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = 120
        calls = {m: [[float(rng.random() < p)] for _ in range(n)] for m, p in (("X", 0.8), ("Y", 0.5), ("Z", 0.65))}
        res = make_results(calls)
        ranking = rank_models(res)
        pos = {s.model: i for i, s in enumerate(ranking.standings)}
        for d in all_pairs(res, ranking.order):
            if d.better is not None:
                c = d.comparison
                loser = c.b if d.better == c.a else c.a
                assert pos[d.better] < pos[loser]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=40))
def test_pass_at_k_is_non_decreasing_in_k_under_random_coverage(cells: list[tuple[int, int]]) -> None:
    answered = np.array([n for n, _c in cells])
    passed = np.array([min(c, n) for n, c in cells])
    curve = pass_at_ks(answered, passed, range(1, 6))
    ks = sorted(curve)
    assert ks == [k for k in range(1, 6) if (answered >= k).any()]  # k no case supports is not shown
    values = [curve[k] for k in ks]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(values))


def test_pass_at_k_curve_over_one_case_set_in_the_row() -> None:
    # the shape: cases with fewer trials answered used to lift @2 above @3
    res = make_results({"m": [[1.0, 0.0, 0.0], [1.0, None, None], [0.0, 1.0, None], [0.0, 0.0, 0.0]]})
    (row,) = leaderboard(res)
    assert row.pass_at_n == 2 and sorted(row.pass_at) == [1, 2, 3]
    assert row.pass_at[1] == pytest.approx(1 / 6) and row.pass_at[3] == pytest.approx(0.5)


def test_an_exact_zero_difference_is_zero_with_no_power_figure() -> None:
    c = paired_differences(np.array([0, 0, 2 / 3, 1]), np.array([2 / 3, 1, 0, 0]))
    assert c.diff.estimate == 0.0 and not c.decided and c.power is None
    assert c.verdict == "no ordering established on this evidence (4 cases); the observed difference is zero"


def test_power_before_and_after_a_run() -> None:
    # the standard figure: 80% power, 95% two-sided, independent 0/1 errors around 0.8
    n = planned_cases(0.05, 0.8)
    assert n == cases_for(0.05, math.sqrt(0.8 * 0.2 + 0.85 * 0.15))
    assert 850 < (n or 0) < 1000
    mdes = [planned_mde(k, 0.8) for k in (100, 400, 1600)]
    assert mdes[0] and mdes[1] and mdes[2] and mdes[0] > mdes[1] > mdes[2]
    assert planned_cases(mdes[1], 0.8) == pytest.approx(400, abs=2)  # the two are one formula, inverted
    # after a run: D is the observed |d| above the MDE, else the MDE; never from zero
    assert power_note(100, 0.0, 0.5) is None
    small = power_note(100, 0.01, 0.5)
    assert small is not None and not small.observed and small.cases == 100
    big = power_note(100, 0.3, 0.5)
    assert big is not None and big.observed and big.cases < 100


def test_power_figure_is_about_eighty_percent_in_simulation() -> None:
    rng = np.random.default_rng(11)
    n = planned_cases(0.10, 0.7)
    assert n is not None
    hits = 0
    sims = 200
    for s in range(sims):
        a = (rng.random(n) < 0.8).astype(float)
        b = (rng.random(n) < 0.7).astype(float)
        hits += paired_differences(a, b, seed=s).decided
    assert 0.70 <= hits / sims <= 0.90


def test_compare_and_compare_all_agree_on_one_pair() -> None:
    rng = np.random.default_rng(2)
    res = make_results({"A": [[float(rng.random() < 0.7)] for _ in range(150)],
                        "B": [[float(rng.random() < 0.66)] for _ in range(150)]})
    one = compare_models(res, "A", "B")
    (pair,) = all_pairs(res)
    assert one.p_a_better == pair.comparison.p_a_better and one.cases_needed == pair.comparison.cases_needed


def test_reversal_flags_fire_on_evidence_only() -> None:
    # A = 0.80, B = 0.65 in every one of 20 strata of 20 cases, 8 seeds: at most one false flag in all
    flags = 0
    strata = [f"s{j // 20}" for j in range(400)]
    for seed in range(8):
        rng = np.random.default_rng(100 + seed)
        res = make_results({"A": [[float(rng.random() < 0.80)] for _ in range(400)],
                            "B": [[float(rng.random() < 0.65)] for _ in range(400)]}, strata=strata)
        flags += len(reversals(res, all_pairs(res)))
    assert flags <= 1


def test_a_real_subgroup_reversal_is_flagged() -> None:
    a = [[1.0]] * 180 + [[0.0]] * 20 + [[0.0]] * 60 + [[1.0]] * 20
    b = [[1.0]] * 120 + [[0.0]] * 80 + [[0.0]] * 30 + [[1.0]] * 50
    res = make_results({"A": a, "B": b}, strata=["easy"] * 200 + ["hard"] * 80)
    (flag,) = reversals(res, all_pairs(res))
    assert (flag.group, flag.model, flag.beaten) == ("hard", "A", "B")
    assert flag.interval.high < 0 and flag.interval.n == 80 and flag.p_holm < 0.05


def _clustered(rng: np.random.Generator, g: int = 30, size: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Cases sharing a passage: each cluster's pass rate drawn around 0.7 (strong within-cluster correlation)."""
    p = np.clip(rng.normal(0.7, 0.2, g), 0.02, 0.98)
    clusters = np.repeat(np.arange(g), size)
    return (rng.random(g * size) < p[clusters]).astype(float), clusters


def test_clustered_intervals_cover_where_unclustered_ones_under_cover() -> None:
    rng = np.random.default_rng(7)
    sims, hit_c, hit_u = 300, 0, 0
    for s in range(sims):
        v, clusters = _clustered(rng)
        c = mean_ci(v, clusters=clusters, n_resamples=1_000, seed=s)
        u = mean_ci(v, n_resamples=1_000, seed=s)
        hit_c += c.low <= 0.7 <= c.high
        hit_u += u.low <= 0.7 <= u.high
    assert 0.88 <= hit_c / sims <= 0.99
    assert hit_u / sims < 0.80
    v, clusters = _clustered(rng)
    assert clustered_se(v, clusters) > v.std(ddof=1) / math.sqrt(v.size) * 1.5


def test_clustered_paired_comparison_says_how_many_clusters() -> None:
    rng = np.random.default_rng(8)
    v, clusters = _clustered(rng)
    c = paired_differences(v, np.zeros_like(v), clusters=clusters)
    plain = paired_differences(v, np.zeros_like(v))
    assert c.clusters == 30 and c.clustered_se is not None
    assert (c.diff.high - c.diff.low) > 1.3 * (plain.diff.high - plain.diff.low)


def test_regression_gate_names_a_stratum_regression_when_the_aggregate_improved() -> None:
    strata = ["easy"] * 300 + ["hard"] * 100
    old = make_results({"m": [[0.0]] * 150 + [[1.0]] * 150 + [[1.0]] * 80 + [[0.0]] * 20}, strata=strata,
                       run_id="old")
    new = make_results({"m": [[1.0]] * 300 + [[1.0]] * 40 + [[0.0]] * 60}, strata=strata, run_id="new")
    (change,) = compare_runs(old, new)
    assert change.comparison.diff.estimate > 0 and not change.regression
    hard = next(s for s in change.strata if s.stratum == "hard")
    assert hard.regression and hard.comparison.n == 100
    assert change.regressions == [f"m in stratum hard: {hard.comparison.verdict} (Holm-adjusted p = "
                                  f"{hard.p_holm:.4f} over 3 tests)"]


def test_strata_weights_reweight_with_an_interval() -> None:
    scores = np.array([1.0] * 90 + [0.0] * 10 + [1.0] * 20 + [0.0] * 80)
    strata = ["easy"] * 100 + ["hard"] * 100
    iv = reweighted(scores, strata, np.ones(200, bool), {"easy": 0.7, "hard": 0.3})
    assert iv is not None and iv.estimate == pytest.approx(0.7 * 0.9 + 0.3 * 0.2) and iv.low < iv.estimate < iv.high
    assert reweighted(scores, strata, np.ones(200, bool), {"easy": 1, "rare": 1}) is None
    res = make_results({"m": [[x] for x in scores]}, strata=strata)
    import dataclasses
    (row,) = leaderboard(dataclasses.replace(res, weights={"easy": 0.7, "hard": 0.3}))
    assert row.weighted is not None and row.weighted.estimate == pytest.approx(0.69)
    assert row.quality.estimate == pytest.approx(0.55)


def test_sealed_gap_is_stratum_matched_with_an_interval() -> None:
    # the same model on both splits, but every sealed case is hard: the raw gap is large, the matched one is not
    rng = np.random.default_rng(4)
    strata = ["easy"] * 200 + ["hard"] * 200
    p = np.array([0.9] * 200 + [0.5] * 200)
    scores = (rng.random(400) < p).astype(float)
    sealed = np.array([False] * 300 + [True] * 100)
    gap = sealed_gap(scores, strata, ~sealed, sealed)
    assert gap is not None and gap.strata == ("hard",) and not gap.outside
    raw = scores[~sealed].mean() - scores[sealed].mean()
    assert raw > 0.2 and gap.gap.low < 0 < gap.gap.high
    assert gap.left_out == 200  # the easy working cases have no sealed counterpart


def test_macro_f1_has_an_interval_over_cases_and_each_label_its_n() -> None:
    from arenatui.scoring.f1 import macro_f1
    from arenatui.stats.f1_interval import label_cases, macro_f1_interval

    rng = np.random.default_rng(9)
    labels = ("pos", "neg", "rare")
    pairs, cids = [], []
    for j in range(200):
        expected = "rare" if j < 5 else ("pos" if j % 2 else "neg")
        for _trial in range(2):  # a case's trials resample together
            pairs.append((expected, expected if rng.random() < 0.8 else "neg"))
            cids.append(f"c{j}")
    iv = macro_f1_interval(pairs, labels, cids)
    assert iv is not None and iv.n == 200 and iv.estimate == pytest.approx(macro_f1(pairs, labels) or 0)
    assert iv.low < iv.estimate < iv.high and iv.high - iv.low > 0.05
    assert label_cases(pairs, cids) == {"rare": 5, "neg": 97, "pos": 98}
    assert macro_f1_interval([], labels, []) is None


def test_the_paradox_row_carries_its_mark_in_every_view() -> None:
    from rich.console import Console

    from arenatui.commands.evaluate import leaderboard_table, ranking_lines

    rows = leaderboard(make_results(_paradox(3), strata=["easy"] * 120 + ["hard"] * 120))
    assert rows[0].flag == "!" and rows[1].flag == ""
    console = Console(width=200, record=True)
    console.print(leaderboard_table(rows))
    for line in ranking_lines(rows):
        console.print(line)
    text = console.export_text()
    assert "│ A     │ 0.533 ! │" in text and "! A: coverage paradox: B's own-coverage score is higher" in text


def test_a_decided_verdict_places_the_row_and_says_so() -> None:
    # Z answers only the first 120 cases, so those are the common set; there Y scores 0.05 above X, but over the
    # 200 cases X and Y share, X is decidedly better: X goes above Y, and its row says why
    x = [[1.0]] * 60 + [[0.0]] * 60 + [[1.0]] * 80
    y = [[1.0]] * 66 + [[0.0]] * 54 + [[1.0]] * 20 + [[0.0]] * 60
    z = [[1.0]] * 30 + [[0.0]] * 90 + [[None]] * 80
    rows = leaderboard(make_results({"X": x, "Y": y, "Z": z}))
    assert [r.model for r in rows] == ["X", "Y", "Z"] and rows[0].common.n == 120
    assert rows[1].common.estimate > rows[0].common.estimate
    assert rows[0].flag == "*" and (rows[0].order_note or "").startswith("placed above Y (higher common-case score")
    assert "X is better by 0.270" in (rows[0].order_note or "")


# ---- issue 35: one error rate for the gate, small-sample clustered intervals, neutral ties, the run's seed ----

def _null_runs(models: int, seed: int) -> tuple[RunResults, RunResults]:
    rng = np.random.default_rng(seed)
    strata = [f"s{j // 50}" for j in range(200)]
    p = rng.beta(4, 1.5, 200)
    old, new = ({f"m{i}": [[float(x)] for x in rng.random(200) < p] for i in range(models)} for _ in range(2))
    return (make_results(old, strata=strata, run_id="old"), make_results(new, strata=strata, run_id="new"))


def test_the_gate_corrects_over_every_model_and_stratum_together() -> None:
    old, new = _null_runs(3, 1)
    changes = compare_runs(old, new)
    tests = [c.comparison for c in changes] + [s.comparison for c in changes for s in c.strata]
    assert all(c.family == 3 * (1 + 4) == len(tests) for c in changes)  # overall + 4 strata, per model
    family = [p for c in changes for p in (c.comparison.p_value, *(s.comparison.p_value for s in c.strata))]
    adjusted = [p for c in changes for p in (c.p_holm, *(s.p_holm for s in c.strata))]
    assert adjusted == pytest.approx(holm_adjust(family).tolist())
    # a stratum that would pass Holm over its own model's strata alone is held to the whole family's bar
    assert all(s.p_holm >= min(1.0, s.comparison.p_value * 4) - 1e-12 or s.p_holm == 1.0
               for c in changes for s in c.strata)


def test_the_clustered_interval_is_t_on_the_clustered_se_with_g_minus_1_df() -> None:
    from scipy import stats as sps  # test-only oracle

    rng = np.random.default_rng(4)
    v, clusters = _clustered(rng, g=6)
    iv = mean_ci(v, clusters=clusters)
    half = sps.t.ppf(0.975, 5) * clustered_se(v, clusters)
    assert (iv.low, iv.high) == pytest.approx((v.mean() - half, v.mean() + half), abs=1e-9)
    assert iv.clusters == 6 and iv.few_clusters
    c = paired_differences(v, np.zeros_like(v), clusters=clusters)
    assert (c.diff.low, c.diff.high) == pytest.approx((iv.low, iv.high), abs=1e-9) and c.diff.few_clusters
    assert c.p_value == pytest.approx(2 * sps.t.sf(v.mean() / clustered_se(v, clusters), 5))
    v20, clusters20 = _clustered(rng, g=20)
    assert not mean_ci(v20, clusters=clusters20).few_clusters


def test_every_interval_of_a_clustered_run_rests_on_clusters() -> None:
    rng = np.random.default_rng(5)
    v, clusters = _clustered(rng, g=8)
    n = v.size
    strata = ["a" if c < 4 else "b" for c in clusters]
    res = make_results({"m": [[x] for x in v], "k": [[x] for x in rng.random(n) < 0.5]}, strata=strata,
                       sealed=[c % 4 == 3 for c in clusters], tags=[("t",)] * n)
    res = dataclasses.replace(res, clusters=clusters, cluster_by="cluster", weights={"a": 0.5, "b": 0.5})
    (row, *_) = leaderboard(res)
    assert row.quality.clusters is not None and row.common.clusters is not None
    assert row.weighted is not None and row.weighted.clusters is not None
    assert row.gap is not None and row.gap.gap.clusters is not None
    for g in group_scores(res):
        assert all(iv.clusters is not None for iv in g.scores.values()), g.group
    assert compare_models(res, "m", "k").clusters is not None


def test_ties_share_a_rank_and_are_never_broken_by_the_own_score() -> None:
    # identical answers on the cases both answered; the second model also answered (and passed) more cases
    both = [[1.0]] * 30 + [[0.0]] * 30
    res = make_results({"first": both + [[None]] * 20, "second": both + [[1.0]] * 20})
    r = rank_models(res)
    by = {s.model: s for s in r.standings}
    assert by["second"].own_score > by["first"].own_score
    assert by["first"].rank == by["second"].rank == 1 and by["first"].tied and by["second"].tied
    assert by["first"].rank_text == "=1" and [s.model for s in r.standings] == ["first", "second"]  # run order
    rows = leaderboard(res)
    assert all(row.rank_text == "=1" for row in rows)
    from arenatui.present.columns import LEADERBOARD
    assert "=1" in LEADERBOARD[1].cell(rows[0])
    from arenatui.commands.evaluate import ranking_lines  # the mark explained under the headless leaderboard
    assert any(line.plain.startswith("=1 after a score: tied at that rank") for line in ranking_lines(rows))
    untied = leaderboard(make_results({"first": both, "second": [[0.0]] * 60}))
    assert not any("after a score" in line.plain for line in ranking_lines(untied))


def test_the_bootstrap_seed_is_the_runs() -> None:
    res = make_results({"a": [[float(x)] for x in np.linspace(0, 1, 60)]}, run_id="r1")
    again = leaderboard(res)[0].quality
    assert leaderboard(res)[0].quality == again  # every view of one run agrees
    other = leaderboard(dataclasses.replace(res, run_id="r2"))[0].quality
    assert (other.low, other.high) != (again.low, again.high)  # another run draws other resamples


def _asked_apart() -> RunResults:
    """gw asked only 'terse', twin asked 'qa' and 'terse'; their terse answers score alike case by case, twin's qa
    answers all fail (the real bake-off of issue 35: gw ranked first on a mean over a different variant set)."""
    from arenatui.stats.items import VariantCells

    rng = np.random.default_rng(3)
    terse = (rng.random(66) < 0.67).astype(float)
    scored = np.ones((2, 2, 66), np.int64)
    scored[0, 0] = 0  # gw was never asked qa
    sums = np.stack([np.stack([np.zeros(66), terse]), np.stack([np.zeros(66), terse])])
    passed = sums.astype(np.int64)
    pooled = make_results({"gw": [[x] for x in terse], "twin": [[0.0, x] for x in terse]})
    cells = VariantCells(("qa", "terse"), {"gw": ("terse",), "twin": ("qa", "terse")}, scored, sums, passed)
    return dataclasses.replace(pooled, trials=1, by_variant=cells)


def test_models_asked_different_prompts_are_ranked_and_compared_over_the_cells_they_share() -> None:
    res = _asked_apart()
    assert res.case_scores("gw").mean() > res.case_scores("twin").mean()  # the pooled means differ
    c = compare_models(res, "gw", "twin")
    assert c.variants == ("terse",) and c.diff.estimate == 0 and c.coverage_note is not None
    assert "identical scores on all 66 cases" in c.verdict
    rows = {r.model: r for r in leaderboard(res)}
    assert rows["gw"].rank_text == rows["twin"].rank_text == "=1"  # tied over terse, not gw first
    assert rows["gw"].coverage == 1.0 and rows["twin"].coverage == 1.0  # 66 of 66 asked, 132 of 132
    assert rows["twin"].pass_at == {1: pytest.approx(float(np.mean(np.r_[np.zeros(66), res.by_variant.score_sum[
        1, 1]])))}  # pass@k over one variant's trials: k stays 1 though twin made 2 calls a case


def test_models_sharing_no_prompt_are_not_ranked_together() -> None:
    res = _asked_apart()
    assert res.by_variant is not None
    cells = dataclasses.replace(res.by_variant, asked={"gw": ("terse",), "twin": ("qa",)})
    r = rank_models(dataclasses.replace(res, by_variant=cells))
    assert r.ranked == [] and all("no prompt variant every answered model was asked" in (s.unranked or "")
                                  for s in r.standings)

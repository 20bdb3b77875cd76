"""Leaderboard numbers: quality over answered calls, coverage, pass@k, cost per correct, latency, fronts, sealed."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from stats_support import make_results

from arenatui.stats import consistency, leaderboard, pareto_front, pass_at_k, pass_at_k_case
from arenatui.stats.strata import group_scores, reversals


def test_errored_calls_are_coverage_never_zeros() -> None:
    # The case: a model throttled by the user's own concurrency is not a worse model.
    res = make_results({"ok": [[1.0]] * 8 + [[0.0]] * 2, "throttled": [[1.0]] * 4 + [[None]] * 5 + [[0.0]]})
    rows = {r.model: r for r in leaderboard(res)}
    t = rows["throttled"]
    assert t.quality.estimate == pytest.approx(0.8) and t.quality.n == 5
    assert t.coverage == pytest.approx(0.5) and t.errored == 5 and t.errors == {"rate_limited": 5}
    assert t.error_rate == pytest.approx(0.5)
    assert rows["ok"].coverage == 1.0 and rows["ok"].quality.estimate == pytest.approx(0.8)


def test_pass_at_k_against_brute_force() -> None:
    for n, c, k in itertools.product(range(1, 7), range(0, 7), range(1, 7)):
        if c > n or k > n:
            continue
        subsets = list(itertools.combinations([1] * c + [0] * (n - c), k))
        brute = sum(any(s) for s in subsets) / len(subsets)
        assert pass_at_k_case(n, c, k) == pytest.approx(brute), (n, c, k)
    with pytest.raises(ValueError):
        pass_at_k_case(3, 1, 4)
    # mean over cases with at least k trials answered
    assert pass_at_k(np.array([3, 3, 1]), np.array([1, 0, 1]), 2) == pytest.approx((2 / 3 + 0) / 2)
    assert math.isnan(pass_at_k(np.array([1]), np.array([1]), 2))
    assert consistency(np.array([3, 3, 3, 1]), np.array([3, 0, 1, 1])) == pytest.approx(2 / 3)


def test_pass_at_k_and_consistency_in_the_row() -> None:
    res = make_results({"m": [[1.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]})
    (row,) = leaderboard(res)
    assert row.pass_at[1] == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert row.pass_at[3] == pytest.approx(2 / 3)
    assert row.consistency == pytest.approx(2 / 3)


def test_cost_per_correct_counts_every_attempt_and_sits_beside_cost_per_answered() -> None:
    res = make_results({"m": [[1.0], [0.0], [None], [1.0]]}, cost_per_call={"m": 0.01})
    (row,) = leaderboard(res)
    assert row.spend == pytest.approx(0.04)
    assert row.cost_per_correct == pytest.approx(0.02)  # 4 calls paid for, 2 correct
    assert row.cost_per_answered == pytest.approx(0.04 / 3)
    assert row.tokens_per_correct == pytest.approx(200)


def test_latency_percentiles_and_timeouts() -> None:
    res = make_results({"m": [[1.0]] * 4 + [[None]]}, error_class="timeout",
                       latency={"m": [float(v) for v in range(1, 101)]})
    (row,) = leaderboard(res)
    assert row.latency_p50 == pytest.approx(50.5)
    assert row.latency_p95 == pytest.approx(np.percentile(range(1, 101), 95))
    assert row.ttft_p50 is None
    assert row.timeout_rate == pytest.approx(0.2)


def test_pareto_front() -> None:
    assert pareto_front([0.9, 0.8, 0.7, 0.85, None], [10.0, 1.0, 2.0, 10.0, 0.5]) == [True, True, False, False, False]
    assert pareto_front([0.5, 0.5], [1.0, 1.0]) == [True, True]


def test_fronts_marked_on_rows() -> None:
    res = make_results({"cheap": [[1.0], [0.0]], "dear": [[1.0], [1.0]], "bad": [[0.0], [1.0]]},
                       cost_per_call={"cheap": 0.001, "dear": 0.01, "bad": 0.02})
    rows = {r.model: r for r in leaderboard(res)}
    assert rows["dear"].on_cost_front and not rows["bad"].on_cost_front
    assert leaderboard(res)[0].model == "dear"


def test_sealed_cases_scored_apart_with_the_gap() -> None:
    res = make_results({"m": [[1.0], [1.0], [1.0], [0.0], [0.0]]}, sealed=[False, False, False, True, True])
    (row,) = leaderboard(res)
    assert row.quality.estimate == 1.0 and row.quality.n == 3
    assert row.sealed.estimate == 0.0 and row.sealed.n == 2
    assert row.sealed_gap == pytest.approx(1.0)


def test_strata_scores_and_subgroup_reversal_flag() -> None:
    from arenatui.stats import all_pairs

    # A wins overall (many easy cases) but loses on the hard stratum.
    a = [[1.0]] * 180 + [[0.0]] * 20 + [[0.0]] * 30 + [[1.0]] * 10
    b = [[1.0]] * 120 + [[0.0]] * 80 + [[0.0]] * 20 + [[1.0]] * 20
    strata = ["easy"] * 200 + ["hard"] * 40
    tags = [("x",)] * 240
    res = make_results({"A": a, "B": b}, strata=strata, tags=tags)
    table = group_scores(res)
    assert [(g.group, g.kind, g.cases) for g in table] == [("easy", "stratum", 200), ("hard", "stratum", 40),
                                                          ("x", "tag", 240)]
    assert table[1].scores["A"].estimate == pytest.approx(0.25)
    flags = reversals(res, all_pairs(res))
    assert [(f.group, f.model, f.beaten) for f in flags] == [("hard", "A", "B")]
    assert flags[0].group_diff == pytest.approx(-0.25)

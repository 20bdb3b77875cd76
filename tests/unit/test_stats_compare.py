"""Paired comparisons between models: verdict wording, cases needed, Holm over all pairs, two runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from stats_support import binary_results, make_results

from arenatui.stats import (
    Interval,
    PowerNote,
    all_pairs,
    compare_models,
    compare_runs,
    holm_adjust,
    verdict_text,
)
from arenatui.stats.compare import PAIR_RESAMPLES


def test_holm_on_a_known_set_of_p_values() -> None:
    # Holm (1979) worked example shape: sorted p·(m − rank), running maximum, capped at 1.
    p = [0.01, 0.04, 0.03, 0.005]
    adj = holm_adjust(p)
    assert adj.tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert (adj < 0.05).tolist() == [True, False, False, True]
    assert holm_adjust([0.5, float("nan"), 0.01]).tolist()[::2] == pytest.approx([0.5, 0.02])
    assert math.isnan(holm_adjust([0.5, float("nan")])[1])
    assert holm_adjust([0.9, 0.8]).tolist() == [1.0, 1.0]


def test_verdict_wording() -> None:
    assert verdict_text("A", "B", Interval(0.12, 0.05, 0.2, 300)) == "A is better by 0.120 (95% CI 0.050 to 0.200)"
    assert verdict_text("A", "B", Interval(-0.12, -0.2, -0.05, 300)) == "B is better by 0.120 (95% CI 0.050 to 0.200)"
    text = verdict_text("A", "B", Interval(0.02, -0.03, 0.07, 120), power=PowerNote(0.05, 750, True))
    assert text == "no ordering established on this evidence (120 cases); for 80% power to detect a difference " \
                   "of 0.050, about 750 cases"
    # below the smallest difference the cases detect, the observed one plans nothing: what the cases can see
    text = verdict_text("A", "B", Interval(0.02, -0.03, 0.07, 120), power=PowerNote(0.11, 120, False))
    assert text == "no ordering established on this evidence (120 cases); these 120 cases detect a difference of " \
                   "0.110 or more with 80% power; a smaller one needs more (arena plan --mde D)"
    assert "equal" not in text


def test_clear_and_unclear_pairs_and_errored_cases_left_out() -> None:
    rng = np.random.default_rng(0)
    n = 400
    u = rng.random(n)
    strong = (u < 0.9).astype(float).tolist()
    weak = (u < 0.6).astype(float).tolist()
    twin = (u < 0.61).astype(float).tolist()
    res = make_results({"strong": [[x] for x in strong], "weak": [[x] for x in weak],
                        "twin": [[x] for x in twin[:-50]] + [[None]] * 50})
    c = compare_models(res, "strong", "weak")
    assert c.decided and c.better == "strong" and c.n == n
    assert c.verdict.startswith("strong is better by 0.3")
    assert c.p_a_better == 1.0 and c.differences.size == PAIR_RESAMPLES
    u2 = compare_models(res, "weak", "twin")
    assert not u2.decided and u2.n == n - 50 and u2.only_a == 50 and u2.only_b == 0
    assert u2.verdict.startswith(f"no ordering established on this evidence ({n - 50} cases)")
    assert u2.coverage_note is not None and "350 cases both have scores for" in u2.coverage_note
    with pytest.raises(KeyError):
        compare_models(res, "strong", "nobody")


def test_trials_are_averaged_per_case_before_pairing() -> None:
    res = make_results({"A": [[1.0, 1.0, 0.0], [1.0, None, None]], "B": [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]})
    c = compare_models(res, "A", "B")
    assert c.n == 2
    assert c.diff.estimate == pytest.approx(((2 / 3 - 0) + (1 - 1)) / 2)


def test_all_pairs_holm_keeps_the_familywise_error_at_five_percent() -> None:
    """Six models of equal true skill (15 pairs), 300 simulated evaluations: uncorrected, about a third of them
    show a false win somewhere; with Holm, about 5%."""
    seeds, any_raw, any_holm = 300, 0, 0
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        difficulty = rng.random(200)
        calls = {f"m{i}": [[float(rng.random() < 0.3 + 0.4 * d)] for d in difficulty] for i in range(6)}
        pairs = all_pairs(make_results(calls), n_resamples=2_000)
        assert len(pairs) == 15
        any_raw += any(p.comparison.decided for p in pairs)
        any_holm += any(p.decided for p in pairs)
        for p in pairs:
            if p.comparison.decided and not p.decided:
                assert p.verdict.startswith("no ordering established after Holm's correction")
    assert any_raw / seeds > 0.2
    assert any_holm / seeds <= 0.07


def test_all_pairs_keeps_a_real_separation() -> None:
    rng = np.random.default_rng(6)
    u = rng.random(500)
    mid = (u < 0.6).astype(float)
    mid2 = mid.copy()  # the same skill: five passes and five failures swapped
    mid2[np.flatnonzero(mid == 1)[:5]] = 0.0
    mid2[np.flatnonzero(mid == 0)[:5]] = 1.0
    res = make_results({"good": [[float(x < 0.85)] for x in u], "mid": [[x] for x in mid],
                        "mid2": [[x] for x in mid2]})
    decided = {(p.comparison.a, p.comparison.b): p.better for p in all_pairs(res)}
    assert decided == {("good", "mid"): "good", ("good", "mid2"): "good", ("mid", "mid2"): None}


def test_sealed_cases_stay_out_of_comparisons() -> None:
    res = make_results({"A": [[1.0], [1.0], [0.0]], "B": [[0.0], [0.0], [1.0]]}, sealed=[False, False, True])
    assert compare_models(res, "A", "B").n == 2


def test_two_runs_model_by_model_over_shared_cases() -> None:
    rng = np.random.default_rng(9)
    u = rng.random(300)
    old = make_results({"x": [[float(v < 0.8)] for v in u], "y": [[float(v < 0.5)] for v in u]}, run_id="old")
    new = make_results({"x": [[float(v < 0.6)] for v in u[:250]], "y": [[float(v < 0.5)] for v in u[:250]],
                        "z": [[1.0]] * 250}, run_id="new")
    changes = {c.model: c for c in compare_runs(old, new)}
    assert set(changes) == {"x", "y"}
    assert changes["x"].regression and changes["x"].comparison.n == 250
    assert changes["x"].comparison.verdict.startswith("run old is better by 0.2")
    assert not changes["y"].regression and changes["y"].comparison.diff.estimate == 0
    assert binary_results([1.0], [0.0]).models == ("A", "B")

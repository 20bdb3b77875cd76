"""The prompt-variant analysis on known truth, over seeds: an ordering that flips between variants is reported as
flipping, one that holds as holding, and two models alike under every variant are almost never said to flip."""

from __future__ import annotations

import numpy as np
import pytest

from arenatui.stats.compare import paired_differences
from arenatui.stats.variants import (
    FLIPS,
    HOLDS,
    UNDECIDED,
    UNDECIDED_IN_SOME,
    PairAcrossVariants,
    VariantResults,
    analyse_variants,
)

CASES = 300
SEEDS = 40


def _draw(truth: dict[str, dict[str, float]], seed: int, cases: int = CASES, trials: int = 1) -> VariantResults:
    """Pass/fail scores drawn with each model's per-variant accuracy (what sim.prompt_accuracy gives)."""
    rng = np.random.default_rng(seed)
    models = tuple(truth)
    variants = tuple(next(iter(truth.values())))
    scored = np.full((len(models), len(variants), cases), trials, np.int64)
    score_sum = np.zeros(scored.shape)
    for mi, m in enumerate(models):
        for vi, v in enumerate(variants):
            score_sum[mi, vi] = rng.binomial(trials, truth[m][v], size=cases)
    return VariantResults(models, variants, tuple(f"c{i}" for i in range(cases)), scored, score_sum)


def _verdicts(truth: dict[str, dict[str, float]]) -> list[str]:
    return [analyse_variants(_draw(truth, seed), n_resamples=1_000).pairs[0].verdict for seed in range(SEEDS)]


def test_an_ordering_that_flips_between_variants_is_reported_as_flipping() -> None:
    got = _verdicts({"a": {"terse": 0.85, "verbose": 0.6}, "b": {"terse": 0.6, "verbose": 0.85}})
    assert got.count(FLIPS) >= 0.9 * SEEDS, got


def test_an_ordering_that_holds_under_every_variant_is_reported_as_holding() -> None:
    got = _verdicts({"a": {"terse": 0.85, "verbose": 0.8}, "b": {"terse": 0.6, "verbose": 0.55}})
    assert got.count(HOLDS) >= 0.9 * SEEDS, got
    assert FLIPS not in got


def test_two_models_alike_under_every_variant_are_almost_never_said_to_flip() -> None:
    got = _verdicts({"a": {"terse": 0.7, "verbose": 0.5}, "b": {"terse": 0.7, "verbose": 0.5}})
    assert got.count(FLIPS) <= 1, got  # two wrong verdicts in opposite directions: about 0.06% a seed
    assert got.count(HOLDS) <= 1, got
    assert got.count(UNDECIDED) >= 0.8 * SEEDS


def test_scores_spread_and_verdict_wording_from_one_run() -> None:
    truth = {"a": {"terse": 0.9, "verbose": 0.5}, "b": {"terse": 0.5, "verbose": 0.9}}
    rob = analyse_variants(_draw(truth, 7), n_resamples=1_000)
    a_terse = rob.score("a", "terse")
    assert a_terse is not None and a_terse.low < 0.9 < a_terse.high and a_terse.n == CASES
    spread = {s.model: s for s in rob.spreads}
    assert spread["a"].best == "terse" and spread["a"].worst == "verbose" and spread["a"].decided
    assert spread["a"].diff.low < 0.4 < spread["a"].diff.high  # best − worst, paired, around the true 0.4
    pair = rob.pairs[0]
    assert pair.winners == {"terse": "a", "verbose": "b"} and rob.fragile == (pair,)
    assert pair.text() == "ordering depends on the prompt: a ahead under terse, b under verbose"
    d = rob.to_dict()
    assert d["pairs"][0]["verdict"] == FLIPS and d["pairs"][0]["per_variant"]["terse"]["winner"] == "a"
    assert {(s["model"], s["variant"]) for s in d["scores"]} == {(m, v) for m in truth for v in truth[m]}


def test_a_model_asked_with_its_own_variants_is_compared_only_where_both_were_asked() -> None:
    vr = _draw({"a": {"x": 0.9, "y": 0.9}, "b": {"x": 0.5, "y": 0.5}}, 1)
    vr = VariantResults(vr.models, vr.variants, vr.cases, vr.scored, vr.score_sum, {"a": ("x", "y"), "b": ("x",)})
    rob = analyse_variants(vr, n_resamples=500)
    assert set(rob.pairs[0].per_variant) == {"x"} and rob.pairs[0].verdict == HOLDS
    assert [s.model for s in rob.spreads] == ["a"]  # one variant: no spread for b


def test_undecided_in_some_and_no_shared_variant_are_said_as_such() -> None:
    p = PairAcrossVariants("a", "b", {}, {}, UNDECIDED)
    assert "not enough evidence" in p.text()
    rob = analyse_variants(_draw({"a": {"x": 0.95, "y": 0.62}, "b": {"x": 0.5, "y": 0.6}}, 3), n_resamples=1_000)
    assert rob.pairs[0].verdict == UNDECIDED_IN_SOME
    assert rob.pairs[0].text() == "ordering depends on the prompt: a ahead under x, undecided under y"


def test_a_variant_names_a_winner_only_after_holm_over_the_pairs_variants() -> None:
    # under "qa" A − B is +0.09 over 100 cases (14 cases +1, 5 cases −1): decided alone (p ≈ 0.035), not once the
    # pair's second variant (no difference at all) shares the 5%
    a = np.zeros((2, 100))
    b = np.zeros((2, 100))
    a[0, :14] = 1
    b[0, 14:19] = 1
    scored = np.ones((2, 2, 100), np.int64)
    vr = VariantResults(("A", "B"), ("qa", "terse"), tuple(f"c{j}" for j in range(100)), scored, np.stack([a, b]))
    (pair,) = analyse_variants(vr).pairs
    alone = paired_differences(a[0], b[0])
    assert alone.decided and 0.025 < alone.p_value < 0.05
    assert pair.p_holm["qa"] == pytest.approx(min(1.0, 2 * alone.p_value))
    assert pair.winners == {"qa": None, "terse": None} and pair.verdict == UNDECIDED

"""Macro-F1 against hand-computed values, and the majority-class model it exposes."""

from __future__ import annotations

import pytest

from arenatui.scoring.f1 import macro_f1, per_label_f1


def test_hand_computed_example() -> None:
    pairs = [("pos", "pos"), ("pos", "neg"), ("neg", "neg"), ("neg", "neg"), ("neu", None)]
    f1 = per_label_f1(pairs, ("pos", "neg", "neu"))
    # pos: tp 1, fn 1 -> 2/3; neg: tp 2, fp 1 -> 4/5; neu: fn 1 -> 0
    assert f1 == pytest.approx({"pos": 2 / 3, "neg": 0.8, "neu": 0.0})
    assert macro_f1(pairs, ("pos", "neg", "neu")) == pytest.approx((2 / 3 + 0.8 + 0.0) / 3)


def test_a_majority_class_model_scores_well_on_accuracy_and_badly_on_macro_f1() -> None:
    pairs = [("pos", "pos")] * 9 + [("neg", "pos")]
    accuracy = sum(e == p for e, p in pairs) / len(pairs)
    assert accuracy == 0.9
    assert macro_f1(pairs, ("pos", "neg")) == pytest.approx((18 / 19 + 0.0) / 2)


def test_nothing_to_score() -> None:
    assert macro_f1([], ("a", "b")) is None

"""Per-label precision, recall and F1 (scoring.f1.label_scores), which the results view's model detail shows."""

from __future__ import annotations

import pytest

from arenatui.scoring.f1 import label_scores, per_label_f1


def test_precision_recall_and_f1_per_label_counted_by_hand() -> None:
    # (expected, said): cat is said 3 times, 2 of them right, and once nothing is said for a cat (a miss);
    # a dog is called a cat and a bird, the bird a dog: dog and bird are each said once, wrongly
    pairs = [("cat", "cat"), ("cat", "cat"), ("cat", None), ("dog", "cat"), ("dog", "bird"), ("bird", "dog")]
    scores = {s.label: s for s in label_scores(pairs, ("cat", "dog", "bird", "fish"))}
    assert set(scores) == {"cat", "dog", "bird"}  # fish: never expected nor said
    cat, dog, bird = scores["cat"], scores["dog"], scores["bird"]
    assert (cat.expected, cat.predicted) == (3, 3)
    assert (cat.precision, cat.recall) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert cat.f1 == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    assert (dog.expected, dog.predicted, dog.precision, dog.recall, dog.f1) == (2, 1, 0.0, 0.0, 0.0)
    assert (bird.expected, bird.predicted, bird.precision, bird.recall, bird.f1) == (1, 1, 0.0, 0.0, 0.0)
    # the same F1 as the report's per-label figures
    assert per_label_f1(pairs, ("cat", "dog", "bird", "fish")) == {k: s.f1 for k, s in scores.items()}


def test_a_label_never_said_has_no_precision() -> None:
    (only,) = label_scores([("yes", None), ("yes", None)], ("yes", "no"))
    assert (only.label, only.precision, only.recall, only.f1) == ("yes", None, 0.0, 0.0)

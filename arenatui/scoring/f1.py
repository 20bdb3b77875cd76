"""Macro-F1 over a label set: the model-level figure of an f1 scorer (per call, a label is right or wrong).

Accuracy hides a model that always answers the majority class; macro-F1 averages each label's F1, so a
label the model never predicts correctly costs it a whole share. An answer with no readable label counts
as a miss for its true label (a false negative) and as no prediction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def extract_label(output: str, labels: tuple[str, ...]) -> str | None:
    """The label a classification answer gives: the whole answer, or the only label it names as a word (case and
    runs of whitespace ignored)."""
    norm = " ".join(output.split()).casefold().strip(" .!\"'`*")
    by_norm = {" ".join(lb.split()).casefold(): lb for lb in labels}
    if norm in by_norm:
        return by_norm[norm]
    named = [lb for n, lb in by_norm.items() if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", norm)]
    return named[0] if len(named) == 1 else None


@dataclass(frozen=True, slots=True)
class LabelScore:
    """One label's precision, recall and F1 over a model's answers (what the results view's model detail shows)."""

    label: str
    expected: int
    """How many answers should have given this label (its support)."""
    predicted: int
    """How many answers gave it."""
    precision: float | None
    """None when the model never gave this label."""
    recall: float | None
    """None when no answer should have given it."""
    f1: float


def label_scores(pairs: Iterable[tuple[str, str | None]], labels: Sequence[str]) -> list[LabelScore]:
    """Each label's scores over (expected, predicted) pairs, in `labels` order; a label never expected nor
    predicted is left out."""
    tp = dict.fromkeys(labels, 0)
    fp = dict.fromkeys(labels, 0)
    fn = dict.fromkeys(labels, 0)
    for expected, predicted in pairs:
        if predicted == expected:
            if expected in tp:
                tp[expected] += 1
            continue
        if expected in fn:
            fn[expected] += 1
        if predicted is not None and predicted in fp:
            fp[predicted] += 1
    out: list[LabelScore] = []
    for lb in labels:
        denom = 2 * tp[lb] + fp[lb] + fn[lb]
        if denom:
            given, due = tp[lb] + fp[lb], tp[lb] + fn[lb]
            out.append(LabelScore(lb, due, given, tp[lb] / given if given else None, tp[lb] / due if due else None,
                                  2 * tp[lb] / denom))
    return out


def per_label_f1(pairs: Iterable[tuple[str, str | None]], labels: Sequence[str]) -> dict[str, float]:
    """F1 of each label over (expected, predicted) pairs; a label never expected nor predicted is left out."""
    return {s.label: s.f1 for s in label_scores(pairs, labels)}


def macro_f1(pairs: Iterable[tuple[str, str | None]], labels: Sequence[str]) -> float | None:
    """The mean of the per-label F1s (None when no label occurs at all)."""
    f1s = per_label_f1(pairs, labels)
    return sum(f1s.values()) / len(f1s) if f1s else None

"""Macro-F1 over a label set: the model-level figure of an f1 scorer (per call, a label is right or wrong).

Accuracy hides a model that always answers the majority class; macro-F1 averages each label's F1, so a
label the model never predicts correctly costs it a whole share. An answer with no readable label counts
as a miss for its true label (a false negative) and as no prediction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def per_label_f1(pairs: Iterable[tuple[str, str | None]], labels: Sequence[str]) -> dict[str, float]:
    """F1 of each label over (expected, predicted) pairs; a label never expected nor predicted is left out."""
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
    out: dict[str, float] = {}
    for lb in labels:
        denom = 2 * tp[lb] + fp[lb] + fn[lb]
        if denom:
            out[lb] = 2 * tp[lb] / denom
    return out


def macro_f1(pairs: Iterable[tuple[str, str | None]], labels: Sequence[str]) -> float | None:
    """The mean of the per-label F1s (None when no label occurs at all)."""
    f1s = per_label_f1(pairs, labels)
    return sum(f1s.values()) / len(f1s) if f1s else None

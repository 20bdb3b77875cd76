"""Macro-F1 with a bootstrap interval over cases, and each label's number of cases.

A label with five cases has an F1 interval an order of magnitude wider than the aggregate's (issue 26); the
macro-F1 averages those, so its interval is what says whether two models' macro-F1s differ. Resampling draws
cases (a case's trials stay together) and recomputes every label's true/false positives and misses; per resample
the work is over the distinct (expected, answered) combinations, not the calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arenatui.stats.bootstrap import Interval, run_seed

FEW_CASES = 5
"""A label with fewer cases than this is marked: its F1 rests on too little to read alone."""


def macro_f1_interval(pairs: Sequence[tuple[str, str | None]], labels: Sequence[str], case_ids: Sequence[str], *,
                      n_resamples: int = 2_000, level: float = 0.95, seed: int | None = None) -> Interval | None:
    """Macro-F1 over (expected, answered label) pairs with a percentile interval from resampling cases; n = cases.
    None when no label occurs. The seed (unless given) is drawn from the answers and their cases: stable for a run,
    so the report and the console agree, and different wherever the answers differ."""
    if not pairs:
        return None
    combos = sorted({(e, p) for e, p in pairs}, key=lambda c: (c[0], c[1] or ""))
    k_index = {c: k for k, c in enumerate(combos)}
    cases = sorted(set(case_ids))
    c_index = {c: j for j, c in enumerate(cases)}
    counts = np.zeros((len(cases), len(combos)))
    for (e, p), cid in zip(pairs, case_ids, strict=True):
        counts[c_index[cid], k_index[(e, p)]] += 1
    n_labels = len(labels)
    lab = {lb: i for i, lb in enumerate(labels)}
    tp, fp, fn = (np.zeros((len(combos), n_labels)) for _ in range(3))
    for k, (e, p) in enumerate(combos):
        if p == e:
            if e in lab:
                tp[k, lab[e]] = 1
            continue
        if e in lab:
            fn[k, lab[e]] = 1
        if p is not None and p in lab:
            fp[k, lab[p]] = 1

    def macro(weights: np.ndarray) -> np.ndarray:
        t, f_p, f_n = weights @ tp, weights @ fp, weights @ fn
        denom = 2 * t + f_p + f_n
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = np.where(denom > 0, 2 * t / denom, np.nan)
            return np.asarray(np.nanmean(f1, axis=-1))

    total = counts.sum(axis=0)
    if not ((total @ tp + total @ fp + total @ fn) > 0).any():
        return None
    est = float(macro(total[None, :])[0])
    if len(cases) < 2:
        return Interval(est, float("nan"), float("nan"), len(cases))
    if seed is None:
        seed = run_seed(repr(sorted(zip(case_ids, pairs, strict=False), key=repr)))
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(cases), np.full(len(cases), 1 / len(cases)), size=n_resamples)
    with np.errstate(all="ignore"):
        values = macro(draws @ counts)
    values = values[~np.isnan(values)]
    a = (1 - level) / 2
    lo, hi = np.quantile(values, [a, 1 - a])
    return Interval(est, float(lo), float(hi), len(cases))


def label_cases(pairs: Sequence[tuple[str, str | None]], case_ids: Sequence[str]) -> dict[str, int]:
    """Per expected label, how many distinct cases expect it (a label's n)."""
    out: dict[str, set[str]] = {}
    for (e, _p), cid in zip(pairs, case_ids, strict=True):
        out.setdefault(e, set()).add(cid)
    return {k: len(v) for k, v in out.items()}

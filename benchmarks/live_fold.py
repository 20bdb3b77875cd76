"""What folding a judged call costs live metrics: CallFinished of scored calls against unscored answers + JudgeFinished.

A judged candidate call is two folds (its unscored answer, then its judge's verdict, which also moves the
candidate's cell), so the ratio per candidate call is expected near 2; both stay O(1) per event.
Prints JSON lines {"name", "value", "unit"}. Run: python benchmarks/live_fold.py
"""

from __future__ import annotations

import json
import time

from arenatui.kernel.events import CallFinished, CallResult, JudgeFinished
from arenatui.session.live import LiveMetrics

MODELS, CASES, TRIALS = 4, 5000, 1
LANE = "judge:j"


def _result(model: str, case: str, trial: int, status: str, score: float | None) -> CallResult:
    return CallResult(model, case, trial, status, "42", score, status == "passed", None, None,  # type: ignore[arg-type]
                      1, 100.0, 110.0, None, 10, 5, 0.0001, "stop", False, 0.0, 0.0)


def _metrics() -> LiveMetrics:
    models = [f"m{i}" for i in range(MODELS)]
    cases = [f"c{j}" for j in range(CASES)]
    return LiveMetrics(models, cases, TRIALS, judges=[(LANE, set(cases), MODELS * TRIALS)], clock=lambda: 0.0)


def main() -> None:
    models = [f"m{i}" for i in range(MODELS)]
    cases = [f"c{j}" for j in range(CASES)]
    plain = [CallFinished(_result(m, c, 0, "passed", 1.0), 0.5) for m in models for c in cases]
    judged: list[CallFinished | JudgeFinished] = []
    for mi, m in enumerate(models):
        for c in cases:
            judged.append(CallFinished(_result(m, c, 0, "unscored", None), 0.5))
            judged.append(JudgeFinished(_result(LANE, c, mi, "passed", 1.0), m, c, 0, 0.6))
    best_plain = best_judged = float("inf")
    for _ in range(5):
        lm = _metrics()
        t0 = time.perf_counter()
        for ev in plain:
            lm.on_event(ev)
        best_plain = min(best_plain, time.perf_counter() - t0)
        lm = _metrics()
        t0 = time.perf_counter()
        for ev2 in judged:
            lm.on_event(ev2)
        best_judged = min(best_judged, time.perf_counter() - t0)
        assert lm.snapshot().unscored == 0
    n = len(plain)
    for name, value, unit in (
        ("live_fold_scored_call_us", best_plain / n * 1e6, "us/call"),
        ("live_fold_judged_call_us", best_judged / n * 1e6, "us/call"),
        ("live_fold_judged_vs_scored", best_judged / best_plain, "ratio"),
    ):
        print(json.dumps({"name": name, "value": round(value, 3), "unit": unit}))


if __name__ == "__main__":
    main()

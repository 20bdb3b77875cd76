"""A sweep with an llm_judge scorer whose live metrics follow a script: the console's judge lane, deterministic.

Like support.scripted_sweep, the engine never runs: events are folded the way the engine emits them for an
llm_judge case (engine/events.py: the candidate's CallFinished 'unscored', then the judge lane's CallStarted /
CallRetrying and one JudgeFinished per judged answer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomli_w

from arenatui.kernel.events import (
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    ConcurrencyChanged,
    Event,
    JudgeFinished,
    RunFinished,
)
from arenatui.plan import judge_trial
from arenatui.session.live import LiveMetrics, judge_lanes
from arenatui.session.sweep import Sweep, SweepOptions

from .support import FrozenClock

JUDGE = "sim-judge"
LANE = "judge:" + JUDGE


def judge_project(tmp_path: Path, *, models: int = 2, cases: int = 12, trials: int = 2, sample: float = 0.5) -> Path:
    raw: dict[str, Any] = {
        "project": {"name": "judged"},
        "run": {"concurrency": 8, "trials": trials, "seed": 3, "timeout_s": 10.0},
        "models": [{"key": f"sim-{i}", "provider": "sim", "model": f"m{i}"} for i in range(models)]
        + [{"key": JUDGE, "provider": "sim", "model": "judge"}],
        "scorers": [{"name": "judged", "kind": "llm_judge", "judge": JUDGE, "scale": "1-5", "sample": sample,
                     "rubric": "Rate {output} against {expected} from 1 to 5. Answer 'score: N'."},
                    {"name": "exact", "kind": "exact"}],
        "cases": [{"id": f"case-{j:02d}", "input": f"question {j}", "expected": "42"} for j in range(cases)]
        + [{"id": "exact-0", "input": "q", "expected": "42", "scorer": "exact"}],
    }
    path = tmp_path / "judged.toml"
    path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return path


def call_result(model: str, case: str, trial: int, status: str, *, score: float | None = None,
                mode: str | None = None, error_class: str | None = None, cost: float = 0.0001,
                output: str = "42", detail: str | None = None, attempts: int = 1,
                latency: float = 120.0) -> CallResult:
    return CallResult(
        model_key=model, case_id=case, trial=trial, status=status,  # type: ignore[arg-type]
        output=output, score=score, passed=status == "passed", error_class=error_class,  # type: ignore[arg-type]
        error_message="no verdict in the judge's answer" if error_class == "judge_error" else None,
        attempts=attempts, latency_ms=latency, total_ms=latency + 30.0, ttft_ms=40.0, input_tokens=20,
        output_tokens=8, cost=cost, finish_reason="stop", tokens_estimated=False, started_at=0.0, finished_at=0.0,
        failure_mode=mode, score_detail=detail,
    )


def verdict(case_index: int, trial: int) -> tuple[str, float | None, str | None, str | None]:
    """(status, score, error class, judge's answer) of the scripted verdict on one answer."""
    k = (case_index + trial) % 5
    if k == 4:
        return "errored", None, "judge_error", "I would rather not say."
    n = (2, 4, 5, 3)[k]
    return ("passed" if n >= 4 else "failed"), (n - 1) / 4, None, f"The answer is close. score: {n}"


def scripted_judge_sweep(tmp_path: Path, *, finished: bool) -> tuple[Sweep, FrozenClock]:
    """The judge project as a Sweep that never runs; mid-run, the last judged cases still await their judge."""
    sweep = Sweep(SweepOptions(project=judge_project(tmp_path), db=tmp_path / "judged.db"))
    sweep.run_id = "20260101-000000-judge"
    clock = FrozenClock(1000.0)
    plan = sweep.plan
    live = LiveMetrics([m.key for m in plan.models], [c.id for c in plan.cases], plan.trials,
                       judges=judge_lanes(plan), clock=clock)
    sweep.live = live
    judged = plan.judged_cases()
    events: list[Event] = [ConcurrencyChanged(0, 8, None, "config", 1000.0, 0.0)]
    t = 1000.0
    n = 0
    cases = plan.cases if finished else plan.cases[:9]
    for ci, case in enumerate(cases):
        for mi, m in enumerate(plan.models):
            for trial in range(plan.trials):
                n += 1
                t = 1000.0 + n * 0.05
                events.append(CallStarted(m.key, case.id, trial, 1, t))
                if case.scorer == "exact":
                    events.append(CallFinished(call_result(m.key, case.id, trial, "passed", score=1.0, mode="none"),
                                               t + 0.04))
                    continue
                mode = "awaiting_judge" if case.id in judged else "unjudged"
                events.append(CallFinished(call_result(m.key, case.id, trial, "unscored", mode=mode), t + 0.04))
                if case.id not in judged or (not finished and ci >= 7):
                    continue  # outside the sample, or (mid-run) still awaiting its judge
                jt = judge_trial(mi, trial, plan.trials)
                events.append(CallStarted(LANE, case.id, jt, 1, t + 0.05))
                if (ci + trial) % 3 == 0:
                    events.append(CallRetrying(LANE, case.id, jt, 1, "rate_limited", 0.2, "429 too many requests",
                                               t + 0.06))
                    events.append(CallStarted(LANE, case.id, jt, 2, t + 0.07))
                if not finished and ci == 5 and mi == 1:
                    continue  # this judge call is still in flight
                status, score, ec, said = verdict(ci, trial)
                detail = None if ec else f"judge {said[-1]} on 1-5"
                r = call_result(LANE, case.id, jt, status, score=score, error_class=ec, cost=0.0003, output=said,
                                mode="judge_error" if ec else ("none" if status == "passed" else "wrong_answer"),
                                detail=detail, attempts=2 if (ci + trial) % 3 == 0 else 1, latency=300.0)
                events.append(JudgeFinished(r, m.key, case.id, trial, t + 0.09))
    events.sort(key=lambda e: e.t)
    if finished:
        events.append(RunFinished("finished", t + 1.0))
    for ev in events:
        live.on_event(ev)
        sweep.tuner.on_event(ev)
    clock.t = t + 1.0
    sweep.runner.target = 8
    return sweep, clock

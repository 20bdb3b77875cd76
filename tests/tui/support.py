"""Helpers for console tests: small simulated projects, and a sweep whose live metrics follow a script."""

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
    RunFinished,
)
from arenatui.session.live import LiveMetrics
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store.queries import CallRow

INJECTIONS = (
    "[bold red]x[/]", "[/", "[b", "[link=https://example.com]y[/link]", "[@click=app.quit]",
    "\x1b]0;title\x07", "\x1b[2J", "\x1b]52;c;aGVsbG8=\x07", "C1\x9bcontrol",
)
"""Untrusted strings that must show literally and never style, link, retitle, clear or copy."""


def stored_call(**fields: Any) -> CallRow:
    """A stored call as the detail views read it (store.queries.CallRow): passed in one attempt unless told."""
    base: dict[str, Any] = dict(model_key="sim-0", case_id="case-000", trial=0, status="passed", output="42",
                                score=1.0, passed=True, error_class=None, error_message=None, attempts=1,
                                latency_ms=10.0, ttft_ms=None, total_ms=12.0, input_tokens=1, output_tokens=1, cost=0.0)
    return CallRow(**(base | fields))


def sim_project(tmp_path: Path, *, models: int = 2, cases: int = 30, trials: int = 1, latency: float = 0.05,
                concurrency: int = 8, name: str = "tui-test", theme: str | None = None,
                case_input: str | None = None) -> Path:
    project: dict[str, Any] = {"name": name}
    if theme:
        project["theme"] = theme
    raw: dict[str, Any] = {
        "project": project,
        "run": {"concurrency": concurrency, "trials": trials, "seed": 3, "timeout_s": 10.0},
        "models": [{"key": f"sim-{i}", "provider": "sim", "model": f"m{i}",
                    "sim": {"base_latency_s": latency, "per_token_s": 0.0, "jitter": 0.0, "output_tokens": 8,
                            "accuracy": 0.7}} for i in range(models)],
        "scorers": [{"name": "exact", "kind": "exact"}],
        "cases": [{"id": f"case-{j:03d}", "input": case_input or f"question {j}", "expected": "42"}
                  for j in range(cases)],
    }
    path = tmp_path / "project.toml"
    path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return path


class FrozenClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _result(model: str, case: str, trial: int, status: str, t: float, attempts: int = 1,
            output: str | None = "42", error: str | None = None) -> CallResult:
    return CallResult(
        model_key=model, case_id=case, trial=trial, status=status,  # type: ignore[arg-type]
        output=output if status != "errored" else None, score=1.0 if status == "passed" else 0.0,
        passed=status == "passed", error_class="transient" if status == "errored" else None,  # type: ignore[arg-type]
        error_message=error, attempts=attempts, latency_ms=120.0 + 10 * trial, total_ms=150.0, ttft_ms=40.0,
        input_tokens=20, output_tokens=8, cost=0.0001, finish_reason="stop", tokens_estimated=False,
        started_at=0.0, finished_at=0.0,
    )


def scripted_sweep(tmp_path: Path, *, finished: bool) -> tuple[Sweep, FrozenClock]:
    """The demo project as a Sweep that never runs: its live metrics are fed a fixed script on a frozen clock."""
    from arenatui.cli import demo_project_path

    sweep = Sweep(SweepOptions(project=demo_project_path(), db=tmp_path / "snap.db"))
    sweep.run_id = "20260101-000000-snap"
    clock = FrozenClock(1000.0)
    plan = sweep.plan
    live = LiveMetrics([m.key for m in plan.models], [c.id for c in plan.cases], plan.trials, clock=clock)
    sweep.live = live
    events: list[Event] = [ConcurrencyChanged(0, 8, None, "config", 1000.0, 0.0)]
    t = 1000.0
    statuses = ("passed", "passed", "failed", "passed", "passed", "passed", "passed", "errored", "passed", "failed",
                "passed")
    n = 0
    limit = len(plan.cases) if finished else 7
    for ci, case in enumerate(plan.cases[:limit]):
        for mi, m in enumerate(plan.models):
            for trial in range(plan.trials):
                n += 1
                t = 1000.0 + n * 0.07
                events.append(CallStarted(m.key, case.id, trial, 1, t))
                if m.key == "sim-limited" and (ci + trial) % 3 == 0:
                    events.append(CallRetrying(m.key, case.id, trial, 1, "rate_limited", 0.5,
                                               "429 too many requests", t + 0.01))
                    if not finished and ci == limit - 1:
                        continue  # still backing off
                    events.append(CallStarted(m.key, case.id, trial, 2, t + 0.02))
                if not finished and ci == limit - 1 and trial == 2:
                    continue  # still in flight
                st = statuses[(ci * 3 + mi + trial) % len(statuses)]
                err = "HTTP 503 from provider: upstream overloaded" if st == "errored" else None
                events.append(CallFinished(_result(m.key, case.id, trial, st, t + 0.05, output=f"answer {ci}",
                                                   error=err), t + 0.05))
    events.append(ConcurrencyChanged(8, 16, None, "user", 1003.0, 0.0))
    events.append(ConcurrencyChanged(16, 4, None, "user", 1006.0, 0.0))
    events.sort(key=lambda e: e.t)
    if finished:
        events.append(RunFinished("finished", t + 1.0))
    for ev in events:
        live.on_event(ev)
        sweep.tuner.on_event(ev)  # the tuning readout's per-level figures, from the same script
    clock.t = t + 1.0
    sweep.runner.target = 4
    return sweep, clock

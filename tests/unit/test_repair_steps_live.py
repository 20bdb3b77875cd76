"""A call that goes on to a repair turn or an escalation: the live figures and the concurrency readout see one call
in flight at a time (each step's CallStarted is matched by its StepFinished, the last one's by the CallFinished that
carries it), and the console's cell ends as the call does."""

from __future__ import annotations

from arenatui.kernel.events import CallFinished, CallResult, CallStarted, StepFinished
from arenatui.session.live import IN_FLIGHT, PASSED, QUEUED, LiveMetrics
from arenatui.tuning.levels import LevelTracker


def _result(status: str, passed: bool, mode: str) -> CallResult:
    return CallResult("m · a", "c", 0, status, "x", float(passed), passed, None, None, 1, 5.0, 5.0, None, 1, 1, 0.0,
                      "stop", False, 0.0, 0.0, None, mode)


def test_steps_of_one_call_keep_one_call_in_flight() -> None:
    live = LiveMetrics(["m · a"], ["c"], 1, clock=lambda: 0.0)
    tracker = LevelTracker(["m · a"])
    events = [CallStarted("m · a", "c", 0, 1, 0.1),
              StepFinished(_result("failed", False, "invalid_format"), 0, "answer", "m", 0.2),
              CallStarted("m · a", "c", 0, 1, 0.3),
              StepFinished(_result("failed", False, "invalid_format"), 1, "repair", "m", 0.4),
              CallStarted("m · a", "c", 0, 1, 0.5)]
    for ev in events:
        live.on_event(ev)
        tracker.on_event(ev)
    assert live.rows[0].in_flight == 1 and tracker.models["m · a"].in_flight == 1
    assert (live.cells[IN_FLIGHT][0], live.cells[QUEUED][0]) == (1, 0)  # per case: calls in each state
    last = StepFinished(_result("passed", True, "none"), 2, "escalation", "big", 0.55)
    done = CallFinished(_result("passed", True, "none")._replace(repairs=1, escalated_to="big", first_passed=False),
                        0.6, last)
    live.on_event(done)
    tracker.on_event(done)
    assert live.rows[0].in_flight == 0 and tracker.models["m · a"].in_flight == 0
    assert (live.cells[PASSED][0], live.cells[IN_FLIGHT][0]) == (1, 0) and live.rows[0].attempts == 3

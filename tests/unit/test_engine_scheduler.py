"""The engine's scheduler alone (engine/lanes.py): which call a free worker makes next, without anyio or a provider."""

from __future__ import annotations

import subprocess
import sys
from collections import deque
from typing import Any, cast

from arenatui.config.schema import Case, ModelConfig
from arenatui.engine.call import Call
from arenatui.engine.judging import JudgeJob
from arenatui.engine.lanes import Lane, Scheduler
from arenatui.providers.base import Provider

NO_PROVIDER = cast(Provider, object())  # the scheduler never calls a provider


def _lane(key: str, n: int, *, cap: int | None = None, jobs: deque[JudgeJob] | None = None) -> Lane:
    calls = iter([(Case(f"c{i}", "q"), 0) for i in range(n)])
    return Lane(key, ModelConfig(key), calls, NO_PROVIDER, True, cap, 16, 0.0, None, None, jobs=jobs)


def _scheduler(*lanes: Lane, target: int = 8, per_case: int | None = None) -> Scheduler:
    return Scheduler(list(lanes), target, 1, per_case, {})


def _take(s: Scheduler, now: float = 0.0) -> tuple[str, str] | None:
    call = s.next_call(now)
    if call is None:
        return None
    call.lane.in_flight += 1  # as the worker does
    call.lane.at_provider[0] += 1
    return call.lane.key, call.case.id


def test_lanes_take_turns_and_each_goes_through_its_calls_in_order() -> None:
    s = _scheduler(_lane("a", 2), _lane("b", 2))
    assert [_take(s) for _ in range(5)] == [("a", "c0"), ("b", "c0"), ("a", "c1"), ("b", "c1"), None]
    assert s.all_done()


def test_a_lane_at_its_cap_is_passed_over_until_a_call_of_it_ends() -> None:
    a = _lane("a", 3, cap=1)
    s = _scheduler(a, _lane("b", 3))
    assert [_take(s) for _ in range(3)] == [("a", "c0"), ("b", "c0"), ("b", "c1")]
    a.in_flight -= 1
    a.at_provider[0] -= 1
    assert _take(s) == ("a", "c1")


def test_a_retry_that_is_due_goes_before_new_calls_and_one_not_due_waits_holding_its_lanes_room() -> None:
    a = _lane("a", 3)
    s = _scheduler(a, target=2)
    first = s.next_call(0.0)
    assert first is not None and first.case.id == "c0"
    s.park(first, 10.0)  # backing off until t = 10
    assert s.parked_n == 1 and s.next_due() == 10.0
    assert _take(s, 5.0) == ("a", "c1")  # one parked and one in flight fill the lane's share of 2
    assert s.next_call(5.0) is None and not s.all_done()
    assert s.next_call(10.0) is first  # due: the same call goes on, with what its attempts added up to
    assert s.parked_n == 0


def test_a_judge_lane_takes_the_answers_queued_for_it_as_they_come() -> None:
    jobs: deque[JudgeJob] = deque()
    judge = _lane("judge:j", 0, jobs=jobs)
    s = _scheduler(judge)
    assert s.next_call(0.0) is None and s.all_done()
    job = JudgeJob("m", 0, Case("c7", "q"), 0, "an answer", "stop", cast(Any, None))
    jobs.append(job)
    call = s.next_call(0.0)
    assert isinstance(call, Call) and call.job is job and call.case.id == "c7"


def test_a_case_with_its_trials_under_way_waits_while_other_cases_go_ahead() -> None:
    lane = Lane("a", ModelConfig("a"), iter([(Case("x", "q"), 0), (Case("x", "q"), 1), (Case("y", "q"), 0)]),
                NO_PROVIDER, True, None, 16, 0.0, None, None)
    s = _scheduler(lane, per_case=1)
    first = s.next_call(0.0)
    second = s.next_call(0.0)
    assert first is not None and second is not None
    assert (first.case.id, second.case.id) == ("x", "y")  # x's second trial is deferred
    assert s.next_call(0.0) is None
    s.case_ended(lane, first.case, first.trial)
    third = s.next_call(0.0)
    assert third is not None and (third.case.id, third.trial) == ("x", 1)


def test_the_scheduler_needs_no_event_loop_library() -> None:
    code = "import sys, arenatui.engine.lanes; print('anyio' in sys.modules, 'asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]

"""Issue 9, engine items: scoring errors stay one call's (11, 18), bounded concurrency (15), a model that is
backing off holds no worker (16), sealed case text never reaches an error message (21)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_providers import Recorder, ScriptedProvider, SleepyProvider, project, runner, wait_until

import arenatui.engine.scored as scored_mod
import arenatui.scoring.scorers as scorers_mod
from arenatui.engine import RetryPolicy
from arenatui.engine.sealed import REDACTED
from arenatui.kernel.errors import RateLimited, TerminalError, TransientError
from arenatui.kernel.events import CallFinished, CallRetrying, CallStarted, ConcurrencyChanged
from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.plan import Resumed, make_plan
from arenatui.project import project_from_dict
from arenatui.providers.base import Request
from arenatui.session.live import LiveMetrics

CATASTROPHIC = "(L+)+X"


def _scored_project(cases: list[dict[str, Any]], scorers: list[dict[str, Any]], **run: Any) -> Any:
    raw = {"run": {"seed": 1, **run}, "models": [{"key": "m", "provider": "sim"}], "cases": cases,
           "scorers": scorers}
    return project_from_dict(raw, Path("failure-isolation.toml"))


class EchoProvider(ScriptedProvider):
    """Answers each case with its expected text (so a scorer sees exactly what the test chose)."""

    async def complete(self, request: Request) -> Any:
        self.text = request.case.expected or ""
        return await super().complete(request)


# ---- 11: a scorer that fails on one call -------------------------------------------------------------------

def test_regex_invalid_after_expected_is_filled_in_is_that_calls_scoring_error() -> None:
    # "[a-{expected}]" is valid for the config check ("[a-x]") and for expected "z"; for "0" it is a bad range
    proj = _scored_project(
        [{"id": "ok", "input": "q", "expected": "z"}, {"id": "bad", "input": "q", "expected": "0"},
         {"id": "after", "input": "q", "expected": "y"}],
        [{"name": "rx", "kind": "regex", "pattern": "^[a-{expected}]$"}], concurrency=1)
    r, rec = runner(proj, {"m": EchoProvider()})
    status = anyio.run(r.run)
    assert status == "finished"
    by_case = {x.case_id: x for x in rec.results}
    assert set(by_case) == {"ok", "bad", "after"}  # the sweep went on past the failure
    assert by_case["ok"].status == "passed" and by_case["after"].status == "passed"
    bad = by_case["bad"]
    assert (bad.status, bad.error_class, bad.score, bad.passed) == ("errored", "scoring_error", None, False)
    assert bad.output == "0"  # the answer is kept: the model did answer
    assert "'rx'" in (bad.error_message or "") and "not a valid regular expression" in (bad.error_message or "")


def test_a_scoring_error_is_stored_and_a_resume_does_not_fail_on_it(tmp_path: Path) -> None:
    proj = tmp_path / "arena.toml"
    proj.write_text("""
[run]
concurrency = 2
seed = 3

[[models]]
key = "m"
provider = "sim"
sim = { base_latency_s = 0.0, per_token_s = 0.0, jitter = 0.0, accuracy = 1.0 }

[[scorers]]
name = "rx"
kind = "regex"
pattern = "^[a-{expected}]$"

[[cases]]
id = "good"
input = "q"
expected = "z"

[[cases]]
id = "bad"
input = "q"
expected = "0"
""", encoding="utf-8")
    db = tmp_path / "r.db"
    env = {**os.environ, "ARENATUI_HOME": str(tmp_path / "home")}
    run = [sys.executable, "-m", "arenatui", "evaluate", "--project", str(proj), "--db", str(db), "--quiet",
           "--no-report"]
    first = subprocess.run(run, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert "Traceback" not in first.stderr, first.stderr
    with sqlite3.connect(db) as c:
        rows = dict(c.execute("SELECT case_id, error_class FROM results").fetchall())
        assert rows == {"good": None, "bad": "scoring_error"}
        assert c.execute("SELECT status FROM runs").fetchone()[0] == "finished"
    again = subprocess.run([sys.executable, "-m", "arenatui", "evaluate", "--resume", "last", "--db", str(db),
                            "--quiet", "--no-report"], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=120)
    assert "Traceback" not in again.stderr, again.stderr
    assert again.returncode == first.returncode
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 2


def test_a_scorer_that_raises_something_unexpected_does_not_end_the_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    proj = project(3)

    def broken(output: str, case: Any, timeout_s: float = 1.0) -> Any:
        if case.id == "c001":
            raise ZeroDivisionError("boom")
        return scorers_mod.Score(1.0, True)

    real_init = scorers_mod.Scorer.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:  # every scorer's verdict (what the engine calls) broken
        real_init(self, *args, **kwargs)
        self.verdict = broken

    monkeypatch.setattr(scorers_mod.Scorer, "__init__", init)
    r, rec = runner(proj, {"m": ScriptedProvider()})
    assert anyio.run(r.run) == "finished"
    res = {x.case_id: x for x in rec.results}
    assert res["c001"].error_class == "scoring_error" and "ZeroDivisionError: boom" in (res["c001"].error_message or "")
    assert res["c000"].status == res["c002"].status == "passed"


# ---- 18: a catastrophic-backtracking regex ------------------------------------------------------------------

def test_catastrophic_regex_gets_a_scoring_error_and_the_sweep_and_loop_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scored_mod, "REGEX_TIMEOUT_S", 0.3)  # the real bound is seconds; the verdict is the same
    proj = _scored_project(
        [{"id": "slow", "input": "q", "expected": "L" * 5000}, {"id": "fine", "input": "q", "expected": "LX"}],
        [{"name": "trap", "kind": "regex", "pattern": CATASTROPHIC}], concurrency=2)
    ticks: list[float] = []
    emitted: dict[str, float] = {}  # when each CallFinished was handed out (its own `t` is before scoring)
    r, rec = runner(proj, {"m": EchoProvider()}, sinks=[lambda ev: emitted.setdefault(
        ev.result.case_id, time.monotonic()) if isinstance(ev, CallFinished) else None])

    async def main() -> None:
        async def ticker() -> None:  # stands for everything else on the loop: other calls, the console
            while True:
                ticks.append(time.monotonic())
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            with anyio.fail_after(60):  # a hang guard, not a timing assertion
                await r.run()
            tg.cancel_scope.cancel()

    anyio.run(main)
    res = {x.case_id: x for x in rec.results}
    assert res["fine"].status == "passed"
    slow = res["slow"]
    assert (slow.status, slow.error_class) == ("errored", "scoring_error")
    assert "no verdict within 0.3s" in (slow.error_message or "")
    # the loop kept running while the regex was being tried: the ticker ran during the slow call's scoring
    started_at = next(e.t for e in rec.started() if e.case_id == "slow")
    assert sum(1 for t in ticks if started_at < t < emitted["slow"]) >= 3


def test_stopping_the_sweep_while_a_regex_backtracks_ends_it_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # cancel (what Ctrl-C does) must not wait for the regex's own bound: with a bound of 6 s, a stop that
    # waited for it would trip the 4 s hang guard
    monkeypatch.setattr(scored_mod, "REGEX_TIMEOUT_S", 6.0)
    proj = _scored_project([{"id": "slow", "input": "q", "expected": "L" * 5000}],
                           [{"name": "trap", "kind": "regex", "pattern": CATASTROPHIC}], concurrency=1)
    prov = EchoProvider()
    r, rec = runner(proj, {"m": prov})

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await wait_until(lambda: len(prov.calls) == 1)
            await anyio.sleep(0.1)  # past the 20 ms on the loop: now in its thread
            with anyio.fail_after(60):  # a hang guard: without abandoning the thread the call never ends
                r.cancel()
                await wait_until(lambda: bool(rec.results))

    anyio.run(main)
    (res,) = rec.results
    assert res.error_class == "cancelled"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child")
def test_ctrl_c_ends_a_sweep_stuck_in_a_catastrophic_regex(tmp_path: Path) -> None:
    proj = tmp_path / "arena.toml"
    cases = "".join(f'[[cases]]\nid = "c{i}"\ninput = "q"\nexpected = "{"L" * 5000}"\n\n' for i in range(50))
    proj.write_text(f"""
[run]
concurrency = 2

[[models]]
key = "m"
provider = "sim"
sim = {{ base_latency_s = 0.0, per_token_s = 0.0, jitter = 0.0, accuracy = 1.0 }}

[[scorers]]
name = "trap"
kind = "regex"
pattern = "{CATASTROPHIC}"

{cases}""", encoding="utf-8")
    db = tmp_path / "r.db"
    env = {**os.environ, "ARENATUI_HOME": str(tmp_path / "home")}
    p = subprocess.Popen([sys.executable, "-m", "arenatui", "evaluate", "--project", str(proj), "--db", str(db),
                          "--quiet", "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not db.exists() or _count(db, "SELECT COUNT(*) FROM runs") < 1:
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)  # inside the regex scoring by now (each call takes seconds of it)
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=30)  # before the fix only SIGKILL ended it
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, (p.returncode, err)
    assert "Traceback" not in err
    assert _count(db, "SELECT COUNT(*) FROM results WHERE error_class = 'scoring_error'") < 50


def _count(db: Path, sql: str) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return int(c.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:
        return 0


# ---- 15: bounded concurrency --------------------------------------------------------------------------------

def test_a_million_workers_asked_for_144_calls_start_at_most_144() -> None:
    proj = project(48, models=("a", "b", "c"))
    most = [0]

    def watch(ev: Any) -> None:
        most[0] = max(most[0], r.workers)

    r, rec = runner(proj, {k: SleepyProvider(0.0) for k in ("a", "b", "c")}, concurrency=1_000_000, sinks=[watch])
    assert anyio.run(r.run) == "finished"
    assert len(rec.results) == 144
    assert 1 <= most[0] <= 144
    assert r.target == MAX_CONCURRENCY
    (first, *_rest) = rec.of(ConcurrencyChanged)
    assert (first.new, first.requested, first.source) == (MAX_CONCURRENCY, 1_000_000, "config")


def test_set_concurrency_and_caps_are_bounded_and_say_so_in_the_event_log() -> None:
    proj = project(20, models=("a", "b"))
    prov = SleepyProvider(0.002)
    live = LiveMetrics(["a", "b"], [c.id for c in proj.cases], 1)
    r, rec = runner(proj, {"a": prov, "b": prov}, concurrency=2, sinks=[live.on_event])

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await wait_until(lambda: prov.in_flight > 0)
            r.set_concurrency(2_000_000)
            r.set_model_cap("a", 10**9, source="tuner")
            r.set_model_cap("b", 0)
            assert r.workers <= 40  # never more workers than calls left
            r.set_concurrency(-5)

    anyio.run(main)
    assert r.model_cap("a") == MAX_CONCURRENCY and r.model_cap("b") == 1 and r.target == 1
    changes = [(e.model_key, e.new, e.requested, e.source) for e in rec.of(ConcurrencyChanged)]
    assert changes[1:] == [(None, MAX_CONCURRENCY, 2_000_000, "user"), ("a", MAX_CONCURRENCY, 10**9, "tuner"),
                           ("b", 1, 0, "user"), (None, 1, -5, "user")]
    logged = [e.text for e in live.log if e.kind == "concurrency"]
    assert any("2000000 asked" in t and f"1..{MAX_CONCURRENCY}" in t for t in logged), logged
    assert len(rec.results) == 40


# ---- 16: a long Retry-After holds no worker -----------------------------------------------------------------

def test_a_model_told_to_wait_holds_no_worker_and_healthy_models_go_on() -> None:
    # "sick" answers every attempt 429 with a 120 s Retry-After; with 4 workers the old engine slept in
    # all of them and "well" stopped. Now "well" finishes all its calls while sick's calls are parked.
    proj = project(30, models=("sick", "well"))
    sick = ScriptedProvider(lambda req: RateLimited("429 slow down", retry_after=120.0))
    well = ScriptedProvider(lambda req: 0.001)
    policy = RetryPolicy(max_attempts=5, base_s=0.01, cap_s=0.05, budget_s=600.0)
    live = LiveMetrics(["sick", "well"], [c.id for c in proj.cases], 1)
    r, rec = runner(proj, {"sick": sick, "well": well}, concurrency=4, policy=policy, sinks=[live.on_event])
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            with anyio.fail_after(30):  # a hang guard: before the fix this never happened
                await wait_until(lambda: sum(1 for x in rec.results if x.model_key == "well") == 30, timeout=30)
            snap = {m.key: m for m in live.snapshot().models}
            seen.update(sick_in_flight=snap["sick"].in_flight, sick_backoff=snap["sick"].backing_off,
                        parked=len(r._by_key["sick"].parked), workers=r.workers,
                        sick_attempts=len(sick.calls))
            r.cancel()

    anyio.run(main)
    # sick never had more calls open (in flight + backing off) than the global limit
    assert seen["sick_in_flight"] == 0
    assert seen["parked"] == seen["sick_backoff"] == seen["sick_attempts"] == 4
    assert seen["workers"] <= 4
    assert all(x.status == "passed" for x in rec.results if x.model_key == "well")
    retrying = rec.of(CallRetrying)
    assert len(retrying) == 4 and all(e.delay >= 120.0 and e.reason == "rate_limited" for e in retrying)
    # stopped while parked: each ends once, as cancelled, so a resume runs it again
    sick_res = [x for x in rec.results if x.model_key == "sick"]
    assert len(sick_res) == 4 and all(x.error_class == "cancelled" and x.attempts == 1 for x in sick_res)
    snap = {m.key: m for m in live.snapshot().models}
    assert snap["sick"].backing_off == 0 and snap["sick"].in_flight == 0


def test_parked_retries_keep_the_policy_and_the_cap_means_calls_at_the_provider() -> None:
    # each call fails twice then answers; retry-after 0.05 s is never undercut; the cap of 2 holds at the
    # provider while other calls of the model are backing off
    fails: dict[tuple[str, int], int] = {}

    def behave(req: Request) -> Any:
        k = (req.case.id, req.trial)
        fails[k] = fails.get(k, 0) + 1
        if fails[k] <= 2:
            return RateLimited("429", retry_after=0.05) if fails[k] == 1 else TransientError("503")
        return 0.005

    proj = project(12, models=({"key": "m", "provider": "sim", "max_concurrency": 2}, "n"))
    prov = ScriptedProvider(behave)
    other = ScriptedProvider(lambda req: 0.002)
    policy = RetryPolicy(max_attempts=5, base_s=0.01, cap_s=0.02, budget_s=600.0)
    r, rec = runner(proj, {"m": prov, "n": other}, concurrency=6, policy=policy)
    assert anyio.run(r.run) == "finished"
    res = [x for x in rec.results if x.model_key == "m"]
    assert len(res) == 12 and all(x.status == "passed" and x.attempts == 3 for x in res)
    assert prov.max_in_flight <= 2
    starts: dict[tuple[str, int], list[float]] = {}
    for case_id, trial, _attempt, t in prov.calls:
        starts.setdefault((case_id, trial), []).append(t)
    for ts in starts.values():
        assert ts[1] - ts[0] >= 0.05  # never earlier than retry-after
    assert r.workers == 0 and not r._by_key["m"].parked


def test_retry_budget_and_exhaustion_still_end_parked_calls() -> None:
    proj = project(3)
    prov = ScriptedProvider(lambda req: TransientError("503 busy"))
    r, rec = runner(proj, {"m": prov}, policy=RetryPolicy(max_attempts=3, base_s=0.001, cap_s=0.002))
    anyio.run(r.run)
    assert [(x.error_class, x.attempts) for x in rec.results] == [("transient", 3)] * 3
    assert len(rec.of(CallRetrying)) == 6


# ---- 21: sealed case text in provider error bodies ----------------------------------------------------------

SECRET_INPUT = "Which river flows through the ancient city of Zorbavian Heights?\nAnswer in one word."
SECRET_EXPECTED = "Quillamonde"


def test_sealed_case_text_echoed_by_a_provider_error_is_scrubbed_from_events_and_results() -> None:
    raw = {"run": {"seed": 1}, "models": [{"key": "m", "provider": "sim"}],
           "cases": [{"id": "s", "input": SECRET_INPUT, "expected": SECRET_EXPECTED, "sealed": True},
                     {"id": "open", "input": SECRET_INPUT, "expected": SECRET_EXPECTED}]}
    proj = project_from_dict(raw, Path("sealed.toml"))
    attempts: dict[str, int] = {}

    def behave(req: Request) -> Any:
        attempts[req.case.id] = attempts.get(req.case.id, 0) + 1
        body = json.dumps({"error": {"message": "bad request", "request": {"messages": [
            {"role": "user", "content": req.case.prompt_text()}], "hint": SECRET_EXPECTED}}})
        if attempts[req.case.id] == 1:
            return TransientError(f"HTTP 503: {body}")
        # a later echo cut short and re-wrapped: long runs of the prompt, not the whole of it
        return TerminalError(f"HTTP 400: prompt too odd: '{SECRET_INPUT[10:50]}' ... expected={SECRET_EXPECTED}")

    r, rec = runner(proj, {"m": ScriptedProvider(behave)},
                    policy=RetryPolicy(max_attempts=3, base_s=0.001, cap_s=0.002))
    anyio.run(r.run)
    res = {x.case_id: x for x in rec.results}
    retry = {e.case_id: e for e in rec.of(CallRetrying)}
    for msg in (res["s"].error_message or "", retry["s"].message):
        assert REDACTED in msg
        assert SECRET_EXPECTED not in msg
        for i in range(0, len(SECRET_INPUT) - 12):
            assert SECRET_INPUT[i:i + 12] not in msg, msg
            assert json.dumps(SECRET_INPUT)[1:-1][i:i + 12] not in msg, msg
    assert res["s"].error_message and res["s"].error_message.startswith("HTTP 400: prompt too odd")
    # an open case's message is left as the provider wrote it
    assert SECRET_EXPECTED in (res["open"].error_message or "") and REDACTED not in (res["open"].error_message or "")


def test_plan_pending_and_run_end_with_nothing_to_do() -> None:
    proj = project(2)
    plan = make_plan(proj, resume=Resumed(done={"m": {("c000", 0), ("c001", 0)}}))
    r, rec = runner(plan, {"m": ScriptedProvider()}, concurrency=64)
    assert anyio.run(r.run) == "finished"
    assert r.workers == 0 and rec.results == []
    assert isinstance(rec, Recorder)


def test_stored_keys_outside_the_plan_do_not_shrink_the_pool_below_the_calls_left() -> None:
    # a resume under other filters: stored rows of cases this plan leaves out must not count as calls done
    proj = project(3)
    plan = make_plan(proj, resume=Resumed(done={"m": {("elsewhere", 0), ("gone", 0), ("c000", 0)}}))
    assert plan.remaining == 0  # the plan's own count is fooled
    prov = ScriptedProvider(lambda req: 0.01)
    r, rec = runner(plan, {"m": prov}, concurrency=8)
    assert anyio.run(r.run) == "finished"
    assert sorted(x.case_id for x in rec.results) == ["c001", "c002"]
    assert prov.max_in_flight == 2


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mixed_failures_end_every_call_once_within_every_limit(seed: int) -> None:
    # random 429s (with and without retry-after), transient and terminal errors across three models with caps,
    # while the limit and a cap change mid-run: each call ends exactly once and no limit is ever passed
    import random

    rnd = random.Random(seed)
    models = ({"key": "a", "provider": "sim", "max_concurrency": 2}, "b", {"key": "c", "provider": "sim",
                                                                          "max_concurrency": 3})
    proj = project(25, models=models, trials=2)
    target = [5]
    violations: list[str] = []

    def make(key: str) -> ScriptedProvider:
        def behave(req: Request) -> Any:
            x = rnd.random()
            if x < 0.2:
                return RateLimited("429", retry_after=rnd.choice([None, 0.01, 0.03]))
            if x < 0.3:
                return TransientError("503")
            if x < 0.33:
                return TerminalError("400")
            return rnd.choice([0.0, 0.001, 0.003])
        return ScriptedProvider(behave)

    provs = {k: make(k) for k in ("a", "b", "c")}
    policy = RetryPolicy(max_attempts=4, base_s=0.001, cap_s=0.01, budget_s=600.0)

    def check(ev: Any) -> None:
        if isinstance(ev, CallStarted):  # a lowered cap lets calls in flight finish: check each start
            lane = r._by_key[ev.model_key]
            if lane.cap is not None and lane.in_flight > lane.cap:
                violations.append(f"{ev.model_key} started a call over its cap")
        for k, lane in r._by_key.items():
            if lane.in_flight + len(lane.parked) > max(target[0], r.target):
                violations.append(f"{k} holds more calls than the limit")
        if r.workers > max(target[0], r.target):
            violations.append("more workers than the limit")

    r, rec = runner(proj, provs, concurrency=5, policy=policy, seed=seed, sinks=[check])

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await wait_until(lambda: len(rec.results) >= 30, timeout=30)
            r.set_concurrency(2)
            r.set_model_cap("b", 1)
            await wait_until(lambda: len(rec.results) >= 80, timeout=30)
            target[0] = 9
            r.set_concurrency(9)

    anyio.run(main)
    assert violations == []
    keys = [(x.model_key, x.case_id, x.trial) for x in rec.results]
    assert len(keys) == len(set(keys)) == 150
    assert r.workers == 0 and all(not lane.parked for lane in r._by_key.values())
    assert len(rec.started()) == sum(x.attempts for x in rec.results)


def test_paused_sweep_starts_no_parked_retry_until_resumed() -> None:
    proj = project(4)
    prov = ScriptedProvider(lambda req: RateLimited("429", retry_after=0.02) if req.attempt == 1 else 0.0)
    policy = RetryPolicy(max_attempts=3, base_s=0.001, cap_s=0.002, budget_s=600.0)
    r, rec = runner(proj, {"m": prov}, concurrency=4, policy=policy)
    seen: dict[str, int] = {}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await wait_until(lambda: len(rec.retrying()) == 4)
            r.pause()
            await anyio.sleep(0.1)  # every retry is due by now
            seen["attempts_while_paused"] = len(prov.calls)
            seen["parked"] = len(r._by_key["m"].parked)
            r.resume()

    anyio.run(main)
    assert seen == {"attempts_while_paused": 4, "parked": 4}
    assert [x.status for x in rec.results] == ["passed"] * 4 and all(x.attempts == 2 for x in rec.results)

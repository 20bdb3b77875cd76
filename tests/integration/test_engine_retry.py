"""The one retry policy, exercised through the engine with scripted fake providers.

Backoff is full jitter, a provider's retry-after is never undercut (checked on the CallStarted times of
consecutive attempts), terminal errors make one attempt and never sleep, exhausted retries are stored
as errored with their attempt count, and a retry-after past the call's budget ends the call.
"""

from __future__ import annotations

import itertools
import time

import anyio
from fake_providers import Recorder, ScriptedProvider, project, runner

from arenatui.engine import RetryPolicy
from arenatui.kernel.errors import RateLimited, TerminalError, TransientError
from arenatui.kernel.events import CallRetrying, RunFinished
from arenatui.providers.base import Request


def _run(n_cases: int, behave, policy: RetryPolicy, *, timeout_s: float | None = None, concurrency: int = 4,
         seed: int = 0) -> tuple[ScriptedProvider, Recorder, float]:
    prov = ScriptedProvider(behave)
    r, rec = runner(project(n_cases), {"m": prov}, policy=policy, concurrency=concurrency, seed=seed,
                    timeout_s=timeout_s)
    start = time.monotonic()
    status = anyio.run(r.run)
    elapsed = time.monotonic() - start
    assert status == "finished"
    assert [e.status for e in rec.of(RunFinished)] == ["finished"]
    return prov, rec, elapsed


def test_retry_after_is_never_undercut() -> None:
    asked = {1: 0.12, 2: 0.08}

    def behave(req: Request) -> RateLimited | None:
        if req.attempt in asked:
            return RateLimited("429", retry_after=asked[req.attempt])
        return None

    # backoff ceiling (1 ms) far below the retry-after: the retry-after must win
    _prov, rec, _ = _run(3, behave, RetryPolicy(max_attempts=5, base_s=0.001, cap_s=0.001))
    assert [r.status for r in rec.results] == ["passed"] * 3
    assert all(r.attempts == 3 for r in rec.results)
    for case_id in ("c000", "c001", "c002"):
        starts = sorted((e.attempt, e.t) for e in rec.started() if e.case_id == case_id)
        assert [a for a, _ in starts] == [1, 2, 3]
        for (a, t_prev), (_, t_next) in itertools.pairwise(starts):
            gap = t_next - t_prev
            assert gap >= asked[a] - 1e-3, f"{case_id}: attempt {a + 1} came {gap:.4f}s after, asked {asked[a]}"
            assert gap < asked[a] + 1.0  # and it is the retry-after, not something far longer
        delays = sorted((e.attempt, e.delay) for e in rec.retrying() if e.case_id == case_id)
        assert delays == [(1, asked[1]), (2, asked[2])]
        assert {e.reason for e in rec.retrying()} == {"rate_limited"}


def test_backoff_without_retry_after_stays_within_full_jitter_bounds() -> None:
    policy = RetryPolicy(max_attempts=6, base_s=0.004, cap_s=0.02)

    def behave(req: Request) -> TransientError | None:
        return TransientError("503") if req.attempt < 6 else None

    _prov, rec, _ = _run(8, behave, policy, concurrency=8, seed=3)
    retries = rec.retrying()
    assert len(retries) == 8 * 5
    for e in retries:
        ceiling = min(policy.cap_s, policy.base_s * 2 ** (e.attempt - 1))
        assert 0.0 <= e.delay <= ceiling, (e.attempt, e.delay, ceiling)
        assert e.reason == "transient"
    # jitter: the delays are not all the same (a fixed backoff would pass the bound check)
    assert len({round(e.delay, 9) for e in retries}) > 30
    # and the engine really slept them: consecutive starts are at least the announced delay apart
    for case_id in {e.case_id for e in retries}:
        starts = {e.attempt: e.t for e in rec.started() if e.case_id == case_id}
        for e in (x for x in retries if x.case_id == case_id):
            assert starts[e.attempt + 1] - starts[e.attempt] >= e.delay - 1e-3


def test_terminal_error_makes_one_attempt_and_never_sleeps() -> None:
    prov, rec, _ = _run(
        5, lambda req: TerminalError("400 bad request"),
        RetryPolicy(max_attempts=5, base_s=5.0, cap_s=5.0))  # any sleep would take seconds
    assert len(prov.calls) == 5
    assert rec.retrying() == []  # no retry announced, so none slept: a call sleeps only before a retry
    for r in rec.results:
        assert (r.status, r.error_class, r.attempts) == ("errored", "terminal", 1)
        assert r.error_message == "400 bad request"


def test_unexpected_provider_exception_is_terminal_not_a_crash() -> None:
    def behave(req: Request) -> Exception:
        raise KeyError("boom")

    _prov, rec, _ = _run(2, behave, RetryPolicy(max_attempts=3, base_s=5.0, cap_s=5.0))
    assert [(r.error_class, r.attempts) for r in rec.results] == [("terminal", 1)] * 2
    assert all("KeyError" in (r.error_message or "") for r in rec.results)


def test_exhausted_retries_are_stored_as_errored_with_the_attempt_count() -> None:
    prov, rec, _ = _run(3, lambda req: TransientError("503 overloaded"),
                        RetryPolicy(max_attempts=4, base_s=0.001, cap_s=0.002))
    assert len(prov.calls) == 12
    assert len(rec.retrying()) == 9
    for r in rec.results:
        assert (r.status, r.error_class, r.attempts) == ("errored", "transient", 4)
        assert r.input_tokens == 0 and r.output_tokens == 0


def test_rate_limited_exhaustion_keeps_the_rate_limited_class() -> None:
    _prov, rec, _ = _run(2, lambda req: RateLimited("429", retry_after=0.001),
                         RetryPolicy(max_attempts=3, base_s=0.001, cap_s=0.001))
    assert [(r.error_class, r.attempts) for r in rec.results] == [("rate_limited", 3)] * 2


def test_retry_after_past_the_call_budget_ends_the_call() -> None:
    prov, rec, elapsed = _run(2, lambda req: RateLimited("429 slow down", retry_after=60.0),
                              RetryPolicy(max_attempts=5, base_s=0.001, cap_s=0.001, budget_s=1.0))
    assert len(prov.calls) == 2  # one attempt each, no sleep of 60 s
    assert rec.retrying() == []
    assert elapsed < 30.0  # half the 60 s asked for: a generous ceiling that still tells a wait from none
    for r in rec.results:
        assert (r.status, r.error_class, r.attempts) == ("errored", "rate_limited", 1)
        assert "budget" in (r.error_message or "") and "retry-after 60s" in (r.error_message or "")


def test_retry_budget_is_read_from_the_project() -> None:
    p = project(1, run={"retry_budget_s": 0.5, "max_attempts": 5, "backoff_base_s": 0.001})
    prov = ScriptedProvider(lambda req: RateLimited("429", retry_after=2.0))
    r, rec = runner(p, {"m": prov})
    anyio.run(r.run)
    assert [(x.error_class, x.attempts) for x in rec.results] == [("rate_limited", 1)]


def test_timeouts_are_retried_and_recorded_as_timeout() -> None:
    _prov, rec, _ = _run(2, lambda req: 5.0, RetryPolicy(max_attempts=2, base_s=0.001, cap_s=0.001),
                         timeout_s=0.05)
    for r in rec.results:
        assert (r.status, r.error_class, r.attempts) == ("errored", "timeout", 2)
        assert r.total_ms < 5000  # each attempt cut: one uncut would take the provider's 5 s
    assert {e.reason for e in rec.retrying()} == {"timeout"}


def test_a_retry_that_succeeds_counts_every_attempt() -> None:
    _prov, rec, _ = _run(1, lambda req: TransientError("503") if req.attempt == 1 else 0.0,
                         RetryPolicy(max_attempts=3, base_s=0.001, cap_s=0.001))
    (r,) = rec.results
    assert (r.status, r.attempts, r.error_class) == ("passed", 2, None)
    assert r.total_ms >= r.latency_ms
    assert isinstance(rec.retrying()[0], CallRetrying)


def test_the_attempt_that_ends_an_errored_call_keeps_its_http_status() -> None:
    # the retried attempts carried their status on CallRetrying; the last one, which no retry follows, used to
    # lose it, so a call's attempt history could not tell a 429 storm from a server answering 503
    def behave(req: Request) -> Exception:
        err: RateLimited | TransientError
        if req.case.id == "c000":
            err = RateLimited("429 slow down", retry_after=0.001)
            err.http_status = 429
        else:
            err = TransientError("503 overloaded")
            err.http_status = 503
        return err

    _prov, rec, _ = _run(2, behave, RetryPolicy(max_attempts=2, base_s=0.001, cap_s=0.001))
    by_case = {r.case_id: r for r in rec.results}
    assert (by_case["c000"].error_class, by_case["c000"].http_status) == ("rate_limited", 429)
    assert (by_case["c001"].error_class, by_case["c001"].http_status) == ("transient", 503)
    assert {(e.case_id, e.http_status) for e in rec.retrying()} == {("c000", 429), ("c001", 503)}

    from arenatui.store.db import final_attempt_row

    row = final_attempt_row("run", by_case["c001"])
    assert row[4:7] == (2, "transient", 503)  # attempt, error class, HTTP status


def test_a_capped_model_being_refused_opens_no_new_calls_while_its_refused_ones_wait() -> None:
    # cap 1 under a pool of 8: each refused call waits out its retry-after before the model's next call starts.
    # Before, the model went on opening new calls while refused ones waited (up to the pool, not its cap), each
    # refusal pushing a token-bucket provider's window further out: the demo's tuned model ended at cap 1 with
    # 46 calls given up on 429s
    p = project(4, [{"key": "m", "provider": "sim", "max_concurrency": 1}])
    prov = ScriptedProvider(lambda req: RateLimited("429", retry_after=0.01) if req.attempt == 1 else None)
    r, rec = runner(p, {"m": prov}, policy=RetryPolicy(max_attempts=3, base_s=0.001, cap_s=0.001), concurrency=8)
    assert anyio.run(r.run) == "finished"
    order = [(e.case_id, e.attempt) for e in rec.started()]
    # in the seeded call order, but each case's retry starts before the model's next case
    assert [a for _c, a in order] == [1, 2] * 4 and all(order[k][0] == order[k + 1][0] for k in range(0, 8, 2))
    assert sorted(c for c, _a in order[::2]) == [f"c{i:03d}" for i in range(4)]
    assert [x.status for x in rec.results] == ["passed"] * 4

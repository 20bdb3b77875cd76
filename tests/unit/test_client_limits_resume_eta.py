"""Client-side rpm/tpm across a resume and in the ETA: a resume's limiters start where the earlier session left
them (it sent a burst the gateway refused), and no model's ETA assumes more calls/s than its limits allow (0:36
shown for a run of about 6 minutes)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import tomli_w

from arenatui.engine.runner import bucket_level
from arenatui.kernel.events import CallFinished, CallStarted, Event
from arenatui.plan import Filters, make_plan
from arenatui.session.live import LiveMetrics
from arenatui.session.sweep import Sweep, SweepOptions, client_rate_limits, limit_levels
from tests.tui.support import _result


def _project(tmp_path: Path, cases: int, **model: object) -> Path:
    raw = {"project": {"name": "limits"}, "run": {"concurrency": 64, "seed": 1},
           "defaults": {"max_tokens": 100},
           "models": [{"key": "m", "provider": "sim", "sim": {"base_latency_s": 0.0, "per_token_s": 0.0,
                                                              "accuracy": 1.0}, **model}],
           "cases": [{"id": f"c{i:03d}", "input": "x" * 400, "expected": "a"} for i in range(cases)]}
    p = tmp_path / "p.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


def test_bucket_level_drains_at_its_rate() -> None:
    assert bucket_level([], 100.0, 1.0) == 0.0
    assert bucket_level([(0.0, 10.0)], 4.0, 1.0) == pytest.approx(6.0)
    assert bucket_level([(0.0, 10.0), (20.0, 5.0)], 21.0, 1.0) == pytest.approx(4.0)  # emptied, then 5 - 1


def test_limits_in_calls_per_second(tmp_path: Path) -> None:
    from arenatui.project import load_project

    plan = make_plan(load_project(_project(tmp_path, 3, rpm=120, tpm=60_000)), Filters())
    # rpm 120 -> 2/s; tpm 60,000/min = 1,000 tokens/s over (400 chars ~ 100 tokens + max_tokens 100) -> 5/s
    assert client_rate_limits(plan, 100) == {"m": pytest.approx(2.0)}
    plan = make_plan(load_project(_project(tmp_path, 3, rpm=6, tpm=6_000)), Filters())
    recent = [("m", "c000", 99.0), ("m", "c001", 99.5), ("other", "c000", 99.5)]
    # rpm drains 0.1/s: 1, then 1.95, then 1.9 at 100 s; tpm takes 200 a call and drains 100/s: 200, 350, 300
    assert limit_levels(plan, recent, 100.0, 100) == {"m": (pytest.approx(1.9), pytest.approx(300.0))}


def test_the_eta_is_bounded_by_the_models_rpm() -> None:
    t = [0.0]
    live = LiveMetrics(["m"], [f"c{i}" for i in range(1000)], 1, clock=lambda: t[0])
    live.rate_limits = {"m": 2.0}  # rpm 120
    for i in range(100):  # a burst: the limiter's first minute lets 120 go at once
        live.on_event(CallFinished(_result("m", f"c{i}", 0, "passed", 0.0), t[0]))
    t[0] = 1.0
    eta = live.snapshot().eta_s
    assert eta is not None and eta >= 900 / 2.0  # 900 calls left at no more than 2/s, not at the burst's 100/s


def test_a_resume_starts_its_rpm_limiter_where_the_earlier_session_left_it(tmp_path: Path) -> None:
    proj = _project(tmp_path, 63, rpm=60)  # 60 at once (a fresh limiter's minute), then one a second
    db = tmp_path / "r.db"
    finished = [0]

    def stop_at_60(ev: Event) -> None:
        if isinstance(ev, CallFinished):
            finished[0] += 1
            if finished[0] >= 60:
                first.runner.cancel()

    first = Sweep(SweepOptions(project=proj, db=db), extra_sinks=(stop_at_60,))
    anyio.run(first.run)
    starts: list[float] = []
    resumed = Sweep(SweepOptions(project=proj, db=db, resume=first.run_id),
                    extra_sinks=(lambda ev: starts.append(ev.t) if isinstance(ev, CallStarted) else None,))
    assert resumed.plan.total - sum(1 for _ in resumed.plan.pending("m")) >= 60
    anyio.run(resumed.run)
    assert len(starts) >= 2
    # the earlier minute's 60 calls fill the bucket: the resume's calls come one a second, never in a burst
    assert max(starts) - min(starts) >= 0.8 * (len(starts) - 1)

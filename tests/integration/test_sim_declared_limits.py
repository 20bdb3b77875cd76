"""The in-process simulator states rate limits as a hosted API's headers do (``sim.declare_limits``, ``declared_rpm``,
``declared_tpm``, true or not), and a declared tokens/min limit drives the tuner's prior as a requests/min one does."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomli_w

from arenatui.config.schema import ModelConfig, SimSettings
from arenatui.kernel.errors import RateLimited
from arenatui.kernel.events import DeclaredLimits, Event, LimitsDeclared
from arenatui.providers.base import Request
from arenatui.providers.registry import make_provider
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.tuning.controller import ModelController, TunerSettings

SIM: dict[str, Any] = {"base_latency_s": 0.01, "per_token_s": 0.0, "jitter": 0.0, "accuracy": 1.0, "output_tokens": 8}


def _project(tmp_path: Path, sim: dict[str, Any], calls: int = 20) -> Path:
    raw = {"project": {"name": "declared"},
           "run": {"concurrency": 2, "trials": max(1, calls // 5), "seed": 3, "max_attempts": 5,
                   "backoff_base_s": 0.01, "backoff_cap_s": 0.05},
           "models": [{"key": "m", "provider": "sim", "model": "m", "sim": {**SIM, **sim}}],
           "cases": [{"id": f"c{i}", "input": f"say {i}", "expected": "yes"} for i in range(5)]}
    p = tmp_path / "p.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


def _declared(tmp_path: Path, sim: dict[str, Any], tune: bool = False) -> tuple[list[DeclaredLimits], Sweep]:
    seen: list[DeclaredLimits] = []

    def sink(ev: Event) -> None:
        if type(ev) is LimitsDeclared:
            seen.append(ev.limits)

    sweep = Sweep(SweepOptions(project=_project(tmp_path, sim), db=tmp_path / "r.db", tune=tune),
                  live_metrics=False, extra_sinks=(sink,))
    anyio.run(sweep.run)
    return seen, sweep


@pytest.mark.parametrize(("sim", "rpm", "tpm"), [
    ({"rpm": 6000, "declare_limits": True}, 6000, None),  # the truth
    ({"rpm": 6000, "declared_rpm": 1200}, 1200, None),  # headers that lie low
    ({"declared_rpm": 90, "declared_tpm": 40000}, 90, 40000),  # a lie about a model with no limit at all
    ({}, None, None),  # states nothing
])
def test_the_sims_answers_state_its_limits_and_the_runner_passes_them_on(
        tmp_path: Path, sim: dict[str, Any], rpm: int | None, tpm: int | None) -> None:
    seen, _ = _declared(tmp_path, sim)
    if rpm is None and tpm is None:
        assert seen == []
        return
    assert seen and {(d.requests_limit, d.tokens_limit) for d in seen} == {(rpm, tpm)}
    assert all(d.requests_remaining is not None and 0 <= d.requests_remaining <= rpm for d in seen)
    if "rpm" not in sim:  # no bucket behind the lie: stated with full headroom
        assert {d.requests_remaining for d in seen} == {rpm}


def test_a_sim_refusal_states_its_limits_too() -> None:
    model = ModelConfig(key="m", provider="sim", model="m",
                        sim=SimSettings(rpm=60, burst=1, jitter=0.0, base_latency_s=0.0, declare_limits=True))
    from arenatui.config.schema import Case, RunSettings

    provider = make_provider(model, RunSettings())
    case = Case(id="c", input="x", expected="x")
    msgs = ({"role": "user", "content": "x"},)

    async def go() -> tuple[Any, RateLimited]:
        first = await provider.complete(Request(model, case, 0, 1, msgs, 8, 0.0, 5.0))
        try:
            await provider.complete(Request(model, case, 1, 1, msgs, 8, 0.0, 5.0))
        except RateLimited as e:
            return first, e
        raise AssertionError("the second request within a second was not refused")

    first, refused = anyio.run(go)
    assert first.limits.requests_limit == 60 and first.limits.requests_remaining == 0
    assert refused.limits is not None and refused.limits.requests_limit == 60
    assert refused.limits.requests_reset_s is not None and 0 < refused.limits.requests_reset_s <= 1.0


def ramp_batch(ctl: ModelController, latency: float) -> int:
    """Answer calls started at the current level until the controller moves; the level after (as in
    test_tuning_controller)."""
    start = ctl.level
    for i in range(4 * start + 4):
        ctl.answered(latency, since_s=latency * (1 + i / max(1, start)), fresh=True)
        if ctl.level != start:
            break
    return ctl.level


def test_a_declared_tokens_per_minute_limit_is_the_tuners_prior() -> None:
    """6,000 tokens/min at 10 tokens a call is 600 calls/min, 10/s: at 0.5 s a call, 5 in flight. No requests/min
    stated: the ramp stops doubling where the token bound allows, and says nothing of it before a call's tokens are
    known."""
    ctl = ModelController("m", 2, ceiling=64, settings=TunerSettings(probe_every=1000))
    ctl.declared = DeclaredLimits(tokens_limit=6000)
    assert ctl.prior(0.5) is None  # tokens per call not known yet: no bound
    ctl.tokens_per_call = 10.0
    assert ctl.prior(0.5) == 5
    ctl.start_ramp()
    assert [ramp_batch(ctl, latency=0.5) for _ in range(2)] == [4, 5]  # not 8: the token bound stops the doubling
    ctl = ModelController("m", 2, ceiling=64, settings=TunerSettings(probe_every=1000))  # twice the tokens a call
    ctl.declared, ctl.tokens_per_call = DeclaredLimits(requests_limit=6000, tokens_limit=6000), 20.0
    assert ctl.prior(0.5) == 2  # the smaller of the two bounds (requests: 50)


def test_a_sims_declared_tokens_per_minute_reaches_the_tuner_with_its_tokens_per_call(tmp_path: Path) -> None:
    """End to end: the sim states 60,000 tokens/min and no requests/min; the tuner learns the tokens a call spends
    from the answers (about 10), and its prior is the token bound at the latency measured (0.1 s): about 10."""
    seen, sweep = _declared(tmp_path, {"declared_tpm": 60000, "base_latency_s": 0.1}, tune=True)
    assert seen and seen[-1].tokens_limit == 60000 and seen[-1].requests_limit is None
    ctl = sweep.tuner.controllers["m"]
    assert ctl.declared is not None and ctl.declared.tokens_limit == 60000
    assert ctl.tokens_per_call is not None and 5 <= ctl.tokens_per_call <= 20
    lat = sorted(ctl.base_pool)[len(ctl.base_pool) // 2]
    prior = ctl.prior()
    assert prior == math.floor(60000 / 60.0 / ctl.tokens_per_call * lat) and 4 <= prior <= 25


def test_tokens_left_fall_with_each_answer_and_refill_at_the_stated_rate() -> None:
    """A stated tokens/min is a budget the answers spend, as a hosted API's remaining-tokens count is: 6,000/min
    refills 100 a second; what is left is never below 0, and the reset is when the budget is whole again."""
    from arenatui.providers.sim import SimCore

    core = SimCore("m", SimSettings(), seed=0)
    assert core.declared(False, None, 6000, now=0.0) == DeclaredLimits(None, None, None, 6000, 6000, 0.0)
    core.spend_tokens(1000, 6000, now=0.0)
    core.spend_tokens(500, 6000, now=1.0)  # 100 refilled meanwhile
    lim = core.declared(False, None, 6000, now=1.0)
    assert lim is not None and (lim.tokens_remaining, lim.tokens_reset_s) == (4600, pytest.approx(14.0))
    lim = core.declared(False, None, 6000, now=5.0)
    assert lim is not None and lim.tokens_remaining == 5000
    core.spend_tokens(10_000, 6000, now=5.0)
    lim = core.declared(False, None, 6000, now=5.0)
    assert lim is not None and lim.tokens_remaining == 0 and lim.tokens_reset_s == pytest.approx(110.0)
    assert core.declared(False, None, 6000, now=500.0) == DeclaredLimits(None, None, None, 6000, 6000, 0.0)


def test_a_sweeps_stated_tokens_left_fall_below_the_limit(tmp_path: Path) -> None:
    """End to end in process: the answers of a sweep spend the stated tokens/min, so what is stated as left falls
    below the limit (it was the whole limit every time)."""
    seen, _ = _declared(tmp_path, {"declared_tpm": 60000})
    assert seen and all(d.tokens_limit == 60000 for d in seen)
    assert min(d.tokens_remaining or 0 for d in seen) < 60000


def test_the_timeout_advice_leaves_out_calls_queued_behind_the_tuners_probes(tmp_path: Path) -> None:
    """Issue 36 item 7: an answer started while the auto-tuner held the model above the level it settled on (a
    probe, a climb past the optimum) may have waited behind the tuner's own calls on a server that queues: its time
    is no evidence of how long the provider takes, and the timeout_s advice says it was left out."""
    from arenatui.results.budgets import budget_evidence
    from arenatui.store import Store
    from arenatui.tuning.budgets import recommend_timeout

    sweep = Sweep(SweepOptions(project=_project(tmp_path, {"base_latency_s": 0.0}, calls=150), db=tmp_path / "r.db"),
                  live_metrics=False)
    anyio.run(sweep.run)
    with Store(tmp_path / "r.db") as store:
        rows = store.conn.execute("SELECT rowid, started_at FROM results WHERE run_id = ? ORDER BY started_at",
                                  (sweep.run_id,)).fetchall()
        first, last = rows[0][1], rows[-1][1]
        probe = rows[len(rows) // 3][1], rows[2 * len(rows) // 3][1]  # the tuner at 4 over the middle third
        queued = [rowid for rowid, at in rows if probe[0] <= at < probe[1]]
        moves = [(sweep.run_id, first - 1, 2, 1), (sweep.run_id, probe[0], 1, 4), (sweep.run_id, probe[1], 4, 1)]
        store.conn.executemany("INSERT INTO concurrency_changes (run_id, at, old, new, model_key, source) VALUES "
                               "(?, ?, ?, ?, 'm', 'tuner')", moves)
        store.conn.execute(f"UPDATE results SET latency_ms = 8000 WHERE rowid IN ({','.join('?' * len(queued))})",
                           queued)
        ev = budget_evidence(store, sweep.run_id).timeout_evidence("m")
    assert queued and last > probe[1] and ev.left_out == len(queued)
    assert len(ev.answered_s) == len(rows) - len(queued) and max(ev.answered_s) < 1.0  # no 8 s call in the evidence
    rec = recommend_timeout("m", 60.0, ev)
    assert rec.action == "lower" and rec.value is not None and rec.value <= 2.0
    assert any(f"{len(queued)} answered attempts left out: started above the level the auto-tuner settled on" in line
               for line in rec.detail), rec.detail


def test_a_simulated_models_prompt_variants_share_its_rate_limit(tmp_path: Path) -> None:
    """A provider limits the model, not each prompt: a sim model's variants are admitted from one rate bucket (and
    one concurrency ceiling), as the mock server admits them over HTTP; each variant still answers with its own
    accuracy."""
    import tomllib

    path = _project(tmp_path, {"rpm": 60, "burst": 1.0, "prompt_accuracy": {"b": 0.0}})
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    raw["prompts"] = [{"name": "a", "template": "{input}"}, {"name": "b", "template": "Q: {input}"}]
    path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    sweep = Sweep(SweepOptions(project=path, db=tmp_path / "r.db"), live_metrics=False)
    a, b = sweep.providers["m · a"], sweep.providers["m · b"]
    assert a.limits is b.limits and a.core is not b.core  # type: ignore[attr-defined]
    assert a.limits.admit(0.0) is None  # type: ignore[attr-defined]  # the bucket's one token, taken by a
    assert b.limits.admit(0.0) is not None  # type: ignore[attr-defined]  # and b is refused: one limit
    assert b.core.s.accuracy == 0.0 and a.core.s.accuracy == 1.0  # type: ignore[attr-defined]

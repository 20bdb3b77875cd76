"""The engine's hot path builds its NamedTuples with `build_tuple(Cls, (every field,))` (kernel.events): a field
left out there makes a short tuple, read wrong by position (the store's row) or failing by name far away. Every
event of sweeps that take each builder's branches (right and wrong answers, reasoning, 429s and transient errors,
repairs) must be made of whole tuples, all the way down."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import tomli_w

from arenatui.kernel.events import Event
from arenatui.project.read import load_project
from arenatui.providers.base import Request
from arenatui.providers.sim import SimOutcome, SimProvider
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store.db import Store


def _short(value: Any, path: str) -> list[str]:
    """Where `value` or a NamedTuple inside it is shorter (or longer) than its fields."""
    fields = getattr(type(value), "_fields", None)
    if fields is None:
        return []
    bad = [f"{path}: {type(value).__name__} has {len(value)} of {len(fields)} fields"] if len(value) != len(fields) \
        else []
    for name, item in zip(fields, value, strict=False):
        bad += _short(item, f"{path}.{name}")
    return bad


def _sweep(tmp_path: Path, run: dict[str, Any], models: list[dict[str, Any]]) -> list[Event]:
    raw = {"project": {"name": "whole"},
           "run": {"concurrency": 4, "trials": 3, "seed": 5, "max_attempts": 3, "backoff_base_s": 0.001,
                   "backoff_cap_s": 0.002, **run},
           "models": models,
           "cases": [{"id": f"c{i}", "input": f"say {i}", "expected": "yes"} for i in range(6)]}
    project = tmp_path / "p.toml"
    project.write_text(tomli_w.dumps(raw), encoding="utf-8")
    seen: list[Event] = []
    sweep = Sweep(SweepOptions(project=project, db=tmp_path / "r.db"), live_metrics=False, extra_sinks=(seen.append,))
    anyio.run(sweep.run)
    return seen


SIM = {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0}


def test_every_event_of_a_sweep_is_made_of_whole_tuples(tmp_path: Path) -> None:
    models = [
        {"key": "plain", "provider": "sim", "sim": {**SIM, "accuracy": 0.5}},
        {"key": "thinks", "provider": "sim", "sim": {**SIM, "accuracy": 0.5, "reasoning_tokens": 20}},
        {"key": "flaky", "provider": "sim", "sim": {**SIM, "accuracy": 0.5, "transient_rate": 0.3}},
        {"key": "limited", "provider": "sim", "sim": {**SIM, "accuracy": 1.0, "rpm": 600, "burst": 2}},
    ]
    seen = _sweep(tmp_path, {}, models)
    assert len(seen) > 4 * 18
    assert [bad for ev in seen for bad in _short(ev, type(ev).__name__)] == []
    kinds = {type(ev).__name__ for ev in seen}
    assert {"CallFinished", "CallRetrying"} <= kinds
    with Store(tmp_path / "r.db") as store:  # the rows the writer built from them are whole too
        rows = store.conn.execute("SELECT model_key, status, output FROM results").fetchall()
    assert len(rows) == 4 * 18 and {r[1] for r in rows} >= {"passed", "failed"}


def test_a_repaired_sweeps_events_are_whole(tmp_path: Path) -> None:
    seen = _sweep(tmp_path, {"repair": {"attempts": 1, "on": ["wrong_answer"], "message": "No: {error}"}},
                  [{"key": "m", "provider": "sim", "sim": {**SIM, "accuracy": 0.5}}])
    assert [bad for ev in seen for bad in _short(ev, type(ev).__name__)] == []
    assert "StepFinished" in {type(ev).__name__ for ev in seen}


def test_the_sims_outcomes_and_answers_are_whole(tmp_path: Path) -> None:
    seen = _sweep(tmp_path, {}, [{"key": "m", "provider": "sim", "sim": {**SIM, "accuracy": 0.5}}])
    assert seen
    project = load_project(tmp_path / "p.toml")
    model = project.models[0]
    sim = SimProvider(model)
    for case in project.cases:
        out = sim.core.outcome(case.id, 0, 1, case.expected, case.stratum, case.tags, "say", 64)
        assert len(out) == len(SimOutcome._fields)
        req = Request(model, case, 0, 1, ({"role": "user", "content": "say"},), 64, 0.0, 5.0)
        comp = anyio.run(sim.complete, req)
        assert _short(comp, "Completion") == []

"""Resume as data (issue 33 step 3): `read_resume` reads what a stored sweep says of the session that continues it
from the database alone, without running a sweep: the calls left, the stored figures live metrics start from, the
run's own filters, what changed in the project file; a load run is refused."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import anyio
import pytest
import tomli_w

from arenatui.kernel.errors import PlanError
from arenatui.plan import Shard
from arenatui.session.resume import ResumeState, read_resume
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store


def _project(tmp_path: Path, cases: int = 4) -> Path:
    raw = {"project": {"name": "resume"}, "run": {"concurrency": 4, "seed": 7, "trials": 2},
           "models": [{"key": k, "provider": "sim", "sim": {"base_latency_s": 0.0, "per_token_s": 0.0,
                                                            "accuracy": 0.5}} for k in ("a", "b")],
           "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "x"} for i in range(cases)]}
    p = tmp_path / "arena.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


def _stored_run(tmp_path: Path, forget: int) -> tuple[Path, Path, str]:
    """A finished sweep of 2 models x 4 cases x 2 trials with its last `forget` results deleted (as a kill would)."""
    project, db = _project(tmp_path), tmp_path / "r.db"
    sweep = Sweep(SweepOptions(project=project, db=db), live_metrics=False)
    anyio.run(sweep.run)
    with sqlite3.connect(db) as conn:  # the test plays the interruption: the package never does this
        conn.execute("DELETE FROM results WHERE rowid IN (SELECT rowid FROM results ORDER BY rowid DESC LIMIT ?)",
                     (forget,))
        conn.execute("UPDATE runs SET status = 'interrupted'")
    return project, db, sweep.run_id


def test_the_calls_left_and_the_stored_figures_come_from_the_database(tmp_path: Path) -> None:
    _, db, run_id = _stored_run(tmp_path, forget=3)
    with Store(db) as store:
        state = read_resume(store, run_id)
    assert state.run_id == run_id and state.plan.total == 16
    assert state.plan.remaining == 3 and state.plan.done_count == 13
    assert len(state.live_rows) == 13  # every stored call's figures, none of the forgotten ones
    assert state.elapsed_s >= 0.0 and state.notices == ()
    assert state.plan.awaiting == () and state.plan.steps == {} and state.plan.chain_outcomes == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.plan = state.plan  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):  # the plan too: built once, never changed after
        state.plan.awaiting = ()  # type: ignore[misc]


def test_retry_errored_counts_only_answered_calls_done(tmp_path: Path) -> None:
    _, db, run_id = _stored_run(tmp_path, forget=0)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE results SET status = 'errored', error_class = 'transient', passed = 0, score = NULL "
                     "WHERE rowid IN (SELECT rowid FROM results ORDER BY rowid LIMIT 2)")
    with Store(db) as store:
        kept = read_resume(store, run_id)
        again = read_resume(store, run_id, retry_errored=True)
    assert kept.plan.remaining == 0 and again.plan.remaining == 2


def test_a_changed_project_file_is_said_and_the_stored_configuration_used(tmp_path: Path) -> None:
    project, db, run_id = _stored_run(tmp_path, forget=1)
    project.write_text(project.read_text(encoding="utf-8").replace('"q0"', '"a new question"'), encoding="utf-8")
    with Store(db) as store:
        state = read_resume(store, "last")
    assert state.run_id == run_id
    (note,) = state.notices
    assert "1 case changed (c0)" in note and "stored configuration is used" in note
    assert next(c for c in state.plan.cases if c.id == "c0").input == "q0"


def test_a_load_run_is_never_resumed(tmp_path: Path) -> None:
    _, db, run_id = _stored_run(tmp_path, forget=0)
    with sqlite3.connect(db) as conn:  # the kind arena load records with its run, which the refusal reads
        conn.execute("UPDATE runs SET kind = 'load' WHERE run_id = ?", (run_id,))
    with Store(db) as store, pytest.raises(PlanError, match="is a load run"):
        read_resume(store, run_id)


def test_the_state_is_one_frozen_record() -> None:
    assert dataclasses.is_dataclass(ResumeState)
    assert ResumeState.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_what_a_resumed_session_made_is_counted_apart_from_the_run(tmp_path: Path) -> None:
    from arenatui.commands.evaluate import calls_made

    _, db, run_id = _stored_run(tmp_path, forget=3)
    with Store(db) as store:
        plan = read_resume(store, run_id).plan
    assert calls_made(plan, True, 16) == 3  # finished: what its plan had left
    assert calls_made(plan, False, 14) == 1  # stopped again: stored beyond the 13 earlier sessions left
    assert calls_made(plan, False, 12) == 0
    sharded = dataclasses.replace(plan, filters=dataclasses.replace(plan.filters, shard=Shard(0, 2)))
    assert calls_made(sharded, True, 16) is None  # a shard says its own count

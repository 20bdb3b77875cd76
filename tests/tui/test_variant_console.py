"""The console on a sweep with prompt variants and repairs: one matrix row per model · variant, every call ends."""

from __future__ import annotations

import tomllib
from pathlib import Path

import anyio
import pytest
import tomli_w

from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store
from arenatui.tui.app import ArenaApp
from arenatui.tui.widgets import CallMatrix

from .support import sim_project

pytestmark = pytest.mark.anyio


def _variant_project(tmp_path: Path, *, cases: int, latency: float) -> Path:
    """Two simulated models asked two ways, each wrong answer repaired once."""
    path = sim_project(tmp_path, models=2, cases=cases, latency=latency)
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    raw["prompts"] = [{"name": "terse", "template": "Q: {input}"}, {"name": "verbose", "system": "Explain."}]
    raw["run"]["repair"] = {"attempts": 1, "on": ["wrong_answer"], "message": "Wrong: {error}"}
    path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return path


async def test_the_matrix_has_a_row_per_model_and_variant(tmp_path: Path, db_path: Path) -> None:
    path = _variant_project(tmp_path, cases=12, latency=0.01)
    sweep = Sweep(SweepOptions(project=path, db=db_path))
    app = ArenaApp(sweep)
    async with app.run_test(size=(160, 48)) as pilot:
        with anyio.fail_after(60.0):  # a hang guard, not a speed requirement
            while sweep.status is None:  # noqa: ASYNC110 (the state lives in the engine, not behind an event)
                await anyio.sleep(0.05)
        await pilot.pause(0.3)
        matrix = app.run_screen.query_one(CallMatrix)
        assert matrix.model_keys == ["sim-0 · terse", "sim-0 · verbose", "sim-1 · terse", "sim-1 · verbose"]
        snap = sweep.live.snapshot()
        assert snap.done == 48 and all(r.in_flight == 0 for r in sweep.live.rows)
        await pilot.press("q")
    with Store(db_path) as store:
        n = store.conn.execute("SELECT COUNT(*), COUNT(DISTINCT variant) FROM results").fetchone()
    assert n == (48, 2)


async def test_the_results_view_shows_the_per_variant_table_and_repairs(tmp_path: Path, db_path: Path) -> None:
    from arenatui.tui.browse import BrowseApp

    from .test_results_screens import screen_text, settle, static_text

    path = _variant_project(tmp_path, cases=20, latency=0.0)
    sweep = Sweep(SweepOptions(project=path, db=db_path), live_metrics=False)
    assert await sweep.run() == "finished"
    app = BrowseApp(db_path, sweep.run_id)
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot, lambda: app.screen.view is not None and app.screen.view.complete)
        await pilot.pause(0.1)
        text = screen_text(app)
        for words in ("Prompt variants", "terse", "verbose", "spread", "Does the ordering survive the prompt?",
                      "sim-0 vs sim-1", "Repairs and escalation", "completion before"):
            assert words in text, words
        assert "mean over the variants" in static_text(app, "#leaderboard-note")


async def test_both_details_show_a_variant_calls_repair_steps(tmp_path: Path, db_path: Path) -> None:
    """Issue 21 item 5: the console's call detail and the results view's case detail render one call the same way,
    variant and repair steps included; the results view's grid has a row per variant's trial, and the call under
    its cursor is shown whole below it."""
    from textual.widgets import Static

    from arenatui.store.queries import call_details
    from arenatui.tui.browse import BrowseApp
    from arenatui.tui.call_text import PREVIEW_CHARS
    from arenatui.tui.results.detail import CaseDetail
    from arenatui.tui.screens import CallDetail

    from .test_results_screens import settle

    path = _variant_project(tmp_path, cases=20, latency=0.0)
    sweep = Sweep(SweepOptions(project=path, db=db_path))
    assert await sweep.run() == "finished"
    lane = "sim-0 · terse"
    with Store(db_path) as store:
        case_id = store.conn.execute("SELECT case_id FROM results WHERE model_key = 'sim-0' AND variant = 'terse' AND "
                                     "repairs > 0 ORDER BY case_id LIMIT 1").fetchone()[0]
        (stored,) = call_details(store, sweep.run_id, case_id, lane=lane, preview=PREVIEW_CHARS)
    assert stored.repairs == 1 and [s.step for s in stored.steps] == [0, 1]
    live = CallDetail(sweep, sweep.live.row_keys.index(lane), sweep.live.case_ids.index(case_id)).render_rows(
        [stored]).plain
    assert "variant terse" in live and "follow-ups 1 repair turn" in live and "step 1 repair by sim-0" in live

    app = BrowseApp(db_path, sweep.run_id)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, lambda: app.screen.view is not None)
        view = app.screen.view
        models = view.results.models
        app.push_screen(CaseDetail(db_path, sweep.run_id, view.case(case_id), models))
        await settle(pilot, lambda: isinstance(app.screen, CaseDetail) and app.screen.grid_rows)
        screen = app.screen
        assert {v for v, _t in screen.grid_rows} == {"terse", "verbose"}  # a row per variant's trial
        row = next(i for i, (v, t) in enumerate(screen.grid_rows) if v == "terse" and t == stored.trial)
        screen.query_one("#case-grid").move_cursor(row=row, column=1 + models.index("sim-0"))
        await settle(pilot, lambda: "variant terse" in str(screen.query_one("#case-call", Static).render()))
        shown = str(screen.query_one("#case-call", Static).render())
    assert shown.startswith("sim-0\ntrial") and "variant terse" in shown
    assert "follow-ups 1 repair turn" in shown and "step 1 repair by sim-0" in shown

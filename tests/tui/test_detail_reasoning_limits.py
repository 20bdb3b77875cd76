"""Issue 32 in the console: a call's detail shows a reasoning model's reasoning apart from its answer, and the rate
limits the model's provider declared (requests and tokens per minute, what is left)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from textual.css.query import NoMatches
from textual.widgets import Static

from arenatui.kernel.events import DeclaredLimits, LimitsDeclared, ReasoningKept
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store
from arenatui.tui.app import ArenaApp
from arenatui.tui.screens import CallDetail

from .support import _result, sim_project

pytestmark = pytest.mark.anyio


def _text(detail: CallDetail, selector: str) -> str:
    try:
        return str(detail.query_one(selector, Static).render())
    except NoMatches:  # not composed, or not there
        return ""


async def test_the_detail_shows_reasoning_apart_and_the_declared_limits(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, models=1, cases=1), db=db_path))
    answer = _result("sim-0", "case-000", 0, "passed", 0.0, output="forty-two")._replace(
        reasoning_tokens=120, answer_ttft_ms=900.0, reasoning=ReasoningKept("First, six times seven.", False))
    with Store(db_path) as store:
        store.write_results(sweep.run_id, [answer])
    sweep.live.on_event(LimitsDeclared("sim-0", DeclaredLimits(500, 12, 1.5, 30000, 1000, None), 0.0, 0.0))
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(160, 48)):
        app.push_screen(CallDetail(sweep, 0, 0))
        with anyio.fail_after(60.0):  # a hang guard, not a speed requirement
            for _ in range(100_000):  # polling: the rows are read in a thread worker
                if isinstance(app.screen, CallDetail) and "trial 0" in _text(app.screen, "#detail-text"):
                    break
                await anyio.sleep(0.02)
        detail = app.screen
        assert isinstance(detail, CallDetail)
        shown = _text(detail, "#detail-text")
        assert "reasoning (never scored)" in shown and "First, six times seven." in shown
        assert shown.index("First, six times seven.") < shown.index("forty-two")
        assert "120" in shown and "900" in shown  # reasoning tokens, first answer token
        declared = _text(detail, "#model-declared")
        assert "500 requests/min (12 left), 30,000 tokens/min (1,000 left)" in declared


def test_a_model_snapshot_gives_reasoning_tokens_per_call_and_their_share_of_spend() -> None:
    from arenatui.kernel.events import CallFinished
    from arenatui.session.live import LiveMetrics

    live = LiveMetrics(["r", "plain"], ["c1", "c2"], 1, clock=lambda: 100.0)
    for case, rtok in (("c1", 600), ("c2", 200)):  # 800 reasoning of 1,000 output tokens, over 2 calls
        live.on_event(CallFinished(_result("r", case, 0, "passed", 0.0)._replace(
            output_tokens=500, reasoning_tokens=rtok, input_tokens=1000, cost=0.0035), 100.0))
        live.on_event(CallFinished(_result("plain", case, 0, "passed", 0.0), 100.0))
    r, plain = live.snapshot().models
    # $5 per million output tokens: 800 reasoning tokens cost $0.004 of the $0.007 spent
    assert r.reasoning(5.0) == (400.0, pytest.approx(0.004 / 0.007))
    assert r.reasoning(0.0) == (400.0, 0.8)  # no price: their share of the output tokens
    assert plain.reasoning(5.0) is None


async def test_the_model_table_shows_a_reasoning_models_tokens_per_call_and_share_of_spend(tmp_path: Path,
                                                                                          ) -> None:
    from arenatui.kernel.events import CallFinished
    from arenatui.tui.widgets import ModelTable

    from .support import scripted_sweep

    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    model = sweep.live.model_keys[0]
    sweep.live.on_event(CallFinished(_result(model, sweep.plan.cases[-1].id, 0, "passed", 0.0)._replace(
        output_tokens=1000, reasoning_tokens=750), sweep.live.t0 + 1))
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(200, 48)) as pilot:
        await pilot.pause(0.3)
        table = app.run_screen.query_one(ModelTable)
        assert "reasoning" in table.shown_titles
        col = [c.title for c in table.columns].index("reasoning") - 1  # values leave out the model's name
        cells = [v[col] for v in table._values]
    row = sweep.live.model_keys.index(model)
    assert cells[row].endswith("%") and " · " in cells[row], cells
    assert all(c == "-" for i, c in enumerate(cells) if i != row), cells


def test_the_results_leaderboard_has_a_reasoning_column_only_when_some_model_reasoned() -> None:
    from types import SimpleNamespace

    from arenatui.kernel.units import NOTHING
    from arenatui.store.queries import ReasoningUsage
    from arenatui.tui.results.leaderboard import leaderboard_columns

    def view(reasoning: dict[str, ReasoningUsage]) -> Any:
        return SimpleNamespace(plan=SimpleNamespace(record=SimpleNamespace(status="finished")), classification={},
                               reasoning=reasoning)

    assert "reasoning" not in [c.title for c in leaderboard_columns(view({}))]
    v = view({"r": ReasoningUsage(calls=2, reasoning_tokens=800, output_tokens=1000, estimated=0)})
    (col,) = [c for c in leaderboard_columns(v) if c.title == "reasoning"]
    assert col.cell(SimpleNamespace(model="r")) == "400 · 80%"  # per call that reasoned · share of output spend
    assert col.cell(SimpleNamespace(model="plain")) == NOTHING

"""Issue 32 in the console: a call's detail shows a reasoning model's reasoning apart from its answer, and the rate
limits the model's provider declared (requests and tokens per minute, what is left)."""

from __future__ import annotations

from pathlib import Path

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

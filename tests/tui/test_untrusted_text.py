"""Markup, links, click actions and terminal control sequences from outputs, errors and names show literally."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from arenatui.kernel.events import CallFinished, CallRetrying, CallStarted
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store
from arenatui.tui.app import ArenaApp
from arenatui.tui.screens import CallDetail, Results

from .support import INJECTIONS, _result, sim_project

pytestmark = pytest.mark.anyio

PAYLOAD = " | ".join(INJECTIONS)
VISIBLE = ("[bold red]x[/]", "[link=https://example.com]y[/link]", "[@click=app.quit]", "␛]0;title\\x07",
           "␛[2J", "␛]52;c;aGVsbG8=\\x07", "C1\\x9bcontrol", "[/ | [b")


def screen_text(app: ArenaApp) -> str:
    svg = app.export_screenshot()
    parts = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    return html.unescape("".join(parts)).replace("\xa0", " ")


async def _settle(pilot: object, app: ArenaApp, pred: object) -> None:
    for _ in range(100):
        await pilot.pause(0.05)  # type: ignore[attr-defined]
        if pred():  # type: ignore[operator]
            return
    raise AssertionError("timed out")


async def test_injections_show_literally(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=3, trials=1, case_input=PAYLOAD), db=db_path))
    live = sweep.live
    # the event log: a retry message and an error body
    live.on_event(CallStarted("sim-0", "case-000", 0, 1, live.t0 + 0.1))
    live.on_event(CallRetrying("sim-0", "case-000", 0, 1, "transient", 0.1, PAYLOAD, live.t0 + 0.2))
    live.on_event(CallStarted("sim-0", "case-000", 0, 2, live.t0 + 0.3))
    bad = _result("sim-0", "case-000", 0, "errored", live.t0 + 0.4, attempts=2, error=PAYLOAD)
    live.on_event(CallFinished(bad, live.t0 + 0.4))
    ok = _result("sim-1", "case-000", 0, "passed", live.t0 + 0.5, output=PAYLOAD)
    live.on_event(CallStarted("sim-1", "case-000", 0, 1, live.t0 + 0.45))
    live.on_event(CallFinished(ok, live.t0 + 0.5))
    with Store(db_path) as store:
        store.write_results(sweep.run_id, [bad, ok])
        # a model key that is itself hostile, for the results table
        store.write_results(sweep.run_id, [_result("[red]evil[/] \x1b]0;t\x07", "case-001", 0, "passed", 0.0)])
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.press("w")  # wrap the events: the line is longer than the events pane is wide
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "after 2 attempts:" in text and "[bold red]x[/]" in text  # the markup shown as written
        # the detail of the errored call and of the passed one (input, output, error body)
        for model_index in (0, 1):
            app.push_screen(CallDetail(sweep, model_index, 0))
            await _settle(pilot, app, lambda: "trial 0" in screen_text(app))
            text = screen_text(app)
            for v in VISIBLE:
                assert v in text, v
            app.pop_screen()
            await pilot.pause(0.05)
        # the results view: the case opened from the cases table shows input and both outputs literally
        app.push_screen(Results(sweep.db_path, sweep.run_id))
        await _settle(pilot, app, lambda: getattr(app.screen, "view", None) is not None)
        await pilot.press("6")
        await _settle(pilot, app, lambda: "case-000" in screen_text(app))
        app.screen.query_one("#cases-table").focus()
        await pilot.press("enter")
        await _settle(pilot, app, lambda: "trial 0" in screen_text(app))
        text = screen_text(app)
        for v in VISIBLE:
            assert v in text, v
        assert app.title == "arena" and app.is_running

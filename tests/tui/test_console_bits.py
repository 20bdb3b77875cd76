"""Smaller console contracts: bad input never opens the app, the palette offers every action, the log filters."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, RichLog

from arenatui.cli import main
from arenatui.kernel.events import CallRetrying, CallStarted
from arenatui.tui.app import ArenaApp

from .support import scripted_sweep


def test_bad_project_is_one_paragraph_and_exit_2_before_the_app(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--project", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err
    assert "missing.toml" in err and "Traceback" not in err
    assert main(["run", "--resume", "no-such-run", "--db", str(tmp_path / "r.db")]) == 2


@pytest.mark.anyio
async def test_palette_offers_the_actions_and_the_log_filters(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    live = sweep.live
    live.on_event(CallStarted("sim-small", "boil", 0, 1, 1004.0))
    live.on_event(CallRetrying("sim-small", "boil", 0, 1, "transient", 0.2, "needle in the log", 1004.1))
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(160, 48)) as pilot:
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Pause or resume the sweep", "Raise concurrency", "Lower concurrency", "Set concurrency",
                       "Results", "Stop the sweep", "Help", "Theme", "Screenshot"):
            assert wanted in titles
        # one entry per name: Textual's own "Keys" duplicated ours, "Maximize" drew a pane over a hatch
        assert len(titles) == len(set(titles)) and "Keys" not in titles and "Maximize" not in titles
        log = app.run_screen.query_one("#log", RichLog)
        await pilot.pause(0.1)
        before = len(log.lines)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"needle")
        await pilot.pause(0.1)
        assert before > 1
        (line,) = log.lines  # only the entry whose text matches (its end may be cut at the panel's width)
        assert "sim-small boil#0: transient" in "".join(seg.text for seg in line)

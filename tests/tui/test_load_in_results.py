"""Issue 14: a stored load run shows in the results view (arena browse, r) with its own tables, not as a sweep."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from textual.widgets import DataTable, Static

from arenatui.tui.browse import BrowseApp

from .test_results_screens import screen_text

pytestmark = pytest.mark.anyio

PROJECT = """
[project]
name = "load-view"

[[models]]
key = "m"
provider = "sim"
sim = { base_latency_s = 0.005, per_token_s = 0.0, jitter = 0.0 }

[[cases]]
id = "c1"
input = "hi"
expected = "hi"
"""


async def test_a_load_run_opens_with_its_segment_and_percentile_tables(tmp_path: Path) -> None:
    project = tmp_path / "arena.toml"
    project.write_text(PROJECT)
    db = tmp_path / "d.db"
    argv = [sys.executable, "-m", "arenatui", "load", "--project", str(project), "--db", str(db), "--rates", "20,40",
            "--duration", "0.4", "--quiet"]
    done = await anyio.run_process(argv, check=False)  # a process of its own: it owns its signals and loop
    assert done.returncode == 0, done.stderr
    app = BrowseApp(db, "last")
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(300):
            await pilot.pause(0.02)
            if getattr(app.screen, "view", None) is not None and app.screen.view.complete:
                break
        screen = app.screen
        assert screen.view is not None and screen.view.load is not None
        assert not screen.query_one("#leaderboard-table", DataTable).display  # no leaderboard of a sweep
        title = str(screen.query_one("#results-title", Static).render())
        assert "load run" in title and "requests" in title
        text = screen_text(app)
        assert "per segment" in text and "Percentiles" in text and "latency from schedule" in text

"""Snapshots of the run screen from a scripted sweep on a frozen clock: byte-identical run to run.

The engine never runs here: `scripted_sweep` feeds LiveMetrics a fixed event sequence, so the SVG
depends only on the script, the theme and the terminal size. Regenerate with
`pytest tests/tui --snapshot-update` after a deliberate change, and look at the SVGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arenatui.tui.app import ArenaApp

from .support import scripted_sweep

SIZE = (160, 48)


@pytest.mark.parametrize("theme", ["dark", "light"])
@pytest.mark.parametrize("finished", [False, True], ids=["mid-run", "finished"])
def test_run_screen(snap_compare: Any, tmp_path: Path, theme: str, finished: bool) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=finished)
    app = ArenaApp(sweep, theme=theme, autostart=False)
    assert snap_compare(app, terminal_size=SIZE)


SIZES = [(80, 24), (100, 30), (120, 40), (200, 55)]
"""Issue 12: the console at the sizes people use, from a laptop split to a wide monitor."""


def _size_id(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"


@pytest.mark.parametrize("size", SIZES, ids=_size_id)
@pytest.mark.parametrize("finished", [False, True], ids=["mid-run", "finished"])
def test_run_screen_at_every_size(snap_compare: Any, tmp_path: Path, finished: bool, size: tuple[int, int]) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=finished)
    app = ArenaApp(sweep, theme="dark", autostart=False)
    assert snap_compare(app, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=_size_id)
def test_help_at_every_size(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, theme="dark", autostart=False)
    assert snap_compare(app, terminal_size=size, press=["question_mark"])


@pytest.mark.parametrize("size", SIZES, ids=_size_id)
def test_call_detail_at_every_size(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    from arenatui.store import Store
    from arenatui.tui.screens import CallDetail

    from .support import _result

    sweep, _clock = scripted_sweep(tmp_path, finished=True)
    model, case = sweep.plan.models[0].key, sweep.plan.cases[0].id
    with Store(sweep.db_path) as store:
        store.write_results(sweep.run_id, [
            _result(model, case, 0, "passed", 0.0, output="Paris"),
            _result(model, case, 1, "failed", 0.0, output="Lyon, I believe, is the capital"),
            _result(model, case, 2, "errored", 0.0, attempts=3, error="HTTP 503 from provider: upstream overloaded"),
        ])
    app = ArenaApp(sweep, theme="dark", autostart=False)

    async def open_detail(pilot: Any) -> None:
        detail = CallDetail(sweep, 0, 0)
        await app.push_screen(detail)
        for _ in range(500):  # the rows are read in a thread: wait for them, not for a time
            if "loading" not in str(detail.query_one("#detail-text").render()):
                break
            await pilot.pause(0.01)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_detail)

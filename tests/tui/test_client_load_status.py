"""The run screen's header shows the client's own CPU load, and warns while arenatui itself is the bottleneck."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenatui.kernel.events import ClientLoadSampled
from arenatui.tui.app import ArenaApp
from arenatui.tui.widgets import StatusBar

from .support import scripted_sweep

pytestmark = pytest.mark.anyio


async def test_header_shows_client_cpu_and_the_overload_warning(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(160, 48)) as pilot:
        status = app.run_screen.query_one(StatusBar)
        assert "client CPU" not in status.text.plain  # no sample yet: nothing to claim
        sweep.live.on_event(ClientLoadSampled(0.42, 1.0, 1001.0, 0.0))
        app.run_screen.refresh_now()
        await pilot.pause()
        assert "client CPU 42%" in status.text.plain and "client-bound" not in status.text.plain
        for i in range(5):  # five seconds above 80% of a core: sustained
            sweep.live.on_event(ClientLoadSampled(0.97, 1.0, 1002.0 + i, 0.0))
        app.run_screen.refresh_now()
        await pilot.pause()
        assert "client CPU 97%" in status.text.plain and "client-bound" in status.text.plain

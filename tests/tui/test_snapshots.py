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

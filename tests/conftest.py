"""Shared fixtures: every test gets its own ARENATUI_HOME so nothing touches the user's real data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "sample_configs" / "demo.toml"

# A listing prints a table when COLUMNS is set and tab-separated columns into a pipe otherwise (issue 37), so no test
# may inherit the width of whatever ran it: pytest-xdist's workers export COLUMNS=80 and LINES=24, a terminal its
# own. Cleared once here, before any fixture of any scope; a test that needs a width sets it (monkeypatch.setenv).
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)


@pytest.fixture(autouse=True)
def arena_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "arena-home"
    monkeypatch.setenv("ARENATUI_HOME", str(home))
    return home


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "results.db"

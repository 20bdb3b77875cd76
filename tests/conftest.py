"""Shared fixtures: every test gets its own ARENATUI_HOME so nothing touches the user's real data."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "sample_configs" / "demo.toml"


@pytest.fixture(autouse=True)
def arena_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "arena-home"
    monkeypatch.setenv("ARENATUI_HOME", str(home))
    # A listing prints a table when COLUMNS is set and tab-separated columns into a pipe otherwise (issue 37): a
    # test never inherits the width of whatever ran it (a terminal, CI, an earlier test); one that needs it sets it
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    return home


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "results.db"

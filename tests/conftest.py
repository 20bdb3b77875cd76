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
    return home


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "results.db"

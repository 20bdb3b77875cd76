"""Where arenatui keeps things by default (platformdirs); ARENATUI_HOME overrides all of them (tests, CI)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "arenatui"


def _home() -> Path | None:
    h = os.environ.get("ARENATUI_HOME")
    return Path(h) if h else None


def data_dir() -> Path:
    h = _home()
    return h / "data" if h else Path(platformdirs.user_data_dir(APP, appauthor=False))


def config_dir() -> Path:
    h = _home()
    return h / "config" if h else Path(platformdirs.user_config_dir(APP, appauthor=False))


def user_themes_dir() -> Path:
    return config_dir() / "themes"


def settings_file() -> Path:
    return config_dir() / "settings.toml"

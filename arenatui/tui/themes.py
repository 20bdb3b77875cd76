"""Themes as data: TOML files turned into Textual themes, plus the remembered choice.

The bundled themes live in ``arenatui/data/themes/`` (the one source of truth, shipped as package
data); the top-level ``themes/`` in a checkout is a symlink to it. Files dropped into
``arenatui.kernel.paths.user_themes_dir()`` are loaded after them and may override a bundled name.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w
from textual.app import App
from textual.color import Color, ColorParseError
from textual.theme import Theme

from arenatui.kernel.paths import settings_file, user_themes_dir

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "data" / "themes"
DEFAULT_THEME = "dark"

STATE_VARIABLES: dict[str, str] = {
    "arena-passed": "#6BBF73",
    "arena-failed": "#E5636A",
    "arena-errored": "#D77AE0",
    "arena-retrying": "#E0A458",
    "arena-in-flight": "#5FA8D3",
    "arena-queued": "#4C5566",
    "arena-marker": "#E0A458",
    "arena-chart": "#5FA8D3",
    "arena-chart-retry": "#E0A458",
    "arena-muted": "#7A8496",
}
"""The app's own colour variables and their fallbacks (a theme without them still works)."""

_COLOUR_KEYS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground", "background",
                "surface", "panel", "boost")


@dataclass(slots=True)
class LoadedThemes:
    themes: list[Theme] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """One line per file that could not be used: the file and what is wrong."""


def _colour(file: Path, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a colour string like \"#5FA8D3\", got {value!r}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ValueError(f"{key} = {value!r} is not a colour (try \"#5FA8D3\" or \"rgb(95,168,211)\")") from None
    return value


def theme_from_toml(file: Path) -> Theme:
    """One theme file → Theme; raises ValueError with a message for people."""
    try:
        raw = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"not valid TOML ({e})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot be read ({e})") from None
    name = raw.pop("name", file.stem)
    if not isinstance(name, str) or not name.strip():
        raise ValueError("name must be a non-empty string")
    if "primary" not in raw:
        raise ValueError("primary is required (the main accent colour)")
    kwargs: dict[str, Any] = {}
    for key in _COLOUR_KEYS:
        if key in raw:
            kwargs[key] = _colour(file, key, raw.pop(key))
    dark = raw.pop("dark", True)
    if not isinstance(dark, bool):
        raise ValueError(f"dark must be true or false, got {dark!r}")
    variables = raw.pop("variables", {})
    if not isinstance(variables, dict):
        raise ValueError("[variables] must be a table of name = \"colour\"")
    vars_out = {}
    for k, v in variables.items():
        vars_out[str(k)] = _colour(file, f"variables.{k}", v) if str(k).startswith("arena-") else str(v)
    if raw:
        raise ValueError(f"unknown {'key' if len(raw) == 1 else 'keys'} {', '.join(sorted(raw))}; expected name, dark, "
                         f"{', '.join(_COLOUR_KEYS)} and a [variables] table")
    return Theme(name=name.strip(), dark=dark, variables=vars_out, **kwargs)


def _files(directory: Path) -> Iterable[Path]:
    try:
        return sorted(p for p in directory.glob("*.toml") if p.is_file())
    except OSError:
        return []


def load_themes(bundled: Path = BUNDLED_DIR, user: Path | None = None) -> LoadedThemes:
    """Bundled themes, then user themes; a broken file becomes a problem line, never an exception."""
    out = LoadedThemes()
    for directory in (bundled, user if user is not None else user_themes_dir()):
        for f in _files(directory):
            try:
                out.themes.append(theme_from_toml(f))
            except ValueError as e:
                out.problems.append(f"{f}: {e}")
    return out


def hide_builtin_themes(app: App[Any], loaded: LoadedThemes) -> None:
    """The palette's theme list: ours and the user's only (Textual's twenty built-in themes besides would bury the
    three the README names). Textual's stay when none of ours loaded: one of them is the fallback."""
    ours = {t.name for t in loaded.themes}
    if not ours:
        return
    for name in list(app.available_themes):
        if name not in ours and name != app.theme:
            app.unregister_theme(name)


def remembered_theme() -> str | None:
    try:
        raw = tomllib.loads(settings_file().read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    theme = raw.get("theme")
    return theme if isinstance(theme, str) else None


def use_themes(app: App[Any], theme: str | None) -> None:
    """Register the bundled and user themes on `app` and choose one: `theme` if given and known, else the one the
    user last chose, else the default (the results browser and the watcher start this way)."""
    loaded = load_themes()
    for t in loaded.themes:
        app.register_theme(t)
    wanted = [theme, remembered_theme(), DEFAULT_THEME]
    app.theme = next((n for n in wanted if n and n in app.available_themes), "textual-dark")
    hide_builtin_themes(app, loaded)


def remember_theme(name: str) -> None:
    """Store the choice in settings.toml, keeping any other settings there."""
    path = settings_file()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        raw = {}
    if raw.get("theme") == name:
        return
    raw["theme"] = name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    except OSError:
        pass  # a read-only config dir must not break the console

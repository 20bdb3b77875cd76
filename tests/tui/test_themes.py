"""Themes as data: bundled files load, user themes are picked up, broken ones are reported, the choice is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenatui.kernel.paths import user_themes_dir
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.tui.app import ArenaApp
from arenatui.tui.themes import BUNDLED_DIR, STATE_VARIABLES, load_themes, remembered_theme
from arenatui.tui.widgets import StatusBar

from .support import sim_project

ROOT = Path(__file__).resolve().parents[2]


def test_bundled_themes_are_the_top_level_themes() -> None:
    # one source of truth: arenatui/data/themes (package data); themes/ in a checkout points at it
    top = ROOT / "themes"
    assert sorted(p.name for p in top.glob("*.toml")) == ["dark.toml", "high-contrast.toml", "light.toml"]
    for p in top.glob("*.toml"):
        assert p.read_bytes() == (BUNDLED_DIR / p.name).read_bytes()


def test_bundled_themes_define_every_state_colour(tmp_path: Path) -> None:
    loaded = load_themes(user=tmp_path)
    assert loaded.problems == []
    names = {t.name for t in loaded.themes}
    assert {"dark", "light", "high-contrast"} <= names
    for t in loaded.themes:
        assert set(STATE_VARIABLES) <= set(t.variables), t.name


def test_broken_user_theme_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('name = "bad"\nprimary = "not-a-colour"\n')
    (tmp_path / "broken.toml").write_text("name = [unclosed\n")
    (tmp_path / "mine.toml").write_text('name = "mine"\nprimary = "#123456"\n[variables]\narena-passed = "#00ff00"\n')
    loaded = load_themes(user=tmp_path)
    assert "mine" in {t.name for t in loaded.themes}
    assert len(loaded.problems) == 2
    assert any("bad.toml" in p and "primary" in p for p in loaded.problems)
    assert any("broken.toml" in p and "TOML" in p for p in loaded.problems)


@pytest.mark.anyio
async def test_app_starts_with_a_broken_theme_and_remembers_the_choice(tmp_path: Path, db_path: Path) -> None:
    user = user_themes_dir()
    user.mkdir(parents=True)
    (user / "oops.toml").write_text('primary = "#123456"\nsparkle = 3\n')
    (user / "mine.toml").write_text('name = "mine"\nprimary = "#336699"\n')
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, theme="light"), db=db_path))
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.1)
        assert app.theme == "light"  # from [project] theme
        assert any("oops.toml" in str(n.message) and "sparkle" in str(n.message) for n in app._notifications)
        app.theme = "mine"
        await pilot.pause(0.1)
        assert app.run_screen.query_one(StatusBar).display
    assert remembered_theme() == "mine"
    sweep2 = Sweep(SweepOptions(project=sim_project(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path),
                                db=db_path))
    assert ArenaApp(sweep2, autostart=False).theme == "mine"
    assert ArenaApp(sweep2, theme="high-contrast", autostart=False).theme == "high-contrast"

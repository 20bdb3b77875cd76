"""Issue 9 item 23: on resume, what changed in the project file is said, and the stored configuration is used."""

from __future__ import annotations

from pathlib import Path

from arenatui.project import load_project
from arenatui.session.resume import project_changes

PROJECT = """
[project]
name = "p"

[[models]]
key = "m1"
provider = "sim"

[[cases]]
id = "a"
input = "1+1"
expected = "2"

[[cases]]
id = "b"
input = "2+2"
expected = "4"
"""


def test_an_unchanged_file_says_nothing(tmp_path: Path) -> None:
    f = tmp_path / "arena.toml"
    f.write_text(PROJECT, encoding="utf-8")
    assert project_changes(str(f), load_project(f)) == []


def test_changed_cases_and_settings_are_named(tmp_path: Path) -> None:
    f = tmp_path / "arena.toml"
    f.write_text(PROJECT, encoding="utf-8")
    stored = load_project(f)
    f.write_text(PROJECT.replace('expected = "4"', 'expected = "four"').replace('id = "a"', 'id = "c"')
                 + "\n[run]\nconcurrency = 9\n", encoding="utf-8")
    (note,) = project_changes(str(f), stored)
    assert "1 case added (c)" in note and "1 case removed (a)" in note and "1 case changed (b)" in note
    assert "settings changed in [run]" in note and "stored configuration is used" in note


def test_a_file_that_no_longer_loads_or_is_gone_never_stops_the_resume(tmp_path: Path) -> None:
    f = tmp_path / "arena.toml"
    f.write_text(PROJECT, encoding="utf-8")
    stored = load_project(f)
    f.write_text("[[models]\nbroken", encoding="utf-8")
    assert project_changes(str(f), stored) == [
        f"the project file {f} no longer loads; the run's stored configuration is used"]
    f.unlink()
    assert project_changes(str(f), stored) == []

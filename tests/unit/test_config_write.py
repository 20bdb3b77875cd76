"""Editing a project file in place (`arena tune --write`): line endings, mode, owner and symlinks kept, read-only
files refused, layouts a hand parser could not follow (inline tables, ''' strings) edited by tomlkit."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from arenatui.cli import main
from arenatui.kernel.errors import ConfigError
from arenatui.project.write import write_max_concurrency

PROJECT = (
    "# a project kept on Windows\n"
    "[project]\n"
    'name = "w"   # a name\n'
    "\n"
    "[[models]]\n"
    'key = "a"   # no max_concurrency yet\n'
    'provider = "sim"\n'
    "\n"
    "[[models]]\n"
    'key = "b"\n'
    'provider = "sim"\n'
    "max_concurrency = 2  # was set by hand\n"
    "notes = '''\n"
    "two lines\n"
    "of notes'''\n"
    "\n"
    "[[cases]]\n"
    'id = "c1"\n'
    'input = "q"\n'
)


def _models(p: Path) -> dict[str, int | None]:
    return {m["key"]: m.get("max_concurrency") for m in tomllib.loads(p.read_text(encoding="utf-8"))["models"]}


def test_a_crlf_file_keeps_crlf_on_every_line_and_only_the_values_change(tmp_path: Path) -> None:
    p = tmp_path / "arena.toml"
    p.write_bytes(PROJECT.replace("\n", "\r\n").encode())
    write_max_concurrency(p, {"a": 5, "b": 7})
    raw = p.read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n")  # no line turned LF, the added one included
    before = PROJECT.replace("\n", "\r\n").encode().splitlines(keepends=True)
    after = raw.splitlines(keepends=True)
    assert len(after) == len(before) + 1  # one line added for "a", every other line but b's value untouched
    changed = [line for line in after if line not in before]
    assert changed == [b"max_concurrency = 5\r\n", b"max_concurrency = 7  # was set by hand\r\n"]
    assert _models(p) == {"a": 5, "b": 7}
    assert tomllib.loads(raw.decode())["models"][1]["notes"].replace("\r\n", "\n") == "two lines\nof notes"


def test_mode_and_owner_are_kept(tmp_path: Path) -> None:
    p = tmp_path / "arena.toml"
    p.write_text(PROJECT, encoding="utf-8")
    p.chmod(0o600)  # a project file can hold header tokens
    if os.geteuid() == 0:
        os.chown(p, 65534, 65534)  # another user's file, writable by root
    owner = (p.stat().st_uid, p.stat().st_gid)
    write_max_concurrency(p, {"a": 3})
    st = p.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert (st.st_uid, st.st_gid) == owner
    assert _models(p)["a"] == 3
    assert [x.name for x in tmp_path.iterdir()] == ["arena.toml"]  # no temporary file left beside it


def test_a_read_only_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    p = tmp_path / "arena.toml"
    p.write_text(PROJECT, encoding="utf-8")
    p.chmod(0o444)
    with pytest.raises(ConfigError, match="is read-only"):
        write_max_concurrency(p, {"a": 3})
    assert p.read_text(encoding="utf-8") == PROJECT


def test_arena_tune_write_refuses_a_read_only_file_with_exit_2_before_tuning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "arena.toml"
    p.write_text(PROJECT, encoding="utf-8")
    p.chmod(0o444)
    code = main(["tune", "--project", str(p), "--write", "--db", str(tmp_path / "t.db")])
    err = capsys.readouterr().err
    assert code == 2
    assert "is read-only" in " ".join(err.split()) and "Traceback" not in err  # wrapped at 100 columns
    assert "Tuning with" not in err  # refused before any call was made
    assert not (tmp_path / "t.db").exists()


def test_a_symlink_is_written_through_to_its_target_and_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "projects" / "real.toml"
    real.parent.mkdir()
    real.write_text(PROJECT, encoding="utf-8")
    link = tmp_path / "arena.toml"
    link.symlink_to(real)
    written = write_max_concurrency(link, {"b": 4})
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert _models(real)["b"] == 4
    assert written.target == real.resolve() and written.link == link
    assert "through the symlink" in written.describe()


def test_inline_tables_are_edited_instead_of_refused(tmp_path: Path) -> None:
    p = tmp_path / "inline.toml"
    p.write_text('models = [{ key = "a", provider = "sim" },  # first\n'
                 '          { key = "b", provider = "sim", max_concurrency = 1 }]\n', encoding="utf-8")
    write_max_concurrency(p, {"a": 3, "b": 6})
    assert _models(p) == {"a": 3, "b": 6}
    assert "# first" in p.read_text(encoding="utf-8")


def test_an_unknown_model_key_writes_nothing_and_says_what_to_set_by_hand(tmp_path: Path) -> None:
    p = tmp_path / "arena.toml"
    p.write_text(PROJECT, encoding="utf-8")
    with pytest.raises(ConfigError, match="set the values by hand: a: max_concurrency = 2; zz: max_concurrency = 3"):
        write_max_concurrency(p, {"a": 2, "zz": 3})
    assert p.read_text(encoding="utf-8") == PROJECT

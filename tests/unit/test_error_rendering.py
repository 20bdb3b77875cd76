"""Error paragraphs quote user files; control characters in them must not reach the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenatui.cli import main


def test_escape_sequences_in_a_bad_key_are_shown_not_sent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "evil.toml"
    project.write_text('[project]\nname = "x"\n"evil\\u001b]0;pwned\\u0007\\u009bkey" = 1\n', encoding="utf-8")
    code = main(["evaluate", "--project", str(project), "--db", str(tmp_path / "r.db")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:")
    assert "\x1b" not in err and "\x07" not in err and "\x9b" not in err
    assert "␛]0;pwned\\x07\\x9bkey" in err

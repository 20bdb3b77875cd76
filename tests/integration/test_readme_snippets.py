"""The README's Python snippets run as printed (issue 37 item 15): each ```python block, in a fresh directory of its
own with its own data directory, in a child process, must end with exit 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def python_snippets() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


@pytest.mark.parametrize("n", range(len(python_snippets())))
def test_the_readmes_python_snippet_runs_as_printed(tmp_path: Path, n: int) -> None:
    snippet = python_snippets()[n]
    (tmp_path / "snippet.py").write_text(snippet, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARENATUI_HOME": str(tmp_path / "home")}
    p = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr


def test_the_readme_has_a_python_snippet() -> None:
    assert python_snippets() and "arenatui.bench(" in python_snippets()[0]

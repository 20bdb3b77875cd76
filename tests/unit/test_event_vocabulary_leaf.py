"""The event vocabulary is a leaf: importing it (the store writer, live metrics, tuning and load need it) loads no
runner, plan, config, scoring or `regex` (checked in a fresh interpreter, so nothing else loaded them)."""

from __future__ import annotations

import json
import subprocess
import sys


def _loaded_by(module: str) -> list[str]:
    code = (f"import sys\nbefore = set(sys.modules)\nimport {module}\n"
            "import json\nprint(json.dumps(sorted(set(sys.modules) - before)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(out.stdout)
    return loaded


def test_importing_the_events_loads_no_runner_scoring_or_regex() -> None:
    loaded = _loaded_by("arenatui.kernel.events")
    ours = sorted(m for m in loaded if m.startswith("arenatui"))
    assert ours == ["arenatui", "arenatui.kernel", "arenatui.kernel.events"], ours
    assert "regex" not in loaded and "anyio" not in loaded and "numpy" not in loaded


def test_the_runner_is_still_reachable_from_the_package() -> None:
    code = "from arenatui.engine import Runner\nfrom arenatui.engine.runner import Runner as R\nprint(Runner is R)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"

"""The core layers never import Textual (checked in a fresh interpreter, so nothing else loaded it)."""

from __future__ import annotations

import subprocess
import sys

CORE = [
    "arenatui.config", "arenatui.plan", "arenatui.providers", "arenatui.providers.sim", "arenatui.engine",
    "arenatui.store", "arenatui.stats", "arenatui.session.live", "arenatui.session.sweep",
    "arenatui.commands.headless", "arenatui.cli",
    "arenatui.tuning", "arenatui.tuning.levels", "arenatui.tuning.controller", "arenatui.commands.tune_runs",
    "arenatui.commands.tune",
]


def test_core_layers_do_not_import_textual() -> None:
    code = (
        "import sys\n"
        f"for m in {CORE!r}:\n"
        "    __import__(m)\n"
        "bad = sorted(k for k in sys.modules if k == 'textual' or k.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"textual imported by the core: {out.stdout}"

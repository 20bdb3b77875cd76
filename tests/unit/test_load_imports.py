"""The load core (arrivals, driver, figures, store, shards, headless CLI) never imports Textual."""

from __future__ import annotations

import subprocess
import sys

LOAD = ["arenatui.load.arrivals", "arenatui.load.driver", "arenatui.load.metrics", "arenatui.load.live",
        "arenatui.load.store", "arenatui.load.run", "arenatui.load.processes", "arenatui.commands.load_report",
        "arenatui.commands.load", "arenatui.store.load_queries"]


def test_load_core_does_not_import_textual() -> None:
    code = (f"import sys\nfor m in {LOAD!r}:\n    __import__(m)\n"
            "print(','.join(sorted(k for k in sys.modules if k == 'textual' or k.startswith('textual.'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"textual imported by the load core: {out.stdout}"

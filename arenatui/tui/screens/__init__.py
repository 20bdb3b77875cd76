"""Screens of the console, one module each: the run screen, and the screens it opens (detail, dialogs, results)."""

from arenatui.safe_text import printable
from arenatui.tui.screens.detail import CallDetail
from arenatui.tui.screens.dialogs import Confirm, Help, ValueInput
from arenatui.tui.screens.results import Results
from arenatui.tui.screens.run import RunScreen, concurrency_step

__all__ = ["CallDetail", "Confirm", "Help", "Results", "RunScreen", "ValueInput", "concurrency_step", "printable"]

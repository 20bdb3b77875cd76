"""Screens of the console, one module each: the run screen and the screens it opens (call detail, dialogs); the results
view is its own package, `arenatui.tui.results`."""

from arenatui.kernel.text import printable
from arenatui.tui.results.screen import Results
from arenatui.tui.screens.detail import CallDetail
from arenatui.tui.screens.dialogs import Confirm, Help, ValueInput
from arenatui.tui.screens.run import RunScreen, concurrency_step

__all__ = ["CallDetail", "Confirm", "Help", "Results", "RunScreen", "ValueInput", "concurrency_step", "printable"]

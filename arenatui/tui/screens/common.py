"""Formatting shared by the console's screens: numbers and error counts the same way everywhere."""

from __future__ import annotations

from arenatui.kernel.units import ms as fmt_num  # milliseconds, as every view writes them
from arenatui.present.wording import FAILURE_SHORT, fmt_errors, fmt_failures  # one format for every view, headless too

__all__ = ["FAILURE_SHORT", "fmt_errors", "fmt_failures", "fmt_num"]

"""Formatting shared by the console's screens: numbers and error counts the same way everywhere."""

from __future__ import annotations

from arenatui.wording import FAILURE_SHORT, fmt_errors, fmt_failures  # one format for every view, headless too


def fmt_num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    return (f"{v:.0f}" if abs(v) >= 10 else f"{v:.1f}") + unit


__all__ = ["FAILURE_SHORT", "fmt_errors", "fmt_failures", "fmt_num"]

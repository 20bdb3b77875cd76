"""Sparklines: values as one line of eighth blocks, or as a chart several lines tall."""

from __future__ import annotations

from collections.abc import Sequence

from arenatui.present.columns import BLOCKS

SPARK = BLOCKS
"""Eighth blocks, empty to full: one bar of a sparkline."""


def spark(values: Sequence[float], width: int, top: float | None = None) -> str:
    """Values as a one-line bar chart `width` characters wide (averaged into buckets, newest on the right)."""
    if width <= 0:
        return ""
    vals = _fit(values, width)
    hi = top if top is not None else max(vals, default=0.0)
    if hi <= 0:
        return (" " * (width - len(vals))) + ("▁" * len(vals) if vals else "")
    out = []
    for v in vals:
        out.append(SPARK[min(8, max(1 if v > 0 else 0, round(v / hi * 8)))])
    return " " * (width - len(out)) + "".join(out)



def tall_spark(values: Sequence[float], width: int, height: int, top: float | None = None) -> list[str]:
    """Values as a bar chart `height` lines tall (eighth blocks), newest on the right; lines top to bottom."""
    vals = _fit(values, width)
    hi = top if top is not None else max(vals, default=0.0)
    units = [0 if hi <= 0 else min(height * 8, max(1 if v > 0 else 0, round(v / hi * height * 8))) for v in vals]
    pad = " " * (width - len(vals))
    lines = []
    for r in range(height):
        floor = (height - 1 - r) * 8
        lines.append(pad + "".join(SPARK[max(0, min(8, u - floor))] for u in units))
    return lines


def _fit(values: Sequence[float], width: int) -> list[float]:
    vals = list(values)
    if len(vals) > width:
        step = len(vals) / width
        vals = [sum(vals[int(i * step): max(int(i * step) + 1, int((i + 1) * step))]) /
                max(1, int((i + 1) * step) - int(i * step)) for i in range(width)]
    return vals



"""Terminal charts for the results view and the CLI: a histogram with a marked zero, and a labelled scatter plot.

Both return `rich.text.Text` built from characters only (no markup, no colour literals), so a theme's
foreground applies and names from config enter as plain text. Textual-free: `arena compare` draws the same
histogram as the results view's compare tab.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from rich.text import Text

from arenatui.kernel.text import printable
from arenatui.kernel.units import number
from arenatui.present.columns import BLOCKS
from arenatui.tuning.evidence import LevelEvidence

MARKERS = "123456789abcdefghijklmnopqrstuvwxyz"
"""Point labels in a scatter, by model index: the legend says which is which."""


def _num(v: float) -> str:
    return f"{v:+.3f}" if abs(v) < 10 else f"{v:+.0f}"


def histogram(values: Sequence[float] | np.ndarray, width: int, height: int, *, zero: float = 0.0,
              interval: tuple[float, float] | None = None) -> Text:
    """Counts of `values` in `width` bins drawn `height` rows tall; the bin holding `zero` is drawn as a rule
    where it is empty, and the interval's ends are marked [ ] under the bars."""
    v = np.asarray(values, dtype=np.float64)
    width = max(10, width)
    height = max(2, height)
    if v.size == 0:
        return Text("(nothing to draw)")
    lo = min(float(v.min()), zero)
    hi = max(float(v.max()), zero)
    if hi - lo < 1e-12:
        lo, hi = lo - 0.5, hi + 0.5
    span = hi - lo
    lo, hi = lo - span * 0.02, hi + span * 0.02

    def col(x: float) -> int:
        return min(width - 1, max(0, int((x - lo) / (hi - lo) * width)))

    # Resampled means of 0/1 scores sit on a lattice: with more bins than lattice points some bins would be
    # empty and the bars comb-toothed, so use no more bins than distinct values and widen each to fit.
    bins = max(1, min(width, int(np.unique(v).size)))
    per_bin = np.bincount(np.clip(((v - lo) / (hi - lo) * bins).astype(np.int64), 0, bins - 1), minlength=bins)
    counts = per_bin[np.arange(width) * bins // width]
    top = int(counts.max()) or 1
    zc = col(zero)
    eighths = counts / top * height * 8
    out = Text()
    for row in range(height - 1, -1, -1):
        line = []
        for c in range(width):
            fill = round(eighths[c] - row * 8)
            if fill <= 0 and c == zc:
                line.append("│")
            else:
                line.append(BLOCKS[max(0, min(8, fill))])
        out.append("".join(line) + "\n")
    axis = ["─"] * width
    axis[zc] = "┼"
    if interval is not None and not any(math.isnan(x) for x in interval):
        axis[col(interval[0])] = "["
        axis[col(interval[1])] = "]"
    out.append("".join(axis) + "\n")
    labels = [" "] * width
    for x, text in ((lo, _num(lo)), (hi, _num(hi))):
        start = 0 if x == lo else width - len(text)
        labels[start:start + len(text)] = list(text)
    zero_label = "0"
    if 0 < zc < width - 1 and all(ch == " " for ch in labels[max(0, zc - 1):zc + 2]):
        labels[zc] = zero_label
    out.append("".join(labels))
    return out


@dataclass(frozen=True, slots=True)
class Point:
    label: str
    """The model's name (printed literally in the legend)."""
    x: float
    y: float
    on_front: bool


def _ticks(lo: float, hi: float, log: bool, fmt: Callable[[float], str]) -> tuple[str, str]:
    return (fmt(10**lo), fmt(10**hi)) if log else (fmt(lo), fmt(hi))


def scatter(points: Sequence[Point], width: int, height: int, *, x_name: str, y_name: str,
            log_x: bool = False, x_unit: str = "", x_fmt: Callable[[float], str] = number) -> Text:
    """Points at their (x, y), numbered; front points drawn as their number in bold. Lower x and higher y are
    better; the legend lists each number's model and whether it is on the Pareto front."""
    width = max(20, width)
    height = max(4, height)
    usable = [p for p in points if not (math.isnan(p.x) or math.isnan(p.y)) and (p.x > 0 or not log_x)]
    out = Text()
    out.append(f"{y_name} ↑   {x_name} → ({'log scale, ' if log_x else ''}lower is better)\n", "bold")
    if not usable:
        out.append("(nothing to draw)")
        return out
    xs = [math.log10(p.x) if log_x else p.x for p in usable]
    ys = [p.y for p in usable]
    x_lo, x_hi = min(xs), max(xs)
    # the ends are labelled with the points' own values (10 ** log10(x) can print one digit below the leaderboard's)
    ticks = (x_fmt(min(p.x for p in usable)), x_fmt(max(p.x for p in usable)))
    y_lo, y_hi = min(ys), max(ys)
    if x_hi - x_lo < 1e-12:
        x_lo, x_hi = x_lo - 1, x_hi + 1
        ticks = _ticks(x_lo, x_hi, log_x, x_fmt)
    scores = y_lo >= 0.0 and y_hi <= 1.0
    if y_hi - y_lo < 1e-12:
        y_lo, y_hi = y_lo - 0.05, y_hi + 0.05
    pad_y = (y_hi - y_lo) * 0.1
    y_lo, y_hi = y_lo - pad_y, y_hi + pad_y
    if scores:  # a score axis stays within 0-1: "1.025" at the top read as a score above 1
        y_lo, y_hi = max(0.0, y_lo), min(1.0, y_hi)
    gutter = 7
    plot_w = width - gutter - 1
    grid: list[list[tuple[str, bool]]] = [[(" ", False)] * plot_w for _ in range(height)]
    index = {id(p): i for i, p in enumerate(points)}
    for p, x, y in zip(usable, xs, ys, strict=True):
        c = min(plot_w - 1, max(0, round((x - x_lo) / (x_hi - x_lo) * (plot_w - 1))))
        r = min(height - 1, max(0, round((y_hi - y) / (y_hi - y_lo) * (height - 1))))
        mark = MARKERS[index[id(p)] % len(MARKERS)]
        if grid[r][c][0] != " ":
            mark = "+"  # two models at the same place: the legend still lists both
        grid[r][c] = (mark, p.on_front)
    for r, row in enumerate(grid):
        y_val = y_hi - r * (y_hi - y_lo) / (height - 1)
        out.append(f"{y_val:6.3f} │" if r in (0, height - 1) or r == height // 2 else "       │")
        for ch, front in row:
            out.append(ch, "bold reverse" if front and ch != " " else "")
        out.append("\n")
    out.append(" " * gutter + "└" + "─" * plot_w + "\n")
    left, right = ticks
    right = right + x_unit
    out.append(" " * (gutter + 1) + left + " " * max(1, plot_w - len(left) - len(right)) + right + "\n")
    for i, p in enumerate(points):
        out.append(f" {MARKERS[i % len(MARKERS)]} ", "bold reverse" if p.on_front else "")
        out.append(" " + printable(p.label, newlines=False))
        out.append("  on the Pareto front\n" if p.on_front else "\n")
    out.rstrip()
    return out


GOODPUT_LEGEND = "█ at least (95%)  ▓ estimate  ─┤ up to  ░ not measured  · not tried"


def goodput_by_level(levels: Sequence[LevelEvidence], width: int, *, knee: int | None = None,
                     knee_word: str = "optimum") -> list[str]:
    """Goodput by level as horizontal bars, one row per level from 1 to the highest held, fitted to `width`: a
    measured level's bar is solid up to the lower end of its 95% interval, shaded up to its goodput, and a whisker
    runs to the upper end; a level held but not measured is a light bar; levels never held are one '·' row each
    run of them. Each row ends with its goodput and 429 share, and the knee (the verdict's level) is marked."""
    held = {r.level: r for r in levels}
    if not held:
        return []
    scale = max((r.goodput_interval[1] if r.goodput_interval else (r.goodput or 0.0)) for r in held.values())
    scale = scale if scale > 0 else 1.0
    fig_w = max(len(_figures(r, knee, knee_word)) for r in held.values())
    top = max(held)
    rows: list[tuple[str, LevelEvidence | None]] = []
    lv = 1
    while lv <= top:
        if lv in held:
            rows.append((str(lv), held[lv]))
            lv += 1
            continue
        end = lv
        while end + 1 not in held:
            end += 1
        rows.append((str(lv) if end == lv else f"{lv}–{end}", None))
        lv = end + 1
    lw = max(len(label) for label, _ in rows)
    bar_w = max(8, width - lw - 3 - fig_w)
    return [f"{label:>{lw}} ·  not tried" if r is None else
            f"{label:>{lw}} │{_goodput_bar(r, scale, bar_w)} {_figures(r, knee, knee_word)}".rstrip()
            for label, r in rows]


def _goodput_bar(r: LevelEvidence, scale: float, width: int) -> str:
    def cell(v: float) -> int:
        return max(0, min(width, round(v / scale * width)))

    g = r.goodput or 0.0
    if not r.measured or r.goodput_interval is None:
        return ("░" * cell(g)).ljust(width)
    lo, hi = r.goodput_interval
    a, b, c = cell(lo), max(cell(lo), cell(g)), max(cell(g), cell(hi))
    bar = "█" * a + "▓" * (b - a)
    if c > b:
        bar += "─" * (c - b - 1) + "┤"
    return bar.ljust(width)[:width]


def _figures(r: LevelEvidence, knee: int | None, knee_word: str) -> str:
    from arenatui.present.level_figures import fmt_rate, fmt_share

    g = "–" if r.goodput is None else f"{fmt_rate(r.goodput)}/s"
    text = f"{g:>7}  429s {fmt_share(r.limited_share):>4}"
    if r.level == knee:
        text += f"  ◀ {knee_word}"
    elif not r.measured:
        text += "  short"
    return text

"""The reports' SVG charts: quality against a cost (the frontier) and goodput by concurrency level. Every label in
them is untrusted text (model names) and escaped here; the drawing itself is ours."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any

from arenatui.kernel.units import fixed, pct, score
from arenatui.present.document import h as _h


def _chart(w: int, h: int, drawing: str) -> str:
    """An SVG chart of drawing size w × h that keeps its width up to 560 px and scrolls sideways in its box on a
    narrower page: shrunk to a phone's width its 10-unit labels were 5-6 px (issue 37 item 16)."""
    return (f'<div class="wide"><svg class="frontier" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
            f'style="min-width:{min(w, 560)}px" role="img">{drawing}</svg></div>')


SVG_W, SVG_H = 640, 320
"""The frontier's drawing size (it scales down to the page's width: a phone's too)."""
SVG_MARGIN = (64, 24, 48, 16)
"""Left (the quality ticks), right, bottom (the x ticks and the axis name), top."""


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    return [lo + (hi - lo) * i / n for i in range(n + 1)]


LOG_SPAN = 5.0
"""A cost axis whose values span this factor or more is drawn on a log scale (as the console's frontier is): on a
linear one the cheap models crowd into one corner."""


def scatter(points: list[tuple[str, float, float, bool]], x_label: str, x_fmt: Callable[[float], str],
             muted: dict[str, str] | None = None, *, log_x: bool = False, out: Collection[str] = ()) -> str:
    """An inline SVG scatter of quality (y) against a cost (x), the Pareto front filled, ticked axes. A label
    starts right of its point in the left half and ends left of it in the right half, so it stays inside. `muted`
    (model -> why: eliminated, not enough evidence) are drawn greyed with why, never as a front point; `out`: models
    drawn as ruled out (a bake-off's eliminated candidates); `log_x`: a log scale when the costs span LOG_SPAN or
    more."""
    muted = muted or {}
    if not points:
        return "<p>No model has both figures.</p>"
    w, h = SVG_W, SVG_H
    left, right, bottom, top = SVG_MARGIN
    raw = [p[1] for p in points]
    log = log_x and min(raw) > 0 and max(raw) / min(raw) >= LOG_SPAN
    if log:
        x_fmt_raw = x_fmt
        points = [(n, math.log10(x), y, f) for n, x, y, f in points]

        def x_fmt(v: float) -> str:
            return x_fmt_raw(10 ** v)

        x_label += ", log scale"
    xs = [p[1] for p in points]
    ys = [p[2] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 <= x0:
        x0, x1 = x0 * 0.9, (x1 * 1.1 if x1 > 0 else 1.0)
    if y1 <= y0:
        y0, y1 = y0 - 0.05, y1 + 0.05
    span_x, span_y = x1 - x0, y1 - y0
    x0, x1 = x0 - span_x * 0.08, x1 + span_x * 0.08  # room for a point's mark at either end
    y0, y1 = y0 - span_y * 0.1, y1 + span_y * 0.1

    def sx(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * (w - left - right)

    def sy(v: float) -> float:
        return h - bottom - (v - y0) / (y1 - y0) * (h - bottom - top)

    mid = (left + w - right) / 2
    dots = "".join(
        f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="5" '
        f'class="{"out" if name in out else "muted" if name in muted else "front" if front else "dot"}"/>'
        f'<text class="{"label muted-label" if name in muted else "label"}" '
        f'x="{sx(x) + (8 if sx(x) < mid else -8):.1f}" y="{sy(y) - 7:.1f}" font-size="11" '
        f'text-anchor="{"start" if sx(x) < mid else "end"}">{_h(name)}'
        f'{_h(f" ({muted[name]})") if name in muted else ""}</text>'
        for name, x, y, front in points)
    ticks = "".join(
        f'<line x1="{sx(v):.1f}" y1="{h - bottom}" x2="{sx(v):.1f}" y2="{h - bottom + 5}" stroke="#999"/>'
        f'<text class="tick" x="{sx(v):.1f}" y="{h - bottom + 17}" font-size="10" text-anchor="middle">'
        f'{_h(x_fmt(v))}</text>' for v in _ticks(x0 + span_x * 0.08, x1 - span_x * 0.08))
    ticks += "".join(
        f'<line x1="{left - 5}" y1="{sy(v):.1f}" x2="{left}" y2="{sy(v):.1f}" stroke="#999"/>'
        f'<text class="tick" x="{left - 8}" y="{sy(v) + 3:.1f}" font-size="10" text-anchor="end">{score(v)}</text>'
        for v in _ticks(y0 + span_y * 0.1, y1 - span_y * 0.1))
    axes = (f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="#999"/>'
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#999"/>'
            f'<text class="axis" x="{mid}" y="{h - 8}" font-size="12" text-anchor="middle">{_h(x_label)} (lower is '
            f'better)</text><text class="axis" x="14" y="{(h - bottom + top) / 2}" font-size="12" '
            f'transform="rotate(-90 14 {(h - bottom + top) / 2})" text-anchor="middle">quality</text>')
    return _chart(w, h, axes + ticks + dots)


def goodput_svg(c: dict[str, Any]) -> str:
    """One model's goodput by level as an SVG bar chart (the report's concurrency section): a bar per level held,
    solid when measured, pale when not; its 95% interval as a whisker; the 429 share as a red bar under it; the
    verdict's level outlined and labelled; levels never held marked '·' on the axis."""
    levels = {int(lv["level"]): lv for lv in c["levels"]}
    top_level = max(levels)
    knee = c.get("recommended") if c.get("kind") in ("optimum", "rising", "capped") else None
    scale = max(max(float((lv["goodput_95"] or [0, lv["goodput"] or 0])[1]) for lv in levels.values()), 1e-9)
    # at least 380 wide: the legend's first line fits (at 240 it ran off the chart's right edge)
    w, h, left, bottom, top = max(380, 40 + 34 * top_level), 212, 44, 64, 16
    slot = (w - left - 10) / top_level
    plot = h - bottom - top

    def y(v: float) -> float:
        return h - bottom - v / scale * plot

    out: list[str] = [f'<line x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}" stroke="#999"/>',
                      f'<text x="{left - 6}" y="{top + 4}" font-size="10" text-anchor="end">{fixed(scale, 1)}/s</text>',
                      f'<text x="{left - 6}" y="{h - bottom}" font-size="10" text-anchor="end">0</text>']
    for n in range(1, top_level + 1):
        x = left + (n - 1) * slot + slot * 0.15
        bw = slot * 0.7
        lv = levels.get(n)
        out.append(f'<text x="{x + bw / 2:.1f}" y="{h - bottom + 14}" font-size="10" text-anchor="middle">'
                   f'{n if lv else "·"}</text>')
        if lv is None:
            continue
        g = lv["goodput"] or 0.0
        fill = "#4a7ab5" if lv["measured"] else "#c5d4e8"
        stroke = ' stroke="#000" stroke-width="2"' if n == knee else ""
        out.append(f'<rect x="{x:.1f}" y="{y(g):.1f}" width="{bw:.1f}" height="{h - bottom - y(g):.1f}" '
                   f'fill="{fill}"{stroke}><title>level {n}: {fixed(g, 2)}/s, 429s {pct(lv["limited_share"])}'
                   f'{"" if lv["measured"] else " (not measured)"}</title></rect>')
        if lv["goodput_95"]:
            lo, hi = lv["goodput_95"]
            cx = x + bw / 2
            out.append(f'<line x1="{cx:.1f}" y1="{y(lo):.1f}" x2="{cx:.1f}" y2="{y(hi):.1f}" stroke="#222"/>'
                       f'<line x1="{cx - 4:.1f}" y1="{y(hi):.1f}" x2="{cx + 4:.1f}" y2="{y(hi):.1f}" stroke="#222"/>'
                       f'<line x1="{cx - 4:.1f}" y1="{y(lo):.1f}" x2="{cx + 4:.1f}" y2="{y(lo):.1f}" stroke="#222"/>')
        share = lv["limited_share"] or 0.0
        if share:
            out.append(f'<rect x="{x:.1f}" y="{h - bottom + 20}" width="{bw * min(1.0, share):.1f}" height="6" '
                       f'fill="#c0392b"><title>429s {pct(share)}</title></rect>')
        if n == knee:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{y(g) - 4:.1f}" font-size="10" text-anchor="middle">'
                       f'{_h(str(c["kind"]))}</text>')
    out.append(f'<text x="8" y="{h - 20}" font-size="10">level (· never held) · bar: goodput/s, pale: not '
               f'measured</text><text x="8" y="{h - 8}" font-size="10">whisker: 95% · red: 429 share</text>')
    return _chart(w, h, "".join(out))

"""Pareto frontier: the models no other model beats on both quality and a cost (spend, latency)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def pareto_front(quality: Sequence[float | None], cost: Sequence[float | None]) -> list[bool]:
    """Per point, whether it is Pareto-optimal (higher quality, lower cost); a point missing either is not.

    A point is dominated when another is at least as good on both and strictly better on one.
    """
    pts = [(q, c) if q is not None and c is not None and math.isfinite(q) and math.isfinite(c) else None
           for q, c in zip(quality, cost, strict=True)]
    out = []
    for i, p in enumerate(pts):
        if p is None:
            out.append(False)
            continue
        dominated = any(o is not None and j != i and o[0] >= p[0] and o[1] <= p[1] and (o[0] > p[0] or o[1] < p[1])
                        for j, o in enumerate(pts))
        out.append(not dominated)
    return out

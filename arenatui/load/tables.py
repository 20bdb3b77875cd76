"""A load run's two tables as Rich renderables: per segment (rates, latencies, and beside them timeouts, errors,
429s and goodput) and percentiles. Shared by `arena load` and the results screen (a renderable, not a view)."""

from __future__ import annotations

import math

from rich.table import Table

from arenatui.load.figures import Figures, LoadOutcome


def ms(v: float) -> str:
    if math.isnan(v):
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def _label(f: Figures) -> str:
    return "all" if f.segment is None else str(f.segment)


def segment_table(outcome: LoadOutcome) -> Table:
    t = Table(title="Load run: per segment (latencies from schedule; from send in the p99 send column)",
              header_style="bold", title_justify="left")
    for col in ("seg", "rate/s", "offered/s", "achieved/s", "reqs", "lat p50", "lat p99", "lat p99 send", "TTFT p50",
                "TTFT p99", "ITL p50", "lag p99", "out tok/s", "timeout", "error", "429", "goodput", "good/s", ""):
        t.add_column(col, justify="left" if col in ("seg", "") else "right")
    rows = [*outcome.segments, outcome.run] if len(outcome.segments) > 1 else [outcome.run]
    for f in rows:
        note = ""
        if outcome.saturation is f:
            note = "◀ saturation"
        elif f.saturated:
            note = "saturated"
        t.add_row(_label(f), f"{f.target_rate:g}", f"{f.offered_rate:.2f}", f"{f.achieved_rate:.2f}", str(f.requests),
                  ms(f.latency_schedule[50.0]), ms(f.latency_schedule[99.0]), ms(f.latency_send[99.0]),
                  ms(f.ttft_schedule[50.0]), ms(f.ttft_schedule[99.0]), ms(f.itl[50.0]), ms(f.lag[99.0]),
                  f"{f.output_tokens_per_s:,.0f}", pct(f.share("timeout")), pct(f.error_share),
                  pct(f.share("rate_limited")), pct(f.goodput_share), "-" if f.goodput_rate is None
                  else f"{f.goodput_rate:.2f}", note)
    return t


def percentile_table(outcome: LoadOutcome) -> Table:
    t = Table(title="Percentiles (ms)", header_style="bold", title_justify="left")
    for col in ("seg", "figure", "p50", "p90", "p95", "p99", "max"):
        t.add_column(col, justify="left" if col in ("seg", "figure") else "right")
    rows = [*outcome.segments, outcome.run] if len(outcome.segments) > 1 else [outcome.run]
    for f in rows:
        for name, d in (("TTFT from schedule", f.ttft_schedule), ("TTFT from send", f.ttft_send),
                        ("latency from schedule", f.latency_schedule), ("latency from send", f.latency_send),
                        ("inter-token latency", f.itl), ("schedule lag", f.lag)):
            t.add_row(_label(f), name, *(ms(d[p]) for p in (50.0, 90.0, 95.0, 99.0, 100.0)))
    return t

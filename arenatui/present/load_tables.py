"""A load run's two tables as Rich renderables, fitted to the width they are drawn at: per segment (rates,
latencies, and beside them timeouts, errors, 429s and goodput) and percentiles. Shared by `arena load` and the
results screen (a renderable, not a view)."""

from __future__ import annotations

from rich.console import RenderableType

from arenatui.kernel.units import NOTHING, ms
from arenatui.kernel.units import pct as share
from arenatui.load.metrics import Figures, LoadOutcome
from arenatui.present.columns import HEADLINE, Column, Fitted

__all__ = ["ms", "pct", "percentile_cells", "percentile_table", "segment_cells", "segment_table"]


def pct(v: float | None) -> str:
    """A load run's shares: one decimal (a 0.4% error rate matters at 1,000 requests/s)."""
    return share(v, decimals=1)


def _label(f: Figures) -> str:
    return "all" if f.segment is None else str(f.segment)


def _rate(v: float) -> str:
    return f"{v:.2f}"


Segment = tuple[Figures, str]
"""A segment's (or the whole run's) figures and its saturation note."""

SEGMENT_COLUMNS: tuple[Column[Segment], ...] = (
    Column("seg", lambda s: _label(s[0]), priority=HEADLINE, right=False),
    Column("rate/s", lambda s: s[0].target_rate, lambda v: f"{v:g}", priority=9),
    Column("offered/s", lambda s: s[0].offered_rate, _rate, priority=5),
    Column("achieved/s", lambda s: s[0].achieved_rate, _rate, priority=HEADLINE),
    Column("reqs", lambda s: s[0].requests, priority=4),
    Column("lat p50", lambda s: s[0].latency_schedule[50.0], ms, priority=8),
    Column("lat p99", lambda s: s[0].latency_schedule[99.0], ms, priority=HEADLINE),
    Column("lat p99 send", lambda s: s[0].latency_send[99.0], ms, priority=3),
    Column("TTFT p50", lambda s: s[0].ttft_schedule[50.0], ms, priority=6),
    Column("TTFT p99", lambda s: s[0].ttft_schedule[99.0], ms, priority=5),
    Column("ITL p50", lambda s: s[0].itl[50.0], ms, priority=2),
    Column("lag p99", lambda s: s[0].lag[99.0], ms, priority=4),
    Column("out tok/s", lambda s: s[0].output_tokens_per_s, lambda v: f"{v:,.0f}", priority=2),
    Column("timeout", lambda s: s[0].share("timeout"), pct, priority=6),
    Column("error", lambda s: s[0].error_share, pct, priority=7),
    Column("429", lambda s: s[0].share("rate_limited"), pct, priority=6),
    Column("goodput", lambda s: s[0].goodput_share, pct, priority=5),
    Column("good/s", lambda s: s[0].goodput_rate, lambda v: NOTHING if v is None else _rate(v), priority=3),
    Column("", lambda s: s[1], priority=HEADLINE, right=False),
)
"""The segment table's columns: rate, achieved rate and p99 latency stay at any width."""


def _segments(outcome: LoadOutcome) -> list[Segment]:
    rows = [*outcome.segments, outcome.run] if len(outcome.segments) > 1 else [outcome.run]
    return [(f, "◀ saturation" if outcome.saturation is f else "saturated" if f.saturated else "") for f in rows]


def _segment_columns(rows: list[Segment]) -> tuple[Column[Segment], ...]:
    """Every column; the saturation note's only when a row has one (else an empty column takes a figure's place
    on a narrow terminal)."""
    return SEGMENT_COLUMNS if any(note for _, note in rows) else SEGMENT_COLUMNS[:-1]


def segment_cells(outcome: LoadOutcome) -> tuple[list[str], list[list[str]]]:
    """The segment table with every column, as titles and cells (the report's Markdown and HTML)."""
    rows = _segments(outcome)
    columns = _segment_columns(rows)
    return [c.title for c in columns], [[c.cell(r) for c in columns] for r in rows]


def segment_table(outcome: LoadOutcome) -> RenderableType:
    """The segment table, fitted to the width it is drawn at (a terminal, or a pane of the results view)."""
    rows = _segments(outcome)
    return Fitted(_segment_columns(rows), rows,
                  title="Load run: per segment (latencies from schedule; from send in the p99 send column)",
                  elsewhere=" (arena report RUN shows every column)")


PERCENTILES = (50.0, 90.0, 95.0, 99.0, 100.0)
Percentile = tuple[str, str, dict[float, float]]


def _percentile(p: float) -> Column[Percentile]:
    def get(r: Percentile) -> float:
        return r[2][p]
    return Column("max" if p == 100.0 else f"p{p:g}", get, ms, priority=HEADLINE if p == 99.0 else int(p) // 10)


PERCENTILE_COLUMNS: tuple[Column[Percentile], ...] = (
    Column("seg", lambda r: r[0], priority=HEADLINE, right=False),
    Column("figure", lambda r: r[1], priority=HEADLINE, right=False),
    *(_percentile(p) for p in PERCENTILES),
)


def _percentile_rows(outcome: LoadOutcome) -> list[Percentile]:
    rows = [*outcome.segments, outcome.run] if len(outcome.segments) > 1 else [outcome.run]
    return [(_label(f), name, d) for f in rows
            for name, d in (("TTFT from schedule", f.ttft_schedule), ("TTFT from send", f.ttft_send),
                            ("latency from schedule", f.latency_schedule), ("latency from send", f.latency_send),
                            ("inter-token latency", f.itl), ("schedule lag", f.lag))]


def percentile_cells(outcome: LoadOutcome) -> tuple[list[str], list[list[str]]]:
    """The percentile table with every column, as titles and cells (`load --show` into a pipe)."""
    rows = _percentile_rows(outcome)
    return [c.title for c in PERCENTILE_COLUMNS], [[c.cell(r) for c in PERCENTILE_COLUMNS] for r in rows]


def percentile_table(outcome: LoadOutcome) -> RenderableType:
    return Fitted(PERCENTILE_COLUMNS, _percentile_rows(outcome), title="Percentiles (ms)")

"""A load run's figures for people: the segment table (rates, latencies, and beside them timeouts, errors,
429s and goodput), the percentile table, and the warnings; plus the headless progress line."""

from __future__ import annotations

import math
from pathlib import Path
from typing import cast

from rich.console import Console
from rich.table import Table

from arenatui.engine.events import RunStatus
from arenatui.errors import PlanError
from arenatui.load.figures import Figures, Slo, compute, mark_saturation, per_segment
from arenatui.load.live import LoadSnapshot
from arenatui.load.run import LoadOutcome
from arenatui.load.store import stored_run
from arenatui.store import Store
from arenatui.store.load_queries import run_kinds


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


def print_outcome(out: Console, err: Console, outcome: LoadOutcome) -> None:
    out.print(segment_table(outcome))
    out.print(percentile_table(outcome))
    if outcome.saturation is not None:
        s = outcome.saturation
        out.print(f"Saturation: offered {s.offered_rate:.2f}/s achieved only {s.achieved_rate:.2f}/s (segment "
                  f"{s.segment}, rate {s.target_rate:g}/s)", markup=False)
    for note in outcome.notes:
        out.print(note, markup=False, soft_wrap=True)
    for w in outcome.warnings:
        err.print(f"warning: {w}", markup=False, style="bold yellow")


def progress_line(s: LoadSnapshot) -> str:
    cpu = "" if s.client_cpu is None else f"  client CPU {s.client_cpu:4.0%}"
    return (f"{s.elapsed_s:6.1f}/{s.total_s:.0f}s  seg {s.segment}  offered {s.target_rate:g}/s  "
            f"sent {s.sent_rate:7.2f}/s  achieved {s.achieved_rate:7.2f}/s  in flight {s.in_flight:>4}  "
            f"lag p99 {ms(s.lag_p99_ms)} ms  latency p50/p99 {ms(s.latency_p50_ms)}/{ms(s.latency_p99_ms)} ms  "
            f"err {s.error_share:.1%} 429 {s.rate_limited_share:.1%} timeout {s.timeout_share:.1%}{cpu}")


def stored_outcome(db: Path | str, run_id: str) -> tuple[str, LoadOutcome]:
    """A stored load run's figures, recomputed exactly from its requests (with the SLO it ran with)."""
    with Store(db) as store:
        rec = store.get_run(run_id)
        if run_kinds(store, [rec.run_id])[rec.run_id][0] != "load":
            raise PlanError(f"run {rec.run_id} is a sweep, not a load run; `arena runs` shows each run's kind")
        from arenatui.shards_cli import start_skew_line
        from arenatui.store.shards import run_shards

        skew = start_skew_line(run_shards(store, rec.run_id))
    slo_d = rec.filters.get("slo")
    slo = Slo(**slo_d) if isinstance(slo_d, dict) else None
    samples, windows = stored_run(db, rec.run_id)
    run = compute(samples, windows, slo)
    segs = per_segment(samples, windows, slo)
    sat = mark_saturation(segs) if len(segs) > 1 else None
    return rec.run_id, LoadOutcome(cast(RunStatus, rec.status), run, segs, sat, list(run.warnings),
                                   [skew] if skew else [])

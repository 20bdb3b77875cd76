"""A load run's figures for people on the command line: its tables (`load.tables`) and warnings printed, and the
headless progress line."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from arenatui.kernel.errors import PlanError
from arenatui.load.live import LoadSnapshot
from arenatui.load.metrics import SATURATION_SHARE, LoadOutcome
from arenatui.load.store import stored_outcome_of
from arenatui.present.load_tables import ms, percentile_table, segment_table
from arenatui.store import Store
from arenatui.store.load_queries import run_kinds


def print_outcome(out: Console, err: Console, outcome: LoadOutcome) -> None:
    out.print(segment_table(outcome))
    out.print(percentile_table(outcome))
    print_notes(out, err, outcome)


def print_notes(out: Console, err: Console, outcome: LoadOutcome) -> None:
    """What stands under a load run's tables: its saturation (and what the segment table's marks mean), notes, and
    its warnings on stderr."""
    if outcome.saturation is not None:
        s = outcome.saturation
        out.print(f"Saturation: offered {s.offered_rate:.2f}/s achieved only {s.achieved_rate:.2f}/s (segment "
                  f"{s.segment}, rate {s.target_rate:g}/s); limited by {s.saturation_cause}", markup=False)
        if len(outcome.segments) > 1:  # issue 37 item 14: the table's last column, its header blank, explained
            out.print(f"◀ saturation: the first segment whose achieved rate fell below {SATURATION_SHARE:.0%} of "
                      "the offered rate; saturated: a segment offered more than that one", markup=False)
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
    with Store(db, read_only=True) as store:
        rec = store.get_run(run_id)
        if run_kinds(store, [rec.run_id])[rec.run_id][0] != "load":
            raise PlanError(f"run {rec.run_id} is a sweep, not a load run; `arena runs` shows each run's kind")
    return rec.run_id, stored_outcome_of(db, rec)

"""A load run in the store: rows out of requests and segments, and a stored run's samples and figures back."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

from arenatui.kernel.events import RunStatus
from arenatui.load.metrics import (
    OUTCOMES,
    Figures,
    LoadOutcome,
    LoadRequest,
    Samples,
    Slo,
    Window,
    compute,
    mark_saturation,
    per_segment,
)
from arenatui.store import Store
from arenatui.store.db import RunRecord
from arenatui.store.load_queries import read_requests, read_segments


def request_row(run_id: str, r: LoadRequest) -> tuple[Any, ...]:
    return (run_id, r.seq, r.segment, r.shard, r.case_id, int(r.warmup), r.scheduled_s, r.sent_s, r.finished_s,
            OUTCOMES[r.outcome], r.ttft_ms, r.latency_ms, r.input_tokens, r.output_tokens, r.error_message)


def segment_row(run_id: str, w: Window, source: str) -> tuple[Any, ...]:
    return (run_id, w.segment, w.rate, w.start_s, w.end_s, w.warmup_s, source, w.dropped)


def stored_run(db: Path | str, run_id: str) -> tuple[Samples, list[Window]]:
    """A stored load run's samples and segment windows (for a report or export). A run that did not finish (killed:
    its last segment was never cut) is measured over the time its stored requests cover, not its planned end."""
    code = {name: i for i, name in enumerate(OUTCOMES)}
    samples = Samples()
    with Store(db, read_only=True) as store:
        ended = store.get_run(run_id).status in ("finished", "cancelled")  # a cancelled run cut its segment
        for row in read_requests(store, run_id):
            (seq, segment, shard, case_id, warmup, sched, sent, fin, outcome, ttft, lat, itok, otok, msg) = row
            samples.add(LoadRequest(seq, segment, shard, case_id, bool(warmup), sched, sent, fin, code[outcome],
                                    ttft, lat, itok, otok, msg))
        windows = [Window(seg, rate, start, end, warm, dropped) for seg, rate, start, end, warm, _, dropped in
                   read_segments(store, run_id)]
    if not ended:
        windows = covered_windows(windows, max(samples.scheduled, default=0.0))
    return samples, windows


def covered_windows(windows: list[Window], covered_s: float) -> list[Window]:
    """Windows ending no later than `covered_s` (the last stored request's scheduled time): a run killed 3 s into a
    10 s segment offered its rate for 3 s, and dividing by 10 understated it (9.90/s for a 50/s run)."""
    return [w if w.end_s <= covered_s else dataclasses.replace(w, end_s=max(w.start_s, covered_s)) for w in windows]


def stored_figures(db: Path | str, run_id: str, slo: Slo | None = None) -> tuple[Figures, list[Figures]]:
    """The whole run's figures and each segment's, recomputed exactly from the stored requests."""
    samples, windows = stored_run(db, run_id)
    return compute(samples, windows, slo), per_segment(samples, windows, slo)


def stored_outcome_of(db: Path | str, rec: RunRecord) -> LoadOutcome:
    """A stored load run's figures, recomputed exactly from its requests (with the SLO it ran with)."""
    slo_d = rec.filters.get("slo")
    slo = Slo(**slo_d) if isinstance(slo_d, dict) else None
    samples, windows = stored_run(db, rec.run_id)
    run = compute(samples, windows, slo)
    segs = per_segment(samples, windows, slo)
    sat = mark_saturation(segs) if len(segs) > 1 else None
    from arenatui.load.barrier import start_skew_line
    from arenatui.store.run_shards import run_shards

    with Store(db, read_only=True) as store:
        skew = start_skew_line(run_shards(store, rec.run_id))
    return LoadOutcome(cast(RunStatus, rec.status), run, segs, sat, list(run.warnings), [skew] if skew else [])

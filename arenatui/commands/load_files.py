"""A stored load run as files: `arena report` (Markdown, JSON, HTML) and `arena export` (one row per request).

The figures are recomputed exactly from the stored requests (`report.stored_outcome`), as `arena load --show`
does; the export is the raw samples, so concatenating the exports of several machines' runs and recomputing is
exact too (README, "More than one machine").
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TextIO

from arenatui.commands.load_report import stored_outcome
from arenatui.kernel.text import SpreadsheetCsv, printable
from arenatui.load.metrics import Figures, LoadOutcome
from arenatui.present.document import Block, Bullets, Document, Heading, Para, table, to_html, to_markdown
from arenatui.present.load_tables import ms, segment_cells
from arenatui.store import Store
from arenatui.store.load_queries import LOAD_REQUEST_COLUMNS, read_requests

PERCENTILES = (50.0, 90.0, 95.0, 99.0, 100.0)
_SERIES = (("ttft_from_schedule", "ttft_schedule"), ("ttft_from_send", "ttft_send"),
           ("latency_from_schedule", "latency_schedule"), ("latency_from_send", "latency_send"),
           ("inter_token_latency", "itl"), ("schedule_lag", "lag"))


def _num(v: float | None) -> float | None:
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def figures_dict(f: Figures) -> dict[str, Any]:
    out: dict[str, Any] = {
        "segment": f.segment, "target_rate": f.target_rate, "measured_s": f.measured_s, "requests": f.requests,
        "offered_rate": _num(f.offered_rate), "achieved_rate": _num(f.achieved_rate), "outcomes": f.outcomes,
        "output_tokens_per_s": _num(f.output_tokens_per_s), "timeout_share": f.share("timeout"),
        "error_share": f.error_share, "rate_limited_share": f.share("rate_limited"), "goodput": f.goodput,
        "goodput_share": _num(f.goodput_share), "goodput_rate": _num(f.goodput_rate), "saturated": f.saturated,
    }
    for name, attr in _SERIES:
        d = getattr(f, attr)
        out[f"{name}_ms"] = {("max" if p == 100.0 else f"p{p:g}"): _num(d[p]) for p in PERCENTILES}
    return out


def load_report_dict(run_id: str, project: str, outcome: LoadOutcome) -> dict[str, Any]:
    return {
        "run": {"run_id": run_id, "project": project, "kind": "load", "status": outcome.status},
        "run_figures": figures_dict(outcome.run),
        "segments": [figures_dict(s) for s in outcome.segments],
        "saturation_segment": outcome.saturation.segment if outcome.saturation is not None else None,
        "saturation_cause": outcome.saturation.saturation_cause if outcome.saturation is not None else None,
        "warnings": list(outcome.warnings),
        "start": list(outcome.notes),
        "notes": ["Latencies from schedule are what a user arriving on the schedule waited (no coordinated "
                  "omission); from send leaves the client's own lateness out. Timeout, error and 429 shares stand "
                  "beside the percentiles: a timeout removes the slowest requests from them."],
    }


def _pct_rows(outcome: LoadOutcome) -> list[list[str]]:
    f = outcome.run
    return [[name.replace("_", " "), *(ms(getattr(f, attr)[p]) for p in PERCENTILES)] for name, attr in _SERIES]


def load_report_document(rep: dict[str, Any], outcome: LoadOutcome) -> Document:
    """A load run's report as one document (Markdown, HTML and the terminal render it): its segments, where it
    saturated, the whole run's percentiles, its warnings."""
    run = rep["run"]
    sat = outcome.saturation
    blocks: list[Block] = [Para(f"Status {run['status']}. {rep['notes'][0]}"), *(Para(s) for s in rep["start"]),
                           Heading("Segments"), table(*segment_cells(outcome))]
    if sat is not None:
        blocks.append(Para(f"Saturation at segment {sat.segment} ({sat.target_rate:g}/s offered, "
                           f"{sat.achieved_rate:.2f}/s achieved): limited by {sat.saturation_cause}"))
    blocks += [Heading("Percentiles, whole run"),
               table(("figure (ms)", "p50", "p90", "p95", "p99", "max"), _pct_rows(outcome))]
    if rep["warnings"]:
        blocks += [Heading("Warnings"), Bullets(tuple(rep["warnings"]))]
    return Document(f"Load report: {run['project']}, run {run['run_id']}", tuple(blocks))


def render_load_report(rep: dict[str, Any], outcome: LoadOutcome, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rep, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    doc = load_report_document(rep, outcome)
    return to_html(doc) if fmt == "html" else to_markdown(doc)


def load_report(db: Path | str, run_id: str, project: str, fmt: str) -> str:
    rid, outcome = stored_outcome(db, run_id)
    return render_load_report(load_report_dict(rid, project, outcome), outcome, fmt)


def load_report_of(db: Path | str, run_id: str, project: str) -> Document:
    """The stored load run's report as a document (for a terminal)."""
    rid, outcome = stored_outcome(db, run_id)
    return load_report_document(load_report_dict(rid, project, outcome), outcome)


def write_load_export(store: Store, run_id: str, fmt: str, out: TextIO, *, terminal: bool = False,
                      raw: bool = False) -> int:
    """Every stored request of a load run as a row (LOAD_REQUEST_COLUMNS); returns the number of rows. CSV cells a
    spreadsheet would read as formulas get a leading `'` unless `raw`."""
    cols = LOAD_REQUEST_COLUMNS
    n = 0
    writer = None if fmt == "jsonl" else SpreadsheetCsv(out, raw=raw)
    if writer is not None:
        writer.writerow(cols)
    for stored in read_requests(store, run_id):
        row = (run_id, *stored)
        if writer is None:
            out.write(json.dumps(dict(zip(cols, row, strict=True)), ensure_ascii=terminal, allow_nan=False) + "\n")
        else:
            writer.writerow([printable(v) if terminal and isinstance(v, str) else v for v in row])
        n += 1
    return n

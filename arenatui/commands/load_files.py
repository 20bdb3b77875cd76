"""A stored load run as files: `arena report` (Markdown, JSON, HTML) and `arena export` (one row per request).

The figures are recomputed exactly from the stored requests (`report.stored_outcome`), as `arena load --show`
does; the export is the raw samples, so concatenating the exports of several machines' runs and recomputing is
exact too (README, "More than one machine").
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from arenatui.commands.load_report import stored_outcome
from arenatui.kernel.text import SpreadsheetCsv, printable
from arenatui.load.metrics import Figures, LoadOutcome
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


def render_load_report(rep: dict[str, Any], outcome: LoadOutcome, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(rep, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    run = rep["run"]
    pct_head = ("figure (ms)", "p50", "p90", "p95", "p99", "max")
    sat = outcome.saturation
    sat_words = "" if sat is None else (f"Saturation at segment {sat.segment} ({sat.target_rate:g}/s offered, "
                                        f"{sat.achieved_rate:.2f}/s achieved): limited by {sat.saturation_cause}")
    if fmt == "md":
        def cell(v: object) -> str:
            return printable(str(v), newlines=False).replace("|", "\\|")

        def table(head: Sequence[str], rows: list[list[str]]) -> list[str]:
            return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                    *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows)]
        lines = [f"# Load report: {printable(run['project'], newlines=False)}, run {run['run_id']}", "",
                 f"Status {run['status']}. {rep['notes'][0]}", "",
                 *(line for s in rep["start"] for line in (printable(s, newlines=False), "")), "## Segments", ""]
        lines += table(*segment_cells(outcome))
        if sat_words:
            lines += ["", sat_words]
        lines += ["", "## Percentiles, whole run", "", *table(pct_head, _pct_rows(outcome))]
        if rep["warnings"]:
            lines += ["", "## Warnings", "", *(f"- {printable(w, newlines=False)}" for w in rep["warnings"])]
        return "\n".join(lines) + "\n"

    def h_table(head: Sequence[str], rows: list[list[str]]) -> str:
        return ("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
                + "</table>")
    title = f"Load report: {html.escape(run['project'])}, run {html.escape(run['run_id'])}"
    warn = "".join(f"<li>{html.escape(w)}</li>" for w in rep["warnings"])
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{title}</title><style>"
            "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em}"
            "table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.25em .5em;"
            "text-align:right}th{background:#f3f3f3}</style></head><body>"
            f"<h1>{title}</h1><p>Status {html.escape(run['status'])}. {html.escape(rep['notes'][0])}</p>"
            + "".join(f"<p>{html.escape(s)}</p>" for s in rep["start"]) +
            f"<h2>Segments</h2>{h_table(*segment_cells(outcome))}"
            + (f"<p>{html.escape(sat_words)}</p>" if sat_words else "") +
            f"<h2>Percentiles, whole run</h2>{h_table(pct_head, _pct_rows(outcome))}"
            + (f"<h2>Warnings</h2><ul>{warn}</ul>" if warn else "") + "</body></html>\n")


def load_report(db: Path | str, run_id: str, project: str, fmt: str) -> str:
    rid, outcome = stored_outcome(db, run_id)
    return render_load_report(load_report_dict(rid, project, outcome), outcome, fmt)


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

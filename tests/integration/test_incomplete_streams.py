"""A stream that ends cleanly without its end marker (no finish reason, no [DONE] / message_stop), as a proxy
cutting streams does, is `incomplete_stream`: never an answer, in sweeps (retried) and load runs alike. So is one
that ends with its end marker but no finish reason on any choice: llama-cpp-python's server, interrupted by another
request, sends its role chunk and then [DONE] (the mock server's `interrupted` fault)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from httpkit import PROVIDERS, MockServerProcess, run_sweep, write_project

from arenatui.load.arrivals import Arrival
from arenatui.load.run import LoadOptions, LoadRun
from arenatui.store import Store
from arenatui.store.queries import call_details
from arenatui.tui.call_text import PREVIEW_CHARS, CallContext, call_text


@pytest.mark.parametrize(("fault", "why"), [("truncated", "without its end marker"),
                                            ("interrupted", "without a finish reason")])
def test_a_sweep_stores_a_cut_stream_as_incomplete_stream_after_its_retries(mock_server: MockServerProcess,
                                                                            tmp_path: Path, fault: str,
                                                                            why: str) -> None:
    keys = [f"{p}-{fault}" for p in PROVIDERS]
    out = run_sweep(tmp_path, mock_server.url, [mock_server.models[k] for k in keys], limit=1)
    for (model, _, _), r in out.rows.items():
        assert r["status"] == "errored" and r["error_class"] == "incomplete_stream", (model, r)
        assert r["failure_mode"] == "incomplete_stream" and r["attempts"] == 3
        assert why in r["error_message"] and r["output"] is None
        # what the stream carried is kept for the call's detail, never as its answer
        assert r["score_detail"].startswith("partial answer" if fault == "truncated" else "no answer text")
    with Store(out.db, read_only=True) as store:
        rows = call_details(store, out.run_id, "capital", preview=PREVIEW_CHARS)
    for row in rows:  # the call's detail shows it, and says it is no answer
        assert "what the stream carried (not an answer)" in call_text(row, CallContext()).plain


@pytest.mark.parametrize("fault", ["truncated", "interrupted"])
def test_a_load_run_counts_a_cut_stream_as_an_error_not_ok(mock_server: MockServerProcess, tmp_path: Path,
                                                           fault: str) -> None:
    for p in PROVIDERS:
        key = f"{p}-{fault}"
        project = write_project(tmp_path / f"{p}.toml", mock_server.url, [mock_server.models[key]])
        db = tmp_path / f"{p}.db"
        run = LoadRun(LoadOptions(project, (10.0, 20.0), 0.5, Arrival("constant"), model=key, db=db))
        assert anyio.run(run.run) == "finished"
        outcome = run.figures()
        figures = outcome.run
        # no answer came back: the segment is saturated by errors, not counted as keeping up
        assert outcome.saturation is not None and outcome.saturation.saturation_cause is not None
        assert "incomplete_stream" in outcome.saturation.saturation_cause
        assert figures.outcomes.get("ok", 0) == 0
        assert figures.outcomes["incomplete_stream"] == figures.requests > 0
        assert figures.error_share == 1.0
        with sqlite3.connect(db) as c:
            assert c.execute("SELECT DISTINCT outcome FROM load_requests").fetchall() == [("incomplete_stream",)]

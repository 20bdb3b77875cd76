"""Tokens a server did not report (a streamed llama.cpp answer without usage) are arenatui's estimate, and so is
their cost: the console's header, the report (a column and a note) and the export (a column) say so."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from arenatui.cli import main
from arenatui.kernel.events import CallFinished
from arenatui.session.live import LiveMetrics, StoredResult
from arenatui.store import Store
from arenatui.tui.app import ArenaApp
from arenatui.tui.widgets import StatusBar

from .support import _result, scripted_sweep


def test_live_metrics_count_estimated_calls_live_and_preloaded() -> None:
    live = LiveMetrics(["m"], ["c1", "c2", "c3"], 1, clock=lambda: 100.0)
    live.preload([StoredResult("m", "c1", 0, "passed", 1.0, tokens_estimated=1)])
    live.on_event(CallFinished(_result("m", "c2", 0, "passed", 0.0)._replace(tokens_estimated=True), 100.0))
    live.on_event(CallFinished(_result("m", "c3", 0, "passed", 0.0), 100.0))
    assert live.snapshot().estimated_calls == 2


@pytest.mark.anyio
async def test_the_console_header_marks_an_estimated_spend(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    model = sweep.live.model_keys[0]
    case = sweep.plan.cases[-1].id
    sweep.live.on_event(CallFinished(_result(model, case, 0, "passed", 0.0)._replace(tokens_estimated=True),
                                     sweep.live.t0 + 1))
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(200, 48)) as pilot:
        await pilot.pause(0.3)
        header = app.run_screen.query_one("#status", StatusBar).text.plain
    assert "spend ≈$" in header and "(1 call's tokens estima" in header  # one call: 'call's', not 'calls''


def test_report_and_export_mark_estimated_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    proj = tmp_path / "p.toml"
    proj.write_text('[[models]]\nkey = "local"\nprovider = "sim"\n[[models]]\nkey = "hosted"\nprovider = "sim"\n'
                    + "".join(f'[[cases]]\nid = "c{i}"\ninput = "q"\nexpected = "a"\n' for i in range(4)),
                    encoding="utf-8")
    assert main(["evaluate", "--project", str(proj), "--db", str(db), "--quiet", "--no-report"]) == 0
    with Store(db) as store:  # the local server sent no usage for three of its four calls
        store.conn.execute("UPDATE results SET tokens_estimated = 1 WHERE model_key = 'local' AND case_id != 'c0'")
    capsys.readouterr()
    assert main(["report", "last", "--db", str(db), "-f", "md"]) == 0
    md = capsys.readouterr().out
    assert "| tokens estimated |" in md and "| 3 of 4 calls |" in md
    assert "Estimated: the server reported no token usage for some calls of local (3 of 4 calls)" in md
    assert main(["report", "last", "--db", str(db), "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["estimated_tokens"] == {"local": {"estimated": 3, "calls": 4}}
    assert main(["export", "last", "--db", str(db), "-f", "csv"]) == 0
    rows = [r for r in csv.DictReader(io.StringIO(capsys.readouterr().out)) if r["row"] == "call"]
    flagged = {(r["model_key"], r["case_id"]) for r in rows if r["tokens_estimated"] == "True"}
    assert flagged == {("local", "c1"), ("local", "c2"), ("local", "c3")}

"""The results view of a run with an llm_judge scorer: judge spend apart and in the total, judged cases marked,
unscored calls apart from failures, and the judge's verdict and answer (literally) in the case detail."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from judged_run import JUDGE_ANSWER, build
from textual.coordinate import Coordinate
from textual.pilot import Pilot
from textual.widgets import DataTable, Select

from arenatui.tui.browse import BrowseApp
from arenatui.tui.results.cases import CasesTab, outcome_cell
from arenatui.tui.results.detail import CallAlone, CaseDetail

from .test_results_screens import rows, screen_text, settle, static_text
from .test_results_snapshots import opened

RUN = "20260101-120000-judged"


@pytest.fixture
def judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    db = tmp_path / "judged.db"
    _run, ids = build(db, RUN)
    return db, ids


def test_outcome_cells() -> None:
    assert outcome_cell(1, 1, 0, 0) == "1/2"
    assert outcome_cell(0, 0, 0, 2) == "unscored"  # not "-": the model answered, no one scored it
    assert outcome_cell(1, 0, 1, 1) == "1/1 1err 1unsc"
    assert outcome_cell(0, 0, 1, 0) == "- 1err"


@pytest.mark.anyio
async def test_leaderboard_note_failures_and_cases_show_the_judge(judged: tuple[Path, list[str]]) -> None:
    db, ids = judged
    app = BrowseApp(db, RUN)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: getattr(app.screen, "view", None) is not None and app.screen.view.complete)
        screen = app.screen
        note = static_text(app, "#leaderboard-note")
        assert "spend $0.238 = models $0.220 + judges $0.0180 (grader 8 calls, 1 judge error, 376 tokens, " \
               "$0.0180); $/correct and $/answered are each model's own spend" in note
        assert "judged: quality (judge grader) 4 of 9 cases (sample 4 cases), 8 of 8 judge calls stored" in note
        failures = screen.query_one("#failures-table", DataTable)
        heads = [str(c.label) for c in failures.columns.values()]
        assert heads == ["failed as", "failed", "wrong", "(unjudged)", "(judge err)"]
        assert {r[0]: r[1:] for r in rows(failures)} == {"alpha": ["1", "1 100%", "5", "-"],
                                                         "beta": ["1", "1 100%", "5", "1"]}
        await pilot.press("6")
        t = screen.query_one("#cases-table", DataTable)
        await settle(pilot, lambda: screen.query_one(CasesTab).cases_filled and t.row_count == 11)
        by_case = {r[0]: r for r in rows(t)}
        assert [by_case[c][2] for c in ids] == ["judged"] * 4
        assert by_case["e1"][2] == "" and by_case["j1" if "j1" not in ids else "j3"][2] == "unjudged"
        assert by_case[ids[0]][3:5] == ["1/1", "- 1err"]  # alpha passed; beta's judging failed
        unjudged = next(c for c in by_case if c.startswith("j") and c not in ids)
        assert by_case[unjudged][3:5] == ["unscored", "unscored"]
        screen.query_one("#case-outcome", Select).value = "unscored"
        await settle(pilot, lambda: t.row_count == 5)
        assert {r[0] for r in rows(t)} == {c for c in by_case if c not in ids and c not in ("e1", "e2")}


@pytest.mark.anyio
async def test_case_detail_shows_the_judges_answer_literally(judged: tuple[Path, list[str]]) -> None:
    db, ids = judged
    app = BrowseApp(db, RUN)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        view = app.screen.view
        case = view.case(ids[0])
        app.push_screen(CaseDetail(db, RUN, case, view.results.models, view.plan.judge_scorer(ids[0])))
        await settle(pilot, lambda: isinstance(app.screen, CaseDetail) and "judge's answer" in screen_text(app))
        text = screen_text(app)
        assert "judged by grader" in text
        assert "[bold]Verdict[/bold] [link=http://x]4[/link]␛[31m score: 4" in text  # markup shown as text
        assert JUDGE_ANSWER.split("\x1b")[0] in text
        assert "judge grader: passed (judge 4 on 1-5)" in text
        assert "attempts 1 · latency 250 ms · total 300 ms · tokens 40→7 · cost $0.00200" in text
        grid = app.screen.query_one("#case-grid", DataTable)
        assert str(grid.get_cell_at(Coordinate(0, 2))).startswith("!")  # beta's call: its judging erred
        await pilot.press("right")  # beta's call, whole, under the grid
        await settle(pilot, lambda: "judge_error: no verdict in the judge's answer" in screen_text(app))
        assert f"beta on {ids[0]}" in screen_text(app)  # its answer is kept and shown
        await pilot.press("enter")  # the call alone, full screen
        await settle(pilot, lambda: isinstance(app.screen, CallAlone) and f"beta on {ids[0]}" in screen_text(app))
        await pilot.press("escape")
        await settle(pilot, lambda: isinstance(app.screen, CaseDetail))
        assert app.is_running
        await pilot.press("escape")
        unjudged = next(c.id for c in view.plan.cases if c.id.startswith("j") and c.id not in ids)
        app.push_screen(CaseDetail(db, RUN, view.case(unjudged), view.results.models,
                                   view.plan.judge_scorer(unjudged)))
        await settle(pilot, lambda: isinstance(app.screen, CaseDetail) and "trial 0" in screen_text(app))
        text = screen_text(app)
        assert "unjudged: outside the sample of quality" in text
        assert "outside the sample of the llm_judge scorer" in text
        assert "quality (sample 4 cases); it never will be" in text
        assert "judge's answer" not in text


def test_results_leaderboard_with_a_judge(snap_compare: Any, judged: tuple[Path, list[str]]) -> None:
    db, _ = judged
    assert snap_compare(BrowseApp(db, RUN, theme="dark"), terminal_size=(120, 40), run_before=opened("2"))


def test_case_detail_with_a_judge(snap_compare: Any, judged: tuple[Path, list[str]]) -> None:
    db, ids = judged

    async def open_case(pilot: Pilot[Any]) -> None:
        await opened("6")(pilot)
        t = pilot.app.screen.query_one("#cases-table", DataTable)
        t.move_cursor(row=t.get_row_index(ids[0]))
        await opened("enter")(pilot)

    assert snap_compare(BrowseApp(db, RUN, theme="dark"), terminal_size=(120, 40), run_before=open_case)


@pytest.mark.anyio
async def test_a_sealed_cases_judge_answer_is_never_shown(judged: tuple[Path, list[str]]) -> None:
    """A judge's answer may quote the sealed case or the model's answer: only its verdict is shown."""
    from arenatui.store import Store

    db, _ = judged
    with Store(db) as s:  # as if the sample had chosen the sealed case
        s.conn.execute("INSERT INTO judgments SELECT run_id, model_key, 's1', trial, judge_key, status, score, "
                       "passed, error_class, error_message, 'quoting SEALED judged question', attempts, latency_ms, "
                       "total_ms, input_tokens, output_tokens, cost, started_at, finished_at, score_detail, variant "
                       "FROM judgments WHERE run_id = ? AND model_key = 'alpha' LIMIT 1", (RUN,))
    app = BrowseApp(db, RUN)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        view = app.screen.view
        app.push_screen(CaseDetail(db, RUN, view.case("s1"), view.results.models, view.plan.judge_scorer("s1")))
        await settle(pilot, lambda: isinstance(app.screen, CaseDetail) and "judge grader" in screen_text(app))
        text = screen_text(app)
        assert "judge's answer hidden: sealed case" in text and "SEALED" not in text


def test_results_leaderboard_with_a_judge_small_terminal(snap_compare: Any, judged: tuple[Path, list[str]]) -> None:
    """Spend apart, judged cases and the failure table with the unscored modes still fit 80×24."""
    db, _ = judged
    assert snap_compare(BrowseApp(db, RUN, theme="dark"), terminal_size=(80, 24), run_before=opened("2"))

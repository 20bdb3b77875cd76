"""The console with an llm_judge scorer: the judge lane as its own row, unscored answers, the lane's cell detail.

Scripted sweeps on a frozen clock (judge_support.py): the engine never runs, so the SVGs depend only on the
script, the theme and the terminal size. Regenerate with `pytest tests/tui --snapshot-update` after a
deliberate change, and look at the SVGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arenatui.commands.headless import _stats
from arenatui.kernel.events import JudgeFinished
from arenatui.plan import judge_trial
from arenatui.session.live import UNSCORED
from arenatui.store import Store
from arenatui.store.db import JUDGED, UPSERT_JUDGMENT, judgment_rows
from arenatui.store.queries import JudgmentRow
from arenatui.tui.app import ArenaApp
from arenatui.tui.screens import CallDetail
from arenatui.tui.widgets import CallMatrix, ModelTable

from .judge_support import LANE, call_result, scripted_judge_sweep, verdict

SIZES = [(80, 24), (120, 40)]


def _size_id(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"


@pytest.mark.parametrize("size", SIZES, ids=_size_id)
@pytest.mark.parametrize("finished", [False, True], ids=["mid-run", "finished"])
def test_run_screen_with_a_judge_lane(snap_compare: Any, tmp_path: Path, finished: bool,
                                      size: tuple[int, int]) -> None:
    sweep, _clock = scripted_judge_sweep(tmp_path, finished=finished)
    app = ArenaApp(sweep, theme="dark", autostart=False)
    assert snap_compare(app, terminal_size=size)


def _store_judged(sweep: Any, case_id: str) -> None:
    """The case's answers and the judge's verdicts as the writer stores them: results rows, then judgments."""
    plan = sweep.plan
    ci = [c.id for c in plan.cases].index(case_id)
    with Store(sweep.db_path) as store:
        store.write_results(sweep.run_id, [
            call_result(m.key, case_id, t, "unscored", mode="awaiting_judge", output=f"answer of {m.key}")
            for m in plan.models for t in range(plan.trials)])
        store.conn.execute("BEGIN")
        for mi, m in enumerate(plan.models):
            for t in range(plan.trials):
                if mi == 1 and t == 1:
                    continue  # not judged yet
                status, score, ec, said = verdict(ci, t)
                r = call_result(LANE, case_id, judge_trial(mi, t, plan.trials), status, score=score, error_class=ec,
                                output=said, cost=0.0003, detail=None if ec else f"judge {said[-1]} on 1-5",
                                mode="judge_error" if ec else "none")
                rows = judgment_rows(sweep.run_id, JudgeFinished(r, m.key, case_id, t, 0.0))
                assert rows is not None
                store.conn.execute(UPSERT_JUDGMENT, rows[0])
                store.conn.execute(JUDGED, rows[1])
        store.conn.execute("COMMIT")


async def _open(app: ArenaApp, pilot: Any, detail: CallDetail) -> str:
    await app.push_screen(detail)
    for _ in range(500):  # the rows are read in a thread: wait for them, not for a time
        if "loading" not in str(detail.query_one("#detail-text").render()):
            break
        await pilot.pause(0.01)
    await pilot.pause()
    return str(detail.query_one("#detail-text").render())


def test_judge_lane_cell_detail(snap_compare: Any, tmp_path: Path) -> None:
    sweep, _clock = scripted_judge_sweep(tmp_path, finished=True)
    case_id = sorted(sweep.plan.judges[0].case_ids)[0]
    _store_judged(sweep, case_id)
    app = ArenaApp(sweep, theme="dark", autostart=False)

    async def open_detail(pilot: Any) -> None:
        await _open(app, pilot, CallDetail(sweep, sweep.live.row_keys.index(LANE),
                                           sweep.live.case_ids.index(case_id)))

    assert snap_compare(app, terminal_size=(100, 30), run_before=open_detail)


@pytest.mark.anyio
async def test_a_judge_lane_cell_shows_each_judge_call_and_its_verdict(tmp_path: Path) -> None:
    sweep, _clock = scripted_judge_sweep(tmp_path, finished=True)
    case_id = sorted(sweep.plan.judges[0].case_ids)[0]
    _store_judged(sweep, case_id)
    live = sweep.live
    lane_row = live.row_keys.index(LANE)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        text = await _open(app, pilot, CallDetail(sweep, lane_row, live.case_ids.index(case_id)))
        assert "A judge lane" in text and "judge sim-judge, scale 1-5" in text and "sample 0.5" in text
        assert text.count("judge's answer") == 3  # three of the four calls are stored
        assert "score: " in text and "not judged yet" in text
        assert "judge_error" in text or "judge 5 on 1-5" in text
        await app.pop_screen()
        # a case this judge does not judge says so, rather than listing calls that never happen
        other = next(c.id for c in sweep.plan.cases if c.id not in sweep.plan.judges[0].case_ids)
        text = await _open(app, pilot, CallDetail(sweep, lane_row, live.case_ids.index(other)))
        assert "not judged by this judge" in text


@pytest.mark.anyio
async def test_an_unscored_answer_says_why_and_a_judged_one_shows_its_verdict(tmp_path: Path) -> None:
    sweep, _clock = scripted_judge_sweep(tmp_path, finished=True)
    plan = sweep.plan
    judged = sorted(plan.judges[0].case_ids)[0]
    unjudged = next(c.id for c in plan.cases if c.id not in plan.judges[0].case_ids and c.scorer is None)
    _store_judged(sweep, judged)
    with Store(sweep.db_path) as store:
        store.write_results(sweep.run_id, [call_result(plan.models[0].key, unjudged, t, "unscored", mode="unjudged")
                                           for t in range(plan.trials)])
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        cases = list(sweep.live.case_ids)
        text = await _open(app, pilot, CallDetail(sweep, 1, cases.index(judged)))
        assert "judge judge:sim-judge:" in text  # trial 0 of the second model was judged ...
        assert "awaiting its judge judge:sim-judge" in text  # ... its trial 1 not yet
        await app.pop_screen()
        text = await _open(app, pilot, CallDetail(sweep, 0, cases.index(unjudged)))
        assert "outside the sample of the llm_judge scorer judged (sample 0.5)" in text


@pytest.mark.anyio
async def test_cap_keys_on_a_judge_row_never_break(tmp_path: Path) -> None:
    sweep, _clock = scripted_judge_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.run_screen._sweep_worker = object()  # type: ignore[assignment]  # a running sweep, for the keys
        table = app.run_screen.query_one(ModelTable)
        table.focus()
        await pilot.press("down", "down")
        assert table.cursor_row == 2 and app.run_screen._highlighted_model() == LANE
        await pilot.press("right_square_bracket", "left_square_bracket", "m")
        await pilot.pause()
        try:
            capped = sweep.runner.model_cap(LANE) is not None
        except KeyError:
            capped = False
        said = [str(n.message) for n in app._notifications]
        # the engine caps a judge lane like a model, or the console says it does not: never a crash
        assert capped or any("no cap for a judge lane" in m for m in said)
        # the candidates' caps still work from the same table
        await pilot.press("escape", "up", "up", "right_square_bracket")
        await pilot.pause()
        assert sweep.runner.model_cap(sweep.plan.models[0].key) is not None


@pytest.mark.anyio
async def test_model_table_rows_mark_the_judge_and_keep_unscored_out_of_failures(tmp_path: Path) -> None:
    sweep, _clock = scripted_judge_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        rs = app.run_screen
        table = rs.query_one(ModelTable)
        assert table.keys[-1] == "⚖ " + LANE and rs.query_one(CallMatrix).model_keys[-1] == "⚖ " + LANE
        rows = [rs._model_row(m) for m in sweep.live.snapshot().models]
        titles = [c.title for c in table.columns[1:]]
        done, failed_as = titles.index("done"), titles.index("failed as")
        assert rows[0][done] == "26/26 ○12"  # 12 answers outside the judge's sample: done, unscored
        assert "unjudged" not in rows[0][failed_as] and "awaiting" not in rows[0][failed_as]
        assert rows[0][failed_as] == "wrong×4" and rows[2][done] == "24/24"


def test_headless_progress_counts_the_judge_calls(tmp_path: Path) -> None:
    sweep, _clock = scripted_judge_sweep(tmp_path, finished=False)
    snap = sweep.live.snapshot()
    assert snap.planned == sweep.plan.total + sweep.plan.judges[0].total
    line = _stats(snap, eta=True)
    assert f"judged {snap.judge_done}/{snap.judge_planned}" in line and "$0.00300 of $0.00660" in line


@pytest.mark.parametrize("retry_errored", [False, True])
def test_a_resumed_judged_run_shows_its_unscored_answers_and_judge_lane(tmp_path: Path, retry_errored: bool) -> None:
    """Resume preloads the judge lane from the judgments table, unscored answers as unscored, and (with
    --retry-errored) a judge_error answer as awaiting its judge again, not as queued or errored."""
    from arenatui.session.sweep import Sweep, SweepOptions

    from .judge_support import judge_project

    db = tmp_path / "resume.db"
    first = Sweep(SweepOptions(project=judge_project(tmp_path), db=db))
    plan = first.plan
    judged = sorted(plan.judges[0].case_ids)
    unjudged = next(c.id for c in plan.cases if c.id not in plan.judges[0].case_ids and c.scorer is None)
    a = plan.models[0].key
    with Store(db) as store:
        store.write_results(first.run_id, [
            call_result(a, judged[0], 0, "unscored", mode="awaiting_judge"),
            call_result(a, judged[0], 1, "unscored", mode="awaiting_judge"),
            call_result(a, unjudged, 0, "unscored", mode="unjudged"),
        ])
        store.conn.execute("BEGIN")
        for trial, (status, ec) in enumerate((("passed", None), ("errored", "judge_error"))):
            r = call_result(LANE, judged[0], judge_trial(0, trial, plan.trials), status, score=1.0 if ec is None
                            else None, error_class=ec, cost=0.0003, mode="judge_error" if ec else "none")
            rows = judgment_rows(first.run_id, JudgeFinished(r, a, judged[0], trial, 0.0))
            assert rows is not None
            store.conn.execute(UPSERT_JUDGMENT, rows[0])
            store.conn.execute(JUDGED, rows[1])
        store.conn.execute("COMMIT")
        store.mark_run(first.run_id, "cancelled")
    again = Sweep(SweepOptions(resume=first.run_id, db=db, retry_errored=retry_errored))
    live = again.live
    assert live.judge_keys == (LANE,)
    s = live.snapshot()
    m, lane = s.models[0], s.models[-1]
    ci = live.case_ids.index(judged[0])
    assert (m.done, m.passed) == (3, 1) and lane.planned == plan.judges[0].total
    if retry_errored:  # its judge runs again: the answer awaits it, the failed judge call is not done
        assert (m.errored, m.unscored, lane.done, lane.errored) == (0, 2, 1, 0)
        assert live.cell(0, ci)[UNSCORED] == 1
    else:
        assert (m.errored, m.unscored, lane.done, lane.errored) == (1, 1, 2, 1)
        assert m.errors == {"judge_error": 1}
    assert s.judge_done == lane.done and s.judge_cost == pytest.approx(0.0003 * lane.done)


@pytest.mark.anyio
async def test_enter_on_a_judge_lane_cell_opens_its_judge_calls(tmp_path: Path) -> None:
    sweep, _clock = scripted_judge_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        matrix = app.run_screen.query_one(CallMatrix)
        matrix.focus()
        await pilot.press("down", "down", "right", "enter")  # the judge row, the second case (a judged one)
        await pilot.pause()
        detail = app.screen
        assert isinstance(detail, CallDetail) and detail.judge_lane and detail.model_key == LANE
        assert detail.case.id == sweep.plan.cases[1].id and detail.case.id in sweep.plan.judges[0].case_ids


def test_a_judges_answer_and_error_show_literally(tmp_path: Path) -> None:
    """The judge's answer is model output: markup and control sequences in it show as text, never act."""
    from .support import INJECTIONS

    sweep, _clock = scripted_judge_sweep(tmp_path, finished=True)
    case_id = sorted(sweep.plan.judges[0].case_ids)[0]
    detail = CallDetail(sweep, sweep.live.row_keys.index(LANE), sweep.live.case_ids.index(case_id))
    evil = " ".join(INJECTIONS)
    j = JudgmentRow(sweep.plan.models[0].key, case_id, 0, "sim-judge", "errored", None, False, "judge_error", evil,
                    evil, len(evil), 1, 10.0, 12.0, 1, 1, 0.0, evil)
    text = detail.render_judgments([(sweep.plan.models[0].key, 0, j)])
    assert "[bold red]x[/]" in text.plain and "[@click=app.quit]" in text.plain
    assert "\x1b" not in text.plain and "\x07" not in text.plain and "\x9b" not in text.plain
    assert not any("red" in str(span.style) or "link" in str(span.style) for span in text.spans)

"""Issue 9 in the console: a huge answer's detail shows a bounded prefix and saves the whole (17), the number
input refuses concurrency past its bound (15), a sealed case's text never shows through an error body (21)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
import tomli_w
from rich.text import Text
from textual.css.query import NoMatches
from textual.widgets import Input, Static

from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.kernel.paths import data_dir
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store
from arenatui.tui.app import ArenaApp
from arenatui.tui.screens import CallDetail, ValueInput
from arenatui.tui.screens.detail import PREVIEW_CHARS
from arenatui.tui.screens.dialogs import FolderInput

from .support import _result, sim_project

pytestmark = pytest.mark.anyio

SIZE = (160, 48)


async def _until(pred: object) -> None:
    with anyio.fail_after(60.0):  # a hang guard, not a speed requirement
        for _ in range(100_000):  # polling: the rows are read in a thread worker
            if pred():  # type: ignore[operator]
                return
            await anyio.sleep(0.02)


def _saved(folder: Path, pattern: str) -> list[Path]:
    return sorted(folder.glob(pattern))


def _shown(detail: CallDetail) -> str:
    try:
        return str(detail.query_one("#detail-text", Static).render())
    except NoMatches:  # not composed yet
        return ""


async def _save_into(app: ArenaApp, pilot: Any, folder: Path) -> None:
    """`s`, then the folder asked for: `folder` typed over the proposed one, Enter."""
    await pilot.press("s")
    await _until(lambda: isinstance(app.screen, FolderInput))
    app.screen.query_one(Input).value = str(folder)
    await pilot.press("enter")


async def test_s_asks_where_and_proposes_the_data_folder_never_the_current_one(
        tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 item 9: `s` writes nothing into the current folder (a git checkout, say) without asking; it
    proposes the user data folder's outputs/RUN/, creates it, and says where the files went."""
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, models=1, cases=1), db=db_path))
    with Store(db_path) as store:
        store.write_results(sweep.run_id, [_result("sim-0", "case-000", 0, "passed", 0.0, output="forty-two")])
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(CallDetail(sweep, 0, 0))
        await _until(lambda: isinstance(app.screen, CallDetail) and "trial 0" in _shown(app.screen))
        await pilot.press("s")
        await _until(lambda: isinstance(app.screen, FolderInput))
        proposed = Path(app.screen.query_one(Input).value)
        assert proposed == data_dir() / "outputs" / sweep.run_id
        await pilot.press("escape")  # nothing saved
        await _until(lambda: isinstance(app.screen, CallDetail))
        assert not _saved(proposed.parent, proposed.name)
        await pilot.press("s")
        await _until(lambda: isinstance(app.screen, FolderInput))
        await pilot.press("enter")
        await _until(lambda: any("Saved" in str(n.message) for n in app._notifications))
        (note,) = [str(n.message) for n in app._notifications if "Saved" in str(n.message)]
    (saved,) = _saved(proposed, "arena-output-*-t0.txt")
    assert saved.read_text(encoding="utf-8") == "forty-two" and str(saved) in note
    assert not _saved(cwd, "*")


async def test_a_huge_output_shows_a_prefix_its_size_and_saves_whole(tmp_path: Path, db_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, models=1, cases=1), db=db_path))
    # 1.5 M characters, multi-byte ones among them: sizes are in characters, the saved file is exact UTF-8
    huge = ("é€ answer line\n" * 100_000)[:1_500_000]
    with Store(db_path) as store:
        store.write_results(sweep.run_id, [_result("sim-0", "case-000", 0, "passed", 0.0)._replace(output=huge)])
    monkeypatch.chdir(tmp_path)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(CallDetail(sweep, 0, 0))
        await _until(lambda: isinstance(app.screen, CallDetail) and "trial 0" in _shown(app.screen))
        detail = app.screen
        assert isinstance(detail, CallDetail)
        shown = _shown(detail)
        assert f"the first {PREVIEW_CHARS:,} of 1,500,000 characters" in shown
        assert len(shown) < PREVIEW_CHARS + 2_000  # the prefix, not the answer
        assert huge[:2_000] in shown
        await _save_into(app, pilot, tmp_path)
        await _until(lambda: any("Saved" in str(n.message) for n in app._notifications))
        (note,) = [str(n.message) for n in app._notifications if "Saved" in str(n.message)]
        await pilot.press("escape")
    (saved,) = _saved(tmp_path, "arena-output-*-sim-0-case-000-t0.txt")
    assert str(saved) in note and f"{len(huge.encode()):,} bytes" in note
    assert saved.read_text(encoding="utf-8") == huge


async def test_a_save_that_fails_says_why_and_the_console_goes_on(tmp_path: Path, db_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, models=1, cases=1), db=db_path))
    with Store(db_path) as store:
        store.write_results(sweep.run_id, [_result("sim-0", "case-000", 0, "passed", 0.0, output="forty-two")])
    (tmp_path / f"arena-output-{sweep.run_id}-sim-0-case-000-t0.txt").mkdir()  # the file's name is taken
    monkeypatch.chdir(tmp_path)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(CallDetail(sweep, 0, 0))
        await _until(lambda: isinstance(app.screen, CallDetail) and "trial 0" in _shown(app.screen))
        await _save_into(app, pilot, tmp_path)
        await _until(lambda: any("Could not save" in str(n.message) for n in app._notifications))
        assert isinstance(app.screen, CallDetail) and app.is_running


async def test_a_short_output_has_no_cut_note(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, models=1, cases=1), db=db_path))
    with Store(db_path) as store:
        store.write_results(sweep.run_id, [_result("sim-0", "case-000", 0, "passed", 0.0, output="forty-two")])
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=SIZE):
        app.push_screen(CallDetail(sweep, 0, 0))
        await _until(lambda: isinstance(app.screen, CallDetail) and "trial 0" in _shown(app.screen))
        shown = _shown(app.screen)  # type: ignore[arg-type]
        assert "forty-two" in shown and "the first" not in shown


async def test_sealed_detail_scrubs_an_echoed_prompt_and_refuses_to_save(tmp_path: Path, db_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "Describe the hidden vault beneath Castle Morwenna in detail."
    path = tmp_path / "sealed.toml"
    path.write_text(tomli_w.dumps({
        "run": {"seed": 1},
        "models": [{"key": "sim-0", "provider": "sim"}],
        "cases": [{"id": "s", "input": secret, "expected": "Obsidian gate", "sealed": True}],
    }), encoding="utf-8")
    sweep = Sweep(SweepOptions(project=path, db=db_path))
    # a row stored before the engine scrubbed error messages: the detail must scrub it too
    row = _result("sim-0", "s", 0, "errored", 0.0)._replace(
        error_message=f'HTTP 400: {{"prompt": "{secret}", "expected": "Obsidian gate"}}')
    with Store(db_path) as store:
        store.write_results(sweep.run_id, [row])
    monkeypatch.chdir(tmp_path)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(CallDetail(sweep, 0, 0))
        await _until(lambda: isinstance(app.screen, CallDetail) and "trial 0" in _shown(app.screen))
        shown = _shown(app.screen)  # type: ignore[arg-type]
        assert "HTTP 400" in shown and "sealed case text removed" in shown
        assert "Castle Morwenna" not in shown and "Obsidian" not in shown and "hidden vault" not in shown
        await pilot.press("s")
        await _until(lambda: any("sealed" in str(n.message) for n in app._notifications))
    assert not _saved(tmp_path, "arena-output-*")


async def test_value_input_refuses_a_number_past_the_bound_and_says_which(tmp_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, models=1, cases=2), db=tmp_path / "r.db"))
    app = ArenaApp(sweep, autostart=False)
    got: list[int | None] = []
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ValueInput(Text("Global concurrency"), "8"), got.append)
        await pilot.pause(0.1)
        inp = app.screen.query_one("#value", Input)
        inp.value = "2000000"
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ValueInput) and got == []  # still asking
        assert any(f"at most {MAX_CONCURRENCY:,}" in str(n.message) for n in app._notifications)
        inp.value = str(MAX_CONCURRENCY)
        await pilot.press("enter")
        await pilot.pause(0.1)
    assert got == [MAX_CONCURRENCY]


async def test_a_solver_errors_detail_shows_its_one_line_and_its_traceback(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, models=1, cases=1), db=db_path))
    trace = 'Traceback (most recent call last):\n  File "rag.py", line 9, in solve\nKeyError: [not markup]\n'
    with Store(db_path) as store:
        store.write_results(sweep.run_id, [_result("sim-0", "case-000", 0, "errored", 0.0)._replace(
            output=None, error_class="solver_error", error_message="the solver raised KeyError: 'doc'",
            failure_mode="solver_error", score_detail=trace)])
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=SIZE):
        app.push_screen(CallDetail(sweep, 0, 0))
        await _until(lambda: isinstance(app.screen, CallDetail) and "solver traceback" in _shown(app.screen))
        shown = _shown(app.screen)  # type: ignore[arg-type]
        assert "solver_error: the solver raised KeyError: 'doc'" in shown
        assert 'File "rag.py", line 9, in solve' in shown and "KeyError: [not markup]" in shown  # literal

"""Issue 22 in the console and the results view, driven by Pilot: Ctrl-C stops like `q` then `y`, the footer says
Resume while paused, Enter on a model's row opens its call, a browse Escape goes back before it leaves, run marks
show, an empty compare pick clears the old pair, and the palette lists our themes only."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from textual.widgets import DataTable, Select, TabbedContent

from arenatui.cli import main
from arenatui.tui.app import ArenaApp
from arenatui.tui.browse import BrowseApp
from arenatui.tui.results.compare import CompareTab
from arenatui.tui.results.runs import MARK
from arenatui.tui.screens import CallDetail, RunScreen
from arenatui.tui.screens.dialogs import Confirm
from arenatui.tui.widgets import ModelTable

from .results_support import OLD_RUN_ID, RUN_ID, copy_db
from .support import scripted_sweep
from .test_results_screens import rows, settle, static_text

pytestmark = pytest.mark.anyio


def _footer_keys(app: Any) -> dict[str, str]:
    return {b.description: b.key for _, b, enabled, *_ in app.screen.active_bindings.values() if enabled}


async def test_ctrl_c_stops_the_sweep_without_asking(tmp_path: Path) -> None:
    """The README's failure table: Ctrl-C stops with "Stopping…", every finished call stored, exit 130 — in the
    console too, never Textual's "press ctrl+q to quit"."""
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.run_screen._sweep_worker = object()  # type: ignore[assignment]  # counts as running
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not isinstance(app.screen, Confirm)
        assert sweep.runner.cancelled and sweep.stopped_by == signal.SIGINT
        messages = [str(n.message) for n in app._notifications]
        assert any(m.startswith("Stopping") for m in messages)
        assert not any("ctrl+q" in m for m in messages)


async def test_the_footer_says_resume_while_paused(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.run_screen._sweep_worker = object()  # type: ignore[assignment]
        assert _footer_keys(app).get("Pause") == "p" and "Resume" not in _footer_keys(app)
        await pilot.press("p")
        await pilot.pause()
        assert sweep.runner.paused
        assert _footer_keys(app).get("Resume") == "p" and "Pause" not in _footer_keys(app)
        await pilot.press("p")
        await pilot.pause()
        assert not sweep.runner.paused and _footer_keys(app).get("Pause") == "p"


async def test_enter_on_a_models_row_opens_its_call(tmp_path: Path) -> None:
    """Issue 22 item 4: Enter works from the model table too (after `[` or `m` left the keys there)."""
    sweep, _clock = scripted_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.screen.query_one("#models", ModelTable)
        table.focus()
        await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, CallDetail) and app.screen.model_key == sweep.plan.models[1].key


async def test_a_models_row_detail_says_its_most_common_error(tmp_path: Path) -> None:
    """Issue 22 item 7: a dead server said only "transient 2"; Enter on the model's row shows why its calls failed
    (the commonest message, one line, URL credentials redacted), beside the call."""
    import socket

    from textual.widgets import Static

    from arenatui.session.sweep import Sweep, SweepOptions

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    project = tmp_path / "dead.toml"
    project.write_text(tomli_w.dumps({
        "project": {"name": "dead"}, "run": {"max_attempts": 1, "timeout_s": 5.0, "seed": 1},
        "models": [{"key": "gone", "provider": "openai", "model": "m",
                    "base_url": f"http://user:hunter2@127.0.0.1:{port}/v1?api_key=hunter2"},
                   {"key": "alive", "provider": "sim", "model": "s",
                    "sim": {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0}}],
        "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "yes"} for i in range(3)]}), encoding="utf-8")
    sweep = Sweep(SweepOptions(project=project, db=tmp_path / "r.db"))
    app = ArenaApp(sweep)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3000):  # a condition, not a time: the run ends when both models are done
            await pilot.pause(0.02)
            if app.run_screen.sweep_ended:
                break
        assert app.run_screen.sweep_ended
        await pilot.pause(0.3)
        table = app.screen.query_one("#models", ModelTable)
        dead_row = table.render_line(1).text
        table.focus()
        await pilot.press("enter")  # row 0: gone
        await pilot.pause()
        assert isinstance(app.screen, CallDetail) and app.screen.model_key == "gone"
        said = str(app.screen.query_one("#model-errors", Static).render())
        await pilot.press("escape")
        await pilot.press("down", "enter")  # alive: no error, no line
        await pilot.pause()
        assert isinstance(app.screen, CallDetail) and app.screen.model_key == "alive"
        assert not app.screen.query("#model-errors")
    assert said.startswith("most common error gone: 3 of 3 errored calls said: ")
    assert f"Cannot connect to host 127.0.0.1:{port}" in said and "hunter2" not in said and "\n" not in said
    # issue 37 item 3: a dead model is not "done 3/3", and aiohttp's TLS setting is not named for an http URL
    assert ("0 answered, 3 errored" in dead_row or "0 ans, 3 err" in dead_row) and "3/3" not in dead_row
    assert "ssl:default" not in said


def test_the_common_error_line_redacts_url_credentials() -> None:
    from arenatui.tui.screens.detail import common_error_text

    line = common_error_text("m[bold]", "GET http://u:hunter2@h/v1?key=hunter2 said\n[red]no[/red]", 4, 5).plain
    assert "hunter2" not in line and "\n" not in line
    assert line.startswith("most common error m[bold]: 4 of 5 errored calls said: GET http://") and "[red]no" in line


async def test_the_matrix_names_the_cursors_case_in_full(tmp_path: Path) -> None:
    """Issue 22 item 11: the ruler cuts names to the cells' width (in the middle, start and end kept); the cursor's
    case is named in full under the matrix, and a hovered cell's in its tooltip."""
    from arenatui.tui.widgets import CallMatrix

    sweep, _clock = scripted_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    cases = [c.id for c in sweep.plan.cases]
    async with app.run_test(size=(80, 24)) as pilot:
        matrix = app.screen.query_one("#matrix", CallMatrix)
        matrix.focus()
        await pilot.press("right", "down")
        await pilot.pause()
        said = str(app.screen.query_one("#matrix-panel").border_subtitle)
        assert said == f"case 2/{len(cases)} {cases[1]} · {sweep.plan.models[1].key}", said
        lay = matrix._layout
        assert lay is not None
        await pilot.hover("#matrix", offset=(lay.label_w + lay.width(0) + lay.width(1), 1))  # the third's start
        await pilot.pause()
        assert str(matrix.tooltip) == f"case 3/{len(cases)} {cases[2]} · {sweep.plan.models[0].key}"


@pytest.fixture
def db(tmp_path_factory: Any, tmp_path: Path) -> Path:
    return copy_db(tmp_path_factory, tmp_path)


@pytest.fixture
def two_projects(db: Path, tmp_path: Path) -> Path:
    """The results database with a run of another project added (the newest)."""
    assert main(["evaluate", "--project", str(_other_project(tmp_path)), "--db", str(db), "--quiet",
                 "--no-report"]) == 0
    return db


async def test_browse_escape_goes_back_to_the_runs_before_it_leaves(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        tabs = app.screen.query_one("#results-tabs", TabbedContent)
        assert tabs.active == "leaderboard"
        await pilot.press("escape")
        await pilot.pause()
        assert tabs.active == "runs" and app.is_running
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_code == 0


def _other_project(tmp_path: Path) -> Path:
    p = tmp_path / "other.toml"
    p.write_text(tomli_w.dumps({"project": {"name": "other"}, "run": {"seed": 1},
                                "models": [{"key": "m", "provider": "sim", "model": "m",
                                            "sim": {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0}}],
                                "cases": [{"id": "c", "input": "q", "expected": "yes"}]}), encoding="utf-8")
    return p


async def test_run_marks_show_and_a_refused_pair_keeps_the_latest(two_projects: Path) -> None:
    app = BrowseApp(two_projects)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.screen.query_one("#runs-table", DataTable).row_count == 3)
        table = app.screen.query_one("#runs-table", DataTable)
        table.focus()
        ids = [r[1] for r in rows(table)]
        assert ids[1:] == [RUN_ID, OLD_RUN_ID]  # the other project's run is the newest
        await pilot.press("m")  # marks the other project's run
        await pilot.pause()
        assert [r[0] for r in rows(table)] == [MARK, "", ""]
        await pilot.press("down", "m")  # a run of another project: refused
        await pilot.pause()
        assert [r[0] for r in rows(table)] == ["", MARK, ""]  # the latest stays marked, alone
        note = static_text(app, "#runs-compare")
        assert "cannot be compared" in note and f"Marked {MARK} run {RUN_ID}" in note


async def test_an_empty_pick_clears_the_pair_and_asks_for_two(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot, lambda: app.screen.query_one(CompareTab).pair is not None)
        app.screen.query_one("#pick-b", Select).clear()
        await pilot.pause()
        assert static_text(app, "#verdict") == "pick two models: A and B"
        assert app.screen.query_one(CompareTab).pair is None
        assert app.screen.query_one("#disagree", DataTable).row_count == 0


async def test_the_palette_lists_our_themes_only(tmp_path: Path) -> None:
    sweep, _clock = scripted_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(80, 24)):
        assert isinstance(app.screen, RunScreen)
        assert {"dark", "light", "high-contrast"} <= set(app.available_themes)
        assert not any(name.startswith("textual-") or name in ("nord", "gruvbox", "dracula")
                       for name in app.available_themes)


async def test_q_backs_out_of_the_results_view_and_j_k_g_G_move_in_tables(tmp_path: Path, db: Path) -> None:
    """Issue 37 item 12: q did nothing in the console's results view (arena browse had q Quit for the same view);
    j/k/g/G move in every list and table, as in less, k9s and lazygit."""
    from arenatui.tui.results.screen import Results
    from arenatui.tui.widgets import CallMatrix

    sweep, _clock = scripted_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        matrix = app.run_screen.query_one(CallMatrix)
        matrix.focus()
        await pilot.press("j", "j")
        assert matrix.cursor[0] == 2
        await pilot.press("g")
        assert matrix.cursor[0] == 0
        await pilot.press("G")
        assert matrix.cursor[0] == len(matrix.model_keys) - 1
        table = app.run_screen.query_one(ModelTable)
        table.focus()
        await pilot.press("j", "k", "G")
        assert table.cursor_row == len(table.keys) - 1
        app.run_screen.sweep_ended = True
        app.run_screen.action_results()
        await pilot.pause()
        assert isinstance(app.screen, Results)
        await pilot.press("q")
        await pilot.pause()
        assert app.screen is app.run_screen and app.is_running  # back to the console, not out of it
    browse = BrowseApp(db, RUN_ID)
    async with browse.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        board = browse.screen.query_one("#leaderboard-table", DataTable)
        board.focus()
        await pilot.press("j")
        assert board.cursor_row == 1
        await pilot.press("G")
        assert board.cursor_row == board.row_count - 1
        await pilot.press("g")
        assert board.cursor_row == 0
        await pilot.press("k", "q")
        await pilot.pause()
    assert browse.return_code == 0


async def test_a_paused_header_stops_its_rate_and_elapsed(tmp_path: Path) -> None:
    """Issue 37 item 4: paused, the header kept printing '13.9 calls/s (10 s)' and counting elapsed time."""
    from arenatui.tui.widgets import StatusBar

    sweep, clock = scripted_sweep(tmp_path, finished=False)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.run_screen
        screen._sweep_worker = object()  # type: ignore[assignment]

        def header() -> list[str]:
            screen.refresh_now()
            return str(screen.query_one(StatusBar).text).splitlines()

        running = header()
        assert "calls/s" in running[1] and "elapsed 0:17" in running[0]
        await pilot.press("p")
        await pilot.pause()
        paused = header()
        clock.t += 30
        later = header()
        assert "calls/s" not in later[1] and "paused" in later[1]
        assert "elapsed 0:17" in paused[0] and "elapsed 0:17" in later[0]
        await pilot.press("p")
        await pilot.pause()
        clock.t += 5
        assert "elapsed 0:22" in header()[0]  # running time only: the 30 s paused are left out

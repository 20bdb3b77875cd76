"""The results view on a stored simulated run with known differences: navigation, sorting, verdicts, cases."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable, Select, Static, TabbedContent
from textual.worker import WorkerCancelled

from arenatui.cli import main
from arenatui.present.wording import LEADERBOARD_NOTE
from arenatui.stats import Comparison
from arenatui.store import Store
from arenatui.tui.browse import BrowseApp
from arenatui.tui.results.cases import CasesTab
from arenatui.tui.results.compare import CompareTab
from arenatui.tui.results.detail import CaseDetail, ModelDetail
from arenatui.tui.results.leaderboard import LeaderboardTab
from arenatui.tui.results.screen import Results

from .results_support import OLD_RUN_ID, RUN_ID, copy_db, f1_db
from .support import INJECTIONS

pytestmark = pytest.mark.anyio


@pytest.fixture
def db(tmp_path_factory: Any, tmp_path: Path) -> Path:
    return copy_db(tmp_path_factory, tmp_path)


def shown_pair(screen: Screen[object]) -> Comparison | None:
    """The comparison the compare tab shows."""
    return screen.query_one(CompareTab).pair


def screen_text(app: Any) -> str:
    svg = app.export_screenshot()
    parts = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    return html.unescape("".join(parts)).replace("\xa0", " ")


def static_text(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def settle(pilot: Pilot[Any], pred: Any = None) -> None:
    """Wait for the results' workers (and their call_from_thread callbacks) to finish, then for `pred`.

    A condition, not a time: the bound on rounds is a ceiling against a hang. An exclusive worker replaced by a newer
    one of its group (two picks in a row) ends cancelled, which is its job, not a failure: wait on."""
    app = pilot.app
    for _ in range(1000):
        await pilot.pause(0.02)
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # an exclusive worker superseded by a newer one (two picks in a row): wait again
            continue
        await pilot.pause()
        screen = app.screen
        ready = pred() if pred is not None else getattr(screen, "view", True) is not None
        if ready:
            return
    raise AssertionError("timed out waiting for the results")


def rows(table: DataTable[Any]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_leaderboard_ranks_and_sorts_by_any_column(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        t = app.screen.query_one("#leaderboard-table", DataTable)
        assert [r[1] for r in rows(t)] == ["sim-twin", "sim-strong", "sim-weak"]  # best score first
        assert rows(t)[0][6] == "85%"  # sim-twin's errored calls are coverage, not zeros
        # ranked over the cases every ranked model has scores for; its own-coverage score and n beside it
        assert rows(t)[0][4] == "118" and rows(t)[0][5].endswith("/118")
        assert "cases every ranked model has scores for" in str(app.screen.query_one("#leaderboard-note",
                                                                                   Static).render())
        # the figures are explained in the same words as under the headless leaderboard (issue 12, item 18)
        assert LEADERBOARD_NOTE in str(app.screen.query_one("#leaderboard-note", Static).render())
        # s steps through the columns: $/correct (cheapest first) puts sim-weak on top
        for _ in range(5):
            await pilot.press("s")
        assert app.screen.query_one(LeaderboardTab).sort_column == 6
        assert [r[1] for r in rows(t)] == ["sim-weak", "sim-twin", "sim-strong"]
        await pilot.press("S")  # back one column: coverage (highest first)
        assert app.screen.query_one(LeaderboardTab).sort_column == 5
        assert [r[1] for r in rows(t)] == ["sim-strong", "sim-weak", "sim-twin"]
        # a click on a header sorts by it; a second click reverses
        await pilot.click(DataTable, offset=(3, 0))  # "#" is not sortable
        assert app.screen.query_one(LeaderboardTab).sort_column == 5
        t.post_message(DataTable.HeaderSelected(t, t.ordered_columns[15].key, 15, t.ordered_columns[15].label))
        await pilot.pause()
        assert app.screen.query_one(LeaderboardTab).sort_column == 14  # p95 ms, fastest first
        assert rows(t)[0][1] == "sim-strong"
        t.post_message(DataTable.HeaderSelected(t, t.ordered_columns[1].key, 1, t.ordered_columns[1].label))
        await pilot.pause()
        assert [r[1] for r in rows(t)] == ["sim-strong", "sim-twin", "sim-weak"]  # by name
        t.post_message(DataTable.HeaderSelected(t, t.ordered_columns[1].key, 1, t.ordered_columns[1].label))
        await pilot.pause()
        assert [r[1] for r in rows(t)] == ["sim-weak", "sim-twin", "sim-strong"]  # again: reversed


async def test_enter_on_the_leaderboard_opens_the_model(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.query_one("#leaderboard-table", DataTable).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ModelDetail) and app.screen.model == "sim-twin"
        text = screen_text(app)
        assert "coverage 85%" in text and "transient×36" in text
        assert "sealed" in text and "working − sealed" in text
        assert "over 1 sealed case;" in text  # one case, not "1 sealed cases"
        await pilot.press("escape")
        assert isinstance(app.screen, Results)


@pytest.mark.parametrize("key", ["1", "3", "4", "5", "6", "7"])
async def test_a_tab_key_from_the_leaderboard_stays_on_its_tab(db: Path, key: str) -> None:
    """The old tab's focused table used to be blurred onto a hidden sibling (the failure-mode table), which
    switched TabbedContent back: "3" and "7" showed the leaderboard, and the view swapped tabs on every frame."""
    tab = ("runs", "leaderboard", "compare", "pairs", "strata", "cases", "frontier")[int(key) - 1]
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        tabs = app.screen.query_one("#results-tabs", TabbedContent)
        assert tabs.active == "leaderboard" and app.focused is app.screen.query_one("#leaderboard-table")
        await pilot.press(key)
        seen = set()
        for _ in range(10):  # frames: a tab that swaps back shows here
            await pilot.pause()
            seen.add(tabs.active)
        assert seen == {tab}
        focused = app.focused
        assert focused is not None and tabs.get_pane(tab) in focused.ancestors  # arrows and Enter go to this tab


async def test_the_concurrency_readout_stored_with_a_run_is_shown(db: Path) -> None:
    """Issue 11: every sweep keeps what each concurrency level gave; the leaderboard names each model's verdict and
    the model's detail lists its levels."""
    from arenatui.store import Store

    verdict = "optimum ≈ 3: 429s from 4"
    with Store(db) as store:  # a fixed readout: the fixture's own depends on this machine's timing
        store.write_tuning_levels(RUN_ID, [
            ("sim-twin", 2, 5.0, 40, 8.0, 0.0, 0.0, 0.0, 0, 300.0, 450.0, 1, 0, verdict),
            ("sim-twin", 3, 5.0, 60, 12.0, 0.0, 0.0, 0.0, 0, 310.0, 480.0, 1, 1, verdict),
            ("sim-twin", 4, 2.0, 10, 5.0, 0.4, 0.0, 2.0, 0, 500.0, 900.0, 1, 0, verdict),
        ])
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        setting = "→ set max_concurrency = 3 for sim-twin"  # each verdict ends with where its number goes
        assert f"concurrency: sim-twin {verdict} {setting}" in static_text(app, "#leaderboard-note")
        app.screen.query_one("#leaderboard-table", DataTable).focus()
        await pilot.press("enter")
        await pilot.pause()
        detail = static_text(app, "#model-text")
        assert f"concurrency {verdict} {setting}" in detail
        # re-derived from the stored rows (written before the counts were: attempts estimated from the shares)
        assert "level   3: goodput 12.0/s (9.16–15.4), 429s 0%, n 60" in detail and "◀ best" in detail
        assert "level   4: goodput 5.00/s (2.39–9.20), 429s 41% (22–64%)" in detail


async def test_compare_separated_and_not_separated(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        screen = app.screen
        # default: the top two, which the evidence cannot order
        assert screen.query_one("#pick-a", Select).value == "sim-twin"
        assert screen.query_one("#pick-b", Select).value == "sim-strong"
        verdict = static_text(app, "#verdict")
        assert verdict.startswith("no ordering established on this evidence (118 cases)")
        # twins differ by less than these cases can detect: what they can see, not a plan from noise
        assert "these 118 cases detect a difference of 0.101 or more with 80% power" in verdict
        assert "compared over the 118 cases both have scores for" in verdict
        hist = static_text(app, "#histogram")
        assert "│" in hist or "┼" in hist
        # sim-strong against sim-weak: clearly separated
        screen.query_one("#pick-a", Select).value = "sim-strong"
        screen.query_one("#pick-b", Select).value = "sim-weak"
        await settle(pilot, lambda: shown_pair(screen) is not None and shown_pair(screen).b == "sim-weak"
                     and shown_pair(screen).a == "sim-strong")
        verdict = static_text(app, "#verdict")
        assert verdict.startswith("sim-strong is better by 0.183 (95% CI 0.")
        assert "n = 120 cases" in verdict
        assert "across all 3 pairs (Holm, adjusted p " in verdict and verdict.rstrip().endswith("still ordered")
        strata = rows(screen.query_one("#pair-strata", DataTable))
        hard = next(r for r in strata if r[0] == "stratum hard")
        assert hard[4] == "▼ reversed"  # sim-weak is better on hard cases
        # Enter on a case where they disagree opens it
        dis = screen.query_one("#disagree", DataTable)
        assert dis.row_count > 0
        dis.focus()
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, CaseDetail))
        assert app.screen.case.id == str(dis.get_row_at(0)[0])


async def test_all_pairs_with_holm_and_enter_compares(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        t = app.screen.query_one("#pairs-table", DataTable)
        r = {row[0]: row[1:] for row in rows(t)}
        assert r["sim-twin"] == ["·", "+0.008 ?", "+0.195 ✓"]
        assert r["sim-strong"][2] == "+0.183 ✓"
        assert r["sim-weak"][0] == "-0.195 ✓"
        t.focus()
        t.move_cursor(row=1, column=3)  # sim-strong − sim-weak
        await pilot.press("enter")
        await settle(pilot, lambda: shown_pair(app.screen) is not None and shown_pair(app.screen).b == "sim-weak")
        assert app.screen.query_one("#results-tabs").active == "compare"
        assert static_text(app, "#verdict").startswith("sim-strong is better by")


async def test_strata_flag_the_reversal(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        t = app.screen.query_one("#strata-table", DataTable)
        r = {row[0]: row for row in rows(t)}
        assert r["stratum hard"][3].endswith("▼") and not r["stratum easy"][3].endswith("▼")
        note = static_text(app, "#strata-note")
        assert "stratum hard: sim-strong scores below sim-weak here" in note and "subgroup reversal" in note


async def test_cases_filter_search_and_side_by_side(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        screen = app.screen
        t = screen.query_one("#cases-table", DataTable)
        await settle(pilot, lambda: screen.query_one(CasesTab).cases_filled)
        assert t.row_count == 121  # filled in chunks of 100
        screen.query_one("#case-model", Select).value = "sim-twin"
        screen.query_one("#case-outcome", Select).value = "errored"
        await settle(pilot, lambda: t.row_count < 121)
        errored = rows(t)
        assert errored and all("err" in r[3] for r in errored)  # sim-twin's column says how many errored
        screen.query_one("#case-group", Select).value = "stratum hard"
        await settle(pilot, lambda: all(r[1] == "hard" for r in rows(t)))
        screen.query_one("#case-model", Select).clear()
        screen.query_one("#case-outcome", Select).clear()
        screen.query_one("#case-group", Select).clear()
        await pilot.press("slash")
        await pilot.press(*"easy-01")
        await settle(pilot, lambda: t.row_count == 10)
        assert {r[0] for r in rows(t)} == {f"easy-{i:03d}" for i in range(10, 20)}
        t.focus()
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, CaseDetail) and "trial 0" in screen_text(app))
        text = screen_text(app)
        assert "What is 10 + 42 - 10?" in text and "expected" in text
        for m in ("sim-strong", "sim-twin", "sim-weak"):
            assert m in text


async def test_sealed_case_text_is_never_shown(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        case = next(c for c in screen.view.plan.cases if c.id == "sealed-1")
        app.push_screen(CaseDetail(db, RUN_ID, case, screen.view.results.models))
        await settle(pilot, lambda: "trial 0" in screen_text(app))
        text = screen_text(app)
        assert "SECRET" not in text and "sealed case" in text
        await pilot.press("escape")
        await pilot.press("6")
        await pilot.press("slash")
        await pilot.press(*"SECRET")
        await settle(pilot, lambda: screen.query_one("#cases-table", DataTable).row_count == 0)


async def test_outputs_and_names_show_literally(db: Path) -> None:
    payload = " | ".join(INJECTIONS)
    with Store(db) as store:
        store.conn.execute("UPDATE results SET output = ? WHERE case_id = 'easy-000'", (payload,))
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        case = next(c for c in app.screen.view.plan.cases if c.id == "easy-000")
        app.push_screen(CaseDetail(db, RUN_ID, case, app.screen.view.results.models))
        await settle(pilot, lambda: "trial 0" in screen_text(app))
        text = screen_text(app)
        assert "[bold red]x[/]" in text and "[link=https://example.com]y[/link]" in text and "␛[2J" in text
        assert app.is_running


async def test_runs_pick_one_or_compare_two(db: Path) -> None:
    app = BrowseApp(db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.screen.runs)
        screen = app.screen
        assert screen.query_one("#results-tabs").active == "runs"
        t = screen.query_one("#runs-table", DataTable)
        assert [r[1] for r in rows(t)] == [RUN_ID, OLD_RUN_ID]
        assert rows(t)[0][4] == "sim-strong, sim-twin, sim-weak" and rows(t)[0][3] == "726/726"
        t.focus()
        await pilot.press("m", "down", "m")
        await settle(pilot, lambda: "model by model" in static_text(app, "#runs-compare"))
        note = static_text(app, "#runs-compare")
        assert f"{RUN_ID} − {OLD_RUN_ID}" in note
        assert all(m in note for m in ("sim-strong", "sim-twin", "sim-weak"))
        await pilot.press("enter")  # opens the older run
        await settle(pilot, lambda: screen.view is not None and screen.view.run_id == OLD_RUN_ID)
        assert screen.query_one("#results-tabs").active == "leaderboard"


async def test_runs_of_different_projects_are_not_compared(db: Path) -> None:
    with Store(db) as store:
        store.conn.execute("UPDATE runs SET project = 'other' WHERE run_id = ?", (OLD_RUN_ID,))
    app = BrowseApp(db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.screen.runs)
        app.screen.query_one("#runs-table", DataTable).focus()
        await pilot.press("m", "down", "m")
        await pilot.pause()
        assert static_text(app, "#runs-compare").startswith("Runs of different projects cannot be compared")


def test_browse_an_unknown_run_exits_2(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["browse", "nosuch", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "no run 'nosuch'" in err and "Traceback" not in err


async def test_r_on_the_run_screen_opens_the_results(tmp_path: Path) -> None:
    from arenatui.tui.app import ArenaApp

    from .support import scripted_sweep

    sweep, _ = scripted_sweep(tmp_path, finished=True)
    app = ArenaApp(sweep, autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, Results)
        assert app.screen.db == sweep.db_path and app.screen.run_id == sweep.run_id
        await pilot.press("escape")
        assert not isinstance(app.screen, Results)


async def test_f5_reads_the_store_again_and_keeps_the_pair(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.compare("sim-strong", "sim-weak")
        await settle(pilot, lambda: shown_pair(screen) is not None and shown_pair(screen).b == "sim-weak")
        with Store(db) as store:  # as if a sweep still running had stored more: here, fewer sim-weak answers
            store.conn.execute("DELETE FROM results WHERE model_key = 'sim-weak' AND case_id LIKE 'easy-0%'")
        old = screen.view
        await pilot.press("f5")
        await settle(pilot, lambda: screen.view is not old and shown_pair(screen) is not None
                     and shown_pair(screen).n < 120)
        assert (shown_pair(screen).a, shown_pair(screen).b) == ("sim-strong", "sim-weak")
        board = {r[1]: r for r in rows(screen.query_one("#leaderboard-table", DataTable))}
        assert board["sim-weak"][4] != "100%"  # its coverage fell


# ---- macro-F1 (f1 scorers) ------------------------------------------------------------------------------------

# By hand, from results_support.F1_STRATA and F1_ACCURACY (a wrong simulated answer names no label):
# sim-sharp misses only the one neg-hard case: positive 4/4, negative tp 3 fn 1, neutral 2/2.
SHARP_NEGATIVE_F1 = 2 * 3 / (2 * 3 + 0 + 1)
SHARP_MACRO = (1.0 + SHARP_NEGATIVE_F1 + 1.0) / 3  # 0.952
# sim-lazy answers only the positive cases: negative tp 0 fn 4, neutral tp 0 fn 2.
LAZY_MACRO = (1.0 + 0.0 + 0.0) / 3  # 0.333


@pytest.fixture
def f1db(tmp_path_factory: Any, tmp_path: Path) -> Path:
    return f1_db(tmp_path_factory, tmp_path)


def flat(text: str) -> str:
    return " ".join(text.split())


def f1_text(app: Any) -> str:
    """The model detail's classification tables as plain text (they sit below the fold of the modal)."""
    import io

    from rich.console import Console

    console = Console(width=100, file=io.StringIO(), record=True)
    console.print(app.screen.query_one("#model-f1", Static).content)
    return flat(console.export_text())


async def test_the_leaderboard_shows_macro_f1_for_a_run_with_f1_cases(f1db: Path) -> None:
    app = BrowseApp(f1db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        t = screen.query_one("#leaderboard-table", DataTable)
        heads = [str(c.label) for c in t.ordered_columns]
        assert heads[:7] == ["#", "model", "quality ▼", "macro-F1", "95% CI", "n", "own"]
        by_model = {r[1]: r for r in rows(t)}
        assert by_model["sim-sharp"][3] == f"{SHARP_MACRO:.3f}" == "0.952"
        assert by_model["sim-lazy"][3] == f"{LAZY_MACRO:.3f}" == "0.333"
        assert by_model["sim-lazy"][2] == f"{8 / 14:.3f}"  # the score counts the numeric cases too
        assert "macro-F1: each label's F1 averaged" in static_text(app, "#leaderboard-note")
        # s steps onto the macro-F1 column, best first
        t.focus()
        await pilot.press("s")
        assert str(t.ordered_columns[3].label) == "macro-F1 ▼"
        assert [r[1] for r in rows(t)] == ["sim-sharp", "sim-lazy"]
        # Enter: the model's per-label precision, recall and F1 (each computed by arenatui.scoring.f1)
        t.move_cursor(row=0)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ModelDetail) and app.screen.model == "sim-sharp"
        text = f1_text(app)
        assert f"classification sentiment: macro-F1 {SHARP_MACRO:.3f} (95% CI " in text and "over 10 cases" in text
        assert "label precision recall F1 expected given" in text
        assert "positive 1.000 1.000 1.000 4 4" in text
        assert f"negative 1.000 {3 / 4:.3f} {SHARP_NEGATIVE_F1:.3f} 4 3" in text  # 0.750 0.857
        assert "neutral 1.000 1.000 1.000 2 2" in text
        await pilot.press("escape")
        t.move_cursor(row=1)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ModelDetail) and app.screen.model == "sim-lazy"
        text = f1_text(app)
        assert f"macro-F1 {LAZY_MACRO:.3f} (95% CI " in text and "over 10 answered calls" in text
        assert "negative – 0.000 0.000 4 0" in text  # never said negative: no precision, not a zero


async def test_a_run_without_f1_cases_has_no_macro_f1_column(db: Path) -> None:
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        t = app.screen.query_one("#leaderboard-table", DataTable)
        assert "macro-F1" not in " ".join(str(c.label) for c in t.ordered_columns)
        assert "macro-F1" not in static_text(app, "#leaderboard-note")
        t.move_cursor(row=0)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ModelDetail) and not app.screen.query("#model-f1")


async def test_model_detail_lists_the_max_tokens_and_timeout_recommendations(db: Path) -> None:
    """Issue 27 item 3: the model's detail lists its max_tokens and timeout_s verdicts (the ones `arena tune --show`
    prints) with their evidence; a model with too few answers says "not enough evidence"."""
    from arenatui.commands.tune_budgets import budgets_for_run

    budgets = budgets_for_run(RUN_ID, db)
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        board = app.screen.query_one("#leaderboard-table", DataTable)
        board.focus()
        model = str(app.screen.view.board[board.cursor_row].model)
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, ModelDetail) and app.screen.budgets is not None)
        detail = " ".join(static_text(app, "#model-text").split())
    tokens, timeout = budgets.max_tokens[model], budgets.timeouts[model]
    for label, rec in (("max_tokens", tokens), ("timeout_s", timeout)):
        said = rec.verdict.replace(f"{rec.action} {label}", rec.action, 1).removeprefix(label + " ")
        assert " ".join(f"{label} {said}".split()) in detail, (label, detail)
        for line in rec.detail:
            assert line in detail
    assert tokens.action != "none" or "not enough evidence" in detail


async def test_question_mark_opens_the_results_views_key_help(db: Path) -> None:
    """`?` gives the same kind of key help as the live console's: every key of the view, then the figures' words."""
    from arenatui.tui.key_help import KeyHelp
    from arenatui.tui.results.screen import KEYS

    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "? Help" in screen_text(app)  # the footer says it
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, KeyHelp)
        text = " ".join(screen_text(app).split())
        assert "Escape, ? or q closes this" in text
        for _key, what in KEYS[:4]:
            assert " ".join(what.split()[:4]) in text, what
        await pilot.press("question_mark")  # closes it, as in the console
        await pilot.pause()
        assert isinstance(app.screen, Results)
        await pilot.press("6", "slash", "question_mark")  # typed into the case search: a character, not the help
        await pilot.pause()
        assert isinstance(app.screen, Results)
        assert app.screen.query_one("#case-search").value == "?"  # type: ignore[attr-defined]


async def test_a_leaderboard_wider_than_its_pane_names_the_columns_past_the_edge(db: Path) -> None:
    """Issue 37 item 6: at 80 columns the leaderboard ended mid-word ("$/answe") with no note; the columns past the
    pane's edge are named with how to reach them, and none are named when the pane is wide enough."""
    for width, past in ((80, True), (400, False)):
        app = BrowseApp(db, RUN_ID)
        async with app.run_test(size=(width, 40)) as pilot:
            await settle(pilot)
            await pilot.pause()
            note = static_text(app, "#leaderboard-note")
        assert note.startswith("→ ") == past, note
        if past:
            assert "p95 ms" in note and "scroll" in note


async def test_every_tab_names_the_columns_past_its_edge(db: Path) -> None:
    """Issue 37 item 6: a table wider than the pane never passes a cut column off as whole: the note under it names
    the columns past the edge (as the leaderboard's does), and says nothing where every column fits."""
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        note = static_text(app, "#runs-compare")
        assert note.startswith("→ ") and "past the edge (" in note and "started" in note, note
        assert "Enter opens a run" in note
    app = BrowseApp(db, RUN_ID)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        assert "past the edge" not in static_text(app, "#runs-compare")

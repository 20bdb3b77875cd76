"""The auto-tuner in the console: `a` toggles it, the readout shows levels, a manual change suspends a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store
from arenatui.tui.app import ArenaApp
from arenatui.tui.tuning_view import TuningReadout

from .support import sim_project

pytestmark = pytest.mark.anyio

SIZE = (160, 48)


async def _until(pred: object) -> None:
    with anyio.fail_after(60.0):  # a hang guard, not a speed requirement
        for _ in range(1_000_000):  # polling: the state lives in the engine, not behind an event
            if pred():  # type: ignore[operator]
                return
            await anyio.sleep(0.02)


async def test_a_toggles_the_tuner_which_sets_levels_and_logs_reasons(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=20000, latency=0.05, concurrency=4), db=db_path))
    app = ArenaApp(sweep)
    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: sweep.live.snapshot().done > 0)
        await pilot.press("a")
        assert sweep.tuner.enabled
        assert sweep.runner.model_cap("sim-0") == sweep.tuner.level("sim-0")
        # the tuner climbs (these models have no limit) and says why in the event log
        await _until(lambda: len(sweep.tuner.decisions) >= 2)
        assert sweep.runner.model_cap("sim-0") == sweep.tuner.level("sim-0")
        assert sweep.runner.target == sum(sweep.tuner.level(k) or 0 for k in ("sim-0", "sim-1"))
        await _until(lambda: any(e.kind == "tuner" and "goodput" in e.text for e in sweep.live.log))
        await pilot.pause(1.2)  # the readout refreshes with the model table (1 Hz)
        readout = app.run_screen.query_one("#tuning", TuningReadout)
        text = str(readout.text)
        assert "auto-tuner on" in str(readout.border_title) and "sim-0" in text and "/s" in text
        await pilot.press("a")
        assert not sweep.tuner.enabled
        before = len(sweep.tuner.decisions)
        await pilot.pause(0.5)
        assert len(sweep.tuner.decisions) == before
        sweep.runner.cancel()
        await _until(lambda: app.run_screen.sweep_ended)
    with Store(db_path) as store:
        assert any(src == "tuner" for _at, _o, _n, _m, src in store.concurrency_changes(sweep.run_id))


async def test_a_manual_cap_change_suspends_the_tuner_for_that_model_only(tmp_path: Path, db_path: Path) -> None:
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=20000, latency=0.05, concurrency=4), db=db_path,
                               tune=True))
    app = ArenaApp(sweep)
    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: sweep.tuner.enabled and sweep.live.snapshot().done > 0)
        # the first row (sim-0) is highlighted: ] raises its cap by hand
        app.run_screen.query_one("#models").focus()
        await pilot.press("right_square_bracket")
        assert "sim-0" in sweep.tuner.suspended and "sim-1" not in sweep.tuner.suspended
        manual = sweep.runner.model_cap("sim-0")
        await _until(lambda: any(d.model_key == "sim-1" for d in sweep.tuner.decisions))
        n0 = sum(d.model_key == "sim-0" for d in sweep.tuner.decisions)
        await pilot.pause(1.0)
        assert sum(d.model_key == "sim-0" for d in sweep.tuner.decisions) == n0
        assert sweep.runner.model_cap("sim-0") == manual
        assert any("suspended for sim-0" in e.text for e in sweep.live.log)
        await pilot.pause(1.2)
        readout = app.run_screen.query_one("#tuning", TuningReadout)
        assert readout.state_of("sim-0") == "suspended"
        # the pane beside the events is compact: a suspended model is tagged S where the tuner's show T<level>
        assert any(line.startswith("sim-0") and " S " in line for line in str(readout.text).splitlines())
        # off and on again re-enables every model
        await pilot.press("a", "a")
        assert sweep.tuner.enabled and not sweep.tuner.suspended
        sweep.runner.cancel()
        await _until(lambda: app.run_screen.sweep_ended)


def test_call_detail_shows_the_attempt_history(tmp_path: Path, db_path: Path) -> None:
    from arenatui.store.queries import FailedAttempt
    from arenatui.tui.screens import CallDetail

    from .support import stored_call

    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=3), db=db_path))
    detail = CallDetail(sweep, 0, 0)
    row = stored_call(attempts=3, total_ms=900.0, failed_attempts=(
        FailedAttempt(1, "rate_limited", 429, 0.5, 0.6, "slow down"),
        FailedAttempt(2, "transient", 503, None, 0.2, "[bold]x")))
    text = detail.render_rows([row]).plain
    assert "attempt 1 failed: rate_limited (HTTP 429), asked to wait 0.50s, slept 0.60s" in text
    assert "attempt 2 failed: transient (HTTP 503), slept 0.20s" in text


async def test_the_tuning_pane_shows_every_models_whole_verdict_at_80x24(tmp_path: Path, db_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19: the pane wraps a verdict, never cuts it, and lists the measured levels only where rows are left."""
    from arenatui.tuning.evidence import LevelEvidence, verdict
    from arenatui.tuning.levels import ModelReadout

    def lv(level: int, answered: int, limited: int = 0) -> LevelEvidence:
        return LevelEvidence(level, 20.0, answered, answered + limited, limited, 0, limited, 0, answered,
                             500.0 if answered else None, 700.0 if answered else None)

    tables = {
        "sim-0": [lv(1, 2, 60), lv(2, 2, 90)],  # a rate limit: the longest verdict there is
        "sim-1": [lv(2, 40), lv(3, 60), lv(4, 10, 20)],
        "sim-2": [lv(1, 40), lv(2, 40), lv(4, 40)],
        "sim-3": [lv(4, 3)],
    }
    readouts = [ModelReadout(k, tuple(rows), verdict(rows)) for k, rows in tables.items()]
    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, models=4, cases=20000, latency=0.05, concurrency=4),
                               db=db_path))
    monkeypatch.setattr(sweep.tuner, "readouts", lambda: readouts)
    app = ArenaApp(sweep)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("t")  # a narrow terminal shows the rates chart or the tuning pane: t switches
        await pilot.pause(1.5)
        pane = app.run_screen.query_one("#tuning", TuningReadout)
        assert pane.display and pane.content_size.width > 20
        lines = pane.text.plain.splitlines()
        assert len(lines) <= pane.content_size.height  # every line is on screen: nothing below the fold
        shown = " ".join(" ".join(lines).split())
        for ro in readouts:
            assert " ".join(ro.verdict.text.split()) in shown, (ro.verdict.text, lines)
        assert "limited by requests per minute (~6/min measured): concurrency will not help" in shown
        sweep.runner.cancel()
        await _until(lambda: app.run_screen.sweep_ended)


async def test_the_tuning_pane_warns_live_when_answers_hit_max_tokens(tmp_path: Path, db_path: Path) -> None:
    """Issue 27 item 3: a model whose answers stop at max_tokens is named in the tuning pane while the run goes, with
    how many did and the limit; a model whose answers fit is not."""
    import tomllib

    import tomli_w

    path = sim_project(tmp_path, models=2, cases=40, latency=0.0)
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    raw["models"][0]["max_tokens"] = 6  # its answers run to 8 tokens: most are cut
    path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    sweep = Sweep(SweepOptions(project=path, db=db_path))
    app = ArenaApp(sweep)
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(lambda: app.run_screen.sweep_ended)
        await pilot.pause(0.3)
        pane = app.run_screen.query_one("#tuning", TuningReadout)
        assert pane.display
        shown = " ".join(pane.text.plain.split())
        # on a terminal too narrow for both, the rates chart stands where the pane would: its title says to look
        rates = app.run_screen.query_one("#rates")
        title = str(rates.border_title)
        # issue 37: in words that fit the pane, never cut mid-word
        assert "⚠" in title and "max_tokens" in title and len(title) <= rates.size.width - 4, title
    with Store(db_path) as store:
        cut = dict(store.conn.execute(
            "SELECT model_key, COUNT(*) FROM results WHERE run_id = ? AND finish_reason IN ('length', 'max_tokens') "
            "GROUP BY model_key", (sweep.run_id,)).fetchall())
    assert cut.get("sim-0", 0) > 0 and "sim-1" not in cut
    assert f"⚠ sim-0: {cut['sim-0']} answers stopped at max_tokens 6 (cut short); " in shown, shown
    assert "⚠ sim-1" not in shown
    # issue 36 item 8: the warning points the way arena tune --show's recommendation does, from the same run
    from arenatui.results.budgets import budget_evidence
    from arenatui.tuning.budgets import budgets_of

    with Store(db_path) as store:
        rec = budgets_of(budget_evidence(store, sweep.run_id)).max_tokens["sim-0"]
    words = {"raise": "raise max_tokens", "lower": "they ramble", "keep": "can stay",
             "none": "not enough evidence yet"}
    assert words[rec.action] in shown, (rec.verdict, shown)


def _six_readouts() -> tuple[list[Any], list[str]]:
    from arenatui.tuning.evidence import LevelEvidence, verdict
    from arenatui.tuning.levels import ModelReadout

    def lv(level: int, answered: int, limited: int = 0) -> LevelEvidence:
        return LevelEvidence(level, 20.0, answered, answered + limited, limited, 0, limited, 0, answered,
                             500.0 if answered else None, 700.0 if answered else None)

    rows = [lv(2, 40), lv(3, 60), lv(4, 10, 20)]
    return [ModelReadout(f"sim-{i}", tuple(rows), verdict(rows)) for i in range(6)], ["manual"] * 6


def test_the_tuning_readout_holds_every_verdict_and_explains_its_strip() -> None:
    """Issue 37 items 7 and 14: more verdicts than rows are all in the readout (the pane scrolls), never cut; with a
    row to spare, the strip before each verdict is explained."""
    from arenatui.tui.tuning_view import STRIP_LEGEND, readout_text, verdict_lines

    readouts, states = _six_readouts()
    roomy = readout_text(readouts[:1], states[:1], 90, 12, run_id="r1").plain.splitlines()
    assert roomy[-1] == STRIP_LEGEND
    tight = readout_text(readouts, states, 70, 5, run_id="r1").plain.splitlines()
    verdicts = [line.plain for ro in readouts for line in verdict_lines(ro, "manual", 70)]
    assert tight == verdicts and len(tight) > 5


async def test_the_tuning_pane_scrolls_and_says_how_many_lines_lie_below() -> None:
    """Issue 37 item 7: a pane with more verdicts than rows says on its bottom edge how many lines lie below, and
    scrolls to them (keys once clicked, or the wheel); scrolled to the end, it says nothing more."""
    from textual.app import App, ComposeResult

    from arenatui.tui.tuning_view import TuningReadout

    readouts, _states = _six_readouts()

    class Tuned:
        enabled = False
        suspended: set[str] = set()

        def readouts(self) -> list[Any]:
            return readouts

    class Pane(App[None]):
        def compose(self) -> ComposeResult:
            yield TuningReadout(Tuned(), id="tuning")  # type: ignore[arg-type]

    app = Pane()
    async with app.run_test(size=(70, 9)) as pilot:
        pane = app.query_one(TuningReadout)
        pane.show()
        await pilot.pause()
        lines = len(pane.text.plain.splitlines())
        assert lines > pane.content_size.height and pane.below == lines - pane.content_size.height
        assert pane.border_subtitle == f"▼ {pane.below} more lines: scroll (wheel, or click and ↓)"
        await pilot.click("#tuning")
        await pilot.press("end")
        await pilot.pause()
        assert pane.scroll_y > 0 and pane.below == 0 and pane.border_subtitle == ""


@pytest.mark.parametrize(("counts", "words"), [
    ((200, 120, 80, 240), "80 of them failed at the limit: raise max_tokens"),
    ((200, 150, 50, 40), "they ramble: every passing answer stayed under 41 tokens"),
    ((2000, 1990, 1, 250), "too few failed to move it; max_tokens 256 can stay"),
    ((20, 5, 5, 200), "not enough evidence yet to say whether to change it: 5 passing answers, 30 needed"),
], ids=["raise", "lower", "keep", "none"])
def test_the_max_tokens_warning_says_which_way_as_the_recommender_does(counts: tuple[int, int, int, int],
                                                                     words: str) -> None:
    """Issue 36 item 8: the live warning said "says whether to raise it" where the recommender said lower; both now
    ask budgets.cut_direction, and the recommender's action over answers with the same counts is the warning's."""
    from arenatui.tui.tuning_view import Truncation, truncation_lines
    from arenatui.tuning.budgets import Answer, recommend_max_tokens

    answered, passing, cut_failed, longest = counts
    t = Truncation("m", cut_failed, 256, answered, passing, cut_failed, longest)
    shown = " ".join(" ".join(line.plain for line in truncation_lines([t], 200, "r1")).split())
    assert words in shown, shown
    answers = ([Answer(longest, True, False, None)] * passing + [Answer(256, False, True, None)] * cut_failed
               + [Answer(10, False, False, None)] * (answered - passing - cut_failed))
    action = recommend_max_tokens("m", 256, answers).action
    assert {"raise": "raise max_tokens", "lower": "they ramble", "keep": "can stay",
            "none": "not enough evidence"}[action] in shown, (action, shown)

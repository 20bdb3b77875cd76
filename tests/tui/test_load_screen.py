"""The load screen with Pilot: live figures shown, `+`/`-` change the offered rate, `q` stops then quits;
a snapshot from a scripted run; and a real short run on a simulated model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomli_w

from arenatui.load.arrivals import Arrival
from arenatui.load.live import LoadSnapshot
from arenatui.load.run import LoadOptions, LoadRun
from arenatui.tui.load_app import LoadApp
from arenatui.tui.screens.load import LoadScreen, figures_text, offered, rate_step

pytestmark = pytest.mark.anyio


class ScriptedRun:
    """A `LoadRun` look-alike whose snapshot is fixed: what the screen shows depends only on it."""

    run_id = "20260101-000000-test"

    def __init__(self) -> None:
        self.status: str | None = None
        self.rate = 10.0
        self.changes: list[float] = []
        self.cancelled = False

    def snapshot(self) -> LoadSnapshot:
        return LoadSnapshot(elapsed_s=12.0, total_s=60.0, segment=len(self.changes), target_rate=self.rate,
                            sent_rate=9.9, achieved_rate=7.5, in_flight=12, done=118, lag_p50_ms=1.2,
                            lag_p99_ms=180.0, ttft_p50_ms=120.0, ttft_p99_ms=480.0, latency_p50_ms=640.0,
                            latency_p99_ms=1900.0, latency_sched_p99_ms=2100.0, error_share=0.02,
                            rate_limited_share=0.05, timeout_share=0.01,
                            histogram=(0, 0, 0, 0, 3, 20, 60, 30, 5, 0, 0), client_cpu=0.35)

    def change_rate(self, rate: float) -> None:
        self.changes.append(rate)
        self.rate = rate

    def cancel(self) -> None:
        self.cancelled = True

    async def run(self) -> Any:
        return None


def test_a_rate_change_is_not_called_falling_behind() -> None:
    """A step from 4 to 16 req/s 6 s ago: the 10 s window still averages 4 s of the old rate (sent 11.2/s), so
    the run keeping up must not read "not keeping up"; once the window holds only the new rate, a shortfall does."""
    base = ScriptedRun().snapshot()
    just_changed = replace(base, elapsed_s=18.0, target_rate=16.0, sent_rate=11.2, achieved_rate=11.0,
                           rate_held_s=6.0, lag_p99_ms=5.0)
    text = figures_text(just_changed, width=120)
    assert "11.00 req/s" in text.plain and "not keeping up" not in text.plain
    rates = [text.plain.index(v) for v in ("11.20 req/s", "11.00 req/s")]
    assert not any(sp.start <= i < sp.end and "yellow" in str(sp.style) for sp in text.spans for i in rates)
    held = replace(just_changed, elapsed_s=30.0, rate_held_s=18.0)
    assert "not keeping up" in figures_text(held, width=120).plain
    assert not just_changed.settled and held.settled
    start = replace(base, elapsed_s=6.0, rate_held_s=6.0)  # the first rate: the whole run is at it
    assert start.settled and "not keeping up" in figures_text(start, width=120).plain


@pytest.mark.parametrize("width", [36, 46, 60, 100])
def test_every_figure_fits_its_pane(width: int) -> None:
    """Half of an 80-column terminal leaves 36 columns: the long labels left no room for "1.2 ms / 180 ms", which
    wrapped to the pane's edge ("(client-bou" / "nd)"); short labels there, every line within the width."""
    s = replace(ScriptedRun().snapshot(), latency_p99_ms=12_345.0)
    lines = figures_text(s, width).plain.replace("\xa0", " ").splitlines()
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    assert any(line.startswith("latency p50/p99") and line.endswith("640 ms / 12,345 ms") for line in lines)
    beside = any("lag p50/p99" in line and "(client-bound)" in line for line in lines)
    assert beside == (width >= 60)  # the note beside its figure where it fits, else on the line under it


def test_a_trace_s_mean_rate_reads_to_two_decimals() -> None:
    trace = replace(ScriptedRun().snapshot(), target_rate=59 / 14.5)  # 4.0689…: a trace's mean rate
    assert "offered (target)        4.07 req/s" in figures_text(trace, 80).plain
    assert "10 req/s" in figures_text(ScriptedRun().snapshot(), 80).plain and offered(0.5) == "0.5"


def test_rate_ladder() -> None:
    assert rate_step(10, 1) == 20 and rate_step(20, 1) == 50 and rate_step(50, 1) == 100
    assert rate_step(10, -1) == 5 and rate_step(1, -1) == 0.5 and rate_step(3, 1) == 5 and rate_step(3, -1) == 2


async def test_keys_change_the_rate_and_q_stops() -> None:
    run = ScriptedRun()
    app = LoadApp(run, autostart=False)
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, LoadScreen)
        text = str(screen.query_one("#load-figures").render())
        assert "7.50 req/s" in text and "not keeping up" in text and "client-bound" in text
        await pilot.press("plus")
        await pilot.press("plus")
        await pilot.press("minus")
        assert run.changes == [20.0, 50.0, 20.0]
        await pilot.press("q")
        assert run.cancelled and app.is_running


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_load_screen_snapshot(snap_compare: Any, size: tuple[int, int]) -> None:
    """Issue 22 item 3: at every size the histogram's bars stay on their lines and a warning beside a figure
    moves under it rather than wrapping to the pane's edge."""
    assert snap_compare(LoadApp(ScriptedRun(), theme="dark", autostart=False), terminal_size=size)


async def test_a_real_short_run_in_the_console(tmp_path: Path) -> None:
    raw = {"project": {"name": "tui-load"}, "run": {"seed": 1},
           "models": [{"key": "m", "provider": "sim", "model": "m",
                       "sim": {"base_latency_s": 0.01, "per_token_s": 0.0, "jitter": 0.0, "output_tokens": 4}}],
           "cases": [{"id": "a", "input": "hi"}]}
    p = tmp_path / "p.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    run = LoadRun(LoadOptions(p, (30.0,), 2.0, Arrival("constant"), db=tmp_path / "d"))
    app = LoadApp(run)
    async with app.run_test(size=(140, 30)) as pilot:
        with anyio.fail_after(60):  # the run's own schedule clock, not ours: a busy machine starts it later
            while run.engine.now_s() < 0.3:
                await pilot.pause(0.02)
        await pilot.press("plus")  # 30 -> 50 req/s for the rest: a second segment
        with anyio.fail_after(60):
            while len(run.engine.windows) < 2:
                await pilot.pause(0.02)
        snap = run.snapshot()  # the new rate is held from its change, not from the run's start
        assert snap.rate_held_s is not None and snap.rate_held_s < snap.elapsed_s - 0.2
        with anyio.fail_after(60):  # a hang guard, not a speed requirement
            while not app.screen.ended:  # type: ignore[attr-defined]
                await pilot.pause(0.1)
        await pilot.press("q")
    assert run.status == "finished"
    assert [w.rate for w in run.engine.windows] == [30.0, 50.0]
    assert len(run.samples) > 18

"""The results view at scale, in the console: time to a full leaderboard, to a compare, and the UI loop's stalls.

    python benchmarks/results_view.py [--models 20] [--cases 10000] [--trials 5] [--db PATH]

Builds the same synthetic store as results_scale.py (1,000,000 calls by default), then opens `arena browse`
headless (Textual's run_test) and measures, from the moment the app starts:
- results_view_leaderboard_s: until the leaderboard table is filled;
- results_view_all_s: until every tab (pairs, strata, cases, frontier) is filled;
- results_view_compare_s: from picking another model B until its verdict is shown;
- results_view_max_stall_ms: the longest gap between ticks of a 10 ms timer on the UI loop while all that ran
  (what a keypress would wait at worst: SQL and numpy run in thread workers, table filling does not);
- results_view_stall_over_tick: that stall over the 10 ms tick, a ratio that moves less with the machine.
Prints one JSON line per figure (DESIGN.md, Benchmarks).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import tempfile
import time
from pathlib import Path
from typing import Any

TICK_S = 0.01


def _scale_module() -> Any:
    spec = importlib.util.spec_from_file_location("results_scale", Path(__file__).with_name("results_scale.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


async def measure(db: Path) -> list[tuple[str, float, str]]:
    from textual.widgets import DataTable, Select

    from arenatui.tui.browse import BrowseApp
    from arenatui.tui.results.cases import CasesTab
    from arenatui.tui.results.compare import CompareTab

    app = BrowseApp(db, "last")
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    t0 = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        app.set_interval(TICK_S, tick)
        last[0] = time.perf_counter()
        screen: Any = None
        while True:
            await asyncio.sleep(0.005)
            screen = app.screen
            if getattr(screen, "view", None) is not None and \
                    screen.query_one("#leaderboard-table", DataTable).row_count:
                break
        leaderboard_s = time.perf_counter() - t0
        compare, cases = screen.query_one(CompareTab), screen.query_one(CasesTab)  # a widget per results tab
        while not (compare.pair is not None and cases.cases_filled):  # noqa: ASYNC110 (polling the UI is the point)
            await asyncio.sleep(0.005)
        all_s = time.perf_counter() - t0
        ranked = screen.view.ranked
        t1 = time.perf_counter()
        screen.query_one("#pick-b", Select).value = ranked[-1]
        while not (compare.pair is not None and compare.pair.b == ranked[-1]):  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        compare_s = time.perf_counter() - t1
        await pilot.pause()
    stall = max(gaps) if gaps else float("nan")
    return [("results_view_leaderboard_s", leaderboard_s, "s"), ("results_view_all_s", all_s, "s"),
            ("results_view_compare_s", compare_s, "s"), ("results_view_max_stall_ms", stall * 1000, "ms"),
            ("results_view_stall_over_tick", stall / TICK_S, "ratio")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--db", help="reuse (or build) this database instead of a temporary one")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(a.db) if a.db else Path(tmp) / "scale.db"
        if not db.exists():
            _scale_module().build(db, a.models, a.cases, a.trials)
        figures = asyncio.run(measure(db))
    for name, value, unit in figures:
        print(json.dumps({"name": name, "value": round(value, 4), "unit": unit}))


if __name__ == "__main__":
    main()

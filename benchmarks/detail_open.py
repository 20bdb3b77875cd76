"""Opening the call detail of a huge answer in the console (issue 9 #17): seconds until it shows, and memory.

    python benchmarks/detail_open.py [--mb 50]

Stores one answer of --mb megabytes, opens the console headless (Textual's Pilot) on that call's detail,
and prints JSON lines (DESIGN.md, Benchmarks): detail_open_s (push to the text shown), rss_growth_mb (peak
resident memory of this process minus before the app started), and save_s / saved_mb for `s`, which
writes the whole answer to a file. Reading the whole answer into the detail took 40 s and 3.3 GB at 50 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomli_w
from textual.css.query import NoMatches
from textual.widgets import Input, Static

from arenatui.kernel.events import CallResult
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store
from arenatui.tui.app import ArenaApp
from arenatui.tui.screens import CallDetail
from arenatui.tui.screens.dialogs import FolderInput


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KB on Linux


def make_db(folder: Path, run_id: str, mb: int) -> None:
    """Runs in a child process, so the answer built here never counts in the console's memory."""
    answer = ("the same long line of a very long answer\n" * (mb * 1024 * 1024 // 41 + 1))[: mb * 1024 * 1024]
    with Store(folder / "r.db") as store:
        store.write_results(run_id, [CallResult("m", "c", 0, "passed", answer, 1.0, True, None, None, 1, 1.0,
                                                1.0, None, 1, 1, 0.0, "stop", False, 0.0, 0.0)])


def _shown(app: ArenaApp) -> str:
    try:
        return str(app.screen.query_one("#detail-text", Static).render())
    except NoMatches:
        return ""


def prepare(folder: Path, mb: int) -> Sweep:
    project = folder / "p.toml"
    project.write_text(tomli_w.dumps({"models": [{"key": "m", "provider": "sim"}],
                                      "cases": [{"id": "c", "input": "q", "expected": "x"}]}), encoding="utf-8")
    sweep = Sweep(SweepOptions(project=project, db=folder / "r.db"))
    subprocess.run([sys.executable, __file__, "--make", str(folder), sweep.run_id, "--mb", str(mb)], check=True)
    return sweep


async def measure(sweep: Sweep, mb: int) -> dict[str, float]:
    base = _peak_mb()
    app = ArenaApp(sweep, autostart=False)
    out: dict[str, float] = {}
    async with app.run_test(size=(160, 48)) as pilot:
        t0 = time.perf_counter()
        app.push_screen(CallDetail(sweep, 0, 0))
        while f"of {mb * 1024 * 1024:,}" not in _shown(app) and time.perf_counter() - t0 < 120:
            await pilot.pause(0.02)
        out["detail_open_s"] = time.perf_counter() - t0
        out["rss_growth_mb"] = _peak_mb() - base
        await pilot.press("s")  # asks for the folder: the current one, where saved_mb looks
        while not isinstance(app.screen, FolderInput) and time.perf_counter() - t0 < 240:
            await pilot.pause(0.02)
        app.screen.query_one(Input).value = os.getcwd()
        t1 = time.perf_counter()
        await pilot.press("enter")
        while not any("Saved" in str(n.message) for n in app._notifications) and time.perf_counter() - t1 < 120:
            await pilot.pause(0.02)
        out["save_s"] = time.perf_counter() - t1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--make", nargs=2, metavar=("FOLDER", "RUN_ID"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.make:
        make_db(Path(a.make[0]), a.make[1], a.mb)
        return
    with tempfile.TemporaryDirectory() as d:
        here = os.getcwd()
        os.chdir(d)  # `s` saves into the current directory
        try:
            out = asyncio.run(measure(prepare(Path(d), a.mb), a.mb))
            out["saved_mb"] = sum(p.stat().st_size for p in Path(d).glob("arena-output-*")) / 1024 / 1024
        finally:
            os.chdir(here)
    units = {"detail_open_s": "s", "rss_growth_mb": "MB", "save_s": "s", "saved_mb": "MB"}
    for k, v in out.items():
        print(json.dumps({"name": k, "value": round(v, 3), "unit": units[k]}))


if __name__ == "__main__":
    main()

"""`arena merge` at scale: 10 shards of 100,000 calls each joined into one run of 1,000,000, its time and peak RSS.

    python benchmarks/merge_scale.py [--shards 10] [--models 20] [--cases 10000] [--trials 5] [--keep DIR] [--no-read]

The shards are built fast by inserting synthetic rows directly (as benchmarks/results_scale.py builds its store),
each holding the calls its `--shard K/N` would make (plan.shard_of) plus the run's full plan. The merge itself runs
as `arena merge` in a child process, so its wall time and peak RSS are the command's own. Memory must not grow with
the data: merge_rss_ratio divides the peak RSS of merging all shards by that of merging one (a tenth of the rows);
near 1 means constant memory (rows stream inside SQLite: ATTACH + INSERT ... SELECT). Targets on 2 cores:
merge_s < 60, merge_rss_ratio < 1.3. Then, unless --no-read, benchmarks/results_scale.py (leaderboard, compare,
all pairs, peak RSS) and benchmarks/results_view.py (`arena browse`: time to the leaderboard, the UI loop's
stalls) read the merged run, their figures printed prefixed `merged_`: a merged run reads like any other.
Prints one JSON line per figure (DESIGN.md, Benchmarks).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from arenatui.kernel.events import CallResult
from arenatui.plan import shard_of
from arenatui.store import Store
from arenatui.store.db import result_row
from arenatui.store.run_shards import record_shard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_scale import _project  # the same synthetic project as the results benchmark

RUN_ID = "merge-bench"
SEED = 0


def build(tmp: Path, n_shards: int, n_models: int, n_cases: int, trials: int) -> list[Path]:
    """One database per shard, each with the run's record and the rows of its own calls."""
    project = _project(n_models, n_cases, trials)
    project["run"]["seed"] = SEED
    planned = n_models * n_cases * trials
    paths = [tmp / f"shard-{k}.db" for k in range(n_shards)]
    stores = [Store(p) for p in paths]
    rng = np.random.default_rng(0)
    now = time.time()
    try:
        for k, store in enumerate(stores):
            filters = {"models": [], "tags": [], "limit": None, "trials": None, "shard": [k, n_shards]}
            store.create_run("scale", None, project, filters, planned, run_id=RUN_ID)
            record_shard(store, RUN_ID, k, n_shards)
        for i in range(n_models):
            mk = f"model-{i:02d}"
            lat = rng.lognormal(np.log(300 + 20 * i), 0.4, (n_cases, trials))
            ok = rng.random((n_cases, trials)) < 0.5 + 0.02 * i
            rows: list[list[tuple[object, ...]]] = [[] for _ in range(n_shards)]
            for j in range(n_cases):
                cid = f"case-{j:05d}"
                for t in range(trials):
                    owner = shard_of(SEED, mk, cid, t, n_shards)
                    passed = bool(ok[j, t])
                    ms = float(lat[j, t])
                    rows[owner].append(result_row(RUN_ID, CallResult(
                        mk, cid, t, "passed" if passed else "failed", "yes" if passed else "no", 1.0 if passed else 0.0,
                        passed, None, None, 1, ms, ms, ms / 4, 10, 5, 0.0002, "stop", False, now, now, None,
                        "none" if passed else "wrong_answer")))
            for store, shard_rows in zip(stores, rows, strict=True):
                store.write_rows(shard_rows)
        for store in stores:
            store.mark_run(RUN_ID, "finished")
    finally:
        for store in stores:
            store.close()
    return paths


def timed_merge(out: Path, inputs: list[Path]) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of `arena merge OUT IN...` in a child process."""
    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "arenatui", "merge", str(out), *map(str, inputs), "--quiet"],
                            stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"arena merge failed with exit code {os.waitstatus_to_exitcode(status)}")
    return elapsed, usage.ru_maxrss / (1024 if sys.platform != "darwin" else 1024 * 1024)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shards", type=int, default=10)
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--keep", help="build the shards and the merged database in this directory and keep them")
    ap.add_argument("--no-read", action="store_true", help="skip reading the merged run with results_scale.py")
    a = ap.parse_args()
    figures: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(a.keep) if a.keep else Path(tmp_dir)
        tmp.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        shards = build(tmp, a.shards, a.models, a.cases, a.trials)
        figures.append(("merge_build_s", time.perf_counter() - t0, "s"))
        one_s, one_rss = timed_merge(tmp / "one.db", shards[:1])
        all_s, all_rss = timed_merge(tmp / "merged.db", shards)
        with Store(tmp / "merged.db") as store:
            calls = store.count_results(RUN_ID)
        figures += [("merge_calls", float(calls), "calls"), ("merge_shards", float(a.shards), "shards"),
                    ("merge_s", all_s, "s"), ("merge_calls_per_s", calls / all_s, "calls/s"),
                    ("merge_peak_rss_mb", all_rss, "MB"), ("merge_one_shard_peak_rss_mb", one_rss, "MB"),
                    ("merge_one_shard_s", one_s, "s"), ("merge_rss_ratio", all_rss / one_rss, "ratio")]
        if not a.no_read:  # report/compare (results_scale.py), then browse (results_view.py), on the merged run
            for script, extra in (("results_scale.py", ["--repeat", "1"]), ("results_view.py", [])):
                read = subprocess.run([sys.executable, str(Path(__file__).parent / script), "--db",
                                       str(tmp / "merged.db"), *extra], capture_output=True, text=True, check=True)
                for line in read.stdout.splitlines():
                    f = json.loads(line)
                    figures.append((f"merged_{f['name']}", float(f["value"]), f["unit"]))
    for name, value, unit in figures:
        print(json.dumps({"name": name, "value": round(value, 4), "unit": unit}))


if __name__ == "__main__":
    main()

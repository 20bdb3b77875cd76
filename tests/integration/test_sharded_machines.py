"""N local processes as if they were N machines: each its own database, a shared run id, the start barrier for
load shards, then `arena merge`; the merged sweep equals an unsharded one call for call, and the merged load run's
figures equal those recomputed from the shards' concatenated raw rows."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from arenatui.cli import main
from arenatui.commands.load_files import figures_dict
from arenatui.commands.load_report import stored_outcome
from arenatui.load.barrier import worst_start
from arenatui.load.metrics import Samples, compute
from arenatui.load.store import stored_run
from arenatui.store import Store
from arenatui.store.run_shards import run_shards

ROOT = Path(__file__).resolve().parents[2]
N = 3
CALL = ("model_key", "case_id", "trial", "status", "output", "score", "passed", "error_class", "attempts",
        "input_tokens", "output_tokens", "cost", "failure_mode", "finish_reason")
"""What a call is, whatever machine made it and however fast (its timings are the machine's)."""


def _project(tmp_path: Path) -> Path:
    sim = {"base_latency_s": 0.001, "per_token_s": 0.0, "jitter": 0.0}
    raw = {"project": {"name": "sharded"}, "run": {"seed": 11, "trials": 3, "concurrency": 4, "max_attempts": 4,
                                                     "backoff_base_s": 0.001, "backoff_cap_s": 0.01, "timeout_s": 5.0},
           "models": [{"key": "a", "provider": "sim", "sim": {**sim, "transient_rate": 0.2}},
                      {"key": "b", "provider": "sim", "sim": {**sim, "accuracy": 0.4}},
                      {"key": "c", "provider": "sim", "sim": {**sim, "accuracy": 0.7}}],
           "cases": [{"id": f"q{i}", "input": f"{i}+{i}?", "expected": str(2 * i)} for i in range(9)]}
    p = tmp_path / "arena.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


def _machines(argvs: list[list[str]], home: Path) -> None:
    """Start every 'machine' at once, as a runner would, and wait for them all."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARENATUI_HOME": str(home)}
    procs = [subprocess.Popen([sys.executable, "-m", "arenatui", *argv], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for argv in argvs]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"{out}\n{err}"


def _calls(db: Path, run_id: str) -> list[tuple[Any, ...]]:
    with Store(db) as store:
        return [tuple(r) for r in store.results(run_id, CALL)]


def test_a_sharded_sweep_merges_into_the_unsharded_run_call_for_call(tmp_path: Path, arena_home: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    proj = _project(tmp_path)
    shards = [tmp_path / f"shard{k}.db" for k in range(N)]
    _machines([["evaluate", "-p", str(proj), "--shard", f"{k}/{N}", "--run-id", "sweep-1", "--db", str(db), "-q",
                "--no-report"] for k, db in enumerate(shards)], arena_home)
    whole = tmp_path / "whole.db"
    assert main(["evaluate", "-p", str(proj), "--db", str(whole), "--run-id", "sweep-1", "-q", "--no-report"]) == 0

    per_shard = [_calls(db, "sweep-1") for db in shards]
    assert all(per_shard), "every shard made some calls"
    keys = [c[:3] for calls in per_shard for c in calls]
    assert len(keys) == len(set(keys)) == 3 * 9 * 3  # disjoint, and together the whole plan

    out = tmp_path / "merged.db"
    with Store(out) as store:  # a database that already holds another run keeps it
        store.create_run("other", None, {"project": {"name": "other"}}, {}, 0, run_id="kept")
    assert main(["merge", str(out), *map(str, shards)]) == 0
    assert _calls(out, "sweep-1") == _calls(whole, "sweep-1")  # call for call, retries and spend included
    with Store(out) as store:
        assert {r[0] for r in store.conn.execute("SELECT run_id FROM runs")} == {"kept", "sweep-1"}
        (failed,) = store.conn.execute("SELECT COUNT(*) FROM failed_attempts WHERE run_id = 'sweep-1'").fetchone()
    with Store(whole) as store:
        (expected,) = store.conn.execute("SELECT COUNT(*) FROM failed_attempts").fetchone()
    assert failed == expected > 0

    capsys.readouterr()
    assert main(["runs", "--db", str(out)]) == 0
    listing = capsys.readouterr().out
    row = next(line for line in listing.splitlines() if "sweep-1" in line)
    assert "finished, 3 shards" in row and "81/81" in row  # one run, with its shard count, every call stored
    assert main(["report", "sweep-1", "--db", str(out), "-f", "json"]) == 0  # the read path takes a merged run


def test_sharded_load_machines_start_on_the_barrier_and_merge_exactly(tmp_path: Path, arena_home: Path) -> None:
    proj = _project(tmp_path)
    shards = [tmp_path / f"load{k}.db" for k in range(N)]
    base = time.time() + 3.0  # the value a runner would hand every machine alike
    common = ["load", "-p", str(proj), "-m", "b", "--rate", "80", "--duration", "1s", "--arrival", "poisson",
              "--seed", "4", "--run-id", "load-1", "-q", "--start-in", "0.5s", "--start-base", f"{base:.6f}"]
    # machine 0 splits its share over two processes of its own: the shares stay the same
    _machines([[*common, "--shard", f"{k}/{N}", "--db", str(db), *(["--processes", "2"] if k == 0 else [])]
               for k, db in enumerate(shards)], arena_home)
    whole = tmp_path / "whole-load.db"
    assert main(["load", "-p", str(proj), "-m", "b", "--rate", "80", "--duration", "1s", "--arrival", "poisson",
                 "--seed", "4", "--db", str(whole), "-q"]) == 0

    out = tmp_path / "merged-load.db"
    assert main(["merge", str(out), *map(str, shards), "--quiet"]) == 0
    with Store(out) as store:
        merged = store.conn.execute("SELECT seq, scheduled_s, case_id FROM load_requests ORDER BY seq").fetchall()
        recorded = run_shards(store, "load-1")
    with Store(whole) as store:
        one = store.conn.execute("SELECT seq, scheduled_s, case_id FROM load_requests ORDER BY seq").fetchall()
    assert merged == one  # the machines' shares are the one schedule, each request once

    assert [(s.shard, s.shards) for s in recorded] == [(k, N) for k in range(N)]
    assert all(s.planned_start == pytest.approx(base + 0.5) and s.start_lag_s is not None for s in recorded)

    concatenated = Samples()
    for db in shards:
        samples, windows = stored_run(db, "load-1")
        concatenated.extend(samples)
    _rid, outcome = stored_outcome(out, "load-1")
    assert _flat(figures_dict(outcome.run)) == pytest.approx(_flat(figures_dict(compute(concatenated, windows))),
                                                             nan_ok=True)
    assert outcome.notes and "worst start skew" in outcome.notes[0]
    worst = worst_start(recorded)
    assert worst is not None and f"shard {worst.shard.shard}/{N}" in outcome.notes[0]


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        elif isinstance(v, bool | int | float):
            out[prefix + k] = float(v)
        elif v is None:
            out[prefix + k] = math.nan
    return out

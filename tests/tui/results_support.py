"""A stored simulated run with known true differences, for the results screens' tests.

sim-strong (0.90, hard 0.55) vs sim-weak (0.50, hard 0.85): clearly separated overall, reversed on the
hard stratum. sim-strong vs sim-twin (0.87): too close to order on 120 cases. sim-twin fails transiently
now and then (some retries, a few calls errored). Wall-clock figures (latency, TTFT, start time, run id)
are replaced by fixed values after the sweep, so screens drawn from this store are identical run to run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import tomli_w

from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.store import Store

RUN_ID = "20260101-120000-test"
OLD_RUN_ID = "20251231-120000-test"
MODELS = ("sim-strong", "sim-twin", "sim-weak")
N_EASY, N_HARD, TRIALS = 80, 40, 2


def _sim(accuracy: float, hard: float, **extra: Any) -> dict[str, Any]:
    return {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0, "output_tokens": 16, "accuracy": accuracy,
            "strata_accuracy": {"hard": hard}, **extra}


def results_project(tmp_path: Path, *, seed: int = 11) -> Path:
    cases: list[dict[str, Any]] = []
    for j in range(N_EASY + N_HARD):
        hard = j >= N_EASY
        cases.append({"id": f"{'hard' if hard else 'easy'}-{j:03d}", "input": f"What is {j} + 42 - {j}?",
                      "expected": "42", "stratum": "hard" if hard else "easy",
                      "tags": ["math"] if j % 2 else ["trivia"]})
    cases.append({"id": "sealed-1", "input": "SECRET sealed question", "expected": "42", "stratum": "hard",
                  "sealed": True})
    raw: dict[str, Any] = {
        "project": {"name": "results-test"},
        "run": {"concurrency": 16, "trials": TRIALS, "seed": seed, "timeout_s": 10.0, "max_attempts": 1,
                "backoff_base_s": 0.0, "backoff_cap_s": 0.0},
        "models": [
            {"key": "sim-strong", "provider": "sim", "model": "strong", "price_in_per_mtok": 3.0,
             "price_out_per_mtok": 15.0, "sim": _sim(0.90, 0.55)},
            {"key": "sim-twin", "provider": "sim", "model": "twin", "price_in_per_mtok": 1.0,
             "price_out_per_mtok": 4.0, "sim": _sim(0.87, 0.55, transient_rate=0.15)},
            {"key": "sim-weak", "provider": "sim", "model": "weak", "price_in_per_mtok": 0.1,
             "price_out_per_mtok": 0.4, "sim": _sim(0.50, 0.85)},
        ],
        "scorers": [{"name": "numeric", "kind": "numeric"}],
        "cases": cases,
    }
    path = tmp_path / "results.toml"
    path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return path


def _run(project: Path, db: Path, run_id: str, started: float) -> None:
    sweep = Sweep(SweepOptions(project=project, db=db), live_metrics=False)
    status = anyio.run(sweep.run)
    assert status == "finished"
    with Store(db) as store:
        c = store.conn
        # fixed stand-ins for wall-clock values: the snapshot tests must not depend on this machine's timing
        c.execute("UPDATE results SET run_id = ?, "
                  "latency_ms = CASE WHEN status = 'errored' THEN latency_ms ELSE 100 + (output_tokens * 7 + "
                  "  length(case_id) * 13 + trial * 5 + unicode(model_key) * length(model_key)) % 400 END, "
                  "ttft_ms = CASE WHEN status = 'errored' THEN NULL ELSE 20 + (trial * 11 + length(model_key) * 3) END,"
                  " total_ms = 0, started_at = 0, finished_at = 0, connect_ms = NULL WHERE run_id = ?",
                  (run_id, sweep.run_id))
        c.execute("UPDATE runs SET run_id = ?, started_at = ?, finished_at = ?, project_path = 'results.toml' "
                  "WHERE run_id = ?", (run_id, started, started + 5, sweep.run_id))
        c.execute("DELETE FROM client_load")
        c.execute("DELETE FROM concurrency_changes")
        # what each concurrency level gave is timing too: tests that need a readout write a fixed one
        c.execute("DELETE FROM tuning_levels")
        c.execute("DELETE FROM failed_attempts")
        c.execute("DELETE FROM tuning_decisions")


F1_LABELS = ("positive", "negative", "neutral")
F1_STRATA = {"pos": ("positive", 4), "neg": ("negative", 3), "neg-hard": ("negative", 1), "neu": ("neutral", 2)}
"""stratum: (its cases' label, how many). A simulated model answers a stratum all right (the label) or all wrong
("I am not sure.": no label) by its accuracy there, so each label's counts, and macro-F1, follow by hand."""
F1_ACCURACY = {
    "sim-sharp": {"pos": 1.0, "neg": 1.0, "neg-hard": 0.0, "neu": 1.0},
    "sim-lazy": {"pos": 1.0, "neg": 0.0, "neg-hard": 0.0, "neu": 0.0},
}


def f1_project(tmp_path: Path) -> Path:
    """Sentiment cases under an f1 scorer beside arithmetic under a numeric one (only the first are F1's)."""
    cases: list[dict[str, Any]] = []
    for stratum, (label, n) in F1_STRATA.items():
        cases += [{"id": f"{stratum}-{i}", "input": f"Sentiment of review {stratum} {i}?", "expected": label,
                   "stratum": stratum, "scorer": "sentiment"} for i in range(n)]
    cases += [{"id": f"sum-{i}", "input": f"What is {i} + 1?", "expected": str(i + 1), "stratum": "pos"}
              for i in range(4)]
    raw: dict[str, Any] = {
        "project": {"name": "f1-test"},
        "run": {"concurrency": 8, "trials": 1, "seed": 3, "timeout_s": 10.0, "max_attempts": 1,
                "backoff_base_s": 0.0, "backoff_cap_s": 0.0},
        "models": [{"key": k, "provider": "sim", "model": k, "price_in_per_mtok": 1.0, "price_out_per_mtok": 2.0,
                    "sim": _sim(1.0, 1.0) | {"strata_accuracy": acc}} for k, acc in F1_ACCURACY.items()],
        "scorers": [{"name": "numeric", "kind": "numeric"},
                    {"name": "sentiment", "kind": "f1", "labels": list(F1_LABELS)}],
        "cases": cases,
    }
    path = tmp_path / "f1.toml"
    path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return path


_CACHE: dict[str, Path] = {}


def results_db(tmp_path_factory: Any) -> Path:
    """Two stored runs of the same project (the newer one is 'last'), built once per test session."""
    if "db" not in _CACHE:
        d: Path = tmp_path_factory.mktemp("results-db")
        db = d / "results.db"
        _run(results_project(d, seed=5), db, OLD_RUN_ID, 1767182400.0)
        _run(results_project(d, seed=11), db, RUN_ID, 1767268800.0)
        _CACHE["db"] = db
    return _CACHE["db"]


def f1_db(tmp_path_factory: Any, tmp_path: Path) -> Path:
    """A copy of one stored run of `f1_project` (RUN_ID), built once per test session."""
    if "f1" not in _CACHE:
        d: Path = tmp_path_factory.mktemp("f1-db")
        _run(f1_project(d), d / "f1.db", RUN_ID, 1767268800.0)
        _CACHE["f1"] = d / "f1.db"
    dst = tmp_path / "f1.db"
    shutil.copy(_CACHE["f1"], dst)
    return dst


def copy_db(tmp_path_factory: Any, tmp_path: Path) -> Path:
    src = results_db(tmp_path_factory)
    dst = tmp_path / "results.db"
    shutil.copy(src, dst)
    return dst


LOAD_RUNS = {"20260102-090000-load": ("sim-strong", 400.0, 1767344400.0),
             "20260102-100000-load": ("sim-strong", 200.0, 1767348000.0),
             "20260102-110000-load": ("sim-weak", 120.0, 1767351600.0)}
"""Load runs of the results project, oldest first: run id -> (model, base latency in ms, start). sim-strong's
newest is the faster; picking its older one moves it on the frontier. Its two runs are one series."""


def load_runs_db(tmp_path_factory: Any, tmp_path: Path) -> Path:
    """A copy of `results_db` with LOAD_RUNS stored beside its sweeps, their timings fixed (built once per session)."""
    import subprocess
    import sys

    if "loads" not in _CACHE:
        d: Path = tmp_path_factory.mktemp("load-runs-db")
        db = d / "results.db"
        shutil.copy(results_db(tmp_path_factory), db)
        project = results_project(d)
        for run_id, (model, base, started) in LOAD_RUNS.items():
            done = subprocess.run([sys.executable, "-m", "arenatui", "load", "--project", str(project), "--db", str(db),
                                   "--model", model, "--rate", "20", "--duration", "0.4", "--quiet"],
                                  capture_output=True, text=True, timeout=120, check=False)
            assert done.returncode == 0, done.stderr
            with Store(db) as store:
                c = store.conn
                (new,) = c.execute("SELECT run_id FROM runs WHERE kind = 'load' ORDER BY rowid DESC").fetchone()
                for (table,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                    if any(col[1] == "run_id" for col in c.execute(f"PRAGMA table_info({table})")):
                        c.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (run_id, new))
                c.execute("UPDATE runs SET started_at = ?, finished_at = ?, project_path = 'results.toml' "
                          "WHERE run_id = ?", (started, started + 1, run_id))
                # fixed stand-ins for the wall clock: a request every 50 ms, latency base + 0..49 ms
                c.execute("UPDATE load_requests SET scheduled_s = seq * 0.05, sent_s = seq * 0.05, latency_ms = ? + "
                          "(seq * 37) % 50, ttft_ms = (? + (seq * 37) % 50) / 2, finished_s = seq * 0.05 + (? + "
                          "(seq * 37) % 50) / 1000.0, outcome = 'ok' WHERE run_id = ?", (base, base, base, run_id))
                c.execute("UPDATE load_segments SET start_s = 0, end_s = 0.4 WHERE run_id = ?", (run_id,))
                c.execute("DELETE FROM client_load")
                if model == "sim-strong":  # sim-strong's two runs: one series, as arena load --series makes
                    c.execute("UPDATE runs SET series_id = 'nightly-strong' WHERE run_id = ?", (run_id,))
        _CACHE["loads"] = db
    dst = tmp_path / "loads.db"
    shutil.copy(_CACHE["loads"], dst)
    return dst

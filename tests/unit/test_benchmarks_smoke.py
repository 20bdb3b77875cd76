"""Every script in benchmarks/ runs to completion with its smallest arguments and prints its figures as JSON lines.

A smoke run, not a timed test: nothing here reads a figure's value (the scripts rot silently otherwise: one refused
its own project after the loader's trial bound moved). A script added to benchmarks/ without an entry here fails
`test_every_benchmark_has_a_smoke_run`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

FAST: dict[str, tuple[str, ...]] = {
    "budget_saving": ("--cases", "60"),
    "case_load": ("--cases", "200", "--repeat", "1"),
    "code_exec_sandbox": ("--runs", "1"),
    "decision_coverage": ("--seeds", "1", "--gate-sims", "4", "--cluster-sims", "4", "--tie-seeds", "4",
                          "--variant-sims", "4"),
    "engine_overhead": ("--calls", "500", "--repeat", "1"),
    "http_throughput": ("--calls", "50"),
    "live_fold": (),
    "merge_scale": ("--shards", "2", "--models", "2", "--cases", "20", "--trials", "1"),
    "results_scale": ("--models", "2", "--cases", "20", "--trials", "1", "--repeat", "1"),
    "results_view": ("--models", "2", "--cases", "20", "--trials", "1"),
    "startup": ("--repeat", "1"),
    "store_case_sets": ("--cases", "100", "--runs", "1"),
    "ui_overhead": ("--models", "2", "--cases", "50", "--repeat", "1"),
}
"""Scripts that finish in a few seconds with these arguments."""

SLOW: dict[str, tuple[str, ...]] = {
    "detail_open": ("--mb", "1"),
    "engine_backoff": ("--window", "0.3"),
    "engine_against": ("--ref", "HEAD", "--calls", "200", "--rounds", "1"),
    "http_overhead": ("--calls", "50", "--open-calls", "50", "--waves", "3", "--warmup-waves", "1", "--transports",
                      "aiohttp"),
    "load_accuracy": ("--quick", "--parts", "accuracy"),
    "load_rates": ("--duration", "0.5", "--trace-lines", "1000"),
    "solver_overhead": ("--calls", "50", "--repeat", "1"),
    "tuner": ("--seeds", "1", "--calls", "100", "--shapes", "rpm"),
    "watch_overhead": ("--calls", "2000", "--repeat", "1", "--rows", "2000", "--seconds", "2", "--append", "50"),
}
"""Scripts that take ten seconds or more even so (servers, subprocesses, fixed windows): marked slow."""

SERVERS: dict[str, tuple[str, ...]] = {
    "llamacpp_server": ("--budgets", "20", "--levels", "1"),
}
"""Scripts that drive a third-party server of the conformance tier (scripts/install_servers.sh): run where it is."""


def _run(name: str, args: tuple[str, ...], tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCHMARKS.parent), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, str(BENCHMARKS / f"{name}.py"), *args], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=110)
    assert p.returncode == 0, f"benchmarks/{name}.py exited {p.returncode}:\n{p.stderr[-3000:]}"
    figures = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert figures, f"benchmarks/{name}.py printed no JSON lines:\n{p.stdout[-2000:]}"
    assert all({"name", "value", "unit"} <= f.keys() for f in figures), figures


def test_every_benchmark_has_a_smoke_run() -> None:
    scripts = {p.stem for p in BENCHMARKS.glob("*.py") if not p.stem.startswith("_")}
    assert scripts == FAST.keys() | SLOW.keys() | SERVERS.keys()


@pytest.mark.parametrize("name", sorted(FAST))
def test_benchmark_runs_to_completion(name: str, tmp_path: Path) -> None:
    _run(name, FAST[name], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW))
def test_slow_benchmark_runs_to_completion(name: str, tmp_path: Path) -> None:
    if name == "engine_against" and (shutil.which("git") is None or not (BENCHMARKS.parent / ".git").exists()):
        pytest.skip("engine_against.py checks out a commit with git: not a git checkout")
    _run(name, SLOW[name], tmp_path)


@pytest.mark.slow
@pytest.mark.servers
@pytest.mark.parametrize("name", sorted(SERVERS))
def test_server_benchmark_runs_to_completion(name: str, tmp_path: Path) -> None:
    home = Path(os.environ.get("ARENATUI_SERVERS") or Path.home() / ".cache" / "arenatui" / "servers")
    if not (home / "llama" / "bin" / "python").exists():
        pytest.skip(f"llama-cpp-python's server is not installed under {home} (bash scripts/install_servers.sh)")
    _run(name, SERVERS[name], tmp_path)

"""The engine's cost per request against an earlier commit: plain sweeps at REF and here, and here with prompt
variants and repairs, alternated on the same machine.

    python benchmarks/engine_against.py --ref 7a3b646 [--calls 40000] [--rounds 8] [--instructions]

The brief's figures are alternated runs on one machine; this is that measurement kept. REF is checked out in a
temporary git worktree (removed at the end) and every sweep runs in a fresh interpreter with that tree first on
its path: the same zero-latency sweep as engine_overhead.py (4 simulated models, persistence on, quiet), CPU of the
engine's process (not the writer child) per request made, where a request is a stored result, a repair turn or an
escalation. Figures (JSON lines):

- cpu_us_per_request_{ref,plain,follow_ups}: medians over --rounds.
- plain_over_ref, follow_ups_over_ref, follow_ups_over_plain: medians of each round's ratio, so drift on the
  machine between rounds cancels. On the shared 2-core machine a single round's ratio moves by ±0.15.
- with --instructions (valgrind): instructions per request under callgrind, a 2,500-call sweep less a 500-call
  one (start-up cancels), hash seed fixed and address randomisation off (setarch -R, where it exists): steady to
  about 0.1%, independent of the machine's load, and the same three ratios from them. Takes a few minutes.

Issue 23 asked that a sweep with prompt variants and repairs cost within 10% per request of the engine before
them (REF 7a3b646, where the issue was filed): follow_ups_over_ref.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


def _project(calls: int, follow_ups: bool) -> dict[str, Any]:
    n_models, trials = 4, 10
    n_cases = math.ceil(calls / (n_models * trials))
    raw: dict[str, Any] = {
        "project": {"name": "bench"},
        "run": {"concurrency": 64, "trials": trials, "timeout_s": 60.0},
        "models": [{"key": f"m{i}", "provider": "sim",
                    "sim": {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0, "accuracy": 0.5}}
                   for i in range(n_models)],
        "cases": [{"id": f"c{j}", "input": f"question {j}", "expected": "yes"} for j in range(n_cases)],
    }
    if follow_ups:  # half the cases under two variants (as many results), each wrong answer repaired once
        raw["cases"] = raw["cases"][: max(1, n_cases // 2)]
        raw["run"]["repair"] = {"attempts": 1, "on": ["wrong_answer"], "message": "No: {error}"}
        raw["prompts"] = [{"name": "a", "template": "{input}"},
                          {"name": "b", "system": "Be brief.", "template": "Q: {input}"}]
    return raw


def child(mode: str, calls: int) -> None:
    """One sweep in this interpreter (whichever arenatui its path finds): prints CPU µs per request, requests."""
    import anyio
    import tomli_w

    try:
        from arenatui.session.sweep import Sweep, SweepOptions
    except ImportError:  # a REF from before the package tree was layered (issue 33): the sweep was a root module
        from arenatui.sweep import Sweep, SweepOptions  # type: ignore[import-not-found, no-redef]

    with tempfile.TemporaryDirectory() as tmp:
        db, toml = Path(tmp) / "b.db", Path(tmp) / "b.toml"
        toml.write_text(tomli_w.dumps(_project(calls, mode == "follow_ups")))
        sweep = Sweep(SweepOptions(project=toml, db=db), live_metrics=False)
        c0 = time.process_time()
        anyio.run(sweep.run)
        cpu = time.process_time() - c0
        con = sqlite3.connect(db)
        cols = {r[1] for r in con.execute("PRAGMA table_info(results)")}
        extra = (" + TOTAL(repairs)" if "repairs" in cols else "") + \
            (" + COUNT(escalated_to)" if "escalated_to" in cols else "")
        (n,) = con.execute(f"SELECT COUNT(*){extra} FROM results").fetchone()
        con.close()
    print(json.dumps({"cpu_us": cpu / n * 1e6, "requests": int(n)}))


def _run(tree: Path, mode: str, calls: int, valgrind: bool = False) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # lazy imports mid-sweep would compile from source on every run
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, str(calls)]
    if valgrind:
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd]
        if shutil.which("setarch"):  # addresses fixed: hashtables keyed by address (marshal's) then probe alike,
            cmd = ["setarch", platform.machine(), "-R", *cmd]  # and a count repeats within 0.1k (±0.6k without)
    p = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True)
    out: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    if valgrind:
        line = next(ln for ln in p.stderr.splitlines() if "Collected" in ln)
        out["instructions"] = int(line.split()[-1])
    return out


def _instructions(tree: Path, mode: str) -> float:
    # a run outside valgrind first: the first run after an edit compiles the changed modules' bytecode, which would
    # land in the small run only and make the difference read low (79k one run, 142k the next, on one tree)
    _run(tree, mode, 100)
    small, large = _run(tree, mode, 500, True), _run(tree, mode, 2500, True)
    return float((large["instructions"] - small["instructions"]) / (large["requests"] - small["requests"]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default="7a3b646", help="the commit to compare against (default: where issue 23 was "
                                                     "filed)")
    ap.add_argument("--calls", type=int, default=40_000)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--instructions", action="store_true", help="also count instructions under valgrind")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "CALLS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    tmp = Path(tempfile.mkdtemp(prefix="arena-ref-"))
    ref_tree = tmp / "ref"
    subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", "-q", str(ref_tree), args.ref], check=True)
    figures: list[dict[str, Any]] = []
    try:
        cpu: dict[str, list[float]] = {"ref": [], "plain": [], "follow_ups": []}
        for _ in range(args.rounds):  # alternated: drift on the machine hits all three alike
            cpu["ref"].append(_run(ref_tree, "plain", args.calls)["cpu_us"])
            cpu["plain"].append(_run(HERE, "plain", args.calls)["cpu_us"])
            cpu["follow_ups"].append(_run(HERE, "follow_ups", args.calls)["cpu_us"])
        for k, v in cpu.items():
            figures.append({"name": f"cpu_us_per_request_{k}", "value": round(statistics.median(v), 2),
                            "unit": "us/request"})
        for a, b in (("plain", "ref"), ("follow_ups", "ref"), ("follow_ups", "plain")):
            ratio = statistics.median(x / y for x, y in zip(cpu[a], cpu[b], strict=True))
            figures.append({"name": f"{a}_over_{b}", "value": round(ratio, 3), "unit": "ratio"})
        if args.instructions:
            ins = {"ref": _instructions(ref_tree, "plain"), "plain": _instructions(HERE, "plain"),
                   "follow_ups": _instructions(HERE, "follow_ups")}
            for k, n in ins.items():
                figures.append({"name": f"instructions_per_request_{k}", "value": round(n), "unit": "instr"})
            for a, b in (("plain", "ref"), ("follow_ups", "ref"), ("follow_ups", "plain")):
                figures.append({"name": f"instructions_{a}_over_{b}", "value": round(ins[a] / ins[b], 3),
                                "unit": "ratio"})
    finally:
        subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(ref_tree)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    figures.insert(0, {"name": "ref", "value": args.ref, "unit": "commit"})
    for f in figures:
        print(json.dumps(f))


if __name__ == "__main__":
    main()

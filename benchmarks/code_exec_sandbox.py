"""code_exec: what one answer's sandbox costs, with namespaces and without, measured in the same run.

    python benchmarks/code_exec_sandbox.py [--runs 20]

Prints one JSON line per figure (medians of --runs runs of a trivial passing answer on this shared machine):

- sandbox_run_ms: one run with this machine's guards (namespaces where the kernel allows them);
- no_namespaces_run_ms: one run with the namespaces switched off (the fallback path), with the same interpreter
  (as root the fallback would pick one other users may run, whose start-up differs);
- namespace_cost_ratio: the first over the second (building the root, the PID namespace's init, the user
  namespace): the price of the isolation, as a ratio so that the machine's load cancels out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import arenatui.scoring.code_exec as code_exec


def median_ms(runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = code_exec.run_code("def add(a, b):\n    return a + b\n", "assert add(2, 2) == 4\n")
        times.append((time.perf_counter() - t0) * 1000.0)
        assert r.passed, r.stderr
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    report = code_exec.sandbox_report()
    with_ns = median_ms(args.runs)
    code_exec._namespaces_work = False
    code_exec.sandbox_python = lambda: (sys.executable, False)  # type: ignore[assignment]
    without = median_ms(args.runs)
    print(json.dumps({"name": "sandbox_mechanism", "value": report.describe(), "unit": "text"}))
    print(json.dumps({"name": "sandbox_run_ms", "value": round(with_ns, 1), "unit": "ms"}))
    print(json.dumps({"name": "no_namespaces_run_ms", "value": round(without, 1), "unit": "ms"}))
    print(json.dumps({"name": "namespace_cost_ratio", "value": round(with_ns / without, 2), "unit": "x"}))


if __name__ == "__main__":
    main()

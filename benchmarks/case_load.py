"""Case-file loading: what the load-time checks (surrogates, nan/inf, nesting; CSV via the csv module) cost.

    python benchmarks/case_load.py [--cases 100000] [--repeat 3]

Prints one JSON line per figure; each time is the median of --repeat loads on this shared machine.

- jsonl_load_s, csv_load_s: load_project on a project whose cases come from a JSONL or CSV file of
  --cases cases (non-ASCII text in every case, so that the surrogate check does its full work).
- check_share: the share of the JSONL load spent in the value check (first_bad_value) alone.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import tempfile
import time
from pathlib import Path

from arenatui.project import load_project
from arenatui.project.read import first_bad_value


def median_time(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = [{"id": f"c{i}", "input": f"Quelle est la capitale de la France ? ({i}) — réponse courte",
             "expected": "Paris", "tags": ["géo", "easy"], "stratum": "easy"} for i in range(args.cases)]
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "cases.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                          encoding="utf-8")
        with (root / "cases.csv").open("w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "input", "expected", "tags", "stratum"])
            for r in rows:
                w.writerow([r["id"], r["input"], r["expected"], ";".join(r["tags"]), r["stratum"]])
        for kind in ("jsonl", "csv"):
            (root / f"{kind}.toml").write_text(f'cases_file = "cases.{kind}"\n[[models]]\nkey = "a"\n',
                                               encoding="utf-8")
        jsonl_s = median_time(lambda: load_project(root / "jsonl.toml"), args.repeat)
        csv_s = median_time(lambda: load_project(root / "csv.toml"), args.repeat)
        check_s = median_time(lambda: [first_bad_value(r) for r in rows], args.repeat)
    for name, value, unit in (("jsonl_load_s", jsonl_s, "s"), ("csv_load_s", csv_s, "s"),
                              ("check_share", check_s / jsonl_s, "ratio")):
        print(json.dumps({"name": name, "value": round(value, 4), "unit": unit, "cases": args.cases}))


if __name__ == "__main__":
    main()

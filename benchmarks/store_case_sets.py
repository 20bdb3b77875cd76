"""Run-record size: a 100,000-case project run 10 times, cases inline in every run (before) against one case set.

    python benchmarks/store_case_sets.py [--cases 100000] [--runs 10]

Prints one JSON line per figure:
- inline_config_bytes_per_run: the run record as schema 4 stored it (config_json with every case inline)
- config_bytes_per_run: config_json now (the cases live in case_sets, referenced by digest)
- db_bytes / db_bytes_inline: the database file after --runs runs, now and with cases inline
- db_size_ratio: inline over now (how many times smaller the database is)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from arenatui.store import Store


def _emit(name: str, value: float, unit: str) -> None:
    print(json.dumps({"name": name, "value": value, "unit": unit}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    config = {"project": {"name": "big"}, "run": {"trials": 1}, "models": [{"key": "m1", "provider": "sim"}],
              "cases": [{"id": f"case-{i:06d}", "input": f"What is {i} + {i}? Answer with the number only.",
                         "expected": str(2 * i)} for i in range(args.cases)]}
    with tempfile.TemporaryDirectory() as d:
        now, inline = Path(d) / "now.db", Path(d) / "inline.db"
        with Store(now) as store:
            for _ in range(args.runs):
                store.create_run("big", None, config, {}, args.cases)
            (per_run,) = store.conn.execute("SELECT AVG(LENGTH(config_json)) FROM runs").fetchone()
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with Store(inline) as store:  # what schema 4 did: every run's config_json carries the cases
            for i in range(args.runs):
                store.conn.execute("INSERT INTO runs (run_id, project, config_json, filters_json, planned, started_at,"
                                   " status) VALUES (?, 'big', ?, '{}', ?, 0, 'finished')",
                                   (f"r{i}", json.dumps(config), args.cases))
            (inline_per_run,) = store.conn.execute("SELECT AVG(LENGTH(config_json)) FROM runs").fetchone()
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        _emit("inline_config_bytes_per_run", inline_per_run, "bytes")
        _emit("config_bytes_per_run", per_run, "bytes")
        _emit("db_bytes", now.stat().st_size, "bytes")
        _emit("db_bytes_inline", inline.stat().st_size, "bytes")
        _emit("db_size_ratio", round(inline.stat().st_size / now.stat().st_size, 2), "x")


if __name__ == "__main__":
    main()

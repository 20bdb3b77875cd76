"""max_tokens recommendation: predicted generation-time saving against the saving a rerun at that limit measures.

    python benchmarks/budget_saving.py [--cases 200]

A simulated classification model (answers of ~20 tokens, wrong answers rambling for ~300, 2 ms per output token)
runs once at max_tokens 1024; `arena tune --show`'s recommendation (arenatui.tuning.budgets) predicts the
generation time the lower limit saves per answered call from the measured seconds per token; the same sweep runs
again at the recommended limit, and the measured saving is the difference of the two runs' summed latencies.
Printed: both savings and their ratio (target: within 10%), and the share of passing answers the lower limit cut
(target 0).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from pathlib import Path

import anyio

from arenatui.commands.tune_budgets import budgets_for_run
from arenatui.session.sweep import Sweep, SweepOptions
from arenatui.tuning.budgets import seconds_per_token


def _project(path: Path, max_tokens: int, cases: int) -> Path:
    body = f"""
[project]
name = "budget-bench"
[defaults]
max_tokens = {max_tokens}
[run]
concurrency = 64
timeout_s = 60.0
seed = 5
[[models]]
key = "chatty"
provider = "sim"
price_out_per_mtok = 4.0
[models.sim]
base_latency_s = 0.05
per_token_s = 0.002
jitter = 0.1
output_tokens = 20
wrong_tokens = 300
accuracy = 0.7
"""
    body += "".join(f'\n[[cases]]\nid = "c{i:04d}"\ninput = "label {i}"\nexpected = "pos"\n' for i in range(cases))
    path.write_text(body)
    return path


def _run(project: Path, db: Path) -> tuple[str, dict[str, tuple[int, float]]]:
    sweep = Sweep(SweepOptions(project=project, db=db), live_metrics=False)
    anyio.run(sweep.run)
    with sqlite3.connect(db) as conn:
        rows = {c: (p, lat) for c, p, lat in conn.execute(
            "SELECT case_id, passed, latency_ms FROM results WHERE run_id = ?", (sweep.run_id,))}
    return sweep.run_id, rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "b.db"
        first, before = _run(_project(Path(tmp) / "a.toml", 1024, args.cases), db)
        b = budgets_for_run(first, db)
        rec = b.max_tokens["chatty"]
        assert rec.value is not None and rec.action == "lower", rec.verdict
        limit = int(rec.value)
        from arenatui.results.budgets import budget_evidence
        from arenatui.store import Store

        with Store(db) as store:
            answers = budget_evidence(store, first).models["chatty"].answers
        per_token = seconds_per_token(answers)
        assert per_token is not None
        predicted = sum(a.output_tokens - limit for a in answers if a.output_tokens > limit) * per_token
        _, after = _run(_project(Path(tmp) / "b.toml", limit, args.cases), db)
        measured = (sum(v[1] for v in before.values()) - sum(v[1] for v in after.values())) / 1000.0
        passing = {c for c, v in before.items() if v[0]}
        cut = len(passing - {c for c, v in after.items() if v[0]})
    for name, value, unit in (("max_tokens_recommended", limit, "tokens"),
                              ("generation_saving_predicted_s", predicted, "s"),
                              ("generation_saving_measured_s", measured, "s"),
                              ("saving_predicted_over_measured", predicted / measured, "ratio"),
                              ("passing_answers_cut_share", cut / max(1, len(passing)), "share")):
        print(json.dumps({"name": name, "value": round(value, 4), "unit": unit}))


if __name__ == "__main__":
    main()

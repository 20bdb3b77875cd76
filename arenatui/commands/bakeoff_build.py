"""The bake-off page as JSON-shaped data (what `--format json` prints and the store keeps): one sweep read with
its load runs into the margin, behaviour at the target load, the errors each candidate makes, terms, and the
decision. Markdown and HTML render this dict (commands/bakeoff_page.py), so the formats and `--show` never disagree."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from arenatui.bakeoff.decision import LoadP95, decide
from arenatui.bakeoff.failures import refusals_by_category
from arenatui.bakeoff.sections import (
    conditions_section,
    failures_section,
    load_section,
    read_loads,
    term_checks,
    terms_section,
)
from arenatui.commands.report import model_dict, pair_dict, sandbox_words
from arenatui.kernel.errors import PlanError
from arenatui.results.read import prompt_robustness, read_run
from arenatui.stats import all_pairs, answered_models, leaderboard
from arenatui.stats.frontier import pareto_front
from arenatui.stats.jsonable import iso_utc as _iso
from arenatui.store import Store
from arenatui.store.bakeoff_queries import newest_sweep

ONE_PROMPT = "one prompt: not measured"
"""Robustness across prompt variants, until a run has variants: each candidate got one prompt, so part of the
margin may be which model suited the prompt written first."""


def _nan(x: float | None) -> float:
    return math.nan if x is None else x


def build_page(store: Store, run: str, load: Sequence[str] | None) -> dict[str, Any]:
    """The page of sweep `run` ('last': the newest sweep, not the load runs made after it) beside `load` (None:
    each model's newest finished load run of the project)."""
    sweep = read_run(store, newest_sweep(store) if run == "last" else run)
    if sweep.kind == "load":
        raise PlanError(f"arena bakeoff reads a sweep; run {sweep.run_id} is a load run: pass the sweep's run id "
                        f"and this one as --load {sweep.run_id}")
    loads, series = read_loads(store, sweep, load)
    results = sweep.results
    answered = answered_models(results)
    pairs = all_pairs(results, answered) if len(answered) > 1 else []
    rows = leaderboard(results, decisions=pairs)
    place = {r.model: i for i, r in enumerate(rows)}  # each pair read best first, as the leaderboard lists them
    pairs = [p if place[p.comparison.a] <= place[p.comparison.b] else p.flipped() for p in pairs]
    at_load = load_section(rows, sweep, loads, series)
    checks = term_checks(sweep)
    p95 = {r["model"]: LoadP95(r["latency_ms"]["p95"], _nan(r["p95_low"]), _nan(r["p95_high"]), r["answered"])
           for r in at_load["rows"] if r["load_run"] and r["latency_ms"]["p95"] is not None}
    fronts = {r.model: ["quality against cost per correct case"] if r.on_cost_front else [] for r in rows}
    for r in at_load["rows"]:
        if r["load_run"] and r["on_front"]:
            fronts[r["model"]].append("quality against p95 at the target load")
    notes = {r["model"]: "; ".join(x for x in (f"at the target load: {r['flag']}" if r["flag"] else None,
                                                 f"at the target load: {r['p95_evidence']}" if r.get("p95_evidence")
                                                 else None) if x) if r["load_run"]
             else "not load-tested at the target"
             for r in at_load["rows"] if r["flag"] or not r["load_run"] or r.get("p95_evidence")}
    decisions = decide(rows, pairs, checks, refusals_by_category(results, sweep.refusals), p95, fronts, notes)
    out = {d.model for d in decisions if d.eliminated}
    # an eliminated candidate is drawn greyed and is never the front's point: the front is redrawn among the others
    rows_at = at_load["rows"]
    for r in rows_at:
        r["eliminated"] = r["model"] in out
    kept = [r for r in rows_at if not r["eliminated"]]
    front = pareto_front([r["quality"] for r in kept], [r["latency_ms"]["p95"] if r["load_run"] and not
                                                         r.get("p95_evidence") else None for r in kept])
    on = {r["model"] for r, f in zip(kept, front, strict=True) if f}
    for r in rows_at:
        r["on_front"] = r["model"] in on
    rec = sweep.record
    rob = prompt_robustness(sweep)
    robustness = {"measured": False, "text": ONE_PROMPT} if rob is None else \
        {"measured": True, "text": rob.summary(), **rob.to_dict()}
    return {
        "kind": "bakeoff",
        "run": {"run_id": rec.run_id, "project": rec.project, "status": rec.status,
                "started_at": _iso(rec.started_at), "finished_at": _iso(rec.finished_at),
                "sandbox": sandbox_words(rec) if rec.sandbox else None, "sandbox_strong": rec.sandbox_strong},
        "made_at": _iso(time.time()),
        "load_runs": [x.run_id for x in loads],
        "conditions": conditions_section(sweep, loads),
        "margin": {"leaderboard": [model_dict(r) for r in rows], "pairs": [pair_dict(p) for p in pairs],
                   "robustness": robustness},
        "load": at_load,
        "failures": failures_section(sweep),
        "terms": terms_section(sweep, checks),
        "decisions": [{"model": d.model, "decision": d.verdict, "reasons": d.reasons} for d in decisions],
    }

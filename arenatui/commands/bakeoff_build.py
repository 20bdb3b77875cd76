"""The bake-off page as JSON-shaped data (what `--format json` prints and the store keeps): one sweep read with
its load runs into the margin, behaviour at the target load, the errors each candidate makes, terms, and the
decision. Markdown and HTML render this dict (commands/bakeoff_page.py), so the formats and `--show` never disagree."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from arenatui.bakeoff.decision import decide
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
from arenatui.errors import PlanError
from arenatui.stats import all_pairs, answered_models, leaderboard
from arenatui.stats.jsonable import iso_utc as _iso
from arenatui.stats.variants import prompt_robustness
from arenatui.store import Store
from arenatui.store.bakeoff_queries import newest_sweep
from arenatui.store.read import read_run

ONE_PROMPT = "one prompt: not measured"
"""Robustness across prompt variants, until a run has variants: each candidate got one prompt, so part of the
margin may be which model suited the prompt written first."""


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
    p95 = {r["model"]: r["latency_ms"]["p95"] for r in at_load["rows"] if r["load_run"]}
    fronts = {r.model: ["quality against cost per correct case"] if r.on_cost_front else [] for r in rows}
    for r in at_load["rows"]:
        if r["load_run"] and r["on_front"]:
            fronts[r["model"]].append("quality against p95 at the target load")
    notes = {r["model"]: f"at the target load: {r['flag']}" if r["load_run"] else "not load-tested at the target"
             for r in at_load["rows"] if r["flag"] or not r["load_run"]}
    decisions = decide(rows, pairs, checks, refusals_by_category(results, sweep.refusals), p95, fronts, notes)
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

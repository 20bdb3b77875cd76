"""`arena report`: a run's decision report (Markdown, JSON or self-contained HTML) from the stored results.

One builder makes a JSON-shaped dict (what the JSON format prints); commands/report_doc.py makes one document of its
sections from that dict, which Markdown and HTML render (present/document.py), so the three formats never disagree.
Names, error bodies and case ids are untrusted: escaped for each format.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from arenatui.commands.report_doc import report_document, row_from_dict
from arenatui.kernel.redact import redact_urls_in_text, url_without_secrets
from arenatui.kernel.text import one_line
from arenatui.kernel.units import plural
from arenatui.results.read import F1Answers, StoredRun, read_run
from arenatui.stats import (
    ModelRow,
    PairDecision,
    RunResults,
    all_pairs,
    answered_models,
    group_scores,
    leaderboard,
    reversals,
)
from arenatui.stats.bootstrap import FEW_CLUSTERS
from arenatui.stats.jsonable import finite as _num
from arenatui.stats.jsonable import interval_dict, power_dict
from arenatui.stats.jsonable import iso_utc as _iso
from arenatui.store import RunRecord, Store
from arenatui.store.queries import RunPlan, RunSpend

if TYPE_CHECKING:
    from arenatui.tuning.levels import ModelReadout


LISTED_CASES = 50
"""Judged case ids a report lists per llm_judge scorer before "… and K more"."""
TOP_PAIRS = 5
"""Models whose pairwise verdicts the report lists (10 pairs); the leaderboard shows every model."""
FORMATS = ("md", "json", "html")




_MODEL_SETTINGS = ("key", "provider", "model", "price_in_per_mtok", "price_out_per_mtok", "max_concurrency", "rpm",
                   "tpm", "max_tokens", "temperature", "stream", "transport", "api_key_env")


def run_settings(plan: RunPlan) -> dict[str, Any]:
    """The settings a reviewer needs to reproduce the run, and nothing that could hold a secret.

    Left out: headers and extra request fields (they carry tokens), base URL user info and query strings.
    api_key_env is the *name* of a variable, never its value.
    """
    cfg = plan.record.config
    models = []
    wanted = set(plan.models) | set(plan.judges)
    for m in cfg.get("models", ()):
        if not isinstance(m, dict) or m.get("key") not in wanted:
            continue
        d = {k: m[k] for k in _MODEL_SETTINGS if k in m}
        if m.get("key") in plan.judges:
            d["judge"] = True
            d["candidate"] = m.get("key") in plan.models
        if m.get("base_url"):
            d["base_url"] = url_without_secrets(str(m["base_url"]))
        models.append(d)
    return {"run": dict(cfg.get("run", {})), "filters": plan.record.filters, "models": models,
            "cases": len(plan.cases), "sealed_cases": sum(c.sealed for c in plan.cases), "trials": plan.trials}


def model_dict(r: ModelRow) -> dict[str, Any]:
    gap = r.gap
    return {
        "model": r.model, "rank": r.rank, "tied": r.tied, "flag": r.flag,
        "score": interval_dict(r.common) if r.rank else None,
        "unranked": r.unranked, "order_note": r.order_note, "coverage_paradox": r.paradox,
        "weighted": interval_dict(r.weighted) if r.weighted else None,
        "quality": interval_dict(r.quality), "coverage": _num(r.coverage), "planned": r.planned,
        "calls": r.calls, "answered": r.answered, "errored": r.errored, "errors": dict(sorted(r.errors.items())),
        "error_rate": _num(r.error_rate), "timeout_rate": _num(r.timeout_rate), "retries": r.retries,
        "retry_rate": _num(r.retry_rate), "passed": r.passed, "unscored": r.unscored,
        "pass_at": {str(k): _num(v) for k, v in r.pass_at.items()}, "pass_at_cases": r.pass_at_n,
        "consistency": _num(r.consistency),
        "spend": r.spend, "tokens": r.tokens, "cost_per_correct": _num(r.cost_per_correct),
        "tokens_per_correct": _num(r.tokens_per_correct), "cost_per_answered": _num(r.cost_per_answered),
        "latency_ms": {"p50": _num(r.latency_p50), "p95": _num(r.latency_p95), "p99": _num(r.latency_p99)},
        "ttft_ms": {"p50": _num(r.ttft_p50), "p95": _num(r.ttft_p95)},
        "on_cost_front": r.on_cost_front, "on_latency_front": r.on_latency_front,
        "sealed": interval_dict(r.sealed) if r.sealed.n else None, "sealed_gap": _num(r.sealed_gap),
        "sealed_gap_interval": interval_dict(gap.gap) if gap else None,
        "sealed_gap_strata": list(gap.strata) if gap else [], "sealed_gap_outside": gap.outside if gap else False,
    }


def _failures(top: dict[str, list[tuple[str, str, int]]]) -> dict[str, list[dict[str, Any]]]:
    """Per model, its most frequent error messages (one line each, URL credentials redacted)."""
    return {mk: [{"error_class": ec, "message": one_line(redact_urls_in_text(msg), 160), "calls": n}
                 for ec, msg, n in rows] for mk, rows in top.items()}


def _classification(f1: F1Answers) -> dict[str, dict[str, Any]]:
    """Per model, macro-F1 over each f1 scorer's labels (working cases only: a sealed output is not kept)."""
    from arenatui.scoring.f1 import macro_f1, per_label_f1
    from arenatui.stats.f1_interval import label_cases, macro_f1_interval

    out: dict[str, dict[str, Any]] = {}
    for (mk, name), (labels, ps, cids) in sorted(f1.items()):
        iv = macro_f1_interval(ps, labels, cids)
        out.setdefault(mk, {})[name] = {"macro_f1": macro_f1(ps, labels), "calls": len(ps),
                                        "interval": interval_dict(iv) if iv else None,
                                        "per_label": per_label_f1(ps, labels), "label_cases": label_cases(ps, cids)}
    return out


def build_report(store: Store, run: str, *, cluster_by: str | None = None,
                 load: Sequence[str] | None = None) -> dict[str, Any]:
    """The report of a sweep; `load`: load runs whose figures at the target load sit beside its quality."""
    from arenatui.bakeoff.sections import conditions_section, load_section, read_loads
    from arenatui.store.bakeoff_queries import newest_sweep

    stored = read_run(store, newest_sweep(store) if load and run == "last" else run)  # load runs come after it
    rep = report_of(dataclasses.replace(stored, results=stored.results.clustered_by(cluster_by)))
    rep["budgets"] = budgets_dict(store, stored.run_id)
    loads, series = read_loads(store, stored, load) if load else ([], {})
    rep["conditions"] = conditions_section(stored, loads)
    if load:
        rep["at_load"] = load_section([row_from_dict(m) for m in rep["leaderboard"]], stored, loads, series)
    return rep


def budgets_dict(store: Store, run_id: str) -> dict[str, Any]:
    """Steps 2 and 4 of the tuning order from the run's answers (arenatui.tuning.budgets): each model's max_tokens
    and timeout_s, each with its evidence or "not enough evidence"."""
    from arenatui.results.budgets import budget_evidence
    from arenatui.tuning.budgets import budgets_of

    return budgets_of(budget_evidence(store, run_id)).as_dict()


def report_of(stored: StoredRun) -> dict[str, Any]:
    """The report of a stored run, as JSON-shaped data (what every format renders)."""
    plan = stored.plan
    rep = report_dict(plan, stored.results, _failures(stored.top_errors), stored.failure_modes)
    rep["classification"] = _classification(stored.f1)
    rep["spend"] = spend_dict(stored.spend)
    rep["estimated_tokens"] = {m: {"estimated": e, "calls": n} for m, (e, n) in stored.estimated_usage.items()}
    rep["reasoning"] = {m: {"calls": u.calls, "reasoning_tokens": u.reasoning_tokens, "output_tokens": u.output_tokens,
                            "estimated": u.estimated, "per_call": u.per_call, "share": u.share}
                        for m, u in stored.reasoning.items()}
    _reasoning_spend(rep, plan)
    rep["judged"] = judged_list(plan, stored.judgments)
    rep["concurrency"] = concurrency_list(stored.tuning)
    from arenatui.present.variant_tables import VARIANT_NOTE, follow_up_dicts, variants_dict

    rep["prompt_variants"] = variants_dict(stored)
    rep["follow_ups"] = follow_up_dicts(stored.follow_ups)
    if rep["prompt_variants"] is not None:
        rep["notes"].append(VARIANT_NOTE)
    unscored = stored.unscored_modes
    rep["unscored"] = {r["model"]: {"judge_error": r["errors"].get("judge_error", 0), **unscored.get(r["model"], {})}
                       for r in rep["leaderboard"]
                       if r["model"] in unscored or r["errors"].get("judge_error")}
    return rep


def _reasoning_spend(rep: dict[str, Any], plan: RunPlan) -> None:
    """Each reasoning model's reasoning as a share of its whole spend (`spend_share`: its reasoning tokens at its
    output price over everything it spent), None for a model without a price."""
    prices = {m.get("key"): m.get("price_out_per_mtok") for m in plan.record.config.get("models", ())
              if isinstance(m, dict)}
    spend = {m["model"]: m["spend"] for m in rep["leaderboard"]}
    for key, r in rep["reasoning"].items():
        price, spent = prices.get(key), spend.get(key)
        ok = isinstance(price, (int, float)) and price > 0 and isinstance(spent, (int, float)) and spent > 0
        r["spend_share"] = min(1.0, r["reasoning_tokens"] * price / 1e6 / spent) if ok else None


def concurrency_list(readouts: Sequence[ModelReadout]) -> list[dict[str, Any]]:
    """Per model: the one concurrency verdict (re-derived from the stored counts by today's rules), its
    recommendation, and the levels it rests on."""
    return [{
        "model": ro.model_key, "verdict": ro.verdict.text, "kind": ro.verdict.kind, "recommended": ro.verdict.level,
        "optimum": ro.verdict.optimum, "setting": ro.verdict.setting(ro.model_key),
        "levels": [{"level": r.level, "held_s": r.held_s, "answered": r.answered, "attempts": r.attempts,
                    "rate_limited": r.rate_limited, "goodput": _num(r.goodput),
                    "goodput_95": list(r.goodput_interval) if r.goodput_interval else None,
                    "limited_share": _num(r.limited_share),
                    "limited_95": list(r.limited_interval) if r.limited_interval else None,
                    "latencies": r.latencies, "p50_ms": _num(r.p50_ms), "p95_ms": _num(r.p95_ms),
                    "measured": r.measured} for r in ro.levels],
    } for ro in readouts]


def spend_dict(spend: RunSpend) -> dict[str, Any]:
    """The run's spend: its models', each judge's apart, and the total of both."""
    return {
        "candidates": spend.candidates,
        "judges": [{"judge": j.judge, "calls": j.calls, "passed": j.passed, "failed": j.failed,
                    "judge_errors": j.errors, "attempts": j.attempts, "retries": j.retries,
                    "input_tokens": j.input_tokens, "output_tokens": j.output_tokens, "tokens": j.tokens,
                    "cost": j.cost, "mean_latency_ms": _num(j.mean_latency_ms)} for j in spend.judges],
        "judges_total": spend.judge_total,
        "total": spend.total,
    }


def judged_list(plan: RunPlan, stored: dict[str, int]) -> list[dict[str, Any]]:
    """Per llm_judge scorer: judged N of M cases (its sample), the judged case ids (the first LISTED_CASES), and
    the judge calls stored against those the plan makes. Ids only: a sealed case's text never appears."""
    per_case = len(plan.models) * plan.trials
    return [{
        "scorer": j.scorer, "judge": j.judge, "sample": j.sample, "cases": len(j.case_ids),
        "judged": len(j.judged), "judged_case_ids": list(j.judged[:LISTED_CASES]),
        "more": max(0, len(j.judged) - LISTED_CASES),
        "judgments": sum(stored.get(c, 0) for c in j.judged), "planned_judgments": len(j.judged) * per_case,
    } for j in plan.judged]


def pair_dict(d: PairDecision) -> dict[str, Any]:
    """A paired verdict (Holm-adjusted over all pairs) with its interval, as the report and bake-off print it."""
    return {
        "a": d.comparison.a, "b": d.comparison.b, "diff": interval_dict(d.comparison.diff),
        "p_a_better": _num(d.comparison.p_a_better), "p_holm": _num(d.p_holm), "decided": d.decided,
        "better": d.better, "verdict": d.verdict, "only_a": d.comparison.only_a, "only_b": d.comparison.only_b,
        "coverage_note": d.comparison.coverage_note, "power": power_dict(d.comparison.power),
        "clusters": d.comparison.clusters, "clustered_se": _num(d.comparison.clustered_se),
    }


def sandbox_words(rec: RunRecord) -> str:
    """The code_exec sandbox a run's answers ran in, as stored with it, and whether it was the weak one."""
    weak = " (the weak sandbox: the project set allow_weak_sandbox)" if rec.sandbox_strong is False else ""
    return f"{rec.sandbox}{weak}."


def report_dict(plan: RunPlan, results: RunResults, failures: dict[str, list[dict[str, Any]]],
                modes: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    rec = plan.record
    answered = answered_models(results)
    decisions = all_pairs(results, answered) if len(answered) > 1 else []
    rows = leaderboard(results, decisions=decisions)
    place = {r.model: i for i, r in enumerate(rows)}
    decisions = [d if place[d.comparison.a] <= place[d.comparison.b] else d.flipped() for d in decisions]
    top_set = {r.model for r in rows if r.quality.n}
    top_set = {m for m in [r.model for r in rows if r.model in top_set][:TOP_PAIRS]}
    pairs = [pair_dict(d) for d in decisions if d.comparison.a in top_set and d.comparison.b in top_set]
    table = group_scores(results)
    notes = [sandbox_words(rec)] if rec.sandbox else []
    coverages = {round(r.coverage, 6) for r in rows if r.planned}
    if len(coverages) > 1:
        notes.append("Coverage differs between models: each comparison is over the cases both models have scores for.")
    if any(r.errored for r in rows):
        notes.append("Errored calls (rate limits, timeouts) count against coverage, never as wrong answers.")
    if any(r.unscored for r in rows):
        notes.append("Unscored calls (answered, outside an llm_judge scorer's sample or not judged yet) count as "
                     "answered for coverage and are left out of quality, pass@k and $/correct.")
    ranked = [r for r in rows if r.rank]
    if ranked:
        notes.append(f"The ranking and its score are over the {plural(ranked[0].common.n, 'case')} every ranked "
                     "model has scores for (n common cases); own is each model's score over its own scored cases. A "
                     "model whose coverage would leave fewer than half the best-covered model's cases in common is "
                     "listed apart, unranked. The order never goes against a decided paired verdict.")
    if len(decisions) > 1:
        notes.append(f"Pairwise decisions are Holm-adjusted over all {plural(len(decisions), 'pair')} of models.")
    if results.clusters is not None:
        clusters = int(np.unique(results.clusters[results.working]).size)
        notes.append(f"Every interval rests on {clusters} clusters (by {results.cluster_by}), not cases: cases that "
                     "share a passage or template are not independent evidence. Intervals (leaderboard, pairs, "
                     "strata and tags, weighted, sealed gap) are t intervals on the clustered standard error with "
                     "clusters − 1 degrees of freedom (clusters − strata for the weighted score and the sealed gap); "
                     "the resampled differences of a pair resample clusters. Macro-F1 and failure-mode shares "
                     "are over cases and calls, not clusters.")
        if clusters < FEW_CLUSTERS:
            notes.append(f"few clusters ({clusters}, under {FEW_CLUSTERS}): the interval is approximate.")
    if any(r.weighted for r in rows):
        notes.append(f"weighted: each stratum's score weighted by its production share ({_weights(results)}) "
                     "instead of its share of the case file; it differs from the sample score when the file "
                     "over- or under-samples a stratum.")
    return {
        "run": {"run_id": rec.run_id, "project": rec.project, "status": rec.status,
                "started_at": _iso(rec.started_at), "finished_at": _iso(rec.finished_at), "planned": rec.planned,
                "stored": int(results.calls.sum()), "sandbox": rec.sandbox, "sandbox_strong": rec.sandbox_strong},
        "settings": run_settings(plan),
        "leaderboard": [model_dict(r) for r in rows],
        "pairs": pairs,
        "strata": [{"group": g.group, "kind": g.kind, "cases": g.cases,
                    "scores": {m: interval_dict(iv) for m, iv in g.scores.items()}} for g in table],
        "reversals": [{"group": v.group, "kind": v.kind, "model": v.model, "beaten": v.beaten,
                       "overall_diff": v.overall_diff, "group_diff": v.group_diff,
                       "interval": interval_dict(v.interval), "p_holm": _num(v.p_holm)}
                      for v in reversals(results, decisions)],
        "coverage_paradoxes": [{"model": r.model, "text": r.paradox} for r in rows if r.paradox],
        "failures": failures,
        "failure_modes": {r.model: dict(sorted((modes or {}).get(r.model, {}).items(), key=lambda kv: -kv[1]))
                          for r in rows},
        "notes": notes,
    }


def _weights(results: RunResults) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in results.weights.items())


def render(rep: dict[str, Any], fmt: str, *, terminal: bool = False) -> str:
    """The report as text; for a terminal, JSON escapes every non-ASCII character (no control sequence gets out)."""
    if fmt == "json":
        return json.dumps(rep, indent=2, ensure_ascii=terminal, allow_nan=False) + "\n"
    from arenatui.present.document import to_html, to_markdown

    doc = report_document(rep, terminal=terminal)
    return to_html(doc) if fmt == "html" else to_markdown(doc)

"""`arena report`: a run's decision report (Markdown, JSON or self-contained HTML) from the stored results.

One builder makes a JSON-shaped dict (what the JSON format prints); Markdown and HTML render that dict, so the
three formats never disagree. Names, error bodies and case ids are untrusted: escaped for each format.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from arenatui.bakeoff.atload import MIN_ANSWERED
from arenatui.kernel.redact import redact_urls_in_text, url_without_secrets
from arenatui.kernel.text import one_line, printable
from arenatui.kernel.units import NOTHING, interval, money, ms, number, pct, plural, score
from arenatui.present.columns import LEADERBOARD, Column
from arenatui.results.read import F1Answers, StoredRun, read_run
from arenatui.scoring.failure_modes import FAILURE_MODES
from arenatui.stats import (
    Interval,
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


BUDGETS_WORDS = ("Recommended from this run's answers (steps 2 and 4 of the tuning order): max_tokens from the "
                 "output tokens of the answers that passed and the answers stopped at the limit; timeout_s from "
                 "the durations of the attempts that answered; each says what it rests on, or that the evidence is not "
                 "enough. `arena tune --project P --write` writes the ones with evidence.")


def budget_items(budgets: dict[str, Any] | None) -> list[tuple[str, str, list[str]]]:
    """(model, verdict, evidence lines) for every recommendation, the run's one timeout_s last; a verdict that does
    not name its setting ("not enough evidence: ...") is said after it."""
    if not budgets:
        return []
    out: list[tuple[str, str, list[str]]] = []
    for model, m in budgets["models"].items():
        for label, rec in (("max_tokens", m["max_tokens"]),
                           *((f"max_tokens ({kind} cases)", r) for kind, r in m["max_tokens_by_scorer"].items()),
                           ("timeout_s", m["timeout_s"])):
            verdict = rec["verdict"] if label in rec["verdict"] else f"{label}: {rec['verdict']}"
            out.append((model, verdict, rec["detail"]))
    rt = budgets["run_timeout_s"]
    out.append(("[run]", rt["verdict"] if rt else f"timeout_s {budgets['timeout_s']:g}: not enough evidence for every "
                "model to recommend the one limit they share", []))
    return out


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


def goodput_svg(c: dict[str, Any]) -> str:
    """One model's goodput by level as an SVG bar chart (the report's concurrency section): a bar per level held,
    solid when measured, pale when not; its 95% interval as a whisker; the 429 share as a red bar under it; the
    verdict's level outlined and labelled; levels never held marked '·' on the axis."""
    levels = {int(lv["level"]): lv for lv in c["levels"]}
    top_level = max(levels)
    knee = c.get("recommended") if c.get("kind") in ("optimum", "rising", "capped") else None
    scale = max(max(float((lv["goodput_95"] or [0, lv["goodput"] or 0])[1]) for lv in levels.values()), 1e-9)
    # at least 380 wide: the legend's first line fits (at 240 it ran off the chart's right edge)
    w, h, left, bottom, top = max(380, 40 + 34 * top_level), 212, 44, 64, 16
    slot = (w - left - 10) / top_level
    plot = h - bottom - top

    def y(v: float) -> float:
        return h - bottom - v / scale * plot

    out: list[str] = [f'<line x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}" stroke="#999"/>',
                      f'<text x="{left - 6}" y="{top + 4}" font-size="10" text-anchor="end">{_f(scale, 1)}/s</text>',
                      f'<text x="{left - 6}" y="{h - bottom}" font-size="10" text-anchor="end">0</text>']
    for n in range(1, top_level + 1):
        x = left + (n - 1) * slot + slot * 0.15
        bw = slot * 0.7
        lv = levels.get(n)
        out.append(f'<text x="{x + bw / 2:.1f}" y="{h - bottom + 14}" font-size="10" text-anchor="middle">'
                   f'{n if lv else "·"}</text>')
        if lv is None:
            continue
        g = lv["goodput"] or 0.0
        fill = "#4a7ab5" if lv["measured"] else "#c5d4e8"
        stroke = ' stroke="#000" stroke-width="2"' if n == knee else ""
        out.append(f'<rect x="{x:.1f}" y="{y(g):.1f}" width="{bw:.1f}" height="{h - bottom - y(g):.1f}" '
                   f'fill="{fill}"{stroke}><title>level {n}: {_f(g, 2)}/s, 429s {pct(lv["limited_share"])}'
                   f'{"" if lv["measured"] else " (not measured)"}</title></rect>')
        if lv["goodput_95"]:
            lo, hi = lv["goodput_95"]
            cx = x + bw / 2
            out.append(f'<line x1="{cx:.1f}" y1="{y(lo):.1f}" x2="{cx:.1f}" y2="{y(hi):.1f}" stroke="#222"/>'
                       f'<line x1="{cx - 4:.1f}" y1="{y(hi):.1f}" x2="{cx + 4:.1f}" y2="{y(hi):.1f}" stroke="#222"/>'
                       f'<line x1="{cx - 4:.1f}" y1="{y(lo):.1f}" x2="{cx + 4:.1f}" y2="{y(lo):.1f}" stroke="#222"/>')
        share = lv["limited_share"] or 0.0
        if share:
            out.append(f'<rect x="{x:.1f}" y="{h - bottom + 20}" width="{bw * min(1.0, share):.1f}" height="6" '
                       f'fill="#c0392b"><title>429s {pct(share)}</title></rect>')
        if n == knee:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{y(g) - 4:.1f}" font-size="10" text-anchor="middle">'
                       f'{_h(str(c["kind"]))}</text>')
    out.append(f'<text x="8" y="{h - 20}" font-size="10">level (· never held) · bar: goodput/s, pale: not '
               f'measured</text><text x="8" y="{h - 8}" font-size="10">whisker: 95% · red: 429 share</text>')
    return _chart(w, h, "".join(out))


def _concurrency_rows(rep: dict[str, Any]) -> list[list[str]]:
    return [[c["model"], c["verdict"] + (f" → {c['setting']}" if c.get("setting") else ""), ", ".join(
        f"{lv['level']}: {_f(lv['goodput'], 2)}/s, 429s {pct(lv['limited_share'])}, n {lv['answered']}"
        for lv in c["levels"] if lv["measured"]) or "none measured"] for c in rep.get("concurrency") or []]


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


# ---- formatting shared by Markdown and HTML --------------------------------------------------------------


def _f(v: float | None, digits: int = 3) -> str:
    return NOTHING if v is None else f"{v:.{digits}f}"


def _ci(iv: dict[str, Any]) -> str:
    return interval(iv["low"], iv["high"], iv["n"])


def _interval(d: dict[str, Any] | None) -> Interval:
    nan = math.nan
    if d is None:
        return Interval(nan, nan, nan, 0)
    est, low, high = (nan if d[k] is None else float(d[k]) for k in ("estimate", "low", "high"))
    return Interval(est, low, high, int(d["n"]))


def row_from_dict(m: dict[str, Any]) -> ModelRow:
    """A leaderboard row read back from its JSON form (`model_dict`): Markdown and HTML render the JSON's rows
    through the same columns as every other view (figures.LEADERBOARD), so the formats never disagree."""
    nan = math.nan
    return ModelRow(
        model=m["model"], quality=_interval(m["quality"]), planned=m["planned"], calls=m["calls"],
        answered=m["answered"], errored=m["errored"], errors=m["errors"], retries=m["retries"], passed=m["passed"],
        unscored=m["unscored"], pass_at={int(k): nan if v is None else v for k, v in m["pass_at"].items()},
        consistency=nan if m["consistency"] is None else m["consistency"], spend=m["spend"], tokens=m["tokens"],
        cost_per_correct=m["cost_per_correct"], tokens_per_correct=m["tokens_per_correct"],
        cost_per_answered=m["cost_per_answered"], latency_p50=m["latency_ms"]["p50"],
        latency_p95=m["latency_ms"]["p95"], latency_p99=m["latency_ms"]["p99"], ttft_p50=m["ttft_ms"]["p50"],
        ttft_p95=m["ttft_ms"]["p95"], sealed=_interval(m["sealed"]), on_cost_front=m["on_cost_front"],
        on_latency_front=m["on_latency_front"], rank=m.get("rank"), tied=bool(m.get("tied")),
        common=_interval(m.get("score")), unranked=m.get("unranked"), order_note=m.get("order_note"),
        paradox=m.get("coverage_paradox"), weighted=_interval(m["weighted"]) if m.get("weighted") else None)


def _weighted(w: Interval | None) -> str:
    return f"{score(w.estimate)} ({interval(w.low, w.high, w.n)})" if w is not None and w.n else NOTHING


WEIGHTED: Column[ModelRow] = Column("weighted", lambda r: r.weighted, _weighted, True, 6)
"""The report's one column beyond figures.LEADERBOARD, after "own", when the project weights its strata."""


def leaderboard_rows(rep: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The leaderboard's head and cells: every column of figures.LEADERBOARD (as the console and the headless
    table show them), in the coverage-fair order, and the stratum-weighted score where the project weights."""
    rows = [row_from_dict(m) for m in rep["leaderboard"]]
    columns = LEADERBOARD
    if any(r.weighted is not None for r in rows):
        at = next(i for i, c in enumerate(LEADERBOARD) if c.title == "own") + 1
        columns = (*LEADERBOARD[:at], WEIGHTED, *LEADERBOARD[at:])
    return ["#", *(c.title for c in columns)], [[str(i), *(c.cell(r) for c in columns)] for i, r in enumerate(rows, 1)]


SEALED_HEAD = ("model", "working", "sealed", "sealed 95% CI", "sealed n", "gap (stratum-matched)", "gap 95% CI",
               "strata matched", "outside its interval")


def _sealed_rows(rep: dict[str, Any]) -> list[list[str]]:
    return [[m["model"], _f(m["quality"]["estimate"]), _f(m["sealed"]["estimate"]), _ci(m["sealed"]),
             str(m["sealed"]["n"]), _f(m["sealed_gap"]),
             _ci(m["sealed_gap_interval"]) if m["sealed_gap_interval"] else "-", ", ".join(m["sealed_gap_strata"]),
             "yes" if m["sealed_gap_outside"] else "no"] for m in rep["leaderboard"] if m["sealed"]]


SEALED_WORDS = ("Scored apart from working cases; only aggregates are shown. The gap is working − sealed within the "
                "strata both splits have, weighted by the sealed cases' mix, with a bootstrap interval. Only a gap "
                "that is large and outside its interval suggests the working cases leaked into training.")


def _ranking_notes(rep: dict[str, Any]) -> list[str]:
    """Who is listed apart and why, where a verdict placed the order, and coverage paradoxes."""
    out = []
    for m in rep["leaderboard"]:
        if m["unranked"]:
            out.append(f"{m['model']}: unranked, {m['unranked']}")
        if m["order_note"]:
            out.append(f"* {m['model']}: {m['order_note']}")
    out += [f"! {p['model']}: {p['text']}" for p in rep.get("coverage_paradoxes", [])]
    return out


REVERSAL_WORDS = ("Each cell is the model's score over the group's cases it has scores for (n). ⚠ marks a subgroup "
                  "reversal: a model that beats another overall (decided, Holm over all pairs) whose paired interval "
                  "inside the group excludes zero the other way, Holm-adjusted over every group tested.")


def _strata_rows(rep: dict[str, Any], *, compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """Groups as rows, models as columns; `compact` (a terminal) keeps one figure per cell, the interval and n
    left out first, so the table meant for comparing models keeps them all at 80 columns (issue 37)."""
    models = [m["model"] for m in rep["leaderboard"]]
    flagged = {(v["group"], v["model"]) for v in rep["reversals"]}
    head = ["group", "kind", "cases", *models]
    rows = []
    for g in rep["strata"]:
        cells = [g["group"], g["kind"], str(g["cases"])]
        for m in models:
            iv = g["scores"].get(m)
            text = NOTHING if iv is None or iv["n"] == 0 else f"{iv['estimate']:.3f}" if compact else \
                f"{iv['estimate']:.3f} ({_ci(iv)}, n {iv['n']})"
            cells.append(text + (" ⚠" if (g["group"], m) in flagged else ""))
        rows.append(cells)
    return head, rows


# ---- Markdown ------------------------------------------------------------------------------------------------


def _md(s: object) -> str:
    """A table cell or inline text: one line, no control characters, Markdown's active characters escaped."""
    text = printable(str(s), newlines=False)
    for ch in "\\`*_[]<>|":
        text = text.replace(ch, "\\" + ch)
    return text


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(_md(h) for h in head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_md(c) for c in r) + " |" for r in rows]
    return out


def _mode_rows(rep: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The failure-mode table: one row per model, a column per mode any model shows, count and share."""
    per_model: dict[str, dict[str, int]] = rep.get("failure_modes", {})
    modes = [m for m in FAILURE_MODES if any(m in d for d in per_model.values())]
    rows = []
    for model, counts in per_model.items():
        failed = sum(counts.values())
        rows.append([model, str(failed)] + [f"{counts[m]} ({counts[m] / failed:.0%})" if counts.get(m) else ""
                                            for m in modes])
    return ["model", "failed", *modes], rows


def _unscored_rows(rep: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Per model, its calls that have no score for a reason other than the model's answer."""
    head = ["model", "unjudged", "awaiting judge", "judge_error"]
    rows = [[model, str(d.get("unjudged", 0)), str(d.get("awaiting_judge", 0)), str(d.get("judge_error", 0))]
            for model, d in (rep.get("unscored") or {}).items()]
    return head, rows


def _judge_rows(spend: dict[str, Any]) -> list[list[str]]:
    return [[j["judge"], str(j["calls"]), str(j["judge_errors"]), str(j["retries"]), str(j["tokens"]),
             money(j["cost"])] for j in spend["judges"]]


JUDGE_HEAD = ("judge", "judge calls", "judge errors", "retries", "tokens", "spend")


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


def _reasoning_cell(r: dict[str, Any] | None) -> str:
    """'400/call · 57% of spend' in the cost table (of output tokens where the model has no price)."""
    if r is None:
        return ""
    share = r.get("spend_share")
    return (f"{r['per_call']:.0f}/call · " + (f"{share:.0%} of spend" if share is not None
                                               else f"{r['share']:.0%} of output"))


def _reasoning_note(reasoning: dict[str, dict[str, Any]]) -> str:
    """Each reasoning model's thinking in its spend: tokens per call and their share of its output tokens."""
    parts = [f"{m}: {r['per_call']:.0f} reasoning tokens per call that reasoned ({plural(r['calls'], 'call')}), "
             f"{r['share']:.0%} of those calls' output tokens and so of their output spend"
             + (f", {r['spend_share']:.0%} of the model's whole spend" if r.get("spend_share") is not None else "")
             + (f"; estimated for {r['estimated']} of them" if r["estimated"] else "")
             for m, r in reasoning.items()]
    return ("Reasoning (counted in the tokens and spend above, never scored): " + "; ".join(parts) + "."
            if parts else "")


def _estimated_cell(e: dict[str, int] | None) -> str:
    return "-" if not e else f"{e['estimated']} of {plural(e['calls'], 'call')}"


def _estimated_note(est: dict[str, dict[str, int]]) -> str:
    """Which models' tokens and cost are arenatui's estimate (the server sent no usage for those calls)."""
    which = ", ".join(f"{m} ({_estimated_cell(e)})" for m, e in est.items())
    return (f"Estimated: the server reported no token usage for some calls of {which}; their tokens, and so their "
            "spend and $/correct, are arenatui's estimate (about 4 characters a token), not the server's count.")


def _spend_words(spend: dict[str, Any]) -> str:
    if not spend["judges"]:  # no judge: no judges' figure (a "$0" there reads as a judge that cost nothing)
        return f"Total spend {money(spend['total'])}."
    return (f"Total spend {money(spend['total'])}: models {money(spend['candidates'])}, judges "
            f"{money(spend['judges_total'])}.")


def _md_spend(spend: dict[str, Any] | None) -> list[str]:
    if not spend:
        return []
    lines = ["", _spend_words(spend)]
    if spend["judges"]:
        lines += ["", "### Judges", "", "Each judge's calls, apart from the models': one per judged call (a call "
                  "judged again keeps its latest verdict and adds its spend).", ""]
        lines += _md_table(JUDGE_HEAD, _judge_rows(spend))
    return lines


def _judged_words(j: dict[str, Any]) -> str:
    """After the scorer's name: its judge, judged N of M cases (its sample), judge calls stored."""
    sample = f"sample {j['sample']:g}" if j["sample"] <= 1 else f"sample {int(j['sample'])} cases"
    return (f"judge {j['judge']}: judged {j['judged']} of {plural(j['cases'], 'case')} ({sample}); "
            f"{j['judgments']} of {j['planned_judgments']} judge calls stored")


def _judged_ids(j: dict[str, Any]) -> str:
    ids = ", ".join(j["judged_case_ids"]) or "none"
    return ids + (f", … and {j['more']} more" if j["more"] else "")


def _md_judged(judged: list[dict[str, Any]]) -> list[str]:
    if not judged:
        return []
    lines = ["", "## Judged cases", "", "An llm_judge scorer judges the same deterministic sample of its cases for "
             "every model; its other cases stay unscored.", ""]
    for j in judged:
        lines += [f"- **{_md(j['scorer'])}** ({_md(_judged_words(j))}). Judged: {_md(_judged_ids(j))}"]
    return lines


F1_HEAD = ("model", "scorer", "macro-F1", "95% CI", "cases", "calls", "F1 per label (n cases)")
F1_WORDS = ("The interval resamples cases. Each label's F1 is followed by its number of cases; ⚠ marks a label with "
            "fewer than 5, whose F1 rests on too little to read alone.")


def _f1_rows(classification: dict[str, dict[str, Any]]) -> list[list[str]]:
    def label(lb: str, f: float, n: int) -> str:
        return f"{lb} {f:.2f} (n {n}{' ⚠' if n < 5 else ''})"

    return [[model, name, _f(v["macro_f1"]), _ci(v["interval"]) if v.get("interval") else "-",
             str(v["interval"]["n"]) if v.get("interval") else "-", str(v["calls"]),
             ", ".join(label(lb, f, v.get("label_cases", {}).get(lb, 0)) for lb, f in v["per_label"].items())]
            for model, by_scorer in classification.items() for name, v in by_scorer.items()]


def _variant_sections(rep: dict[str, Any]) -> list[tuple[str, str, tuple[list[str], list[list[str]]]]]:
    """(title, words, table) of the prompt-variant and repair sections a report has."""
    from arenatui.present.variant_tables import (
        FOLLOW_UP_WORDS,
        SPREAD_WORDS,
        follow_up_rows,
        variant_pair_rows,
        variant_score_rows,
    )

    out = []
    rob = rep.get("prompt_variants")
    if rob:
        out.append(("Prompt variants", f"Score per model and prompt variant ({rob['level']:.0%} intervals over "
                                       f"cases). {SPREAD_WORDS}", variant_score_rows(rob)))
        if rob["pairs"]:
            out.append(("Does the ordering survive the prompt?", "Each pair's paired verdict under every variant.",
                        variant_pair_rows(rob)))
    if rep.get("follow_ups"):
        out.append(("Repairs and escalation", FOLLOW_UP_WORDS, follow_up_rows(rep["follow_ups"])))
    return out


def md_pair(p: dict[str, Any]) -> str:
    return (f"- **{_md(p['a'])} vs {_md(p['b'])}**: {_md(p['verdict'])}; P({_md(p['a'])} > "
            f"{_md(p['b'])}) = {_f(p['p_a_better'], 3)}, Holm-adjusted p = {_f(p['p_holm'], 4)}, "
            f"n = {p['diff']['n']}" + (f"; {_md(p['coverage_note'])}" if p["coverage_note"] else ""))


def render_markdown(rep: dict[str, Any], *, terminal: bool = False) -> str:
    run = rep["run"]
    lines = [f"# Decision report: {_md(run['project'])}, run {_md(run['run_id'])}", "",
             f"Status {_md(run['status'])}; started {run['started_at']}; {run['stored']} of "
             f"{plural(run['planned'], 'call')} stored.", ""]
    lines += md_conditions(rep.get("conditions") or [])
    lines += [f"- {_md(n)}" for n in rep["notes"]] + ([""] if rep["notes"] else [])
    lines += ["## Leaderboard", "", "Quality is over scored calls (trials averaged per case), with a 95% "
              "bootstrap interval over cases; coverage is answered / planned calls.", ""]
    lines += _md_table(*leaderboard_rows(rep))
    lines += [""] + [f"- {_md(n)}" for n in _ranking_notes(rep)]
    for title, words, (head, rows) in _variant_sections(rep):
        lines += ["", f"## {title}", "", words, "", *_md_table(head, rows)]
    lines += ["", "## Which models are separated", ""]
    if not rep["pairs"]:
        lines.append("Fewer than two models answered: nothing to compare.")
    lines += [md_pair(p) for p in rep["pairs"]]
    if rep.get("at_load"):
        lines += ["", *md_at_load(rep["at_load"])]
    if rep["strata"]:
        head, rows = _strata_rows(rep, compact=terminal)
        lines += ["", "## Strata and tags", "", f"{REVERSAL_WORDS}" + (
            " Here each cell is the score alone; the intervals and n are in the file (arena report RUN -o FILE)."
            if terminal else ""), ""]
        lines += _md_table(head, rows)
    sealed = _sealed_rows(rep)
    if sealed:
        lines += ["", "## Sealed cases", "", SEALED_WORDS, ""]
        lines += _md_table(SEALED_HEAD, sealed)
    lines += ["", "## Cost and frontier", ""]
    est = rep.get("estimated_tokens") or {}
    reasoning = rep.get("reasoning") or {}
    lines += _md_table(("model", "spend", "tokens", "tokens estimated", *(("reasoning",) if reasoning else ()),
                        "$/correct", "tokens/correct", "$/answered", "quality-cost front", "quality-p95 front"),
                       [[m["model"], money(m["spend"]), str(m["tokens"]), _estimated_cell(est.get(m["model"])),
                         *((_reasoning_cell(reasoning.get(m["model"])),) if reasoning else ()),
                         money(m["cost_per_correct"]), _f(m["tokens_per_correct"], 0), money(m["cost_per_answered"]),
                         "yes" if m["on_cost_front"] else "", "yes" if m["on_latency_front"] else ""]
                        for m in rep["leaderboard"]])
    lines += ["", "$/correct is the spend of every attempt (retries and errored calls included) over passed calls; "
              "it is each model's own spend (unscored calls' left out), never a judge's."]
    if est:
        lines += ["", _estimated_note(est)]
    if rep.get("reasoning"):
        lines += ["", _reasoning_note(rep["reasoning"])]
    lines += _md_spend(rep.get("spend"))
    lines += _md_judged(rep.get("judged") or [])
    lines += ["", "## What the wrong answers looked like", ""]
    head, mode_rows = _mode_rows(rep)
    if len(head) > 2:
        lines += ["Failed (answered, not passed) calls by failure mode: \"0.78, mostly refusals\" and \"0.78, "
                  "mostly invalid JSON\" call for different fixes.", ""]
        lines += _md_table(head, mode_rows)
    else:
        lines.append("No answer failed.")
    head, rows_ = _unscored_rows(rep)
    if rows_:
        lines += ["", "Not failures, listed apart: unjudged (outside the judge's sample: never scored), awaiting "
                  "judge (the run stopped before its judge; resume judges it), judge_error (judging failed: the call "
                  "counts as errored, against coverage, never as a zero).", ""]
        lines += _md_table(head, rows_)
    classification = rep.get("classification") or {}
    if classification:
        lines += ["", "## Classification (macro-F1)", "", "Macro-F1 averages each label's F1, so a model that "
                  f"answers the majority class everywhere scores low even when its accuracy is high. {F1_WORDS}", ""]
        lines += _md_table(F1_HEAD, _f1_rows(classification))
    conc = _concurrency_rows(rep)
    if conc:
        lines += ["", "## Concurrency", "", "Each model's verdict from the levels it was held at (measured: at least "
                  "20 answered calls over at least 2 median latencies held).", ""]
        lines += _md_table(("model", "verdict", "measured levels"), conc)
    budgets = budget_items(rep.get("budgets"))
    if budgets:
        lines += ["", "## max_tokens and timeout_s", "", BUDGETS_WORDS.replace("`", ""), ""]
        for model, verdict, detail in budgets:
            lines.append(f"- **{_md(model)}**: {_md(verdict)}")
            lines += [f"  - {_md(d)}" for d in detail]
    lines += ["", "## Failures", ""]
    if not rep["failures"]:
        lines.append("No call errored.")
    for model, items in rep["failures"].items():
        for f in items:
            lines.append(f"- {_md(model)}: {_md(f['error_class'])} × {f['calls']}: {_md(f['message'])}")
    lines += ["", "## Run settings", "", "Secrets are never stored: API keys appear as the names of their "
              "environment variables; headers and extra request fields are left out.", "", "```json",
              json.dumps(rep["settings"], indent=2, ensure_ascii=True), "```", ""]
    return "\n".join(lines)


# ---- HTML ------------------------------------------------------------------------------------------------


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right;white-space:nowrap}
th{background:#f3f3f3}td:nth-child(2),th:nth-child(2){text-align:left}
.decided{color:#0a6b2d;font-weight:600}.open{color:#8a5a00}
pre{background:#f6f6f6;padding:1em;overflow:auto}svg{border:1px solid #ddd;background:#fff}
svg.frontier{display:block;max-width:100%;height:auto}.wide{overflow-x:auto;max-width:100%}
li,p{overflow-wrap:anywhere}
.front{fill:#0a6b2d}.dot{fill:#888}.muted{fill:#ddd;stroke:#bbb}.muted-label{fill:#aaa}.out{fill:#fff;stroke:#a1261b;stroke-width:2}
.warn{border-left:4px solid #b36b00;background:#fff6e5;padding:.25em 1em;margin:1em 0}
.eliminated{color:#a1261b;font-weight:600}.contender{color:#0a6b2d;font-weight:600}
table.names td,table.names th{text-align:right}table.names td:first-child,table.names th:first-child,table.text td,
table.text th{text-align:left}
table.board th{white-space:normal}table.board td:nth-child(2),table.board th:nth-child(2){text-align:left}
table.load th{white-space:normal}table.load td:last-child{white-space:normal;min-width:16em;text-align:left}
table.load th:last-child{text-align:left}td{overflow-wrap:anywhere}
.wide td:first-child,.wide th:first-child{position:sticky;left:0;background:#fff}
.wide th:first-child{background:#f3f3f3}
@media (max-width:600px){body{padding:0 .5em}th,td{padding:.2em .35em}}
"""


def _chart(w: int, h: int, drawing: str) -> str:
    """An SVG chart of drawing size w × h that keeps its width up to 560 px and scrolls sideways in its box on a
    narrower page: shrunk to a phone's width its 10-unit labels were 5-6 px (issue 37 item 16)."""
    return (f'<div class="wide"><svg class="frontier" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
            f'style="min-width:{min(w, 560)}px" role="img">{drawing}</svg></div>')


def _h(s: object) -> str:
    return html.escape(printable(str(s), newlines=False), quote=True)


def _html_table(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    """A table in a box that scrolls sideways on a narrow page (a phone), so the page itself never overflows.
    `cls`: "names" (the first column, a model's name, aligned left, the figures right) or "text" (every column
    aligned left: words)."""
    th = "".join(f"<th>{_h(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{_h(c)}</td>" for c in r) + "</tr>" for r in rows)
    table = f'<table class="{cls}">' if cls else "<table>"
    return f'<div class="wide">{table}<thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'



SVG_W, SVG_H = 640, 320
"""The frontier's drawing size (it scales down to the page's width: a phone's too)."""
SVG_MARGIN = (64, 24, 48, 16)
"""Left (the quality ticks), right, bottom (the x ticks and the axis name), top."""


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    return [lo + (hi - lo) * i / n for i in range(n + 1)]


LOG_SPAN = 5.0
"""A cost axis whose values span this factor or more is drawn on a log scale (as the console's frontier is): on a
linear one the cheap models crowd into one corner."""


def _scatter(points: list[tuple[str, float, float, bool]], x_label: str, x_fmt: Callable[[float], str],
             muted: dict[str, str] | None = None, *, log_x: bool = False, out: Collection[str] = ()) -> str:
    """An inline SVG scatter of quality (y) against a cost (x), the Pareto front filled, ticked axes. A label
    starts right of its point in the left half and ends left of it in the right half, so it stays inside. `muted`
    (model -> why: eliminated, not enough evidence) are drawn greyed with why, never as a front point; `out`: models
    drawn as ruled out (a bake-off's eliminated candidates); `log_x`: a log scale when the costs span LOG_SPAN or
    more."""
    muted = muted or {}
    if not points:
        return "<p>No model has both figures.</p>"
    w, h = SVG_W, SVG_H
    left, right, bottom, top = SVG_MARGIN
    raw = [p[1] for p in points]
    log = log_x and min(raw) > 0 and max(raw) / min(raw) >= LOG_SPAN
    if log:
        x_fmt_raw = x_fmt
        points = [(n, math.log10(x), y, f) for n, x, y, f in points]

        def x_fmt(v: float) -> str:
            return x_fmt_raw(10 ** v)

        x_label += ", log scale"
    xs = [p[1] for p in points]
    ys = [p[2] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 <= x0:
        x0, x1 = x0 * 0.9, (x1 * 1.1 if x1 > 0 else 1.0)
    if y1 <= y0:
        y0, y1 = y0 - 0.05, y1 + 0.05
    span_x, span_y = x1 - x0, y1 - y0
    x0, x1 = x0 - span_x * 0.08, x1 + span_x * 0.08  # room for a point's mark at either end
    y0, y1 = y0 - span_y * 0.1, y1 + span_y * 0.1

    def sx(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * (w - left - right)

    def sy(v: float) -> float:
        return h - bottom - (v - y0) / (y1 - y0) * (h - bottom - top)

    mid = (left + w - right) / 2
    dots = "".join(
        f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="5" '
        f'class="{"out" if name in out else "muted" if name in muted else "front" if front else "dot"}"/>'
        f'<text class="{"label muted-label" if name in muted else "label"}" '
        f'x="{sx(x) + (8 if sx(x) < mid else -8):.1f}" y="{sy(y) - 7:.1f}" font-size="11" '
        f'text-anchor="{"start" if sx(x) < mid else "end"}">{_h(name)}'
        f'{_h(f" ({muted[name]})") if name in muted else ""}</text>'
        for name, x, y, front in points)
    ticks = "".join(
        f'<line x1="{sx(v):.1f}" y1="{h - bottom}" x2="{sx(v):.1f}" y2="{h - bottom + 5}" stroke="#999"/>'
        f'<text class="tick" x="{sx(v):.1f}" y="{h - bottom + 17}" font-size="10" text-anchor="middle">'
        f'{_h(x_fmt(v))}</text>' for v in _ticks(x0 + span_x * 0.08, x1 - span_x * 0.08))
    ticks += "".join(
        f'<line x1="{left - 5}" y1="{sy(v):.1f}" x2="{left}" y2="{sy(v):.1f}" stroke="#999"/>'
        f'<text class="tick" x="{left - 8}" y="{sy(v) + 3:.1f}" font-size="10" text-anchor="end">{score(v)}</text>'
        for v in _ticks(y0 + span_y * 0.1, y1 - span_y * 0.1))
    axes = (f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="#999"/>'
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#999"/>'
            f'<text class="axis" x="{mid}" y="{h - 8}" font-size="12" text-anchor="middle">{_h(x_label)} (lower is '
            f'better)</text><text class="axis" x="14" y="{(h - bottom + top) / 2}" font-size="12" '
            f'transform="rotate(-90 14 {(h - bottom + top) / 2})" text-anchor="middle">quality</text>')
    return _chart(w, h, axes + ticks + dots)


def html_pair(p: dict[str, Any]) -> str:
    cls = "decided" if p["decided"] else "open"
    note = f"; {_h(p['coverage_note'])}" if p["coverage_note"] else ""
    return (f"<li><b>{_h(p['a'])} vs {_h(p['b'])}</b>: <span class={cls}>{_h(p['verdict'])}</span>; "
            f"P({_h(p['a'])} &gt; {_h(p['b'])}) = {_f(p['p_a_better'])}, Holm-adjusted p = "
            f"{_f(p['p_holm'], 4)}, n = {p['diff']['n']}{note}.</li>")


def html_head(title: str) -> str:
    """The page's head and opening: the report's styling, readable on a phone."""
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>"
            '<meta name=viewport content="width=device-width, initial-scale=1">'
            f"<title>{_h(title)}</title><style>{_CSS}</style></head><body>")


def render_html(rep: dict[str, Any]) -> str:
    run = rep["run"]
    parts = [html_head(f"Decision report: {run['project']}"),
             f"<h1>Decision report: {_h(run['project'])}, run {_h(run['run_id'])}</h1>",
             f"<p>Status {_h(run['status'])}; started {_h(run['started_at'])}; {run['stored']} of {run['planned']} "
             "calls stored.</p>"]
    parts.append(html_conditions(rep.get("conditions") or []))
    if rep["notes"]:
        parts.append("<ul>" + "".join(f"<li>{_h(n)}</li>" for n in rep["notes"]) + "</ul>")
    parts.append("<h2>Leaderboard</h2><p>Quality is over scored calls (trials averaged per case), with a 95% "
                 "bootstrap interval over cases; coverage is answered / planned calls.</p>")
    head, rows = leaderboard_rows(rep)
    # two tables, the model named in each, so a desktop page shows every column without scrolling sideways (one
    # table of 22 columns was 2,000 px wide at 1280, p95 and after hidden); spend, latency and reliability second
    cut = head.index("$/answered") if "$/answered" in head else len(head)
    name = head.index("model")
    parts.append(_html_table(head[:cut], [r[:cut] for r in rows], "names board"))
    if cut < len(head):
        parts.append("<p>Spend, latency and reliability (same order):</p>" + _html_table(
            [head[name], *head[cut:]], [[r[name], *r[cut:]] for r in rows], "names"))
    if _ranking_notes(rep):
        parts.append("<ul>" + "".join(f"<li>{_h(n)}</li>" for n in _ranking_notes(rep)) + "</ul>")
    for title, words, (head, rows) in _variant_sections(rep):
        parts.append(f"<h2>{_h(title)}</h2><p>{_h(words)}</p>" + _html_table(head, rows))
    parts.append("<h2>Which models are separated</h2><ul>")
    parts += [html_pair(p) for p in rep["pairs"]]
    parts.append("</ul>" if rep["pairs"] else "<li>Fewer than two models answered: nothing to compare.</li></ul>")
    if rep.get("at_load"):
        parts.append(html_at_load(rep["at_load"]))
    if rep["strata"]:
        head, rows = _strata_rows(rep)
        parts.append(f"<h2>Strata and tags</h2><p>{_h(REVERSAL_WORDS)}</p>" + _html_table(head, rows))
    sealed = _sealed_rows(rep)
    if sealed:
        parts.append(f"<h2>Sealed cases</h2><p>{_h(SEALED_WORDS)}</p>" + _html_table(SEALED_HEAD, sealed))
    lb = rep["leaderboard"]
    parts.append("<h2>Cost and frontier</h2><p>$/correct is the spend of every attempt (retries and errored calls "
                 "included) over passed calls. Filled points are Pareto-optimal.</p>")
    parts.append(_scatter([(m["model"], m["cost_per_correct"], m["quality"]["estimate"], m["on_cost_front"])
                           for m in lb if m["cost_per_correct"] is not None and m["quality"]["estimate"] is not None],
                          "$ per correct answer", money, log_x=True))
    parts.append(_scatter([(m["model"], m["latency_ms"]["p95"], m["quality"]["estimate"], m["on_latency_front"])
                           for m in lb if m["latency_ms"]["p95"] is not None and m["quality"]["estimate"] is not None],
                          "p95 latency, ms", number))
    if rep.get("estimated_tokens"):
        parts.append(f"<p>{_h(_estimated_note(rep['estimated_tokens']))}</p>")
    if rep.get("reasoning"):
        parts.append(f"<p>{_h(_reasoning_note(rep['reasoning']))}</p>")
    spend = rep.get("spend")
    if spend:
        parts.append(f"<p>{_h(_spend_words(spend))}</p>")
        if spend["judges"]:
            parts.append("<h3>Judges</h3>" + _html_table(JUDGE_HEAD, _judge_rows(spend)))
    if rep.get("judged"):
        parts.append("<h2>Judged cases</h2><ul>" + "".join(
            f"<li><b>{_h(j['scorer'])}</b> ({_h(_judged_words(j))}). Judged: {_h(_judged_ids(j))}</li>"
            for j in rep["judged"]) + "</ul>")
    head, mode_rows = _mode_rows(rep)
    parts.append("<h2>What the wrong answers looked like</h2>")
    parts.append("<p>Failed (answered, not passed) calls by failure mode.</p>" + _html_table(head, mode_rows)
                 if len(head) > 2 else "<p>No answer failed.</p>")
    head, rows_ = _unscored_rows(rep)
    if rows_:
        parts.append("<p>Not failures, listed apart: unjudged, awaiting judge, judge_error (judging failed: "
                     "errored).</p>" + _html_table(head, rows_))
    classification = rep.get("classification") or {}
    if classification:
        parts.append(f"<h2>Classification (macro-F1)</h2><p>{_h(F1_WORDS)}</p>" + _html_table(
            F1_HEAD, _f1_rows(classification)))
    conc = _concurrency_rows(rep)
    if conc:
        parts.append("<h2>Concurrency</h2>" + _html_table(("model", "verdict", "measured levels"), conc))
        parts.extend(f"<h3>{_h(c['model'])}: goodput by level</h3>" + goodput_svg(c)
                     for c in rep.get("concurrency") or [] if c["levels"])
    budgets = budget_items(rep.get("budgets"))
    if budgets:
        parts.append(f"<h2>max_tokens and timeout_s</h2><p>{_h(BUDGETS_WORDS.replace('`', ''))}</p><ul>" + "".join(
            f"<li><b>{_h(model)}</b>: {_h(verdict)}"
            + ("<ul>" + "".join(f"<li>{_h(d)}</li>" for d in detail) + "</ul>" if detail else "") + "</li>"
            for model, verdict, detail in budgets) + "</ul>")
    parts.append("<h2>Failures</h2>")
    if not rep["failures"]:
        parts.append("<p>No call errored.</p>")
    else:
        # a list, not a table: a provider's message wraps on a phone instead of running off the side
        parts.append("<ul>" + "".join(f"<li><b>{_h(m)}</b>: {_h(f['error_class'])} × {f['calls']}: "
                                      f"<code>{_h(f['message'])}</code></li>"
                                      for m, items in rep["failures"].items() for f in items) + "</ul>")
    parts.append("<h2>Run settings</h2><p>Secrets are never stored: API keys appear as the names of their "
                 "environment variables; headers and extra request fields are left out.</p>"
                 f"<pre>{html.escape(json.dumps(rep['settings'], indent=2, ensure_ascii=True))}</pre>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


# ---- identical conditions and quality beside load (arena report --load, arena bakeoff) -------------------------


CONDITIONS_WORDS = ("Conditions differ between candidates: per-model settings are allowed, never silent. A shorter "
                    "timeout flatters a slow model's percentiles by turning slowness into errors; a different max "
                    "tokens, system prompt or temperature changes what is measured.")


def md_conditions(conditions: Sequence[dict[str, Any]]) -> list[str]:
    if not conditions:
        return []
    return [f"**Warning.** {_md(CONDITIONS_WORDS)}", "", *(f"- ⚠ {_md(c['text'])}" for c in conditions), ""]


def html_conditions(conditions: Sequence[dict[str, Any]]) -> str:
    if not conditions:
        return ""
    return (f'<div class="warn"><p><b>Warning.</b> {_h(CONDITIONS_WORDS)}</p><ul>'
            + "".join(f"<li>{_h(c['text'])}</li>" for c in conditions) + "</ul></div>")


AT_LOAD_HEAD = ("model", "quality", "p95 ms (95% CI), n", "errors", "429s", "goodput", "$/correct", "95% CI", "p50 ms",
                "p99 ms", "TTFT p50", "TTFT p95", "timeouts", "offered/s", "achieved/s", "front", "load run", "flag")
"""What decides first (quality beside p95, errors and 429s at the target) on the left: on a phone the rest scrolls
sideways."""


def at_load_words(section: dict[str, Any]) -> str:
    return (f"Each model's sweep quality and cost per correct case beside its load run at the target load, "
            f"{section['target']}: latencies and TTFT from schedule (what a user arriving then waited), error, "
            "timeout and 429 shares at that rate, goodput under the load run's SLO. p95 carries a distribution-free "
            f"95% interval and its n (answered requests); under {MIN_ANSWERED} it is not enough evidence and stays "
            "off the front. The front is quality against p95 at the target load, among the candidates not "
            "eliminated.")


def _p95_cell(r: dict[str, Any]) -> str:
    """p95 at load with its interval and n, or "not enough evidence" beside its n."""
    p95, n = r["latency_ms"]["p95"], r.get("answered")
    if r.get("p95_evidence"):
        return f"{ms(p95)}, n {n}: not enough evidence" if p95 is not None else f"n {n}: not enough evidence"
    lo, hi = r.get("p95_low"), r.get("p95_high")
    band = f" ({ms(lo)}–{ms(hi)})" if lo is not None and hi is not None else ""
    return f"{ms(p95)}{band}, n {n}" if n is not None else ms(p95)


def at_load_rows(section: dict[str, Any]) -> list[list[str]]:
    out = []
    for r in section["rows"]:
        quality = _f(r["quality"])
        sweep = [money(r["cost_per_correct"]), interval(r["quality_low"], r["quality_high"], r["n"])]
        if r["load_run"] is None:
            out.append([r["model"], quality, "-", "-", "-", "-", *sweep, *["-"] * 8, "none", "no load run"])
            continue
        lat, ttft = r["latency_ms"], r["ttft_ms"]
        goodput = "no SLO" if r["goodput_share"] is None else f"{pct(r['goodput_share'])} ({r['slo']})"
        out.append([r["model"], quality, _p95_cell(r), pct(r["error_share"], decimals=1),
                    pct(r["rate_limited_share"], decimals=1), goodput, *sweep, ms(lat["p50"]), ms(lat["p99"]),
                    ms(ttft["p50"]), ms(ttft["p95"]), pct(r["timeout_share"], decimals=1), _f(r["offered_rate"], 2),
                    _f(r["achieved_rate"], 2), "yes" if r["on_front"] else "", r["load_run"], r["flag"] or ""])
    return out


def _series_lines(section: dict[str, Any]) -> list[str]:
    out = []
    for m, s in section.get("series", {}).items():
        if len(s["runs"]) > 1:
            out.append(f"{m}: p95 spread {s['spread']['text']}" if s["spread"]
                       else f"{m}: {len(s['runs'])} runs, no p95 spread measured")
    return out


NO_LOAD_WORDS = ("No candidate was load-tested: run each at the production rate for long enough to meet its slow "
                 "moments (arena load --project P --model KEY --rate R --duration 15m; [bakeoff] target_rate names R), "
                 "then decide again.")


def md_at_load(section: dict[str, Any]) -> list[str]:
    if not any(r["load_run"] for r in section["rows"]):  # a table of dashes says less than one sentence
        return ["## Quality beside load at the target", "", NO_LOAD_WORDS]
    lines = ["## Quality beside load at the target", "", at_load_words(section), ""]
    lines += _md_table(AT_LOAD_HEAD, at_load_rows(section))
    flagged = [r for r in section["rows"] if r.get("flag")]
    if flagged:
        lines += [""] + [f"- ⚠ {_md(r['model'])} (load run {_md(r['load_run'])}): {_md(r['flag'])}" for r in flagged]
    series = _series_lines(section)
    if series:
        lines += ["", "Repeated load runs (the same profile at different times):", ""]
        lines += [f"- {_md(x)}" for x in series]
    return lines


def html_at_load(section: dict[str, Any], eliminated: Collection[str] = ()) -> str:
    if not any(r["load_run"] for r in section["rows"]):
        return f"<h2>Quality beside load at the target</h2><p>{_h(NO_LOAD_WORDS)}</p>"
    parts = [f"<h2>Quality beside load at the target</h2><p>{_h(at_load_words(section))}</p>"]
    # two tables, as the leaderboard: the 18 columns in one were wider than a desktop page (TTFT p95 and after
    # hidden at 1280 px); what decides first, then the rest of the latencies and rates, the model named in each
    rows = at_load_rows(section)
    cut = AT_LOAD_HEAD.index("p50 ms")
    parts.append(_html_table(AT_LOAD_HEAD[:cut], [r[:cut] for r in rows], "names"))
    parts.append("<p>Latencies and rates at the target (same order):</p>" + _html_table(
        [AT_LOAD_HEAD[0], *AT_LOAD_HEAD[cut:]], [[r[0], *r[cut:]] for r in rows], "names load"))
    flagged = [r for r in section["rows"] if r.get("flag")]
    if flagged:
        parts.append("<ul>" + "".join(f"<li>⚠ {_h(r['model'])} (load run {_h(r['load_run'])}): {_h(r['flag'])}</li>"
                                      for r in flagged) + "</ul>")
    parts.append(_scatter([(r["model"], r["latency_ms"]["p95"], r["quality"], r["on_front"]) for r in section["rows"]
                           if r["load_run"] and r["latency_ms"]["p95"] is not None and r["quality"] is not None],
                          "p95 latency from schedule at the target load, ms", ms,
                          {r["model"]: "eliminated" if r.get("eliminated") else f"n {r['answered']}: not enough "
                           "evidence" for r in section["rows"] if r.get("eliminated") or r.get("p95_evidence")},
                          out=eliminated))
    series = _series_lines(section)
    if series:
        parts.append("<p>Repeated load runs (the same profile at different times):</p><ul>"
                     + "".join(f"<li>{_h(x)}</li>" for x in series) + "</ul>")
    return "".join(parts)


def render(rep: dict[str, Any], fmt: str, *, terminal: bool = False) -> str:
    """The report as text; for a terminal, JSON escapes every non-ASCII character (no control sequence gets out)."""
    if fmt == "json":
        return json.dumps(rep, indent=2, ensure_ascii=terminal, allow_nan=False) + "\n"
    if fmt == "html":
        return render_html(rep)
    return render_markdown(rep, terminal=terminal)

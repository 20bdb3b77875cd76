"""The bake-off's sections as JSON-shaped data, from stored runs: identical conditions, quality beside the load
runs at the target load (with each model's series spread and the frontier), failure modes, terms. `arena report
--load` and `arena bakeoff` both build these; the views render them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arenatui.bakeoff.atload import at_target, in_flight, p95_evidence
from arenatui.bakeoff.conditions import conditions_of, differences
from arenatui.bakeoff.failures import mode_counts, refusals_by_category
from arenatui.bakeoff.series import SeriesRun, spread
from arenatui.bakeoff.terms import TermCheck, check_terms, requirements_from_stored, terms_from_stored
from arenatui.kernel.errors import PlanError
from arenatui.results.read import StoredRun, read_run
from arenatui.stats.frontier import pareto_front
from arenatui.stats.jsonable import finite as _num
from arenatui.stats.jsonable import iso_utc as _iso
from arenatui.stats.leaderboard import ModelRow
from arenatui.store import Store
from arenatui.store.bakeoff_queries import load_runs_of_project, series_of, series_runs
from arenatui.store.queries import resolve_run


def load_model(load: StoredRun) -> str:
    return str(load.record.filters.get("model") or (load.plan.models[0] if load.plan.models else ""))


def read_loads(store: Store, sweep: StoredRun, ids: Sequence[str] | None,
               picked: Mapping[str, str] | None = None) -> tuple[list[StoredRun], dict[str, list[StoredRun]]]:
    """The load runs a bake-off reads: those named (`--load A,B`), else per model the one picked for it (`picked`:
    model -> load run, the results view's runs tab) or its newest finished load run of the sweep's project; and per
    model, every run of the series those belong to (for the spread), oldest first.

    A run that is not a load run, is of another project or loads a model the sweep does not have is bad input."""
    models = set(sweep.plan.models)
    if ids is None:
        named: list[str] = []
        for m in sweep.plan.models:
            found = [picked[m]] if picked and m in picked else load_runs_of_project(store, sweep.record.project, m)
            if found:
                named.append(found[0])
    else:
        named = [resolve_run(store, i).run_id for i in ids]
    loads = []
    for rid in dict.fromkeys(named):
        run = read_run(store, rid)
        if run.kind != "load" or run.load is None:
            raise PlanError(f"--load {rid}: run {rid} is a sweep, not a load run; `arena runs` shows each run's kind")
        if run.record.project != sweep.record.project:
            raise PlanError(f"--load {rid}: the load run is of project {run.record.project!r} and run "
                            f"{sweep.run_id} of {sweep.record.project!r}; a bake-off reads one project's runs")
        if load_model(run) not in models:
            raise PlanError(f"--load {rid}: the load run loaded model {load_model(run)!r}, which run {sweep.run_id} "
                            f"did not sweep (it has {', '.join(sorted(models))})")
        loads.append(run)
    series: dict[str, list[StoredRun]] = {}
    for run in loads:
        sid = series_of(store, run.run_id)
        members = [read_run(store, r) for r in series_runs(store, sid)] if sid else [run]
        have = {r.run_id for r in series.get(load_model(run), [])}
        series.setdefault(load_model(run), []).extend(r for r in members if r.run_id not in have and r.load)
    for runs in series.values():
        runs.sort(key=lambda r: r.record.started_at)
    return loads, series


def conditions_section(sweep: StoredRun, loads: Sequence[StoredRun]) -> list[dict[str, Any]]:
    """The settings that differ between the candidates (or between a model's sweep and its load runs)."""
    used: dict[str, list[tuple[dict[str, Any], str]]] = {}
    for m in sweep.plan.models:
        c = conditions_of(sweep.record.config, m)
        if c is not None:
            used.setdefault(m, []).append((c, "sweep"))
    for load in loads:
        m = load_model(load)
        c = conditions_of(load.record.config, m)
        if c is not None:
            used.setdefault(m, []).append((c, f"load run {load.run_id}"))
    return [{"setting": d.setting, "values": {m: [[v, where] for v, where in vs] for m, vs in d.values.items()},
             "text": d.words} for d in differences(used)]


def _figures_dict(f: Any) -> dict[str, Any]:
    return {
        "segment": f.segment, "offered_rate": _num(f.offered_rate), "target_rate": _num(f.target_rate),
        "achieved_rate": _num(f.achieved_rate), "requests": f.requests, "in_flight": _num(in_flight(f)),
        "latency_ms": {k: _num(f.latency_schedule.get(p)) for k, p in (("p50", 50.0), ("p95", 95.0), ("p99", 99.0))},
        "ttft_ms": {k: _num(f.ttft_schedule.get(p)) for k, p in (("p50", 50.0), ("p95", 95.0), ("p99", 99.0))},
        "answered": f.answered, "p95_low": _num(f.p95_interval[0]), "p95_high": _num(f.p95_interval[1]),
        "p95_evidence": p95_evidence(f),
        "error_share": _num(f.error_share), "timeout_share": _num(f.share("timeout")),
        "rate_limited_share": _num(f.share("rate_limited")),
        "goodput_share": _num(f.goodput_share) if f.goodput_share is not None else None,
    }


def load_section(rows: Sequence[ModelRow], sweep: StoredRun, loads: Sequence[StoredRun],
                 series: dict[str, list[StoredRun]]) -> dict[str, Any]:
    """Per model: the sweep's quality and cost per correct case beside its load run at the target load (from
    schedule), flagged when the run never got there; each model's series spread; the quality-p95 frontier."""
    bk = sweep.record.config.get("bakeoff") or {}
    rate, conc = bk.get("target_rate"), bk.get("target_concurrency")
    newest: dict[str, StoredRun] = {}
    for load in loads:
        m = load_model(load)
        if m not in newest or load.record.started_at > newest[m].record.started_at:
            newest[m] = load
    out_rows = []
    target_words = None
    for mr in rows:
        chosen = newest.get(mr.model)
        head = mr.common if mr.rank is not None else mr.quality  # the coverage-fair headline, as the margin's
        row: dict[str, Any] = {"model": mr.model, "quality": _num(head.estimate),
                               "quality_low": _num(head.low), "quality_high": _num(head.high),
                               "n": head.n, "cost_per_correct": _num(mr.cost_per_correct), "load_run": None,
                               "flag": None}
        if chosen is not None and chosen.load is not None:
            at = at_target(chosen.load, rate, conc)
            target_words = at.target
            slo = chosen.record.filters.get("slo")
            row.update(load_run=chosen.run_id, started_at=_iso(chosen.record.started_at), reached=at.reached,
                       flag=at.flag, slo=", ".join(f"{k.removesuffix('_ms')}<={v:g}ms" for k, v in slo.items()
                                                   if v is not None) if isinstance(slo, dict) else None,
                       **_figures_dict(at.figures))
        out_rows.append(row)
    # a p95 on too few answered requests is no evidence: it stays off the frontier (issue 35: an eliminated gateway
    # was the front point at 343 ms from 3 answered requests of 30)
    p95 = [r["latency_ms"]["p95"] if r["load_run"] and r["p95_evidence"] is None else None for r in out_rows]
    for r, front in zip(out_rows, pareto_front([r["quality"] for r in out_rows], p95), strict=True):
        r["on_front"] = front
    spreads: dict[str, Any] = {}
    for m, runs in series.items():
        srs = [SeriesRun(x.run_id, x.record.started_at, m, at_target(x.load, rate, conc).figures)
               for x in runs if x.load is not None]
        s = spread(srs)
        spreads[m] = {"runs": [{"run_id": x.run_id, "started_at": _iso(x.started_at), "p95_ms": _num(x.p95)}
                               for x in srs],
                      "spread": None if s is None else {"ratio": _num(s.ratio), "text": s.words}}
    return {"target": target_words or _target_words(rate, conc), "target_rate": rate, "target_concurrency": conc,
            "rows": out_rows, "series": spreads,
            "missing": [r["model"] for r in out_rows if r["load_run"] is None]}


def _target_words(rate: float | None, conc: float | None) -> str:
    if rate is not None:
        return f"{rate:g}/s (target_rate)"
    if conc is not None:
        return f"concurrency {conc:g} (target_concurrency)"
    return "no target set: the fastest segment"


def failures_section(sweep: StoredRun) -> dict[str, Any]:
    res = sweep.results
    return {
        "modes": [{"model": c.model, "mode": c.mode, "count": c.count, "calls": c.calls, "share": _num(c.share),
                   "low": _num(c.low), "high": _num(c.high)} for c in mode_counts(res, sweep.failure_modes)],
        "refusals": [{"model": r.model, "category": r.category, "refused": r.refused, "calls": r.calls,
                      "low": _num(r.low), "high": _num(r.high), "refuses": r.refuses, "text": r.words}
                     for r in refusals_by_category(res, sweep.refusals)],
    }


def term_checks(sweep: StoredRun) -> dict[str, list[TermCheck]]:
    """Per swept model, each term against the project's requirements (as stored with the run)."""
    cfg = sweep.record.config
    req = requirements_from_stored(cfg)
    models = {str(m.get("key")): m for m in cfg.get("models", ()) if isinstance(m, dict)}
    return {key: check_terms(terms_from_stored(models.get(key, {})), req) for key in sweep.plan.models}


def terms_section(sweep: StoredRun, checks: dict[str, list[TermCheck]]) -> dict[str, Any]:
    return {"requirements": sweep.record.config.get("requirements"),
            "models": {m: [{"term": t.term, "value": t.value, "shown": t.shown, "requirement": t.requirement,
                            "met": t.met, "source": t.source, "checked": t.checked, "text": t.words} for t in ts]
                       for m, ts in checks.items()}}
